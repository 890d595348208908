"""Facts read off rendered WGSL text, without a compiler: workgroup size and memory, enables.

A module may hold several @compute entry points (the passes of a multi-pass kernel); the facts
are those of one of them. Like Tint/Dawn, an entry point's workgroup memory counts only the
``var<workgroup>`` it *statically uses*: named in its body or in the body of any function it
calls, directly or not (comments, struct members and shadowing locals do not count). The
binding counts stay module-wide: see ``WgslFacts``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from wgslgen.check.wgsl_consts import MissingOverride
from wgslgen.check.wgsl_reader import Module, round_up, strip_comments
from wgslgen.errors import WgslgenError

__all__ = [
    "WgslFacts",
    "analyze",
    "analyze_entries",
    "compute_entry_points",
    "entry_point_stages",
    "required_features",
    "strip_comments",
]


@dataclass(frozen=True)
class WgslFacts:
    """What the static limit check needs to know about one entry point of a module.

    Per entry point: ``workgroup_size``, ``invocations``, ``workgroup_bytes`` and
    ``workgroup_vars`` (only the variables the entry point statically uses), ``used_vars``,
    and, as WebGPU counts them for a ``layout: "auto"`` pipeline, the textures and samplers it
    uses and its ``var<immediate>`` bytes.
    Module-wide: ``enables``, ``uses_f16``, ``uses_subgroups`` (a device must offer the
    features to create the module at all), and the binding counts ``storage_buffers``,
    ``uniform_buffers``, ``uniform_bytes``, ``uniform_vars`` and ``bind_groups``: the harness
    builds every pass's pipeline layout from the kernel's whole declared interface, and WebGPU
    checks the per-stage buffer limits against that layout. (A ``layout: "auto"`` pipeline,
    as the validation engines create, holds only the bindings the entry point uses, so the
    module-wide counts are never lower than what those engines count.)
    ``needs_overrides`` names overrides without a value that a size depends on: the sizes
    are then incomplete (counted as 1 and 0 B) and no limit verdict can be given.
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
    stages: Mapping[str, str] = field(default_factory=dict)  # every entry point -> its stage
    overrides: frozenset[str] = frozenset()  # every override the module declares
    needs_overrides: tuple[str, ...] = ()  # overrides a size needs that have no value
    unset_overrides: tuple[str, ...] = ()  # overrides the entry point uses, with no value
    int64: frozenset[str] = frozenset()  # u64 / i64 spelled in the module (not WebGPU)
    storage_textures: int = 0  # used by this entry point
    sampled_textures: int = 0
    samplers: int = 0
    immediate_bytes: int = 0  # size of the var<immediate> this entry point uses


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


def entry_point_stages(source: str) -> dict[str, str]:
    """Every entry point of the module (any stage) and its stage, in declaration order."""
    return dict(Module(source).stages)


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


def _unset_overrides(mod: Module, reached: set[str]) -> tuple[str, ...]:
    """Overrides without a default and without a given value that an entry point uses
    (``reached``: the names it uses; or through another override's initializer): WebGPU
    needs a value for each to make its pipeline, and accepts any other override left unset."""
    todo = sorted(reached & mod.overrides.keys())
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            start, end = mod.consts[name]
            todo += [n for n in mod.idents(start, end) if n in mod.overrides]
    return tuple(
        sorted(n for n in seen if mod.consts[n][0] == mod.consts[n][1] and n not in mod.given)
    )


def analyze(
    source: str, entry_point: str | None = None, overrides: Mapping[str, float] | None = None
) -> WgslFacts:
    """Read the facts of ``entry_point`` off WGSL text.

    ``entry_point=None`` picks the module's only @compute entry point; with several, it
    raises WgslgenError naming them (pass the one meant explicitly). ``overrides`` gives
    values for ``override`` declarations (as pipeline constants do); an override a size
    needs and has no value is listed in ``needs_overrides`` rather than raised.
    """
    return _facts(Module(source, overrides), entry_point)


def analyze_entries(
    source: str, entry_points: Sequence[str], overrides: Mapping[str, float] | None = None
) -> dict[str, WgslFacts]:
    """analyze() of each of ``entry_points`` of one text, the text read once for all."""
    mod = Module(source, overrides)
    return {entry: _facts(mod, entry) for entry in entry_points}


def _facts(mod: Module, entry_point: str | None) -> WgslFacts:
    """The facts of ``entry_point`` (None: the only one) of a read module."""
    entries = tuple(mod.entries)
    if entry_point is None:
        if len(entries) != 1:
            found = ", ".join(entries) or "none"
            raise WgslgenError(f"expected one @compute entry point, found {found}")
        entry_point = entries[0]
    if entry_point not in mod.entries:
        raise WgslgenError(f"no @compute entry point `{entry_point}`")
    missing: list[str] = []
    x, y, z = _workgroup_size(mod, entry_point, missing)
    reached = _statically_used(mod, entry_point)
    used = reached & {name for _, name, *_ in mod.vars}
    counts = _bindings(mod, used, missing)
    uses_f16, uses_subgroups, int64 = _module_wide(mod)
    return WgslFacts(
        entry_point=entry_point,
        entry_points=entries,
        workgroup_size=(x, y, z),
        invocations=x * y * z,
        enables=frozenset(mod.enables),
        uses_f16=uses_f16,
        uses_subgroups=uses_subgroups,
        used_vars=frozenset(used),
        stages=dict(mod.stages),
        overrides=frozenset(mod.overrides),
        needs_overrides=tuple(dict.fromkeys(missing)),
        unset_overrides=_unset_overrides(mod, reached),
        int64=frozenset(int64 - set(mod.structs) - set(mod.aliases)),
        **counts,
    )


def _module_wide(mod: Module) -> tuple[bool, bool, set[str]]:
    """(uses f16, uses subgroups, 64-bit integer type names) of the whole module, read once
    per module however many entry points are asked about."""
    cached = mod.__dict__.get("_module_wide")
    if cached is not None:
        return cached
    texts = mod.texts
    distinct = dict(zip(texts, mod.kinds, strict=True))  # a token's kind follows from its text
    uses_f16 = any(
        (kind == "ident" and _F16_TYPE.fullmatch(text)) or (kind == "num" and text[-1] == "h")
        for text, kind in distinct.items()
    )
    uses_subgroups = any(text not in mod.fns for text in _SUBGROUP_FNS.intersection(distinct))
    if not uses_subgroups and _SUBGROUP_BUILTINS.intersection(distinct):
        uses_subgroups = any(
            text in _SUBGROUP_BUILTINS and k >= 2 and texts[k - 2] == "builtin"
            for k, text in enumerate(texts)
        )
    found = (uses_f16, uses_subgroups, {"u64", "i64"}.intersection(distinct))
    mod.__dict__["_module_wide"] = found
    return found


def _workgroup_size(mod: Module, entry_point: str, missing: list[str]) -> tuple[int, int, int]:
    if "workgroup_size" not in (attrs := mod.entries[entry_point]):
        raise WgslgenError(f"entry point `{entry_point}` has no @workgroup_size")
    dims = []
    for a, b in mod.split_args(*attrs["workgroup_size"]):
        try:
            dims.append(mod.evaluate(a, b))
        except MissingOverride as e:
            missing.append(e.name)
            dims.append(1)
    if not 1 <= len(dims) <= 3 or min(dims) < 1:
        raise WgslgenError(f"entry point `{entry_point}`: bad @workgroup_size {dims}")
    x, y, z = (*dims, 1, 1)[:3]
    return x, y, z


_SAMPLED = re.compile(r"texture_(?:depth_)?(?:multisampled_)?(?:1d|2d|2d_array|3d|cube|cube_array)")


def _bindings(mod: Module, used: set[str], missing: list[str]) -> dict:
    """Workgroup memory, buffer, texture and sampler counts, and immediate bytes."""
    workgroup_vars: dict[str, int] = {}
    uniform_vars: dict[str, int] = {}
    storage = groups = storage_tex = sampled = samplers = immediate = 0
    for space, name, typ, var_attrs, at in mod.vars:
        if "group" in var_attrs:
            groups = max(groups, mod.evaluate(*var_attrs["group"]) + 1)
        if typ is None:
            raise mod._fail(at, f"`var {name}` needs an explicit type here")
        try:
            if space == "workgroup":
                # Every variable's layout is read, so a bad one fails whichever entry point is
                # asked for (as a compiler rejects the whole module), but only used ones count:
                # roundUp(16, roundUp(align, size)) each, as WebGPU's createComputePipeline
                # validation and Tint's GetWorkgroupStorageSize count them (checked with Dawn).
                align, size = mod.layout(typ)
                if name in used:
                    workgroup_vars[name] = round_up(16, round_up(align, size))
            elif space == "uniform":
                uniform_vars[name] = mod.layout(typ)[1]
            elif space == "immediate" and name in used:
                immediate += mod.layout(typ)[1]
        except MissingOverride as e:
            missing.append(e.name)
        storage += space == "storage"
        kind = typ[1] if typ[0] in ("opaque", "named") else ""
        if space == "handle" and name in used:
            storage_tex += kind.startswith("texture_storage")
            sampled += bool(_SAMPLED.fullmatch(kind)) or kind == "texture_external"
            samplers += kind in ("sampler", "sampler_comparison")
    return {
        "workgroup_bytes": sum(workgroup_vars.values()),
        "workgroup_vars": workgroup_vars,
        "storage_buffers": storage,
        "uniform_buffers": len(uniform_vars),
        "uniform_bytes": sum(uniform_vars.values()),
        "uniform_vars": uniform_vars,
        "bind_groups": groups,
        "storage_textures": storage_tex,
        "sampled_textures": sampled,
        "samplers": samplers,
        "immediate_bytes": immediate,
    }


def required_features(facts: WgslFacts) -> frozenset[str]:
    """WebGPU features (wgpu-py names) a module with these facts needs on its device."""
    return frozenset(
        name
        for name, used in (("shader-f16", facts.uses_f16), ("subgroup", facts.uses_subgroups))
        if used
    )
