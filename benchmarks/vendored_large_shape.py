"""A vendored Python package at a shape whose buffers pass WebGPU's default binding size
(128 MiB), on a real GPU: `required()` asks for the larger limits and the results match
numpy. lavapipe caps a binding at 128 MiB, so CI cannot run this; it is a check for a GPU
machine. (wgpu-py, unlike WebGPU, gives a device the adapter's limits when asked for none, so
in Python the request matters only to other wgpu-py versions; a browser's device and
Rust wgpu's default limits refuse such a binding.)

    python3 -m wgslgen vendor --out /tmp/vk --lang py --kernel attention_bwd_dkv
    python3 benchmarks/vendored_large_shape.py /tmp/vk [--history 524288]

Prints one JSON object (the variant, what `required()` asked for, what a default device said,
the largest error against numpy) and exits 1 on a mismatch.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path

import numpy as np

HEADS, KV_HEADS, HEAD_DIM = 8, 4, 64


def _reference(q, d_out, probs, d_scores, history: int) -> tuple[np.ndarray, np.ndarray]:
    group = HEADS // KV_HEADS  # query heads h of KV head h // group
    ds = d_scores.reshape(KV_HEADS, group, history)
    pr = probs.reshape(KV_HEADS, group, history)
    qq = q.reshape(KV_HEADS, group, HEAD_DIM)
    oo = d_out.reshape(KV_HEADS, group, HEAD_DIM)
    d_k = np.einsum("kgj,kgd->jkd", ds, qq, optimize=True)
    d_v = np.einsum("kgj,kgd->jkd", pr, oo, optimize=True)
    return d_k, d_v


def main() -> int:
    """Select, ask for the limits, run and compare at one large history."""
    import wgpu

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("package", type=Path, help="a folder vendored with --lang py")
    ap.add_argument("--history", type=int, default=1 << 19)
    args = ap.parse_args()
    sys.path.insert(0, str(args.package.resolve().parent))
    kernels = importlib.import_module(args.package.resolve().name)
    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    n = args.history
    shape = kernels.AttentionBwdDkvShape(HEAD_DIM, HEADS, KV_HEADS, n)
    plan = kernels.select(adapter, "attention_bwd_dkv", shape)
    features, limits = kernels.required(plan)
    rng = np.random.default_rng(0)
    values = {
        "q": rng.normal(size=(HEADS, HEAD_DIM)), "d_out": rng.normal(size=(HEADS, HEAD_DIM)),
        # O(1) values: f16 storage keeps about 3 digits of them (not of subnormals)
        "probs": rng.random((HEADS, n)), "d_scores": rng.normal(size=(HEADS, n)),
    }  # fmt: skip
    device = adapter.request_device_sync(required_features=features, required_limits=limits)
    usage = wgpu.BufferUsage
    buffers = {
        name: device.create_buffer_with_data(
            data=kernels.encode(plan, name, values[name].astype(np.float32)), usage=usage.STORAGE
        )
        for name in values
    }
    for name in ("d_k", "d_v"):
        size = plan.buffer_sizes[name]
        buffers[name] = device.create_buffer(size=size, usage=usage.STORAGE | usage.COPY_SRC)
    kernels.run(device, plan, buffers)
    want = _reference(*(values[k].astype(np.float32).astype(np.float64)
                        for k in ("q", "d_out", "probs", "d_scores")), n)  # fmt: skip
    worst = {}
    for name, expected in zip(("d_k", "d_v"), want, strict=True):
        got = kernels.decode(plan, name, device.queue.read_buffer(buffers[name]), expected.size)
        scale = np.abs(expected).max()
        worst[name] = float(np.abs(got.astype(np.float64) - expected.reshape(-1)).max() / scale)
    tolerance = 1e-3 if plan.encodings["d_k"] != "f32" else 1e-5
    ok = all(w <= tolerance for w in worst.values())
    print(json.dumps({
        "adapter": adapter.info["device"], "variant": plan.variant, "history_len": n,
        "buffer_bytes": dict(plan.buffer_sizes), "required_limits": limits,
        "device_binding_limit": device.limits["max-storage-buffer-binding-size"],
        "max_error_over_max": worst, "tolerance": tolerance, "ok": ok,
    }, indent=1))  # fmt: skip
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
