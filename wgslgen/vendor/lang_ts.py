# ruff: noqa: E501  (templates of generated TypeScript lines)
"""The TypeScript binding: ``ts/<module>.ts`` plus the same module as ``.js`` and ``.d.ts``.

The runtime (runtime/ts/runtime.ts) is compiled once, when wgslgen is developed, to runtime.js
and runtime.d.ts (a test checks they are current); this module appends the folder's data
(manifest, WGSL per variant as strings, for Tint: Chrome and Dawn) and the kernel-bound API.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from wgslgen.check.limits import WEBGPU_LIMITS

MODULE = "wgslgen_kernels"
_EXTRA_LIMITS = ("maxComputeWorkgroupsPerDimension", "maxStorageBufferBindingSize", "maxBufferSize")

_TAIL_TS = """
// ---- data and API of this vendored folder ----
export const MANIFEST: Manifest = __MANIFEST__;
export const WGSL: Record<string, string> = __WGSL__;
export const WEBGPU_DEFAULTS: Record<string, number> = __DEFAULTS__;
const LIMIT_NAMES: string[] = __LIMITS__;

/** The plan for `kernel` at `shape` on a WebGPU adapter (reads info, features, limits). */
export function selectVariant(adapter: GPUAdapter | AdapterFacts, kernel: string, shape: Shape): Plan {
  const facts = "requestDevice" in adapter ? adapterFacts(adapter as GPUAdapter, LIMIT_NAMES) : (adapter as AdapterFacts);
  return selectWithFacts(MANIFEST, kernel, facts, shape);
}

/** The plan of a named variant (no selection). */
export function planVariant(variant: string, shape: Shape): Plan {
  return planFor(MANIFEST, variant, shape);
}

/** requiredFeatures and requiredLimits for `adapter.requestDevice` to run `plan`. */
export function deviceRequirements(plan: Plan): { requiredFeatures: GPUFeatureName[]; requiredLimits: Record<string, number> } {
  return requirements(MANIFEST, plan, WEBGPU_DEFAULTS);
}

/** Create the pipelines, encode every pass of `plan` and submit. */
export function run(device: GPUDevice, plan: Plan, buffers: Record<string, GPUBuffer>): void {
  const encoder = device.createCommandEncoder();
  encodePlan(device, encoder, MANIFEST, WGSL, plan, buffers);
  device.queue.submit([encoder.finish()]);
}
"""

_TAIL_JS = """
// ---- data and API of this vendored folder ----
export const MANIFEST = __MANIFEST__;
export const WGSL = __WGSL__;
export const WEBGPU_DEFAULTS = __DEFAULTS__;
const LIMIT_NAMES = __LIMITS__;

/** The plan for `kernel` at `shape` on a WebGPU adapter (reads info, features, limits). */
export function selectVariant(adapter, kernel, shape) {
    const facts = "requestDevice" in adapter ? adapterFacts(adapter, LIMIT_NAMES) : adapter;
    return selectWithFacts(MANIFEST, kernel, facts, shape);
}

/** The plan of a named variant (no selection). */
export function planVariant(variant, shape) {
    return planFor(MANIFEST, variant, shape);
}

/** requiredFeatures and requiredLimits for `adapter.requestDevice` to run `plan`. */
export function deviceRequirements(plan) {
    return requirements(MANIFEST, plan, WEBGPU_DEFAULTS);
}

/** Create the pipelines, encode every pass of `plan` and submit. */
export function run(device, plan, buffers) {
    const encoder = device.createCommandEncoder();
    encodePlan(device, encoder, MANIFEST, WGSL, plan, buffers);
    device.queue.submit([encoder.finish()]);
}
"""

_TAIL_DTS = """
// ---- data and API of this vendored folder ----
export declare const MANIFEST: Manifest;
export declare const WGSL: Record<string, string>;
export declare const WEBGPU_DEFAULTS: Record<string, number>;
export declare function selectVariant(adapter: GPUAdapter | AdapterFacts, kernel: string, shape: Shape): Plan;
export declare function planVariant(variant: string, shape: Shape): Plan;
export declare function deviceRequirements(plan: Plan): { requiredFeatures: GPUFeatureName[]; requiredLimits: Record<string, number> };
export declare function run(device: GPUDevice, plan: Plan, buffers: Record<string, GPUBuffer>): void;
"""


def _camel(kebab: str) -> str:
    head, *rest = kebab.split("-")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def ts_files(manifest: dict[str, Any], files: dict[str, bytes]) -> dict[str, bytes]:
    """``ts/<module>.ts``, ``.js`` and ``.d.ts`` (WGSL embedded, Tint's rendering preferred)."""
    wgsl = {}
    for name, v in sorted(manifest["variants"].items()):
        path = v["files"].get("tint") or v["files"]["any"]
        wgsl[name] = files[path].decode()
    names = sorted({k for v in manifest["variants"].values() for k in v["limits"]})
    subs = {
        "__MANIFEST__": json.dumps(
            {k: manifest[k] for k in ("abi_version", "generator", "kernels", "variants")},
            sort_keys=True,
        ),
        "__WGSL__": json.dumps(wgsl, sort_keys=True, indent=1),
        "__DEFAULTS__": json.dumps(
            {_camel(k): v for k, v in sorted(WEBGPU_LIMITS.items())}, sort_keys=True
        ),
        "__LIMITS__": json.dumps(sorted({*names, *_EXTRA_LIMITS})),
    }
    root = resources.files("wgslgen.vendor.runtime").joinpath("ts")
    out = {}
    for ext, tail in (("ts", _TAIL_TS), ("js", _TAIL_JS), ("d.ts", _TAIL_DTS)):
        for key, value in subs.items():
            tail = tail.replace(key, value)
        head = root.joinpath(f"runtime.{ext}").read_text(encoding="utf-8")
        banner = f"// {manifest['generator']} vendor, ABI {manifest['abi_version']}: do not edit.\n"
        out[f"ts/{MODULE}.{ext}"] = (banner + head + tail).encode()
    return out
