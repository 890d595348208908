"""Limit profiles, and the static check of a variant's WGSL facts against one."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from wgslgen.check.profile_model import LimitProfileFile, problem
from wgslgen.check.wgsl import WgslFacts, required_features
from wgslgen.errors import WgslgenError
from wgslgen.render.renderer import FAMILIES as RENDERED_FAMILIES


@dataclass(frozen=True)
class LimitProfile:
    """Named device limits (WebGPU kebab-case names) and the optional features on offer."""

    name: str
    limits: dict[str, int]
    features: frozenset[str] | None  # None: any optional feature may be requested


# WebGPU core defaults: the "default" column of the limits table, WebGPU spec §3.6.2 "Limits"
# (https://gpuweb.github.io/gpuweb/#limits). wgpu-types `Limits::defaults()` holds the same
# numbers.
WEBGPU_LIMITS: dict[str, int] = {
    "max-texture-dimension-1d": 8192,
    "max-texture-dimension-2d": 8192,
    "max-texture-dimension-3d": 2048,
    "max-texture-array-layers": 256,
    "max-bind-groups": 4,
    "max-bind-groups-plus-vertex-buffers": 24,
    "max-bindings-per-bind-group": 1000,
    "max-dynamic-uniform-buffers-per-pipeline-layout": 8,
    "max-dynamic-storage-buffers-per-pipeline-layout": 4,
    "max-sampled-textures-per-shader-stage": 16,
    "max-samplers-per-shader-stage": 16,
    "max-storage-buffers-per-shader-stage": 8,
    "max-storage-textures-per-shader-stage": 4,
    "max-uniform-buffers-per-shader-stage": 12,
    "max-uniform-buffer-binding-size": 65536,
    "max-storage-buffer-binding-size": 134217728,  # 128 MiB
    "min-uniform-buffer-offset-alignment": 256,
    "min-storage-buffer-offset-alignment": 256,
    "max-vertex-buffers": 8,
    "max-buffer-size": 268435456,  # 256 MiB
    "max-vertex-attributes": 16,
    "max-vertex-buffer-array-stride": 2048,
    "max-inter-stage-shader-variables": 16,
    "max-color-attachments": 8,
    "max-color-attachment-bytes-per-sample": 32,
    "max-compute-workgroup-storage-size": 16384,
    "max-compute-invocations-per-workgroup": 256,
    "max-compute-workgroup-size-x": 256,
    "max-compute-workgroup-size-y": 256,
    "max-compute-workgroup-size-z": 64,
    "max-compute-workgroups-per-dimension": 65535,
    # The immediates proposal (var<immediate>): its default, and Dawn's, is 64 bytes.
    "max-immediate-size": 64,
}

# WebGPU compatibility mode: the lowered limits of gpuweb proposals/compatibility-mode.md §10
# ("Lower limits") and §18 (per-stage storage limits), as Dawn implements them (the "compat"
# column of dawn/native/Limits.cpp). Everything else keeps the core default.
COMPAT_LIMITS: dict[str, int] = {
    **WEBGPU_LIMITS,
    "max-color-attachments": 4,
    "max-compute-invocations-per-workgroup": 128,
    "max-compute-workgroup-size-x": 128,
    "max-compute-workgroup-size-y": 128,
    "max-inter-stage-shader-variables": 15,
    "max-storage-buffers-per-shader-stage": 4,
    "max-texture-dimension-1d": 4096,
    "max-texture-dimension-2d": 4096,
    "max-texture-dimension-3d": 1024,
    "max-uniform-buffer-binding-size": 16384,
    "max-storage-buffers-in-vertex-stage": 0,
    "max-storage-buffers-in-fragment-stage": 0,
    "max-storage-textures-in-vertex-stage": 0,
    "max-storage-textures-in-fragment-stage": 0,
}

# wgpu-types `Limits::downlevel_defaults()` (wgpu-types/src/limits.rs): "guaranteed to be
# compatible with GLES-3.1 and D3D11". 16352 B of workgroup memory comes from Metal's
# feature-set tables; wgpu has no max-bind-groups-plus-vertex-buffers, so it keeps WebGPU's.
WGPU_DOWNLEVEL_LIMITS: dict[str, int] = {
    **WEBGPU_LIMITS,
    "max-texture-dimension-1d": 2048,
    "max-texture-dimension-2d": 2048,
    "max-texture-dimension-3d": 256,
    "max-storage-buffers-per-shader-stage": 4,
    "max-uniform-buffer-binding-size": 16384,
    "max-inter-stage-shader-variables": 15,
    "max-color-attachments": 4,
    "max-compute-workgroup-storage-size": 16352,
    "max-immediate-size": 0,  # wgpu offers immediates only as a native feature
}

# Limits only wgpu-native reports (seen in wgpu-py 0.32 adapter.limits): accepted in profile
# files so an adapter dump can be loaded back, never checked statically.
_WGPU_EXTRA_LIMITS = frozenset(
    {
        "max-non-sampler-bindings",
        "max-binding-array-elements-per-shader-stage",
        "max-binding-array-sampler-elements-per-shader-stage",
        "max-multiview-view-count",
        "max-inter-stage-shader-components",
    }
)
KNOWN_LIMITS: frozenset[str] = frozenset(COMPAT_LIMITS) | _WGPU_EXTRA_LIMITS

BUILTIN_PROFILES: dict[str, LimitProfile] = {
    "webgpu": LimitProfile("webgpu", WEBGPU_LIMITS, None),
    # Compatibility mode targets OpenGL ES 3.1 and D3D11 devices, which in practice offer
    # neither shader-f16 nor subgroups: a variant needing either does not fit "everywhere
    # compat runs".
    "compat": LimitProfile("compat", COMPAT_LIMITS, frozenset()),
    "wgpu-downlevel": LimitProfile("wgpu-downlevel", WGPU_DOWNLEVEL_LIMITS, None),
}


def _kebab(key: str) -> str:
    """'maxComputeWorkgroupSizeX' / 'max_compute_workgroup_size_x' -> kebab-case."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"-\1", key).replace("_", "-").lower()


def _normalize_key(key: str) -> str:
    kebab = _kebab(key)
    # camelCase has "Dimension1D" -> "dimension1-d"; WebGPU's kebab name is "dimension-1d".
    return re.sub(r"dimension-?(\d)-?d$", r"dimension-\1d", kebab)


def adapter_profile(selector: str | None = None, timeout: float = 120.0) -> LimitProfile:
    """The limits and features the chosen adapter reports, as a profile named 'adapter'.

    Asked in a child process (wgslgen.check.adapter_probe): the process that checks limits
    never opens wgpu itself. Asked once per selector.
    """
    if selector not in _ADAPTERS:
        import sys

        from wgslgen.children import python_env, run_process

        argv = [sys.executable, "-m", "wgslgen.check.adapter_probe", *filter(None, [selector])]
        done = run_process(argv, timeout, env=python_env())
        try:
            answer = json.loads(done.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            why = "timed out" if done.timed_out else (done.stderr.strip().splitlines() or [""])[-1]
            raise WgslgenError(f"cannot read the adapter's limits: {why}") from None
        if "error" in answer:
            raise WgslgenError(answer["error"])
        _ADAPTERS[selector] = LimitProfile(
            "adapter", dict(answer["limits"]), frozenset(answer["features"])
        )
    return _ADAPTERS[selector]


_ADAPTERS: dict[str | None, LimitProfile] = {}


def load_profile(name_or_path: str | Path) -> LimitProfile:
    """A builtin profile name, 'adapter' (or 'adapter:<selector>'), or a JSON profile file."""
    text = str(name_or_path)
    if text in BUILTIN_PROFILES:
        return BUILTIN_PROFILES[text]
    if text == "adapter" or text.startswith("adapter:"):
        return adapter_profile(text.partition(":")[2] or None)
    path = Path(text)
    if not path.is_file():
        names = ", ".join([*BUILTIN_PROFILES, "adapter"])
        raise WgslgenError(
            f"unknown limit profile {text!r}: not a builtin ({names}) and no such file"
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise WgslgenError(f"{path}: cannot read limit profile: {e}") from None
    return profile_from_dict(data, source=str(path))


def profile_from_dict(data: Any, source: str = "<profile>") -> LimitProfile:
    """Build a profile from ``{"name", "limits", "features"?, "base"?}`` read from ``source``."""
    try:
        model = LimitProfileFile.model_validate(data)
    except ValidationError as exc:
        raise WgslgenError(f"{source}: {problem(exc, data)}") from None
    unknown = [k for k in model.limits if _normalize_key(k) not in KNOWN_LIMITS]
    if unknown:
        raise WgslgenError(
            f"{source}: unknown limit(s) {', '.join(map(repr, unknown))}",
            hint="limits use WebGPU names, e.g. max-compute-workgroup-storage-size",
        )
    limits = dict(BUILTIN_PROFILES[model.base].limits) if model.base else {}
    limits.update({_normalize_key(k): v for k, v in model.limits.items()})
    features = None if model.features is None else frozenset(model.features)
    return LimitProfile(model.name or Path(source).stem, limits, features)


def _over(what: str, have: int, limits: Mapping[str, int], key: str, unit: str = "") -> list[str]:
    cap = limits.get(key)
    if cap is None or have <= cap:
        return []
    return [f"{what} {have:,}{unit} > {cap:,}{unit} ({key})"]


def check(facts: WgslFacts, profile: LimitProfile, features: frozenset[str]) -> list[str]:
    """Human-readable violations of ``profile`` by a variant; an empty list means it fits."""
    lim = profile.limits
    out = _over(
        "workgroup memory", facts.workgroup_bytes, lim, "max-compute-workgroup-storage-size", " B"
    )
    out += _over(
        "invocations per workgroup", facts.invocations, lim, "max-compute-invocations-per-workgroup"
    )
    for axis, size in zip("xyz", facts.workgroup_size, strict=True):
        out += _over(f"workgroup size {axis}", size, lim, f"max-compute-workgroup-size-{axis}")
    out += _over(
        "storage buffers", facts.storage_buffers, lim, "max-storage-buffers-per-shader-stage"
    )
    out += _over(
        "uniform buffers", facts.uniform_buffers, lim, "max-uniform-buffers-per-shader-stage"
    )
    for name, size in facts.uniform_vars.items():
        out += _over(f"uniform buffer {name}", size, lim, "max-uniform-buffer-binding-size", " B")
    out += _over("bind groups", facts.bind_groups, lim, "max-bind-groups")
    out += _over(
        "storage textures", facts.storage_textures, lim, "max-storage-textures-per-shader-stage"
    )
    out += _over(
        "sampled textures", facts.sampled_textures, lim, "max-sampled-textures-per-shader-stage"
    )
    out += _over("samplers", facts.samplers, lim, "max-samplers-per-shader-stage")
    out += _over("immediate data", facts.immediate_bytes, lim, "max-immediate-size", " B")
    if facts.needs_overrides:
        out.append(f"sizes unknown: needs override values: {', '.join(facts.needs_overrides)}")
    if profile.features is not None:
        for feature in sorted(set(features) | required_features(facts)):
            if feature not in profile.features:
                out.append(f"needs feature {feature}, not in profile {profile.name}")
    return out


# One definition: the families the renderer writes texts for, and "any" (one text for both).
FAMILIES = ("any", *RENDERED_FAMILIES)


def check_directives(facts: WgslFacts, family: str) -> list[str]:
    """Enable directives a compiler family needs or rejects; an empty list means all is well."""
    if family not in FAMILIES:
        raise WgslgenError(f"unknown compiler family {family!r}; expected one of {FAMILIES}")
    out = []
    if facts.uses_f16 and "f16" not in facts.enables:
        out.append("f16 types need `enable f16;`")
    if family == "tint" and facts.uses_subgroups and "subgroups" not in facts.enables:
        out.append("subgroup built-ins need `enable subgroups;` for Tint/Dawn")
    if family == "naga" and "subgroups" in facts.enables:
        out.append(
            "naga 30 / wgpu-native 29 reject `enable subgroups;` "
            '("the `subgroups` enable-extension is not yet supported")'
        )
    if family == "any" and facts.uses_subgroups:
        out.append(
            "subgroup built-ins need one rendering per compiler family: Tint requires "
            "`enable subgroups;`, naga rejects it"
        )
    return out


def check_passes(
    facts: Mapping[str, WgslFacts], profile: LimitProfile, features: frozenset[str]
) -> list[str]:
    """Violations of ``profile`` by any pass (entry point → facts; each its own pipeline)."""
    out: list[str] = []
    for entry, entry_facts in facts.items():
        prefix = f"{entry}: " if len(facts) > 1 else ""
        out += [prefix + r for r in check(entry_facts, profile, features)]
    return out
