"""Does a kernel's code size cost time on this device? And what does one dependent load cost?

    python benchmarks/code_size_probe.py [--adapter gpu] [--json F]

Two questions the split kernels' timings raise (their workgroups take microseconds longer
than their instructions and loads explain, and their unrolled text is ~2k instructions):

* code size: every thread runs the same N fused multiply-adds (two independent chains),
  once as straight-line code (N instructions of text) and once as a loop of 16 per
  iteration over a bound read from a buffer (the same work, ~20 instructions of text).
  If the straight-line kernel is slower, instruction fetch is part of the cost.
* latency: one thread follows a chain of dependent loads (each index read from the last
  load) through a buffer small enough for L2 and one larger than L2: time per load, from
  the difference of a 64- and a 320-load chain (the launch cancels).

Timed with wgslgen's own method (GPU timestamps, warm and cold), 256 workgroups of 256
threads (the split kernels' grid at history 4096), one dispatch per figure, a fresh device
per size. (Session 8's run used one device for all sizes; its N >= 4096 rows drifted.)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from wgslgen.atomic import atomic_write_text  # noqa: E402
from wgslgen.run.device import choose_adapter, create_device, describe_adapter  # noqa: E402
from wgslgen.tune.bench import measure  # noqa: E402

WORKGROUPS = 256
THREADS = 256
CHAIN_STEPS = (64, 320)  # the difference of the two times is 256 dependent loads


def fma_kernel(n: int, straight: bool) -> str:
    """N multiply-adds per thread in two chains: straight-line text or a loop of 16."""
    head = (
        "@group(0) @binding(0) var<storage, read_write> buf: array<f32>;\n"
        f"@compute @workgroup_size({THREADS})\n"
        "fn main(@builtin(global_invocation_id) g: vec3<u32>) {\n"
        "    var x = buf[g.x % 64u];\n    var y = buf[(g.x + 7u) % 64u];\n"
    )
    if straight:
        body = "".join(
            f"    x = fma(x, {1.0 + i * 1e-6:.7f}, {i * 1e-7:.8f});\n"
            f"    y = fma(y, {1.0 - i * 1e-6:.7f}, {i * 2e-7:.8f});\n"
            for i in range(n // 2)
        )
    else:
        inner = "".join(
            f"        x = fma(x, {1.0 + i * 1e-6:.7f}, {i * 1e-7:.8f});\n"
            f"        y = fma(y, {1.0 - i * 1e-6:.7f}, {i * 2e-7:.8f});\n"
            for i in range(8)
        )
        loop = "    for (var i = 0u; i < trips; i++) {\n"
        body = f"    let trips = bitcast<u32>(buf[64]);\n{loop}{inner}    }}\n"
    tail = "    if (x + y == 12345.0) { buf[g.x] = x; }\n}\n"
    return head + body + tail


def chase_kernel(steps: int) -> str:
    """One thread: ``steps`` dependent loads, each index the previous load's value."""
    return (
        "@group(0) @binding(0) var<storage, read_write> buf: array<u32>;\n"
        "@compute @workgroup_size(1)\n"
        "fn main() {\n    var i = 0u;\n"
        f"    for (var s = 0u; s < {steps}u; s++) {{ i = buf[i]; }}\n"
        "    buf[0] = buf[0] + (i & 0u);\n}\n"
    )


def recorder(device, source: str, buffers: list, groups: int):
    """A recorder of one dispatch of ``source``'s ``main`` over ``buffers`` (bindings 0, 1, ...
    of group 0), ``groups`` workgroups along x."""
    module = device.create_shader_module(code=source)
    pipeline = device.create_compute_pipeline(
        layout="auto", compute={"module": module, "entry_point": "main"}
    )
    bind = device.create_bind_group(
        layout=pipeline.get_bind_group_layout(0),
        entries=[
            {"binding": i, "resource": {"buffer": b, "offset": 0, "size": b.size}}
            for i, b in enumerate(buffers)
        ],
    )

    def record(cpass) -> None:
        cpass.set_pipeline(pipeline)
        cpass.set_bind_group(0, bind)
        cpass.dispatch_workgroups(groups, 1, 1)

    return record


def time_kernel(device, source: str, data: np.ndarray, groups: int, warm: bool) -> float:
    """Median µs of one dispatch of ``source`` over ``data`` (one storage buffer)."""
    import wgpu

    buf = device.create_buffer_with_data(
        data=data.tobytes(), usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC
    )
    record = recorder(device, source, [buf], groups)
    return measure(device, record, warm=warm, budget_s=0.2).median_ns / 1e3


def chase_data(n_words: int, rng: np.random.Generator) -> np.ndarray:
    """A random cycle through n_words words, one 256-byte line apart per step at least."""
    stride = 64  # words: each step lands on its own 256-byte block
    slots = rng.permutation(n_words // stride) * stride
    data = np.zeros(n_words, dtype=np.uint32)
    data[slots] = np.roll(slots, -1)
    data[0] = slots[0]
    return data


def sizes(text: str) -> list[int]:
    """--sizes: comma-separated multiples of 16 (the loop runs 16 per iteration)."""
    try:
        values = [int(s) for s in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of integers: {text!r}") from None
    if not values or any(v <= 0 or v % 16 for v in values):
        raise argparse.ArgumentTypeError(f"each size must be a positive multiple of 16: {text!r}")
    return values


def main() -> None:
    """Print and optionally save the probe's figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--adapter", default="gpu")
    ap.add_argument(
        "--sizes", type=sizes, default="512,1024,2048,4096,8192", help="N per thread, a list"
    )
    ap.add_argument("--json")
    args = ap.parse_args()
    adapter = choose_adapter(args.adapter)

    device = None

    def fresh_device():
        # one device per size: a device that has been timing for a while runs kernels slower
        # (benchmarks/README.md, session 8), and the straight/loop pairs must not differ by age
        nonlocal device
        if device is not None:
            device.destroy()
        device = create_device(adapter, ["timestamp-query"])
        return device

    print(describe_adapter(adapter))
    out: dict = {"adapter": describe_adapter(adapter), "fma": [], "chase": []}
    for n in args.sizes:
        data = np.ones(68, dtype=np.float32)
        data[64:65] = np.array([n // 16], dtype=np.uint32).view(np.float32)
        row = {"n": n}
        device = fresh_device()
        for label, straight in (("straight", True), ("loop", False)):
            for warm in (True, False):
                key = f"{label}_{'warm' if warm else 'cold'}_us"
                row[key] = time_kernel(device, fma_kernel(n, straight), data, WORKGROUPS, warm)
        print(json.dumps(row))
        out["fma"].append(row)
    rng = np.random.default_rng(0)
    for mib in (4, 120):  # in L2; over twice the 50 MB L2 of an H200
        data = chase_data(mib << 18, rng)
        row: dict = {"buffer_mib": mib}
        device = fresh_device()
        for warm in (True, False):
            short, long = (
                time_kernel(device, chase_kernel(steps), data, 1, warm) for steps in CHAIN_STEPS
            )
            per_load = (long - short) * 1e3 / (CHAIN_STEPS[1] - CHAIN_STEPS[0])
            row[f"ns_per_load_{'warm' if warm else 'cold'}"] = per_load
        print(json.dumps(row))
        out["chase"].append(row)
    if args.json:
        atomic_write_text(Path(args.json), json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
