"""Tint's module rules that naga does not check: stage rules and ``@workgroup_size`` typing.

Each finding carries Tint's message and the line:column Tint points at, so a static verdict
reads like Dawn's. The rules come from the WGSL specification: §13.3.1 (entry point
declaration: ``@workgroup_size`` arguments "must all be of the same type", i32 or u32),
§7.3 / §16 (built-ins and address spaces each stage may use: ``var<workgroup>`` and the
barriers are compute-only, derivatives and implicit-LOD sampling are fragment-only, a vertex
shader must not write storage, so neither a ``read_write`` storage buffer nor a writable
storage texture may be used by it).
"""

from __future__ import annotations

from dataclasses import dataclass

from wgslgen.check.wgsl_consts import expression_type
from wgslgen.check.wgsl_reader import Module

BARRIERS = frozenset(
    {"workgroupBarrier", "storageBarrier", "textureBarrier", "workgroupUniformLoad"}
)
DERIVATIVES = frozenset(
    {"dpdx", "dpdxCoarse", "dpdxFine", "dpdy", "dpdyCoarse", "dpdyFine", "fwidth",
     "fwidthCoarse", "fwidthFine", "textureSample", "textureSampleBias", "textureSampleCompare"}
)  # fmt: skip
_SUBGROUP_PREFIX = ("subgroup", "quad")


@dataclass(frozen=True)
class Finding:
    """One rule a module breaks, as Tint reports it."""

    rule: str  # "uniformity", "behaviour", "workgroup_size", "stage"
    message: str  # Tint's message
    line: int
    column: int

    def text(self) -> str:
        """``:line:col error: message``, Tint's own form."""
        return f":{self.line}:{self.column} error: {self.message}"


def column(mod: Module, index: int) -> int:
    """1-based column of token ``index``."""
    pos = mod.t[index].pos
    return pos - mod.text.rfind("\n", 0, pos)


def at(mod: Module, index: int, rule: str, message: str) -> Finding:
    """A finding pointing at token ``index``."""
    return Finding(rule, message, mod.t[index].line, column(mod, index))


def workgroup_size_types(mod: Module) -> list[Finding]:
    """Every @compute entry point whose @workgroup_size mixes i32 and u32 arguments."""
    out = []
    for attrs in mod.entries.values():
        if "workgroup_size" not in attrs:
            continue
        start, end = attrs["workgroup_size"]
        kinds = {expression_type(mod, a, b) for a, b in mod.split_args(start, end)}
        if {"i32", "u32"} <= kinds:
            out.append(
                at(mod, start - 2, "workgroup_size",
                   "'@workgroup_size' arguments must be of the same type, either 'i32' or 'u32'")
            )  # fmt: skip
    return out


def _reachable(mod: Module, entry: str) -> list[str]:
    """``entry`` and every function it calls, directly or not, callers first."""
    order, todo = [entry], [entry]
    while todo:
        for name in sorted(mod.references(todo.pop()) & mod.fns.keys()):
            if name not in order:
                order.append(name)
                todo.append(name)
    return order


def _uses(mod: Module, fn: str, names: set[str]) -> list[int]:
    """Token indices in the body of ``fn`` naming one of ``names`` (not after '.')."""
    _, body, end = mod.fns[fn]
    wanted = names & mod.references(fn)
    return [
        k for k in range(body, end) if mod.texts[k] in wanted and mod._at(k - 1) not in (".", "@")
    ]


def _forbidden(mod: Module, stage: str) -> dict[str, str]:
    """Module-scope names and built-ins ``stage`` may not use, each with Tint's message."""
    out: dict[str, str] = {}
    for space, name, typ, _, _ in mod.vars:
        if space == "workgroup" and stage != "compute":
            out[name] = (
                f"var with 'workgroup' address space cannot be used by {stage} pipeline stage"
            )
        access = mod.access.get(name, "read")
        if stage == "vertex" and space == "storage" and access == "read_write":
            out[name] = (
                "var with 'storage' address space and 'read_write' access mode cannot be used by "
                "vertex pipeline stage"
            )
        storage_texture = typ and typ[0] == "opaque" and typ[1].startswith("texture_storage")
        if stage == "vertex" and storage_texture and access != "read":
            out[name] = (
                f"storage texture with '{access}' access mode cannot be used by vertex "
                "pipeline stage"
            )
    builtins = set(BARRIERS if stage != "compute" else ())
    builtins |= set(DERIVATIVES if stage != "fragment" else ())
    for name in builtins:
        out[name] = f"built-in cannot be used by {stage} pipeline stage"
    return out


def stage_rules(mod: Module) -> list[Finding]:
    """Uses of a variable or built-in by an entry point whose stage may not use it."""
    out, seen = [], set()
    for entry, stage in mod.stages.items():
        forbidden = _forbidden(mod, stage)
        for fn in _reachable(mod, entry):
            hits = [k for k in _uses(mod, fn, set(forbidden)) if k not in seen]
            if stage == "vertex":  # subgroups are for compute and fragment shaders
                _, body, end = mod.fns[fn]
                hits += [
                    k for k in range(body, end)
                    if mod.texts[k].startswith(_SUBGROUP_PREFIX) and mod._at(k + 1) == "("
                    and mod.texts[k] not in mod.fns
                ]  # fmt: skip
            for k in sorted(hits)[:1]:
                seen.add(k)
                message = forbidden.get(mod.texts[k], f"built-in cannot be used by {stage} "
                                        "pipeline stage")  # fmt: skip
                out.append(at(mod, k, "stage", message))
    return out
