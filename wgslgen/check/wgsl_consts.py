"""WGSL integer const-expressions read without a compiler: values (no eval()) and types.

The evaluator serves array sizes and ``@workgroup_size``; the type reader serves Tint's rule
that ``@workgroup_size`` arguments are all ``i32`` or all ``u32`` (abstract ints adapt).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from wgslgen.errors import WgslgenError

_BINARY_OPS = (("<<", ">>"), ("+", "-"), ("*", "/", "%"))  # loosest binding first
_FUNCS: dict[str, Callable[..., int]] = {"min": min, "max": max, "abs": abs, "u32": int, "i32": int}


class MissingOverride(WgslgenError):
    """An override without a default value and without a value given for it."""

    def __init__(self, message: str, name: str) -> None:
        super().__init__(message)
        self.name = name


class Evaluator:
    """Precedence-climbing evaluator of WGSL integer const-expressions over a Module's tokens."""

    def __init__(self, module: Any, start: int, end: int) -> None:
        self.m, self.i, self.start, self.end = module, start, start, end

    def run(self) -> int:
        """The expression's value; WgslgenError naming the line when it cannot be computed."""
        v = self._binary(0)
        if self.i != self.end:
            raise self._error(f"unexpected {self._peek()!r}")
        return v

    def _error(self, why: str) -> WgslgenError:
        first, last = self.m.t[self.start], self.m.t[max(self.start, self.end - 1)]
        text = " ".join(self.m.text[first.pos : last.pos + len(last.text)].split())
        return self.m._fail(self.start, f"cannot evaluate `{text}`: {why}")

    def _peek(self, k: int = 0) -> str:
        return self.m.texts[self.i + k] if self.i + k < self.end else ""

    def _binary(self, level: int) -> int:
        if level == len(_BINARY_OPS):
            return self._unary()
        v = self._binary(level + 1)
        while True:
            op = self._peek()
            if op in ("<", ">") and self._peek(1) == op:  # << and >> arrive as two tokens
                op *= 2
            if op not in _BINARY_OPS[level]:
                return v
            self.i += len(op)
            rhs = self._binary(level + 1)
            if op in ("/", "%"):
                if rhs == 0:
                    raise self._error("division by zero")
                # WGSL integer division truncates toward zero, like C, unlike Python's //.
                q = abs(v) // abs(rhs) * (1 if (v >= 0) == (rhs >= 0) else -1)
                v = q if op == "/" else v - q * rhs
            elif op in ("<<", ">>"):
                if rhs < 0:
                    raise self._error(f"negative shift by {rhs}")
                v = v << rhs if op == "<<" else v >> rhs
            else:
                v = v + rhs if op == "+" else v - rhs if op == "-" else v * rhs

    def _unary(self) -> int:
        if self._peek() == "-":
            self.i += 1
            return -self._unary()
        if self.i >= self.end:
            raise self._error("expression ends early")
        text, kind = self.m.texts[self.i], self.m.kinds[self.i]
        self.i += 1
        if kind == "num":
            if text[:2] in ("0x", "0X"):
                return int(text[2:].rstrip("iu"), 16)
            if text[-1] in "fh" or "." in text or "e" in text.lower():
                raise self._error(f"`{text}` is not an integer")
            return int(text.rstrip("iu"))
        if text == "(":
            v = self._binary(0)
            self.i = self._close(")")
            return v
        if kind != "ident":
            raise self._error(f"unexpected {text!r}")
        if self._peek() != "(":
            return self.m.value(text, self.i - 1)
        if text not in _FUNCS:
            raise self._error(f"function `{text}` is not supported here")
        self.i += 1
        args = [self._binary(0)]
        while self._peek() == "," and self._peek(1) != ")":
            self.i += 1
            args.append(self._binary(0))
        self.i += self._peek() == ","  # a trailing comma is allowed
        self.i = self._close(")")
        return _FUNCS[text](*args)

    def _close(self, text: str) -> int:
        if self._peek() != text:
            raise self._error(f"expected {text!r}, found {self._peek() or 'the end'!r}")
        return self.i + 1


def expression_type(module: Any, start: int, end: int, seen: frozenset[str] = frozenset()) -> str:
    """'i32', 'u32', 'abstract' or '?' (unknown) for the integer expression at ``start:end``.

    WGSL's rules for the cases ``@workgroup_size`` meets: a suffixed literal is concrete, an
    unsuffixed one abstract; a constant has its declared type or its initializer's; an
    abstract operand converts to the other operand's concrete type.
    """
    out, k = "abstract", start
    while k < end:
        text, kind, k = module.texts[k], module.kinds[k], k + 1
        if kind == "num":
            got = {"i": "i32", "u": "u32"}.get(text[-1], "abstract")
        elif kind == "ident" and text in ("i32", "u32") and module._at(k) == "(":
            got, k = text, module._match(k)  # a conversion: its argument's type is moot
        elif kind == "ident" and text in module.consts and text not in seen:
            got = module.const_types.get(text) or expression_type(
                module, *module.consts[text], seen | {text}
            )
        else:
            continue
        if got in ("?", "mixed") or (out != "abstract" and got not in ("abstract", out)):
            return "?" if got == "?" else "mixed"
        out = got if got != "abstract" else out
    return out
