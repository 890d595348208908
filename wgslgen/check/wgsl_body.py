"""Function bodies as statement trees: what the behaviour and uniformity analyses walk.

Expressions stay token ranges of the Module (the analyses scan them); statements become
``Stmt`` nodes. ``for`` and ``while`` are kept as they are written (the analyses apply the
specification's desugaring to ``loop`` with a conditional ``break``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from wgslgen.check.wgsl_reader import Attrs, Module

Range = tuple[int, int]


@dataclass
class Stmt:
    """One statement. ``tok`` is its first token (where Tint points for loops)."""

    kind: str  # block if switch loop for while return break break_if continue discard
    # decl assign incr expr
    tok: int
    expr: Range | None = None  # condition, selector, returned value, initializer, rhs
    lhs: Range | None = None  # assignment target; decl: the declared name's token
    op: str = ""  # assignment operator ("=", "+=", ...)
    body: list[Stmt] = field(default_factory=list)
    orelse: list[Stmt] | None = None
    cases: list[list[Stmt]] = field(default_factory=list)
    continuing: list[Stmt] | None = None
    init: Stmt | None = None  # for (init; cond; update)
    update: Stmt | None = None
    attrs: Attrs = field(default_factory=dict)  # @diagnostic(...) on the statement or its body


class BodyParser:
    """Recursive-descent parser of one Module's function bodies."""

    def __init__(self, mod: Module) -> None:
        self.m = mod
        # Parsed once and kept: the analyses memoise per node, by identity.
        self._bodies: dict[str, list[Stmt]] = {}

    def function(self, name: str) -> list[Stmt]:
        """The statements of function ``name``'s body."""
        if name not in self._bodies:
            self._bodies[name] = self.block(self.m.fns[name][1])[0]
        return self._bodies[name]

    def block(self, i: int) -> tuple[list[Stmt], int]:
        """Statements of the ``{`` block at ``i``; returns them and the index after ``}``."""
        end = self.m._match(i) - 1
        out, i = [], i + 1
        while i < end:
            stmt, i = self.statement(i, end)
            if stmt is not None:
                out.append(stmt)
        return out, end + 1

    def _body(self, i: int) -> tuple[list[Stmt], int, Attrs]:
        attrs, i = self.m._attrs(i)
        stmts, i = self.block(i)
        return stmts, i, attrs

    def statement(self, i: int, end: int) -> tuple[Stmt | None, int]:
        """The statement at ``i`` (None for an empty one) and the index after it."""
        m = self.m
        attrs, i = m._attrs(i)
        word = m._at(i)
        if word == ";":
            return None, i + 1
        if word == "{":
            body, j = self.block(i)
            return Stmt("block", i, body=body, attrs=attrs), j
        if word in ("if", "while", "switch"):
            head = m._skip_to(i + 1, ("{", "@"), end)
            stmt = Stmt(word, i, expr=(i + 1, head), attrs=attrs)
            if word == "switch":
                return stmt, self._cases(stmt, head)
            stmt.body, j, inner = self._body(head)
            stmt.attrs = {**attrs, **inner}
            if word == "if" and m._at(j) == "else":
                if m._at(j + 1) == "if":
                    nested, j = self.statement(j + 1, end)
                    stmt.orelse = [nested] if nested else []
                else:
                    stmt.orelse, j, _ = self._body(j + 1)
            return stmt, j
        if word == "loop":
            return self._loop(i, attrs)
        if word == "for":
            return self._for(i, attrs)
        return self.simple(i, m._skip_to(i, (";",), end)), m._skip_to(i, (";",), end) + 1

    def _cases(self, stmt: Stmt, head: int) -> int:
        _, i = self.m._attrs(head)
        close = self.m._match(i) - 1
        i += 1
        while i < close:
            brace = self.m._skip_to(i, ("{",), close)
            attrs, _ = self.m._attrs(brace)  # never before "{" here; kept for symmetry
            body, i = self.block(brace)
            stmt.cases.append(body)
            stmt.attrs.update(attrs)
        return close + 1

    def _loop(self, i: int, attrs: Attrs) -> tuple[Stmt, int]:
        inner, j = self.m._attrs(i + 1)
        close = self.m._match(j) - 1
        stmt = Stmt("loop", i, attrs={**attrs, **inner})
        k = j + 1
        while k < close:
            if self.m._at(k) == "continuing":
                _, b = self.m._attrs(k + 1)
                stmt.continuing, k = self.block(b)
                continue
            s, k = self.statement(k, close)
            if s is not None:
                stmt.body.append(s)
        return stmt, close + 1

    def _for(self, i: int, attrs: Attrs) -> tuple[Stmt, int]:
        m = self.m
        close = m._match(i + 1) - 1
        first = m._skip_to(i + 2, (";",), close)
        second = m._skip_to(first + 1, (";",), close)
        stmt = Stmt("for", i, attrs=attrs)
        stmt.init = self.simple(i + 2, first) if first > i + 2 else None
        stmt.expr = (first + 1, second) if second > first + 1 else None
        stmt.update = self.simple(second + 1, close) if close > second + 1 else None
        stmt.body, j, inner = self._body(close + 1)
        stmt.attrs.update(inner)
        return stmt, j

    def simple(self, i: int, end: int) -> Stmt:
        """A statement without a body, held by tokens ``i:end`` (no ';')."""
        m = self.m
        word = m._at(i)
        if word == "return":
            return Stmt("return", i, expr=(i + 1, end))
        if word == "break":
            if m._at(i + 1) == "if":
                return Stmt("break_if", i, expr=(i + 2, end))
            return Stmt("break", i)
        if word in ("continue", "discard"):
            return Stmt(word, i)
        if word in ("let", "var", "const"):
            j = m._match(i + 1) if m._at(i + 1) == "<" else i + 1
            eq = m._skip_to(j, ("=",), end)
            return Stmt("decl", i, expr=(eq + 1, end) if eq < end else None, lhs=(j, j + 1))
        if word == "const_assert":
            return Stmt("expr", i, expr=(i, i))
        if m._at(end - 1) in ("+", "-") and m._at(end - 2) == m._at(end - 1):
            return Stmt("incr", i, lhs=(i, end - 2))
        eq = m._skip_to(i, ("=",), end)
        while eq < end and (m._at(eq + 1) == "=" or m._at(eq - 1) in ("=", "!")):
            eq = m._skip_to(eq + 2, ("=",), end)  # == and != are comparisons
        if eq >= end:
            return Stmt("expr", i, expr=(i, end))
        op_start = eq
        while m._at(op_start - 1) in "+-*/%&|^<>" and op_start - 1 > i:
            op_start -= 1
        op = "".join(m.texts[op_start : eq + 1])
        if op in ("<=", ">="):  # a comparison after all (rare at statement level)
            return Stmt("expr", i, expr=(i, end))
        return Stmt("assign", i, expr=(eq + 1, end), lhs=(i, op_start), op=op)
