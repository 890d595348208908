"""One vendored variant's manifest entry, from the kernel's one interface and its renderings."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from wgslgen.errors import WgslgenError
from wgslgen.render.renderer import RenderedVariant
from wgslgen.spec.kernel import KernelSpec, Variant
from wgslgen.vendor.expr import Tree, as_tree, const, is_float, to_int_tree, to_value

# wgpu-py's feature names → the WebGPU standard's, which the manifest speaks (browsers, Dawn and
# the generated runtimes read it; the Python runtime maps back to wgpu-py's names).
WEBGPU_FEATURE_NAMES = {"subgroup": "subgroups"}

# Bytes per logical element in a buffer, and elements per 4-byte word (pf16 packs two).
_ITEM = {"f32": 4, "u32": 4, "i32": 4, "f16": 2, "pf16": 2}


def size_bytes(encoding: str, count: Tree) -> Tree:
    """Bytes a buffer of ``count`` elements needs: rounded up to 4, at least 4."""
    item = _ITEM[encoding]
    if item == 4:
        return {"op": "max", "args": [const(4), {"op": "mul", "args": [count, const(4)]}]}
    nbytes = {"op": "mul", "args": [count, const(item)]}
    words = {"op": "ceil_div", "args": [nbytes, const(4)]}
    return {"op": "max", "args": [const(4), {"op": "mul", "args": [words, const(4)]}]}


def shader_name(variant: str, family: str) -> str:
    """The file name of a vendored rendering under shaders/."""
    return f"shaders/{variant}.wgsl" if family == "any" else f"shaders/{variant}.{family}.wgsl"


def float_sizes(spec: KernelSpec) -> list[str]:
    """The sizes that are float parameters, not sizes: a [test] or [tune] shape gives them a
    float (eps = 1e-5). Bindings type them as floats; the selector never buckets them."""
    assert spec.problem is not None
    shapes = [*spec.test_shapes, *spec.tune_shapes]
    return [s for s in spec.problem.sizes if any(isinstance(x.get(s), float) for x in shapes)]


def derived_trees(variant: Variant) -> tuple[list[dict[str, Any]], dict[str, Any], set[str]]:
    """Derived values as trees in order, the names that folded to constants, and the names
    (float sizes, derived values) whose values are floats."""
    problem = variant.spec.problem
    assert problem is not None
    known: dict[str, Any] = dict(variant.params)
    floats = set(float_sizes(variant.spec))
    out = []
    for name, expr in problem.derived:
        value = to_value(expr.text, known, f"{variant.name}: derived {name}", floats)
        floats.discard(name)
        if isinstance(value, dict):
            out.append({"name": name, "expr": value})
            known.pop(name, None)  # a derived value may shadow an axis of the same name
            if is_float(value, floats):
                floats.add(name)
        else:
            known[name] = value
    return out, known, floats


def limits_needed(rendered: RenderedVariant) -> dict[str, int]:
    """The WebGPU limits (camelCase) a device must grant for every pass's pipeline."""
    facts = [rendered.facts[ep] for ep in rendered.entry_points]
    return {
        "maxComputeWorkgroupStorageSize": max(f.workgroup_bytes for f in facts),
        "maxComputeInvocationsPerWorkgroup": max(f.invocations for f in facts),
        "maxComputeWorkgroupSizeX": max(f.workgroup_size[0] for f in facts),
        "maxComputeWorkgroupSizeY": max(f.workgroup_size[1] for f in facts),
        "maxComputeWorkgroupSizeZ": max(f.workgroup_size[2] for f in facts),
        "maxStorageBuffersPerShaderStage": facts[0].storage_buffers,
        "maxUniformBuffersPerShaderStage": facts[0].uniform_buffers,
        "maxUniformBufferBindingSize": facts[0].uniform_bytes,
        "maxBindGroups": facts[0].bind_groups,
    }


def _bindings(variant: Variant, known: dict[str, Any], floats: set[str]) -> list[dict[str, Any]]:
    iface = variant.interface
    out = []
    if iface.uniform is not None:
        u = iface.uniform
        out.append(
            {
                "group": u.group, "binding": u.binding, "name": u.var_name, "kind": "uniform",
                "element": None, "encoding": None, "access": "read", "scratch": False,
                "count": None, "min_binding_size": const(u.size),
            }
        )  # fmt: skip
    for b in iface.bindings:
        count = to_int_tree(b.count, known, f"{variant.name}: binding {b.name} count", floats)
        out.append(
            {
                "group": b.group, "binding": b.binding, "name": b.name, "kind": "storage",
                "element": b.encoding.wgsl_element, "encoding": b.encoding.name,
                "access": b.access, "scratch": b.scratch, "count": count,
                "min_binding_size": size_bytes(b.encoding.name, count),
            }
        )  # fmt: skip
    return sorted(out, key=lambda d: (d["group"], d["binding"]))


def _uniform(variant: Variant, known: dict[str, Any], floats: set[str]) -> dict[str, Any] | None:
    u = variant.interface.uniform
    if u is None:
        return None
    fields = []
    for f in u.fields:
        value = None
        if not f.padding:
            where = f"{variant.name}: uniform field {f.name}"
            if f.name in known:
                value = as_tree(known[f.name], where)
            else:
                value = {"op": "var", "name": f.name}
            if f.type != "f32" and is_float(value, floats):  # wgslgen cannot pack it either
                raise WgslgenError(
                    f"{where} is {f.type} but its value is a float; it cannot be packed "
                    "(make the field f32, or the value an integer, e.g. with `// ` or `|int`)"
                )
        fields.append(
            {"name": f.name, "type": f.type, "offset": f.offset, "size": f.size,
             "padding": f.padding, "value": value}
        )  # fmt: skip
    return {
        "struct": u.struct_name, "var": u.var_name, "group": u.group, "binding": u.binding,
        "size": u.size, "fields": fields,
    }  # fmt: skip


def variant_entry(
    renderings: Sequence[RenderedVariant], portable: bool, validated_by: Sequence[str]
) -> dict[str, Any]:
    """The manifest's ``variants[name]`` for the renderings of one variant."""
    from wgslgen.tune.selection import result_sha256

    first = renderings[0]
    variant = first.variant
    problem = variant.spec.problem
    assert problem is not None
    derived, known, floats = derived_trees(variant)
    where = variant.name
    passes = []
    for p in problem.passes:
        facts = first.facts[p.entry_point]
        dispatch = [to_int_tree(d.text, known, f"{where}: dispatch", floats) for d in p.dispatch]
        dispatch = (dispatch + [const(1)] * 3)[:3]
        passes.append(
            {"entry_point": p.entry_point, "workgroup_size": list(facts.workgroup_size),
             "workgroup_bytes": facts.workgroup_bytes, "dispatch": dispatch}
        )  # fmt: skip
    bindings = _bindings(variant, known, floats)
    preconditions = []
    for pre in problem.preconditions:
        value = to_value(pre.text, known, f"{where}: precondition", floats)
        if isinstance(value, dict):
            preconditions.append({"text": pre.text, "expr": value})
        elif not value:
            preconditions.append({"text": pre.text, "expr": const(0)})
    naga = next((r for r in renderings if r.family in ("any", "naga")), first)
    constants = {k: v for r in renderings for k, v in r.constants.items()}
    entry = {
        "kernel": variant.spec.name,
        "name": variant.name,
        "params": dict(variant.params),
        "files": {r.family: shader_name(variant.name, r.family) for r in renderings},
        "provenance_sha256": result_sha256(naga),
        "sizes": list(problem.sizes),
        "derived": derived,
        "uniform": _uniform(variant, known, floats),
        "bindings": bindings,
        "passes": passes,
        "scratch": [
            {"binding": b["name"], "size": b["min_binding_size"]} for b in bindings if b["scratch"]
        ],
        "features": sorted(
            {WEBGPU_FEATURE_NAMES.get(f, f) for r in renderings for f in r.features}
        ),
        "limits": limits_needed(first),
        "preconditions": preconditions,
        "portable": portable,
        "validated_by": sorted(validated_by),
    }
    if constants:  # only then: a manifest without overrides stays as it was, byte for byte
        entry["constants"] = dict(sorted(constants.items()))
    floating = float_sizes(variant.spec)
    if floating:  # likewise: only a kernel with float parameters (eps) has the key
        entry["float_sizes"] = floating
    return entry
