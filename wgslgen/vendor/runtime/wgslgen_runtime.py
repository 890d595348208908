"""Runtime of a folder vendored by `wgslgen vendor` (copied verbatim as ``_runtime.py``).

Standard library only (running on wgpu-py, and encode/decode with numpy: ``_gpu.py``).
The selector here is the reference implementation: the Rust and TypeScript bindings behave
the same way, and the shared conformance cases check that they do.
"""

from __future__ import annotations

import operator
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

_FOLD = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a // b, "mod": lambda a, b: a % b,
    "ceil_div": lambda a, b: -(-a // b), "fdiv": lambda a, b: a / b,
    "lt": lambda a, b: int(a < b), "le": lambda a, b: int(a <= b),
    "gt": lambda a, b: int(a > b), "ge": lambda a, b: int(a >= b),
    "eq": lambda a, b: int(a == b), "ne": lambda a, b: int(a != b),
}  # fmt: skip
_UNARY = {"not": lambda a: int(not a), "int": int, "float": float, "abs": abs}


def evaluate(tree: Mapping[str, Any], scope: Mapping[str, int | float]) -> int | float:
    """The value of an expression tree: Python's arithmetic on integers and floats (an integer
    stays one unless a float enters; ``fdiv`` is ``/``, ``div`` is ``//``)."""
    op = tree["op"]
    if op == "const":
        return int(tree["value"])
    if op == "fconst":
        return float(tree["value"])
    if op == "var":
        return scope[tree["name"]]
    args = tree["args"]
    if op == "select":
        return evaluate(args[1] if evaluate(args[0], scope) else args[2], scope)
    if op == "and":
        return int(bool(evaluate(args[0], scope)) and bool(evaluate(args[1], scope)))
    if op == "or":
        return int(bool(evaluate(args[0], scope)) or bool(evaluate(args[1], scope)))
    if op in _UNARY:
        return _UNARY[op](evaluate(args[0], scope))
    values = [evaluate(a, scope) for a in args]
    if op == "min":
        return min(values)
    if op == "max":
        return max(values)
    return _FOLD[op](*values)


# wgpu-py's feature names that differ from the WebGPU standard's (which the manifest uses).
WEBGPU_FEATURE_NAMES = {"subgroup": "subgroups"}
# WebGPU's default limits that a vendored variant may need more of (camelCase).
WEBGPU_DEFAULTS = {
    "maxComputeWorkgroupStorageSize": 16384, "maxComputeInvocationsPerWorkgroup": 256,
    "maxComputeWorkgroupSizeX": 256, "maxComputeWorkgroupSizeY": 256,
    "maxComputeWorkgroupSizeZ": 64, "maxStorageBuffersPerShaderStage": 8,
    "maxUniformBuffersPerShaderStage": 12, "maxUniformBufferBindingSize": 65536,
    "maxBindGroups": 4, "maxStorageBufferBindingSize": 134217728,
    "maxBufferSize": 268435456, "maxComputeWorkgroupsPerDimension": 65535,
}  # fmt: skip


@dataclass(frozen=True)
class AdapterFacts:
    """What the selector knows of an adapter: identity, optional features, limits (camelCase)."""

    vendor: str = ""
    architecture: str = ""
    device: str = ""
    backend: str = ""
    features: frozenset[str] = frozenset()
    limits: Mapping[str, int] = field(default_factory=dict)


def _camel(kebab: str) -> str:
    head, *rest = kebab.split("-")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def facts_from_wgpu(adapter: Any) -> AdapterFacts:
    """AdapterFacts of a wgpu-py adapter."""
    info = adapter.info
    return AdapterFacts(
        vendor=str(info.get("vendor", "")),
        architecture=str(info.get("architecture", "")),
        device=str(info.get("device", "")),
        backend=str(info.get("backend_type", "")),
        features=frozenset(WEBGPU_FEATURE_NAMES.get(str(f), str(f)) for f in adapter.features),
        limits={_camel(k): int(v) for k, v in adapter.limits.items() if isinstance(v, int)},
    )


@dataclass(frozen=True)
class Plan:
    """What to run: the variant, every pass's workgroup counts, buffer sizes, uniform bytes."""

    kernel: str
    variant: str
    scope: Mapping[str, int]
    dispatch: tuple[tuple[str, tuple[int, int, int]], ...]
    buffer_sizes: Mapping[str, int]  # bytes per binding name (uniform included)
    scratch_sizes: Mapping[str, int]
    uniform: bytes
    rejected: tuple[tuple[str, str], ...]  # (variant, why) tried before this one
    # Values of the shader's `override`s: every pass's pipeline is created with them.
    constants: Mapping[str, float] = field(default_factory=dict)
    # How the caller's buffers hold their values, per binding name: f32, f16, pf16 (f16
    # pairs), u32, i32. The selector may choose an f16 variant: upload with encode().
    encodings: Mapping[str, str] = field(default_factory=dict)


class NoViable(Exception):
    """No vendored variant of a kernel can run on this adapter at this shape."""

    def __init__(self, kernel: str, shape: Mapping[str, int], rejected: list[tuple[str, str]]):
        self.kernel, self.shape, self.rejected = kernel, dict(shape), rejected
        why = "; ".join(f"{v}: {r}" for v, r in rejected)
        super().__init__(f"no viable variant of {kernel} for {dict(shape)}: {why}")


def _size(variant: str, name: str, value: Any, floating: bool) -> int | float:
    """A shape value: a float for a float parameter (eps), else an integer (64.0 is 64)."""
    if floating:
        try:
            return float(value)
        except (TypeError, ValueError):
            raise ValueError(f"{variant}: {name}={value!r} is not a number") from None
    try:
        return operator.index(value)
    except TypeError:
        pass
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{variant}: size {name}={value!r} is not an integer") from None
    if not number.is_integer():
        raise ValueError(f"{variant}: size {name}={value!r} is not an integer")
    return int(number)


def problem_scope(
    variant: Mapping[str, Any], shape: Mapping[str, int | float]
) -> dict[str, int | float]:
    """The sizes (float parameters such as eps as floats) and the derived values, in order."""
    missing = [s for s in variant["sizes"] if s not in shape]
    if missing:
        raise ValueError(f"{variant['name']}: shape lacks {', '.join(missing)}")
    floats = set(variant.get("float_sizes", ()))
    scope = {s: _size(variant["name"], s, shape[s], s in floats) for s in variant["sizes"]}
    for d in variant["derived"]:
        try:
            scope[d["name"]] = evaluate(d["expr"], scope)
        except ZeroDivisionError:
            raise Unrunnable(f"derived value {d['name']} divides by zero") from None
    return scope


class Unrunnable(ValueError):
    """A shape at which a variant cannot run at all (why_not gives it as the one reason)."""


_RANGES = {"u32": (0, 2**32 - 1), "i32": (-(2**31), 2**31 - 1)}


def _uniform_misfits(variant: Mapping[str, Any], scope: Mapping[str, int | float]) -> list[str]:
    fields = variant["uniform"]["fields"] if variant["uniform"] else []
    out = []
    for f in (f for f in fields if not f["padding"] and f["type"] in _RANGES):
        low, high = _RANGES[f["type"]]
        if not low <= (value := evaluate(f["value"], scope)) <= high:
            out.append(f"uniform field {f['name']} = {value} does not fit {f['type']}")
    return out


def required_limits(variant: Mapping[str, Any], plan: Plan) -> dict[str, int]:
    """The limits above WebGPU's defaults (camelCase) a device needs for ``plan``: the
    variant's own, and those its buffers' sizes need (a default device refuses the binding)."""
    need = dict(variant["limits"])
    for b in variant["bindings"]:
        size = plan.buffer_sizes[b["name"]]
        kind = "Uniform" if b["kind"] == "uniform" else "Storage"
        for limit in (f"max{kind}BufferBindingSize", "maxBufferSize"):
            need[limit] = max(need.get(limit, 0), size)
    return {
        k: n for k, n in sorted(need.items()) if k in WEBGPU_DEFAULTS and n > WEBGPU_DEFAULTS[k]
    }


def pack_uniform(variant: Mapping[str, Any], scope: Mapping[str, int]) -> bytes:
    """The uniform's bytes (little-endian, padding zero); b'' when the variant has none."""
    u = variant["uniform"]
    if u is None:
        return b""
    out = bytearray(u["size"])
    fmt = {"u32": "<I", "i32": "<i", "f32": "<f"}
    for f in u["fields"]:
        if not f["padding"]:
            value = evaluate(f["value"], scope)
            struct.pack_into(
                fmt[f["type"]], out, f["offset"], float(value) if f["type"] == "f32" else value
            )
    return bytes(out)


def why_not(variant: Mapping[str, Any], facts: AdapterFacts, shape: Mapping[str, int]) -> list[str]:
    """Every reason ``variant`` cannot run on ``facts`` at ``shape`` (empty: it can)."""
    out = [f"needs feature {f}" for f in variant["features"] if f not in facts.features]
    for name, need in sorted(variant["limits"].items()):
        have = facts.limits.get(name)
        if have is not None and need > have:
            out.append(f"needs {name} {need} > {have}")
    if out:
        return out
    try:
        scope = problem_scope(variant, shape)
    except Unrunnable as exc:
        return [str(exc)]
    for p in variant["preconditions"]:
        if not evaluate(p["expr"], scope):
            out.append(f"precondition `{p['text']}` fails")
    if out:
        return out
    out += _uniform_misfits(variant, scope)
    most = facts.limits.get("maxComputeWorkgroupsPerDimension")
    for p in variant["passes"]:
        for axis, d in zip("xyz", p["dispatch"], strict=True):
            n = evaluate(d, scope)
            if most is not None and n > most:
                what = f"{p['entry_point']} dispatch {axis} {n}"
                out.append(f"{what} > maxComputeWorkgroupsPerDimension {most}")
    for b in variant["bindings"]:
        size = evaluate(b["min_binding_size"], scope)
        for limit in ("maxStorageBufferBindingSize", "maxBufferSize"):
            have = facts.limits.get(limit)
            if b["kind"] == "storage" and have is not None and size > have:
                out.append(f"{b['name']} needs {size} B > {limit} {have}")
    return out


def _rule_applies(
    rule: Mapping[str, Any], facts: AdapterFacts, shape: Mapping[str, int | float]
) -> bool:
    for key, want in rule["match"].items():
        if want is not None and str(getattr(facts, key)).lower() != want.lower():
            return False
    for size, b in rule["shape"].items():  # integer sizes only: a float parameter is no bucket
        if size not in shape:
            return False  # problem_scope says what the shape lacks
        v = int(shape[size])
        if (b["min"] is not None and v < b["min"]) or (b["max"] is not None and v >= b["max"]):
            return False
    return True


def candidates(
    manifest: Mapping[str, Any], kernel: str, facts: AdapterFacts, shape: Mapping[str, int]
) -> list[str]:
    """The chain to try: the first matching rule's, the default chain, the portable fallback."""
    sel = manifest["kernels"][kernel]["selection"]
    chain: list[str] = []
    for rule in sel["rules"]:
        if _rule_applies(rule, facts, shape):
            chain += [c["variant"] for c in rule["chain"]]
            break
    chain += sel["default_chain"] + [sel["portable_fallback"]]
    return list(dict.fromkeys(chain))


def select(
    manifest: Mapping[str, Any], kernel: str, facts: AdapterFacts, shape: Mapping[str, int]
) -> Plan:
    """The first viable candidate's plan; NoViable names why each candidate was dropped."""
    if kernel not in manifest["kernels"]:
        raise KeyError(
            f"no vendored kernel {kernel!r}; vendored: {', '.join(sorted(manifest['kernels']))}"
        )
    rejected: list[tuple[str, str]] = []
    for name in candidates(manifest, kernel, facts, shape):
        variant = manifest["variants"][name]
        reasons = why_not(variant, facts, shape)
        if reasons:
            rejected.append((name, "; ".join(reasons)))
            continue
        return plan_for(manifest, name, shape, tuple(rejected))
    raise NoViable(kernel, shape, rejected)


def plan_for(
    manifest: Mapping[str, Any], name: str, shape: Mapping[str, int], rejected: tuple = ()
) -> Plan:
    """The plan of one named variant at ``shape`` (no selection; preconditions not checked)."""
    variant = manifest["variants"][name]
    scope = problem_scope(variant, shape)
    sizes = {b["name"]: evaluate(b["min_binding_size"], scope) for b in variant["bindings"]}
    dispatch = tuple(
        (p["entry_point"], tuple(evaluate(d, scope) for d in p["dispatch"]))
        for p in variant["passes"]
    )
    scratch = {s["binding"]: evaluate(s["size"], scope) for s in variant["scratch"]}
    uniform = pack_uniform(variant, scope)
    constants = dict(variant.get("constants", {}))
    encodings = {
        b["name"]: b["encoding"]
        for b in variant["bindings"]
        if b["kind"] != "uniform" and not b["scratch"] and b["encoding"]
    }
    return Plan(
        variant["kernel"], name, scope, dispatch, sizes, scratch, uniform, rejected, constants,  # type: ignore[arg-type]
        encodings,
    )  # fmt: skip
