"""The Python binding: the vendored folder is itself a package over wgpu-py."""

from __future__ import annotations

from importlib import resources
from typing import Any

from wgslgen.vendor.names import kernel_type_name

_INIT = '''"""Vendored WGSL kernels: {generator}, ABI {abi}. Generated: do not edit.

    import {{this package}} as kernels
    plan = kernels.select(adapter, "{example}", kernels.{example_cls}(...))
    features, limits = kernels.required(plan)   # request the device with these
    data = kernels.encode(plan, "binding name", array)  # plan.encodings: f32, f16, pf16, ...
    buf = device.create_buffer_with_data(data=data, usage=wgpu.BufferUsage.STORAGE | ...)
    kernels.run(device, plan, {{"binding name": buf, ...}})  # wgpu.GPUBuffer, not numpy
    out = kernels.decode(plan, "output name", device.queue.read_buffer(out_buf))

The selector may choose a variant that stores some bindings as f16 (``plan.encodings``):
encode() writes each binding as its plan says, and run() refuses a buffer smaller than
``plan.buffer_sizes`` gives.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, is_dataclass
from importlib import resources
from typing import Any

from ._gpu import decode, encode
from ._runtime import AdapterFacts, NoViable, Plan, facts_from_wgpu
from . import _gpu, _runtime

__all__ = ["AdapterFacts", "NoViable", "Plan", "MANIFEST", "select", "run", "pack_uniform",
           "shader_source", "facts_from_wgpu", "plan_for", "required", "encode", "decode",
           {classes}]

MANIFEST: dict[str, Any] = json.loads(
    resources.files(__name__).joinpath("manifest.json").read_text(encoding="utf-8")
)
ABI_VERSION = "{abi}"
{dataclasses}

def _shape(shape: Any) -> dict[str, Any]:
    return asdict(shape) if is_dataclass(shape) else dict(shape)


def _facts(adapter: Any) -> AdapterFacts:
    return adapter if isinstance(adapter, AdapterFacts) else facts_from_wgpu(adapter)


def select(adapter: Any, kernel: str, shape: Any) -> Plan:
    """The plan for ``kernel`` at ``shape`` on a wgpu-py adapter (or AdapterFacts)."""
    return _runtime.select(MANIFEST, kernel, _facts(adapter), _shape(shape))


def plan_for(variant: str, shape: Any) -> Plan:
    """The plan of a named variant at ``shape``, bypassing the selector."""
    return _runtime.plan_for(MANIFEST, variant, _shape(shape))


def pack_uniform(variant: str, shape: Any) -> bytes:
    """The uniform bytes of ``variant`` at ``shape``."""
    v = MANIFEST["variants"][variant]
    return _runtime.pack_uniform(v, _runtime.problem_scope(v, _shape(shape)))


def shader_source(variant: str, family: str = "naga") -> str:
    """The WGSL of ``variant`` for a compiler family (wgpu-native reads naga's)."""
    files = MANIFEST["variants"][variant]["files"]
    path = files.get(family) or files["any"]
    return resources.files(__name__).joinpath(path).read_text(encoding="utf-8")


def required(plan: Plan) -> tuple[list[str], dict[str, int]]:
    """Features and limits (wgpu-py names) to request for ``plan``: the variant's own, and
    the buffer-size limits its shape needs above WebGPU's defaults."""
    v = MANIFEST["variants"][plan.variant]
    wgpu_names = {{std: ours for ours, std in _runtime.WEBGPU_FEATURE_NAMES.items()}}
    limits = {{
        "".join("-" + c.lower() if c.isupper() else c for c in k): n
        for k, n in _runtime.required_limits(v, plan).items()
    }}
    return [wgpu_names.get(f, f) for f in v["features"]], limits


def run(device: Any, plan: Plan, buffers: Mapping[str, Any]) -> None:
    """Create the pipelines and encode every pass of ``plan`` on ``device``.

    ``buffers`` maps binding names to GPU buffers (``wgpu.GPUBuffer``), not numpy arrays:
    upload an array with ``device.create_buffer_with_data(data=arr, usage=...)`` first (a
    TypeError names a binding given anything else). The uniform and scratch buffers are made
    here when absent; ``plan.buffer_sizes`` gives every binding's size in bytes.
    """
    v = MANIFEST["variants"][plan.variant]
    _gpu.run(device, v, plan, buffers, shader_source(plan.variant))
'''


def _class_name(kernel: str) -> str:
    return kernel_type_name(kernel) + "Shape"


def python_files(manifest: dict[str, Any]) -> dict[str, bytes]:
    """``__init__.py``, ``_runtime.py`` and ``_gpu.py`` of the vendored package."""
    classes, blocks = [], []
    for kernel, k in sorted(manifest["kernels"].items()):
        cls = _class_name(kernel)
        classes.append(f'"{cls}"')
        floats = {s for v in manifest["variants"].values() if v["kernel"] == kernel
                  for s in v.get("float_sizes", ())}  # fmt: skip
        fields = (
            "\n".join(f"    {s}: {'float' if s in floats else 'int'}" for s in k["sizes"])
            or "    pass"
        )
        blocks.append(
            f'\n\n@dataclass(frozen=True)\nclass {cls}:\n    """Problem sizes of {kernel}."""'
            f"\n\n{fields}\n"
        )
    example = sorted(manifest["kernels"])[0]
    init = _INIT.format(
        generator=manifest["generator"],
        abi=manifest["abi_version"],
        example=example,
        example_cls=_class_name(example),
        classes=", ".join(classes),
        dataclasses="".join(blocks),
    )
    runtime = resources.files("wgslgen.vendor.runtime")
    return {
        "__init__.py": init.encode(),
        "_runtime.py": runtime.joinpath("wgslgen_runtime.py").read_bytes(),
        "_gpu.py": runtime.joinpath("wgslgen_gpu.py").read_bytes(),
    }
