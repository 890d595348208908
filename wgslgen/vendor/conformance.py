"""Conformance cases shared by every binding: runs (inputs from the numpy references, expected
outputs, golden uniform bytes, dispatch and sizes) and selector cases (adapter × shape → variant).

Small shapes only: Mesa's lavapipe stops a loop after 65,535 iterations.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Mapping, Sequence
from typing import Any

from wgslgen.check.limits import COMPAT_LIMITS, WEBGPU_LIMITS
from wgslgen.errors import WgslgenError
from wgslgen.spec.kernel import KernelSpec, Variant
from wgslgen.vendor.runtime import wgslgen_runtime as rt

SMALL = {"head_dim": 32, "n_heads": 4, "n_kv_heads": 2, "history_len": 96, "pos": 90, "window": 0}


def camel_limits(limits: Mapping[str, int]) -> dict[str, int]:
    """WebGPU kebab-case limit names → the camelCase that browsers and the manifest use."""
    return {rt._camel(k): v for k, v in sorted(limits.items())}


# The adapters the selector cases imagine (facts as a browser or wgpu would report them).
ADAPTERS: dict[str, dict[str, Any]] = {
    "h200-native": {
        "vendor": "NVIDIA", "architecture": "", "device": "NVIDIA H200", "backend": "Vulkan",
        "features": ["shader-f16", "subgroups"],
        "limits": {**camel_limits(WEBGPU_LIMITS), "maxComputeWorkgroupStorageSize": 49152,
                   "maxComputeInvocationsPerWorkgroup": 1024},
    },
    "browser-nvidia": {
        "vendor": "nvidia", "architecture": "", "device": "", "backend": "",
        "features": ["shader-f16"], "limits": camel_limits(WEBGPU_LIMITS),
    },
    "swiftshader": {
        "vendor": "google", "architecture": "swiftshader", "device": "", "backend": "",
        "features": ["subgroups"], "limits": camel_limits(WEBGPU_LIMITS),
    },
    "compat": {
        "vendor": "", "architecture": "", "device": "", "backend": "",
        "features": [], "limits": camel_limits(COMPAT_LIMITS),
    },
}  # fmt: skip


def facts(name: str) -> rt.AdapterFacts:
    """AdapterFacts of one of ADAPTERS."""
    a = ADAPTERS[name]
    return rt.AdapterFacts(
        a["vendor"], a["architecture"], a["device"], a["backend"],
        frozenset(a["features"]), dict(a["limits"]),
    )  # fmt: skip


def small_shape(spec: KernelSpec) -> dict[str, int | float]:
    """The conformance shape of a kernel: SMALL restricted to its sizes, or for a kernel with
    sizes SMALL lacks (a user's kernel, e.g. `wgslgen init`'s rmsnorm) its last [test] shape,
    which `wgslgen test` runs on lavapipe too."""
    assert spec.problem is not None
    missing = [s for s in spec.problem.sizes if s not in SMALL]
    if missing and spec.test_shapes:
        return dict(spec.test_shapes[-1])
    if missing:
        raise WgslgenError(f"kernel {spec.name}: no conformance size for {', '.join(missing)}")
    return {s: SMALL[s] for s in spec.problem.sizes}


def run_shape(variant: Variant) -> dict[str, int | float]:
    """The shape a variant's conformance run uses: its kernel's small shape, or for a variant
    that serves only some shapes (fixed_head_dim) the smallest [test] shape it accepts."""
    shape = small_shape(variant.spec)
    candidates = [shape, *sorted((dict(s) for s in variant.spec.test_shapes), key=_volume)]
    for candidate in candidates:
        try:
            variant.problem_scope(candidate)
        except WgslgenError:
            continue
        return candidate
    raise WgslgenError(f"{variant.name}: no conformance shape (none of its [test] shapes fits)")


def _volume(shape: Mapping[str, int | float]) -> float:
    return math.prod(float(v) for v in shape.values())


def run_case(spec: KernelSpec, name: str, entry: Mapping[str, Any], seed: int = 0) -> dict:
    """One variant at its small shape: upload bytes, expected outputs, and golden numbers."""
    from wgslgen.run.reference import load_reference, make_case

    variant = next(v for v in spec.variants if v.name == name)
    shape = run_shape(variant)
    case = variant.case(shape)
    data = make_case(case, load_reference(spec), seed)
    tol = variant.tolerance()
    bindings = {b.name: b for b in variant.interface.bindings}
    plan = rt.plan_for({"variants": {name: entry}}, name, shape)
    # wgslgen's own derived values (the vendored ones: the others folded into the trees)
    derived = {d["name"]: case.scope[d["name"]] for d in entry["derived"]}
    if (
        plan.dispatch != case.passes
        or (case.uniform or b"") != plan.uniform
        or any(plan.scope[n] != x for n, x in derived.items())
    ):
        raise WgslgenError(f"{name}: the vendored trees disagree with the kernel's expressions")
    return {
        "kernel": spec.name,
        "variant": name,
        "shape": shape,
        "uniform_hex": plan.uniform.hex(),
        "derived": derived,
        "dispatch": [[e, list(xyz)] for e, xyz in plan.dispatch],
        "buffer_sizes": dict(sorted(plan.buffer_sizes.items())),
        "scratch_sizes": dict(sorted(plan.scratch_sizes.items())),
        "inputs": {
            n: base64.b64encode(b).decode()
            for n, b in sorted(data.data.items())
            if not bindings[n].is_output and not bindings[n].scratch
        },
        "outputs": {
            n: {
                "encoding": bindings[n].encoding.name,
                "values": [float(x) for x in arr.reshape(-1)],
                "rtol": tol.rtol,
                "atol": tol.atol,
            }
            for n, arr in sorted(data.expected.items())
        },
    }


def selector_cases(manifest: Mapping[str, Any], specs: Sequence[KernelSpec]) -> list[dict]:
    """adapter × kernel × shape → the variant the reference selector picks (or None) and why."""
    out = []
    for spec in specs:
        shapes = [small_shape(spec), *(dict(s) for s in spec.tune_shapes)]
        shapes.append({k: v * 64 if k == "history_len" else v for k, v in shapes[-1].items()})
        if "pos" in shapes[-1]:
            shapes[-1]["pos"] = shapes[-1]["history_len"] - 1
        shapes += _refused_shapes(spec, shapes[0])
        for adapter in ADAPTERS:
            for shape in shapes:
                try:
                    plan = rt.select(manifest, spec.name, facts(adapter), shape)
                    expect, rejected = plan.variant, [v for v, _ in plan.rejected]
                    reasons = [r for _, r in plan.rejected]
                except rt.NoViable as exc:
                    expect, rejected = None, [v for v, _ in exc.rejected]
                    reasons = [r for _, r in exc.rejected]
                out.append(
                    {"adapter": adapter, "kernel": spec.name, "shape": shape,
                     "expect": expect, "rejected": rejected, "reasons": reasons}
                )  # fmt: skip
    return out


def _refused_shapes(spec: KernelSpec, small: Mapping[str, int | float]) -> list[dict]:
    """Shapes no variant may run at, which every runtime must refuse with the same reasons
    instead of crashing: every size 0 (a derived value may divide by zero), and one size
    past u32 (a uniform field that cannot hold it)."""
    big = "history_len" if "history_len" in small else next(iter(small))
    return [{s: 0 for s in small}, {**small, big: 2**32 + 4}]


def requirement_cases(manifest: Mapping[str, Any], specs: Sequence[KernelSpec]) -> list[dict]:
    """variant × shape → the features and limits a device must be asked for: at the run
    shape, and with a history past WebGPU's default buffer-binding size where there is one."""
    by_name = {s.name: s for s in specs}
    out = []
    for name, entry in sorted(manifest["variants"].items()):
        small = run_shape(next(v for v in by_name[entry["kernel"]].variants if v.name == name))
        shapes = [small]
        if "history_len" in small:
            shapes.append({**small, "history_len": 2**20})
            if "pos" in small:
                shapes[-1]["pos"] = 2**20 - 1
        for shape in shapes:
            plan = rt.plan_for({"variants": {name: entry}}, name, shape)
            limits = rt.required_limits(entry, plan)
            out.append({"variant": name, "kernel": entry["kernel"], "shape": shape,
                        "features": list(entry["features"]), "limits": limits})  # fmt: skip
    return out


def build(manifest: Mapping[str, Any], specs: Sequence[KernelSpec], seed: int = 0) -> dict:
    """Every conformance case of a vendored manifest."""
    by_name = {s.name: s for s in specs}
    runs = [
        run_case(by_name[v["kernel"]], name, v, seed)
        for name, v in sorted(manifest["variants"].items())
        if by_name[v["kernel"]].reference_path is not None
    ]
    return {
        "adapters": ADAPTERS,
        "runs": runs,
        "selector": selector_cases(manifest, [by_name[k] for k in sorted(manifest["kernels"])]),
        "requirements": requirement_cases(manifest, specs),
    }
