"""Behaviour analysis (WGSL §9.7 "Statements Behavior Analysis"), as Tint applies it.

A statement's behaviour is the set of ways it can finish: Next, Break, Continue, Return.
Two rules follow that naga does not check: a loop whose body can neither break nor return
never exits ("loop does not exit", "for-loop does not exit"), and a function with a return
type whose body can finish with Next may fall off its end ("missing return at end of
function"). The uniformity analysis uses the same behaviours to decide where control flow
reconverges.
"""

from __future__ import annotations

from collections.abc import Iterable

from wgslgen.check.stage_rules import Finding, at
from wgslgen.check.wgsl_body import BodyParser, Stmt
from wgslgen.check.wgsl_reader import Module

NEXT, BREAK, CONTINUE, RETURN = "Next", "Break", "Continue", "Return"


class Behaviours:
    """Behaviours of every statement of a module's functions, and the loops that never exit."""

    def __init__(self, mod: Module) -> None:
        self.m = mod
        self.findings: list[Finding] = []
        self._memo: dict[int, frozenset[str]] = {}

    def of_block(self, stmts: Iterable[Stmt]) -> frozenset[str]:
        """Behaviour of a statement sequence: each statement runs if the previous can Next."""
        out = {NEXT}
        for s in stmts:
            if NEXT not in out:
                break  # the rest cannot run
            out = (out - {NEXT}) | self.of(s)
        return frozenset(out)

    def of(self, s: Stmt) -> frozenset[str]:
        """Behaviour of one statement (memoised per node)."""
        if id(s) not in self._memo:
            self._memo[id(s)] = self._compute(s)
        return self._memo[id(s)]

    def _compute(self, s: Stmt) -> frozenset[str]:
        kind = s.kind
        if kind == "block":
            return self.of_block(s.body)
        if kind == "return":
            return frozenset({RETURN})
        if kind == "break":
            return frozenset({BREAK})
        if kind == "continue":
            return frozenset({CONTINUE})
        if kind == "break_if":
            return frozenset({BREAK, NEXT})
        if kind == "if":
            other = self.of_block(s.orelse) if s.orelse is not None else {NEXT}
            return self.of_block(s.body) | other
        if kind == "switch":
            got = frozenset().union(*(self.of_block(c) for c in s.cases)) or {NEXT}
            return frozenset((got - {BREAK}) | ({NEXT} if BREAK in got else set()))
        if kind in ("loop", "for", "while"):
            return self._loop(s)
        return frozenset({NEXT})

    def _loop(self, s: Stmt) -> frozenset[str]:
        got = set(self.of_block(s.body))
        if s.continuing is not None:
            got |= self.of_block(s.continuing)
        if s.kind == "while" or (s.kind == "for" and s.expr is not None):
            got.add(BREAK)  # the condition is a conditional break
        if BREAK not in got and RETURN not in got:
            word = "for-loop" if s.kind == "for" else "loop"
            self.findings.append(at(self.m, s.tok, "behaviour", f"{word} does not exit"))
        out = got - {BREAK, CONTINUE, NEXT}
        return frozenset(out | ({NEXT} if BREAK in got else set()))

    def walk(self, stmts: Iterable[Stmt]) -> None:
        """Visit every nested statement, so each loop is judged once."""
        for s in stmts:
            self.of(s)
            for inner in (s.body, s.orelse or [], s.continuing or [], *s.cases):
                self.walk(inner)


def returns_value(mod: Module, name: str) -> bool:
    """Whether function ``name`` declares a return type (``-> T``)."""
    params, body, _ = mod.fns[name]
    return "->" in mod.texts[mod._match(params) : body]


def check_behaviour(mod: Module, parser: BodyParser, beh: Behaviours) -> list[Finding]:
    """Loops that never exit and functions that may not return a value."""
    for name in mod.fns:
        body = parser.function(name)
        beh.walk(body)
        if returns_value(mod, name) and NEXT in beh.of_block(body):
            end = mod.fns[name][2] - 1  # the closing brace
            beh.findings.append(at(mod, end, "behaviour", "missing return at end of function"))
    return beh.findings
