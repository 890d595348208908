"""Uniformity analysis (WGSL §15.2), as Tint applies it, without a compiler.

Barriers and ``workgroupUniformLoad`` must be reached by every invocation of a workgroup
together, derivatives (and implicit-LOD sampling) by every invocation of a quad, subgroup
operations by every invocation of a subgroup. The specification tracks, per function, which
values and which points of control flow may differ between invocations; this module does the
same with three levels: 0 uniform, 1 uniform within a subgroup only, 2 non-uniform.

Sources of non-uniformity (§15.2.7): built-in inputs that differ per invocation
(local/global invocation ids; every vertex and fragment input), reads of ``read_write``
storage, ``workgroup`` and ``private`` variables, atomics, values computed in non-uniform
control flow. Control flow becomes non-uniform inside a branch on a non-uniform value, and
stays so after a statement that can ``return``/``break``/``continue`` on one (a statement whose
only behaviour is Next reconverges). A function records which of its parameters must be
uniform and whether its result depends on them, so a call is judged at the call site; the
error points at the built-in, as Tint's does. ``derivative_uniformity`` and
``subgroup_uniformity`` honour ``diagnostic(...)`` directives and ``@diagnostic`` attributes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from wgslgen.check.behaviour import NEXT, Behaviours
from wgslgen.check.stage_rules import BARRIERS, DERIVATIVES, Finding, at
from wgslgen.check.wgsl_body import BodyParser, Stmt
from wgslgen.check.wgsl_reader import Module

_UNIFORM_BUILTINS = {"workgroup_id": 0, "num_workgroups": 0, "subgroup_size": 0,
                     "num_subgroups": 0, "subgroup_id": 1}  # fmt: skip
# Subgroup operations whose result is the same across the subgroup.
_SUBGROUP_UNIFORM_RESULT = {
    "subgroupAdd", "subgroupMul", "subgroupMin", "subgroupMax", "subgroupAnd", "subgroupOr",
    "subgroupXor", "subgroupAll", "subgroupAny", "subgroupBallot", "subgroupBroadcast",
    "subgroupBroadcastFirst",
}  # fmt: skip
_GENERIC_TYPES = frozenset(
    {"vec2", "vec3", "vec4", "array", "atomic", "ptr"}
    | {f"mat{c}x{r}" for c in "234" for r in "234"}
)
# A `&` after one of these is the address-of operator, not a bitwise and.
_UNARY_BEFORE = frozenset(
    ["(", ",", "=", "&", "|", "^", "+", "-", "*", "/", "%", "<", ">", "!", "~", "[", "{"]
)
_RULES = {"derivative": "derivative_uniformity", "subgroup": "subgroup_uniformity"}


def _kind(builtin: str) -> str | None:
    if builtin in BARRIERS:
        return "barrier"
    if builtin in DERIVATIVES:
        return "derivative"
    if builtin.startswith(("subgroup", "quad")) and builtin != "subgroupBarrier":
        return "subgroup"
    return None


@dataclass
class Summary:
    """What a call site needs to know about a function."""

    requires: tuple[str, int, str] | None = None  # (builtin, token, kind) needing uniform CF
    param_requires: dict[int, tuple[str, int, str]] = field(default_factory=dict)
    returns: int = 0  # the result: its level and the parameters it depends on
    writes: dict[int, int] = field(default_factory=dict)  # pointer param -> value written


# A value is an int: its two low bits hold the level (0, 1, 2); bit 2 stands for the control
# flow at the call site, bit 3 + i for parameter i. One pass over a function then tells what
# its call sites need (requirements met only if the caller's values are uniform) and what its
# result depends on.
LEVEL, CALLER = 3, 4


def join(*values: int) -> int:
    """The least upper bound: the highest level, the union of dependencies."""
    level = deps = 0
    for v in values:
        level = max(level, v & LEVEL)
        deps |= v
    return level | (deps & ~LEVEL)


def _param(i: int) -> int:
    return 1 << (3 + i)


def _allowed(kind: str) -> int:
    return 1 if kind == "subgroup" else 0


def _message(builtin: str, kind: str) -> str:
    scope = "subgroup uniform" if kind == "subgroup" else "uniform"
    return f"'{builtin}' must only be called from {scope} control flow"


class _Function:
    """One pass over one function with given parameter levels."""

    def __init__(self, an: Analysis, name: str, params: list[tuple[str, int]]) -> None:
        self.an, self.m, self.name = an, an.m, name
        self.env: dict[str, int] = dict(params)
        self.params = [p for p, _ in params]
        self.result = Summary()
        self.errors: list[tuple[str, int, str]] = []
        self.severity = [dict(an.global_severity)]

    # -- expressions ---------------------------------------------------------------------
    def expr(self, rng: tuple[int, int] | None, cf: int) -> int:
        """The uniformity level of the expression held by tokens ``rng``, computed at ``cf``."""
        if rng is None:
            return cf
        m, level, k, end = self.m, cf, rng[0], rng[1]
        texts, idents = m.texts, self.an.idents
        while k < end:
            text = texts[k]
            if k not in idents:
                # address-of (a unary `&`): the variable is not read
                k += 2 if text == "&" and (k == rng[0] or texts[k - 1] in _UNARY_BEFORE) else 1
                continue
            if k > rng[0] and texts[k - 1] == ".":
                k += 1
                continue
            after = texts[k + 1] if k + 1 < len(texts) else ""
            if after == "<" and text in _GENERIC_TYPES:  # vec3<f32>(...)
                k = m._match(k + 1)
                if m._at(k) == "(":
                    close = m._match(k)
                    level = join(level, self._call(text, k - 1, k, close, cf, typed=True))
                    k = close
                continue
            if after == "(":
                close = m._match(k + 1)
                level = join(level, self._call(text, k, k + 1, close, cf))
                k = close
                continue
            level = join(level, self._read(text))
            k += 1
        return level

    def _read(self, name: str) -> int:
        if name in self.env:
            return self.env[name]
        var = self.an.globals.get(name)
        if var is None:
            return 0  # constants, overrides, types, enumerants
        space, access = var
        if space == "storage":
            return 2 if access == "read_write" else 0
        return 2 if space in ("workgroup", "private") else 0

    def _args(self, open_: int, close: int) -> list[tuple[int, int]]:
        return self.m.split_args(open_ + 1, close - 1) if close - 1 > open_ + 1 else []

    def _call(self, fn: str, tok: int, open_: int, close: int, cf: int, typed: bool = False) -> int:
        args = self._args(open_, close)
        levels = [self.expr(a, cf) for a in args]
        if not typed and fn in self.an.summaries:
            return self._user_call(fn, args, levels, cf)
        kind = None if typed else _kind(fn)
        if kind:
            self._require(fn, tok, kind, cf)
        if fn == "workgroupUniformLoad" or fn == "arrayLength":
            return cf
        if fn.startswith("atomic") or fn == "subgroupElect" or fn.startswith("quad"):
            return 2
        if fn in _SUBGROUP_UNIFORM_RESULT:
            return join(cf, 1)
        return join(cf, *levels)

    def _user_call(self, fn: str, args: list, levels: list[int], cf: int) -> int:
        callee = self.an.summaries[fn]
        if callee.requires:
            self._require(*callee.requires, cf)
        for i, need in callee.param_requires.items():
            if i < len(levels):
                self._require(*need, levels[i])
        for i, written in callee.writes.items():
            if i < len(args) and self.m._at(args[i][0]) == "&":
                target = self.m._at(args[i][0] + 1)
                if target in self.env:
                    self.env[target] = join(self.env[target], written & LEVEL, cf, *levels)
        deps = [v for i, v in enumerate(levels) if callee.returns & _param(i)]
        return join(cf, callee.returns & LEVEL, *deps)

    def _require(self, builtin: str, tok: int, kind: str, value: int) -> None:
        rule = _RULES.get(kind)
        if rule and self.severity[-1].get(rule, "error") != "error":
            return
        if value & LEVEL > _allowed(kind):
            self.errors.append((builtin, tok, kind))
            return
        need = (builtin, tok, kind)  # met if the caller's control flow / arguments are
        if value & CALLER and self.result.requires is None:
            self.result.requires = need
        for i in range(len(self.params)):
            if value & _param(i):
                self.result.param_requires.setdefault(i, need)

    # -- statements ----------------------------------------------------------------------
    def block(self, stmts: list[Stmt], cf: int) -> int:
        declared: dict[str, int | None] = {}
        for s in stmts:
            if s.kind == "decl" and s.lhs:
                name = self.m._at(s.lhs[0])
                declared.setdefault(name, self.env.get(name))
            cf = self.statement(s, cf)
        for name, before in declared.items():  # locals go out of scope; shadowed names return
            if before is None:
                self.env.pop(name, None)
            else:
                self.env[name] = before
        return cf

    def statement(self, s: Stmt, cf: int) -> int:
        pushed = self._push(s)
        try:
            return self._statement(s, cf)
        finally:
            if pushed:
                self.severity.pop()

    def _push(self, s: Stmt) -> bool:
        if "diagnostic" not in s.attrs:
            return False
        self.severity.append({**self.severity[-1], **self.an.filter(s.attrs["diagnostic"])})
        return True

    def _statement(self, s: Stmt, cf: int) -> int:
        kind = s.kind
        if kind == "decl":
            self.env[self.m._at(s.lhs[0])] = self.expr(s.expr, cf)
        elif kind == "assign":
            self._assign(s, cf)
        elif kind == "incr":
            name = self.m._at(s.lhs[0])
            if name in self.env:
                self.env[name] = join(self.env[name], cf)
        elif kind == "expr":
            self.expr(s.expr, cf)
        elif kind == "return":
            self.result.returns = join(self.result.returns, self.expr(s.expr, cf))
        elif kind == "block":
            return self.block(s.body, cf)
        elif kind in ("if", "switch"):
            return self._branch(s, cf)
        elif kind in ("loop", "for", "while"):
            return self._loop(s, cf)
        return cf

    def _assign(self, s: Stmt, cf: int) -> None:
        lo, hi = s.lhs
        deref = self.m._at(lo) == "*"
        lo += deref + (self.m._at(lo + deref) == "(")
        name = self.m._at(lo)
        value = join(self.expr(s.expr, cf), self.expr((lo + 1, hi), cf))
        if name in self.params and deref:
            i = self.params.index(name)
            self.result.writes[i] = join(self.result.writes.get(i, 0), value)
        if name in self.env:
            whole = s.op == "=" and hi == lo + 1
            self.env[name] = value if whole else join(self.env[name], value)

    def _merge(self, envs: list[dict[str, int]]) -> None:
        for name in self.env:
            self.env[name] = join(*(e.get(name, 0) for e in envs))

    def _branch(self, s: Stmt, cf: int) -> int:
        cond = join(cf, self.expr(s.expr, cf))
        start = dict(self.env)
        arms = [s.body, s.orelse or []] if s.kind == "if" else (s.cases or [[]])
        envs, ends = [], [cond]
        for arm in arms:
            self.env = dict(start)
            ends.append(self.block(arm, cond))
            envs.append(self.env)
        self.env = dict(start)
        self._merge(envs)
        return cf if self.an.beh.of(s) <= {NEXT} else join(*ends)

    def _loop(self, s: Stmt, cf: int) -> int:
        outer = set(self.env)
        if s.init is not None:
            self.statement(s.init, cf)
        head, end = cf, cf
        for _ in range(4):  # a fixed point: levels only grow, three levels deep
            before = (dict(self.env), head)
            if s.expr is not None:  # for/while: `if !(cond) { break; }` first
                end = join(head, self.expr(s.expr, head))
            body_end = self.block(s.body, end if s.expr is not None else head)
            end = body_end
            if s.continuing is not None:
                end = self._continuing(s.continuing, body_end)
            if s.update is not None:
                self.statement(s.update, end)
            head = join(head, end)
            if (dict(self.env), head) == before:
                break
        for name in set(self.env) - outer:  # the for-init's variable ends with the loop
            self.env.pop(name)
        return cf if self.an.beh.of(s) <= {NEXT} else head

    def _continuing(self, stmts: list[Stmt], cf: int) -> int:
        for s in stmts:
            brk = s.kind == "break_if"
            cf = join(cf, self.expr(s.expr, cf)) if brk else self.statement(s, cf)
        return cf


class Analysis:
    """The uniformity analysis of a whole module."""

    def __init__(self, mod: Module, parser: BodyParser, beh: Behaviours) -> None:
        self.m, self.parser, self.beh = mod, parser, beh
        self.globals = {name: (space, mod.access.get(name, "read")) for space, name, *_ in mod.vars}
        self.global_severity = {rule: sev for sev, rule in mod.diagnostics}
        self.summaries: dict[str, Summary] = {}
        self.idents = {k for k, kind in enumerate(mod.kinds) if kind == "ident"}

    def filter(self, args: tuple[int, int]) -> dict[str, str]:
        """``{rule: severity}`` of one ``@diagnostic(severity, rule)`` attribute."""
        words = self.m._idents(*args)
        return {".".join(words[1:]): words[0]} if len(words) >= 2 else {}

    def params(self, fn: str) -> list[tuple[str, int, str]]:
        """(name, level as an entry point input, builtin) of each parameter of ``fn``."""
        m = self.m
        open_, _, _ = m.fns[fn]
        stage = m.stages.get(fn)
        out = []
        for a, _ in m.split_args(open_ + 1, m._match(open_) - 1):
            attrs, k = m._attrs(a)
            if m._at(k + 1) != ":":
                continue
            builtin = m._at(attrs["builtin"][0]) if "builtin" in attrs else ""
            level = 2 if stage != "compute" or not builtin else _UNIFORM_BUILTINS.get(builtin, 2)
            members = m.member_attrs.get(m._at(k + 2), {}) if stage == "compute" else {}
            if members:  # a struct of built-in inputs: as non-uniform as its least uniform one
                level = max(
                    _UNIFORM_BUILTINS.get(m._at(a["builtin"][0]), 2) if "builtin" in a else 2
                    for a in members.values()
                )
            out.append((m._at(k), level, builtin))
        return out

    def run(self) -> list[Finding]:
        """Every uniformity error of the module, callees judged before their callers."""
        findings: list[Finding] = []
        sensitive: set[str] = set()  # functions that reach a built-in needing uniformity
        for fn in self._order():
            entry = fn in self.m.stages
            if self._sensitive(fn, sensitive):
                sensitive.add(fn)
            elif entry:
                continue  # an entry point that reaches no such built-in cannot break the rule
            params = self.params(fn)
            if entry:
                values = [(p, level) for p, level, _ in params]
            else:
                values = [(p, _param(i)) for i, (p, _, _) in enumerate(params)]
            f = _Function(self, fn, values)
            if "diagnostic" in self.m.fn_attrs.get(fn, {}):
                rules = self.filter(self.m.fn_attrs[fn]["diagnostic"])
                f.severity.append({**f.severity[-1], **rules})
            f.block(self.parser.function(fn), 0 if entry else CALLER)
            findings += [self._finding(e) for e in f.errors[:1]]
            self.summaries[fn] = f.result
        return findings[:1]

    def _sensitive(self, fn: str, known: set[str]) -> bool:
        """Whether ``fn`` calls a built-in that needs uniformity, or a function that does."""
        _, body, end = self.m.fns[fn]
        texts = self.m.texts
        return any(
            texts[k + 1] == "(" and (texts[k] in known or _kind(texts[k]) is not None)
            for k in range(body, end - 1)
            if k in self.idents
        )

    def _finding(self, error: tuple[str, int, str]) -> Finding:
        builtin, tok, kind = error
        return at(self.m, tok, "uniformity", _message(builtin, kind))

    def _order(self) -> list[str]:
        """Functions, every callee before its callers (WGSL forbids recursion)."""
        done: list[str] = []

        def visit(fn: str, path: tuple[str, ...]) -> None:
            if fn in done or fn in path:
                return
            for callee in sorted(self.m.references(fn) & self.m.fns.keys()):
                visit(callee, (*path, fn))
            done.append(fn)

        for fn in self.m.fns:
            visit(fn, ())
        return done
