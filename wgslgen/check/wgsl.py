"""Facts read off rendered WGSL text, without a compiler: workgroup size and memory, enables.

A module may hold several @compute entry points (the passes of a multi-pass kernel); the facts
are those of one of them. Like Tint/Dawn, an entry point's workgroup memory counts only the
``var<workgroup>`` it *statically uses*: named in its body or in the body of any function it
calls, directly or not (comments, struct members and shadowing locals do not count). The
binding counts stay module-wide: see ``WgslFacts``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from wgslgen.check.wgsl_reader import Module, round_up, strip_comments
from wgslgen.errors import WgslgenError

__all__ = ["WgslFacts", "analyze", "compute_entry_points", "required_features", "strip_comments"]


@dataclass(frozen=True)
class WgslFacts:
    """What the static limit check needs to know about one entry point of a module.

    Per entry point: ``workgroup_size``, ``invocations``, ``workgroup_bytes`` and
    ``workgroup_vars`` (only the variables the entry point statically uses), ``used_vars``.
    Module-wide: ``enables``, ``uses_f16``, ``uses_subgroups`` (a device must offer the
    features to create the module at all), and the binding counts ``storage_buffers``,
    ``uniform_buffers``, ``uniform_bytes``, ``uniform_vars`` and ``bind_groups``: the harness
    builds every pass's pipeline layout from the kernel's whole declared interface, and WebGPU
    checks the per-stage buffer limits against that layout. (A ``layout: "auto"`` pipeline,
    as the validation engines create, holds only the bindings the entry point uses, so the
    module-wide counts are never lower than what those engines count.)
    """

    entry_point: str
    entry_points: tuple[str, ...]  # every @compute entry point of the module, in order
    workgroup_size: tuple[int, int, int]
    invocations: int
    workgroup_bytes: int  # sum over the used var<workgroup> of roundUp(16, roundUp(align, size))
    workgroup_vars: dict[str, int]  # the used var<workgroup>, in declaration order
    enables: frozenset[str]
    uses_f16: bool
    uses_subgroups: bool
    storage_buffers: int
    uniform_buffers: int
    uniform_bytes: int  # sum of the uniform bindings' sizes
    uniform_vars: dict[str, int]
    bind_groups: int  # highest @group index + 1
    used_vars: frozenset[str] = frozenset()  # module-scope vars (any space) statically used


_F16_TYPE = re.compile(r"f16|vec[234]h|mat[234]x[234]h")
# WGSL's subgroup and quad built-in functions (the `subgroups` extension), wgpu's
# subgroupBarrier, and the subgroup built-in values.
_SUBGROUP_FNS = frozenset(
    ("subgroupAdd", "subgroupExclusiveAdd", "subgroupInclusiveAdd", "subgroupAll", "subgroupAnd",
     "subgroupAny", "subgroupBallot", "subgroupBroadcast", "subgroupBroadcastFirst",
     "subgroupElect", "subgroupMax", "subgroupMin", "subgroupMul", "subgroupExclusiveMul",
     "subgroupInclusiveMul", "subgroupOr", "subgroupShuffle", "subgroupShuffleDown",
     "subgroupShuffleUp", "subgroupShuffleXor", "subgroupXor", "subgroupBarrier",
     "quadBroadcast", "quadSwapDiagonal", "quadSwapX", "quadSwapY")
)  # fmt: skip
_SUBGROUP_BUILTINS = {"subgroup_size", "subgroup_invocation_id", "num_subgroups", "subgroup_id"}


def compute_entry_points(source: str) -> tuple[str, ...]:
    """The names of the module's @compute entry points, in declaration order."""
    return tuple(Module(source).entries)


def _statically_used(mod: Module, entry_point: str) -> set[str]:
    """Module-scope names used by ``entry_point`` or any function it calls, transitively."""
    seen, todo, used = {entry_point}, [entry_point], set()
    while todo:
        names = mod.references(todo.pop())
        used |= names
        callees = names & mod.fns.keys() - seen
        seen |= callees
        todo += sorted(callees)
    return used


# Pure in its arguments, and asked for the same rendering by render, build, every profile's
# check, validate, test and tune: computed once per (text, entry point).
def analyze(source: str, entry_point: str | None = None) -> WgslFacts:
    """Read the facts of ``entry_point`` off WGSL text.

    ``entry_point=None`` picks the module's only @compute entry point; with several, it
    raises WgslgenError naming them (pass the one meant explicitly).
    """
    mod = Module(source)
    toks = mod.t
    entries = tuple(mod.entries)
    if entry_point is None:
        if len(entries) != 1:
            found = ", ".join(entries) or "none"
            raise WgslgenError(f"expected one @compute entry point, found {found}")
        entry_point = entries[0]
    if entry_point not in mod.entries:
        raise WgslgenError(f"no @compute entry point `{entry_point}`")
    if "workgroup_size" not in (attrs := mod.entries[entry_point]):
        raise WgslgenError(f"entry point `{entry_point}` has no @workgroup_size")
    dims = [mod.evaluate(a, b) for a, b in mod.split_args(*attrs["workgroup_size"])]
    if not 1 <= len(dims) <= 3 or min(dims) < 1:
        raise WgslgenError(f"entry point `{entry_point}`: bad @workgroup_size {dims}")
    x, y, z = (*dims, 1, 1)[:3]

    used = _statically_used(mod, entry_point) & {name for _, name, *_ in mod.vars}
    workgroup_vars: dict[str, int] = {}
    uniform_vars: dict[str, int] = {}
    storage = groups = 0
    for space, name, typ, var_attrs, line in mod.vars:
        if "group" in var_attrs:
            groups = max(groups, mod.evaluate(*var_attrs["group"]) + 1)
        if typ is None:
            raise WgslgenError(f"line {line}: `var {name}` needs an explicit type here")
        if space == "workgroup":
            # Every variable's layout is read, so a bad one fails whichever entry point is
            # asked for (as a compiler rejects the whole module), but only used ones count:
            # roundUp(16, roundUp(align, size)) each, as WebGPU's createComputePipeline
            # validation and Tint's GetWorkgroupStorageSize count them (checked against Dawn).
            align, size = mod.layout(typ)
            if name in used:
                workgroup_vars[name] = round_up(16, round_up(align, size))
        elif space == "uniform":
            uniform_vars[name] = mod.layout(typ)[1]
        storage += space == "storage"

    uses_f16 = any(
        (t.kind == "ident" and _F16_TYPE.fullmatch(t.text))
        or (t.kind == "num" and t.text[-1] == "h")
        for t in toks
    )
    uses_subgroups = any(
        (t.text in _SUBGROUP_FNS and t.text not in mod.fns)
        or (t.text in _SUBGROUP_BUILTINS and k >= 2 and toks[k - 2].text == "builtin")
        for k, t in enumerate(toks)
    )
    return WgslFacts(
        entry_point=entry_point,
        entry_points=entries,
        workgroup_size=(x, y, z),
        invocations=x * y * z,
        workgroup_bytes=sum(workgroup_vars.values()),
        workgroup_vars=workgroup_vars,
        enables=frozenset(mod.enables),
        uses_f16=uses_f16,
        uses_subgroups=uses_subgroups,
        storage_buffers=storage,
        uniform_buffers=len(uniform_vars),
        uniform_bytes=sum(uniform_vars.values()),
        uniform_vars=uniform_vars,
        bind_groups=groups,
        used_vars=frozenset(used),
    )


def required_features(facts: WgslFacts) -> frozenset[str]:
    """WebGPU features (wgpu-py names) a module with these facts needs on its device."""
    return frozenset(
        name
        for name, used in (("shader-f16", facts.uses_f16), ("subgroup", facts.uses_subgroups))
        if used
    )
