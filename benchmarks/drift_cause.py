"""What makes one device time the same kernel slower and slower? (see worker_drift.py)

    python benchmarks/drift_cause.py [--adapter gpu] [--rounds 4000] [--json F]

For each suspect, a fresh device times a memory-bound kernel (warm, wgslgen's method), does
one thing `--rounds` times, and times the kernel again, over its old buffers and over
buffers allocated after the stress (as every new job's are); the ratios after / before say
whether that thing makes the device, or memory it hands out later, slower:

* ``timestamp-batches``: what timing does per sample batch (a query set and a resolve
  buffer created, the stamps read back, both destroyed);
* ``submits``: a dispatch submitted and waited for (a read-back of a 4-byte buffer);
* ``buffers``: a storage buffer created with data and destroyed (as each job's inputs are);
* ``cache-flushes``: what a cold sample does first (256 MiB cleared), once per 20 rounds;
* ``busy``: the kernel dispatched back to back (1024 per submit) for 3 s, as a long warm-up
  or many timed variants keep a device busy;
* ``idle``: nothing, for as long as the slowest of the above took.

``--recovery`` asks the follow-up question (idle was the one suspect that slowed the kernel):
after S seconds idle, how slow is the kernel and for how long (timed again and again for
``TRACE_S``), without and with the timing method's spin-up (``bench.SPIN_UP_S`` of
back-to-back dispatches before each measurement)?
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from code_size_probe import recorder  # noqa: E402

from wgslgen.atomic import atomic_write_text  # noqa: E402
from wgslgen.run.device import choose_adapter, create_device, describe_adapter  # noqa: E402
from wgslgen.tune.bench import SPIN_UP_S, _Timer, measure  # noqa: E402

BUSY_S = 3.0
TRACE_S = 2.0  # --recovery: how long the kernel is re-timed after the idle spell
WORDS = 8 << 20  # 32 MiB in, 32 MiB out
COPY = """
@group(0) @binding(0) var<storage, read> src: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<f32>>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    let i = g.x + g.y * 65535u * 256u;
    if (i < arrayLength(&dst)) { dst[i] = src[i] * 2.0; }
}
"""


def copy_kernel(device):
    """A recorder of one dispatch of the copy kernel over fresh buffers."""
    import wgpu

    src = device.create_buffer_with_data(
        data=np.ones(WORDS, np.float32).tobytes(), usage=wgpu.BufferUsage.STORAGE
    )
    dst = device.create_buffer(size=WORDS * 4, usage=wgpu.BufferUsage.STORAGE)
    return recorder(device, COPY, [src, dst], WORDS // 4 // 256)


def stress(device, record, what: str, rounds: int, seconds: float) -> None:
    """Do ``what`` ``rounds`` times (idle: sleep ``seconds``)."""
    import wgpu

    if what == "idle":
        time.sleep(seconds)
        return
    if what == "busy":
        timer = _Timer(device, warm=True, l2_bytes=None)
        end = time.perf_counter() + BUSY_S
        while time.perf_counter() < end:
            timer.samples(record, 1024, 1, flush=False)
        return
    timer = _Timer(device, warm=True, l2_bytes=None)
    cold = _Timer(device, warm=False, l2_bytes=None) if what == "cache-flushes" else None
    fence = device.create_buffer(size=4, usage=wgpu.BufferUsage.COPY_SRC)
    for i in range(rounds):
        if what == "timestamp-batches":
            timer.samples(record, 1, 1, flush=False)
        elif what == "submits":
            enc = device.create_command_encoder()
            cpass = enc.begin_compute_pass()
            record(cpass)
            cpass.end()
            device.queue.submit([enc.finish()])
            device.queue.read_buffer(fence)
        elif what == "cache-flushes":
            if i % 20 == 0:
                cold.flush()
        elif what == "buffers":
            buf = device.create_buffer_with_data(
                data=np.zeros(1 << 16, np.float32).tobytes(), usage=wgpu.BufferUsage.STORAGE
            )
            buf.destroy()


def recovery(adapter, idle_s: float, spin_up_s: float) -> dict:
    """On a fresh device: the kernel's time, then re-timed for TRACE_S after ``idle_s`` idle,
    each measurement with ``spin_up_s`` of back-to-back dispatches first."""
    device = create_device(adapter, ["timestamp-query"])
    record = copy_kernel(device)
    before = measure(device, record, warm=True).median_ns / 1e3
    time.sleep(idle_s)
    t0 = time.perf_counter()
    trace = []
    while time.perf_counter() - t0 < TRACE_S:
        us = measure(device, record, warm=True, spin_up_s=spin_up_s).median_ns / 1e3
        trace.append((round(time.perf_counter() - t0, 3), round(us, 2)))
    device.destroy()
    shown = ", ".join(f"{us:.1f}" for _, us in trace[:8])
    print(f"idle {idle_s:3.1f} s, spin-up {spin_up_s:4.2f} s: {before:6.1f} us before; "
          f"after: {shown}")  # fmt: skip
    return {"idle_s": idle_s, "spin_up_s": spin_up_s, "before_us": before, "trace": trace}


def main() -> None:
    """Print before/after medians per suspect."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--adapter", default="gpu")
    ap.add_argument("--rounds", type=int, default=4000)
    ap.add_argument("--recovery", action="store_true", help="the idle follow-up (see above)")
    ap.add_argument("--json")
    args = ap.parse_args()
    adapter = choose_adapter(args.adapter)
    out: dict = {"adapter": describe_adapter(adapter), "rounds": args.rounds, "suspects": {}}
    print(out["adapter"])
    if args.recovery:
        cases = [(idle, spin) for idle in (2.0, 5.0, 8.0) for spin in (0.0, SPIN_UP_S)]
        out["recovery"] = [recovery(adapter, idle, spin) for idle, spin in cases]
        if args.json:
            atomic_write_text(Path(args.json), json.dumps(out, indent=1) + "\n")
        return
    slowest = 0.0
    for what in ("timestamp-batches", "submits", "buffers", "cache-flushes", "busy", "idle"):
        device = create_device(adapter, ["timestamp-query"])
        record = copy_kernel(device)
        before = measure(device, record, warm=True).median_ns / 1e3
        t0 = time.perf_counter()
        stress(device, record, what, args.rounds, slowest)
        took = time.perf_counter() - t0
        slowest = max(slowest, took)
        after = measure(device, record, warm=True).median_ns / 1e3
        # the same kernel over buffers allocated after the stress, as each new job's are
        renewed = measure(device, copy_kernel(device), warm=True).median_ns / 1e3
        row = {"before_us": before, "after_us": after, "ratio": after / before,
               "new_buffers_us": renewed, "new_buffers_ratio": renewed / before,
               "stress_s": took}  # fmt: skip
        out["suspects"][what] = row
        print(f"{what:18} {before:8.1f} -> {after:8.1f} us  x{after / before:.2f}; new buffers "
              f"{renewed:8.1f} us  x{renewed / before:.2f}  ({took:.1f} s)")  # fmt: skip
        device.destroy()
    if args.json:
        atomic_write_text(Path(args.json), json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
