"""Reading WGSL text without a compiler: tokens, module-scope declarations, function bodies,
integer const-expressions and WGSL's memory layout rules."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from wgslgen.check.wgsl_consts import Evaluator, MissingOverride
from wgslgen.check.wgsl_tokens import Tok, Tokens, strip_comments
from wgslgen.errors import WgslgenError

__all__ = ["Attrs", "Module", "Tok", "round_up", "strip_comments"]
_SCALARS = {"bool": (4, 4), "i32": (4, 4), "u32": (4, 4), "f32": (4, 4), "f16": (2, 2)}
_SUFFIX_SCALAR = {"f": "f32", "i": "i32", "u": "u32", "h": "f16"}
_CLOSE = {"(": ")", "[": "]", "{": "}", "<": ">"}
STAGES = ("compute", "vertex", "fragment")
Attrs = dict[str, tuple[int, int]]  # attribute name -> token range of its arguments


def _close_scope(scopes: list[tuple[set[str], bool]], active: dict[str, int]) -> None:
    for name in scopes.pop()[0]:
        active[name] -= 1


def _pairs(texts: list[str]) -> dict[int, int]:
    """Opening ( [ { index -> index just past its closing bracket, for balanced pairs."""
    pairs, stack = {}, []
    for k, text in enumerate(texts):
        if text in ("(", "[", "{"):
            stack.append(k)
        elif text in (")", "]", "}") and stack and _CLOSE[texts[stack[-1]]] == text:
            pairs[stack.pop()] = k + 1
    return pairs


def round_up(align: int, size: int) -> int:
    return (size + align - 1) // align * align


class Module:
    """Module-scope declarations of one WGSL text; constants and layouts evaluated lazily."""

    def __init__(self, text: str, overrides: Mapping[str, float] | None = None) -> None:
        self.text = strip_comments(text)
        self.t = Tokens(self.text)
        self.consts: dict[str, tuple[int, int]] = {}  # name -> token range of the initializer
        self.const_types: dict[str, str | None] = {}  # name -> declared type, if any
        self.overrides: dict[str, int] = {}  # override name -> token index of its name
        self.given = dict(overrides or {})  # values for overrides (pipeline constants)
        self.access: dict[str, str] = {}  # module var -> access mode written in var<space, mode>
        self.stages: dict[str, str] = {}  # every entry point -> compute / vertex / fragment
        self.stage_attrs: dict[str, Attrs] = {}  # every entry point's attributes
        self.diagnostics: list[tuple[str, str]] = []  # diagnostic(severity, rule) directives
        self.fn_attrs: dict[str, Attrs] = {}  # every function's attributes
        self.member_attrs: dict[str, dict[str, Attrs]] = {}  # struct -> member -> attributes
        self.aliases: dict[str, Any] = {}
        self.structs: dict[str, list[tuple[Any, Attrs]]] = {}
        self.vars: list[tuple[str, str, Any, Attrs, int]] = []  # space, name, type, attrs, line
        self.entries: dict[str, Attrs] = {}  # @compute functions, in declaration order
        self.fns: dict[str, tuple[int, int, int]] = {}  # name -> "(" of params, "{", end of body
        self.enables: set[str] = set()
        self._values: dict[str, int | None] = {}  # None while being evaluated (cycle check)
        self._refs: dict[str, set[str]] = {}
        self.texts, self.kinds = self.t.texts, self.t.kinds
        self._pairs = _pairs(self.texts)
        self._layouts: dict[str, tuple[int, int] | None] = {}
        self._parse()

    # -- scanning --------------------------------------------------------------------------
    def _at(self, i: int) -> str:
        return self.texts[i] if 0 <= i < len(self.texts) else ""

    def idents(self, start: int, end: int) -> list[str]:
        """The identifiers among tokens ``start:end``."""
        return self._idents(start, end)

    def _idents(self, start: int, end: int) -> list[str]:
        """The identifiers among tokens ``start:end``."""
        pairs = zip(self.texts[start:end], self.kinds[start:end], strict=True)
        return [text for text, kind in pairs if kind == "ident"]

    def _fail(self, i: int, why: str) -> WgslgenError:
        line = self.t[min(i, len(self.t) - 1)].line if self.t else 1
        return WgslgenError(f"line {line}: {why}")

    def _match(self, i: int) -> int:
        """Index just past the bracket that closes the one at ``i``."""
        if i in self._pairs:
            return self._pairs[i]
        opener, depth, texts = self._at(i), 0, self.texts
        for j in range(i, len(texts)):
            depth += (texts[j] == opener) - (texts[j] == _CLOSE[opener])
            if depth == 0:
                return j + 1
        raise self._fail(i, f"unbalanced {opener!r}")

    def _skip_to(self, i: int, stops: tuple[str, ...], end: int | None = None) -> int:
        """Index of the next token in ``stops`` outside ( [ { brackets, from ``i``."""
        end = len(self.t) if end is None else end
        texts = self.texts
        while i < end and texts[i] not in stops:
            i = self._match(i) if texts[i] in ("(", "[", "{") else i + 1
        if i >= end and end == len(self.t):
            raise self._fail(i, f"expected {stops[0]!r}")
        return i

    def _expect(self, i: int, text: str) -> int:
        if self._at(i) != text:
            raise self._fail(i, f"expected {text!r}, found {self._at(i)!r}")
        return i + 1

    def split_args(self, start: int, end: int) -> list[tuple[int, int]]:
        """Comma-separated token ranges between ``start`` and ``end``."""
        out = []
        while start < end:
            comma = self._skip_to(start, (",",), end)
            out.append((start, comma))
            start = comma + 1
        return out

    # -- declarations ----------------------------------------------------------------------
    def _attrs(self, i: int) -> tuple[Attrs, int]:
        attrs: Attrs = {}
        while self._at(i) == "@":
            name, i = self._at(i + 1), i + 2
            attrs[name] = (i + 1, self._match(i) - 1) if self._at(i) == "(" else (i, i)
            i = self._match(i) if self._at(i) == "(" else i
        return attrs, i

    def _parse(self) -> None:
        i = 0
        while i < len(self.t):
            attrs, i = self._attrs(i)
            word, name = self._at(i), self._at(i + 1)
            if word == "struct":
                i = self._struct(name, i + 2)
            elif word == "fn":
                body = self._skip_to(i, ("{",))
                self.fns[name] = (self._expect(i + 2, "(") - 1, body, self._match(body))
                self.fn_attrs[name] = attrs
                if "compute" in attrs:
                    self.entries[name] = attrs
                for stage in (s for s in STAGES if s in attrs):
                    self.stages[name], self.stage_attrs[name] = stage, attrs
                i = self.fns[name][2]
            else:  # a declaration that ends with ';'
                end = self._skip_to(i, (";",))
                if word == "enable":
                    self.enables.update(self._idents(i + 1, end))
                elif word in ("const", "override"):
                    eq = self._skip_to(i, ("=",), end)
                    self.consts[name] = (eq + 1, end) if eq < end else (end, end)
                    typed = self._at(i + 2) == ":"
                    self.const_types[name] = self._at(i + 3) if typed else None
                    if word == "override":
                        self.overrides[name] = i + 1
                elif word == "diagnostic":
                    words = self._idents(i + 1, end)
                    if len(words) >= 2:
                        self.diagnostics.append((words[0], ".".join(words[1:])))
                elif word == "alias":
                    self.aliases[name] = self._type(self._expect(i + 2, "="))[0]
                elif word == "var":
                    self._var(i + 1, attrs)
                i = end + 1  # also skips requires, diagnostic, const_assert

    def _struct(self, name: str, i: int) -> int:
        body_end = self._match(i) - 1
        members, j = [], i + 1
        while True:
            attrs, j = self._attrs(j)
            if j >= body_end:
                break
            self.member_attrs.setdefault(name, {})[self._at(j)] = attrs
            typ, j = self._type(self._expect(j + 1, ":"))
            members.append((typ, attrs))
            j += self._at(j) == ","
        self.structs[name] = members
        return body_end + 1

    def _var(self, i: int, attrs: Attrs) -> None:
        space = self._at(i + 1) if self._at(i) == "<" else "handle"
        if self._at(i) == "<":
            i = self._match(i)
            self.access[self._at(i)] = self._at(i - 2) if self._at(i - 3) == "," else "read"
        typ, after = self._type(i + 2) if self._at(i + 1) == ":" else (None, i)
        if typ and typ[0] == "opaque" and typ[1].startswith("texture_storage"):
            self.access[self._at(i)] = self._at(after - 2)  # texture_storage_2d<fmt, access>
        self.vars.append((space, self._at(i), typ, attrs, i))

    def _type(self, i: int) -> tuple[Any, int]:
        """Parse the type at token ``i`` into a small tuple tree; returns it and the next index."""
        name, line, i = self._at(i), i, i + 1  # "line" holds the token index until an error
        if name in _SCALARS:
            return ("scalar", name), i
        if m := re.fullmatch(r"vec([234])([fihu]?)|mat([234])x([234])([fh]?)|(atomic)", name):
            suffix = m.group(2) or m.group(5)
            if suffix:
                elem: Any = ("scalar", _SUFFIX_SCALAR[suffix])
            else:
                elem, i = self._type(self._expect(i, "<"))
                i = self._expect(i, ">")
            if m.group(1):
                return ("vec", int(m.group(1)), elem), i
            return (
                ("mat", int(m.group(3)), int(m.group(4)), elem) if m.group(3) else ("atomic",)
            ), i
        if name == "array":
            elem, i = self._type(self._expect(i, "<"))
            count = None
            if self._at(i) == "," and self._at(i + 1) != ">":
                end = self._skip_to(i + 1, (">", ","))
                count, i = (i + 1, end), end
            i += self._at(i) == ","  # a trailing comma is allowed
            return ("array", elem, count, line), self._expect(i, ">")
        if self._at(i) == "<":  # textures, pointers and other types without a layout
            return ("opaque", name, line), self._match(i)
        return ("named", name, line), i

    # -- function bodies -------------------------------------------------------------------
    def references(self, fn: str) -> set[str]:
        """Module-scope names used in the body of ``fn`` (computed once per function)."""
        if fn not in self._refs:
            self._refs[fn] = self._references(fn)
        return self._refs[fn]

    def _references(self, fn: str) -> set[str]:
        """Identifiers in the body of ``fn`` that resolve at module scope.

        Not counted: struct members and swizzles (after ``.``), attribute names, parameters,
        and locals (let/var/const) from the end of their declaration to the end of their block.
        Keywords, types and built-ins come along too; callers intersect with what they look for.
        """
        params, i, end = self.fns[fn]
        args = self.split_args(params + 1, self._match(params) - 1)  # may split ptr<a, b>
        names = {self._at(k) for a, _ in args if self._at((k := self._attrs(a)[1]) + 1) == ":"}
        scopes: list[tuple[set[str], bool]] = [(names, False)]  # (names, ends with its body)
        active = dict.fromkeys(names, 1)  # name -> how many open scopes declare it
        found: set[str] = set()
        pending: tuple[int, str] | None = None  # a local's scope starts after its ';'
        texts, kinds = self.texts, self.kinds
        while i < end:
            text = texts[i]
            if pending and i == pending[0]:
                if pending[1] not in scopes[-1][0]:
                    scopes[-1][0].add(pending[1])
                    active[pending[1]] = active.get(pending[1], 0) + 1
                pending = None
            if text in ("{", "for"):  # a for statement scopes its init declaration
                scopes.append((set(), text == "for"))
            elif text == "}":
                _close_scope(scopes, active)
                while scopes and scopes[-1][1]:
                    _close_scope(scopes, active)
            elif text in ("let", "var", "const"):
                j = self._match(i + 1) if self._at(i + 1) == "<" else i + 1
                pending = (self._skip_to(j, (";",), end), self._at(j))
                i = j  # the initializer is read as usual: it still sees the outer name
            elif kinds[i] == "ident" and texts[i - 1] not in (".", "@") and not active.get(text):
                found.add(text)
            i += 1
        return found

    # -- constant expressions ---------------------------------------------------------------
    def value(self, name: str, at: int) -> int:
        """The integer value of module-scope constant ``name`` (referenced at token ``at``)."""
        if name in self._values:
            if (v := self._values[name]) is None:
                raise self._fail(at, f"constant `{name}` is defined in terms of itself")
            return v
        if name not in self.consts:
            raise self._fail(at, f"unknown constant `{name}`")
        if name in self.overrides and name in self.given:
            value = self.given[name]
            if value != int(value):
                raise self._fail(at, f"override `{name}` = {value} is not an integer")
            return int(value)
        start, end = self.consts[name]
        if start == end:
            line = self.t[min(at, len(self.t) - 1)].line
            raise MissingOverride(f"line {line}: override `{name}` has no default value", name)
        self._values[name] = None
        try:
            self._values[name] = v = self.evaluate(start, end)
        except WgslgenError:
            del self._values[name]
            raise
        return v

    def evaluate(self, start: int, end: int) -> int:
        """Evaluate the integer const-expression held by tokens ``start:end`` (no eval())."""
        return Evaluator(self, start, end).run()

    # -- memory layout (WGSL §14.4) ---------------------------------------------------------
    def layout(self, typ: Any) -> tuple[int, int]:
        """(alignment, size) of a type under WGSL's memory layout rules."""
        kind, *rest = typ
        if kind == "scalar":
            return _SCALARS[rest[0]]
        if kind == "atomic":
            return 4, 4
        if kind == "vec":
            n, size = rest[0], self.layout(rest[1])[1]
            return (4 if n == 3 else n) * size, n * size
        if kind == "mat":  # columns of vecR, each padded to its alignment
            align, size = self.layout(("vec", rest[1], rest[2]))
            return align, rest[0] * round_up(align, size)
        if kind == "array":
            elem, count, line = rest
            align, size = self.layout(elem)
            if count is None:
                raise self._fail(line, "a runtime-sized array has no fixed size")
            if (n := self.evaluate(*count)) <= 0:
                raise self._fail(line, f"array element count {n} is not positive")
            return align, n * round_up(align, size)
        name, line = rest
        if kind == "named" and name in self.aliases:
            return self.layout(self.aliases[name])
        if kind == "named" and name in self.structs:
            return self._struct_layout(name, line)
        why = "has no memory layout" if kind == "opaque" else "is unknown"
        raise self._fail(line, f"type `{name}` {why}")

    def _struct_layout(self, name: str, line: int) -> tuple[int, int]:
        if name in self._layouts:
            if (got := self._layouts[name]) is None:
                raise self._fail(line, f"struct `{name}` contains itself")
            return got
        self._layouts[name] = None
        offset, struct_align = 0, 1
        for typ, attrs in self.structs[name]:
            align, size = self.layout(typ)
            align = self.evaluate(*attrs["align"]) if "align" in attrs else align
            size = self.evaluate(*attrs["size"]) if "size" in attrs else size
            offset = round_up(align, offset) + size
            struct_align = max(struct_align, align)
        self._layouts[name] = got = (struct_align, round_up(struct_align, offset))
        return got
