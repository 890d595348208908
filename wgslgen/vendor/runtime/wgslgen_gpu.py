"""Running a vendored variant on wgpu-py, and its buffers' bytes with numpy (copied verbatim
as ``_gpu.py``; ``plan`` is a Plan of ``_runtime.py``'s selector).

wgpu-py is imported by ``run`` alone, numpy by ``encode``/``decode``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Host dtype of each encoding (numpy names); pf16 holds f16 pairs, so its bytes are f16's.
HOST_DTYPES = {"f32": "float32", "f16": "float16", "pf16": "float16", "u32": "uint32",
               "i32": "int32"}  # fmt: skip


def _host_dtype(plan: Any, name: str) -> str:
    if name not in plan.encodings:
        known = ", ".join(sorted(plan.encodings))
        raise ValueError(f"{plan.variant}: no caller binding {name!r}; bindings: {known}")
    return HOST_DTYPES[plan.encodings[name]]


def encode(plan: Any, name: str, values: Any) -> bytes:
    """The bytes of binding ``name`` holding ``values`` (a numpy array or sequence), in the
    plan's encoding: f16 for an f16 variant, where float32 bytes would be read as garbage."""
    import numpy as np

    flat = np.ascontiguousarray(values, dtype=_host_dtype(plan, name)).reshape(-1)
    odd = plan.encodings[name] == "pf16" and flat.size % 2  # pairs: the last word padded
    return (np.append(flat, flat.dtype.type(0)) if odd else flat).tobytes()


def decode(plan: Any, name: str, data: bytes | memoryview, count: int | None = None) -> Any:
    """Binding ``name``'s bytes (e.g. from ``device.queue.read_buffer``) as a numpy array of
    its host dtype, the first ``count`` values when given."""
    import numpy as np

    return np.frombuffer(data, dtype=_host_dtype(plan, name))[:count]


def _check_buffers(
    wgpu: Any, variant: Mapping[str, Any], plan: Any, buffers: Mapping[str, Any]
) -> None:
    """Every buffer names a binding and is a GPUBuffer (a numpy array fails deep in wgpu)."""
    names = [b["name"] for b in variant["bindings"]]
    for name, buf in buffers.items():
        if name not in names:
            raise ValueError(f"{plan.variant}: no binding {name!r}; bindings: {', '.join(names)}")
        if not isinstance(buf, wgpu.GPUBuffer):
            raise TypeError(
                f"{plan.variant}: buffers[{name!r}] is a {type(buf).__name__}, not a "
                "wgpu.GPUBuffer; upload it first, e.g. device.create_buffer_with_data(data=..., "
                "usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC)"
            )
        need = plan.buffer_sizes[name]
        if buf.size < need:  # wgpu would clamp the reads past the end: wrong results, no error
            how = plan.encodings.get(name)
            raise ValueError(
                f"{plan.variant}: buffers[{name!r}] holds {buf.size} bytes; the binding needs "
                f"{need}" + (f" ({how} values: encode(plan, {name!r}, array))" if how else "")
            )


def _with_own_buffers(
    wgpu: Any, device: Any, variant: Mapping[str, Any], plan: Any, buffers: Mapping[str, Any]
) -> dict[str, Any]:
    """``buffers`` plus the uniform and scratch buffers the caller left out, created here."""
    usage = wgpu.BufferUsage
    out = dict(buffers)
    for b in variant["bindings"]:
        if b["name"] in out:
            continue
        if b["kind"] == "uniform":
            out[b["name"]] = device.create_buffer_with_data(data=plan.uniform, usage=usage.UNIFORM)
        elif b["scratch"]:
            out[b["name"]] = device.create_buffer(
                size=plan.buffer_sizes[b["name"]], usage=usage.STORAGE
            )
        else:
            raise ValueError(f"{plan.variant}: no buffer for binding {b['name']!r}")
    return out


def run(
    device: Any, variant: Mapping[str, Any], plan: Any, buffers: Mapping[str, Any], source: str
) -> None:
    """Encode and submit every pass of ``plan`` on a wgpu-py device (one compute pass).

    ``buffers`` maps binding names to ``wgpu.GPUBuffer`` objects on ``device`` (not numpy
    arrays: upload those first, e.g. ``device.create_buffer_with_data(data=arr,
    usage=wgpu.BufferUsage.STORAGE)``); the uniform and scratch buffers are created here when
    missing. The passes share one explicit bind group layout per group.
    """
    import wgpu

    _check_buffers(wgpu, variant, plan, buffers)
    buffers = _with_own_buffers(wgpu, device, variant, plan, buffers)
    groups = sorted({b["group"] for b in variant["bindings"]})
    layouts, bind_groups = [], []
    for g in groups:
        mine = [b for b in variant["bindings"] if b["group"] == g]
        kinds = {"uniform": "uniform", "read": "read-only-storage", "read_write": "storage"}
        entries = [
            {"binding": b["binding"], "visibility": wgpu.ShaderStage.COMPUTE,
             "buffer": {"type": kinds["uniform" if b["kind"] == "uniform" else b["access"]]}}
            for b in mine
        ]  # fmt: skip
        layout = device.create_bind_group_layout(entries=entries)
        layouts.append(layout)
        resources = [
            {"binding": b["binding"], "resource": {"buffer": buffers[b["name"]]}} for b in mine
        ]
        bind_groups.append(device.create_bind_group(layout=layout, entries=resources))
    pipeline_layout = device.create_pipeline_layout(bind_group_layouts=layouts)
    module = device.create_shader_module(code=source)
    stage: dict[str, Any] = {"module": module}
    if plan.constants:
        stage["constants"] = dict(plan.constants)
    encoder = device.create_command_encoder()
    cpass = encoder.begin_compute_pass()
    for entry, (x, y, z) in plan.dispatch:
        pipeline = device.create_compute_pipeline(
            layout=pipeline_layout, compute={**stage, "entry_point": entry}
        )
        cpass.set_pipeline(pipeline)
        for i, bg in zip(groups, bind_groups, strict=True):
            cpass.set_bind_group(i, bg)
        cpass.dispatch_workgroups(x, y, z)
    cpass.end()
    device.queue.submit([encoder.finish()])
