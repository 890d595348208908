"""Does a long-lived worker time a variant slower after many jobs? (tune drift diagnosis)

Times one reference variant in a fresh worker, then after checking and timing every variant
of its kernel in the same worker, then again in a fresh worker; each figure is a median of
`bench.measure` (cold L2, GPU timestamps).

    python benchmarks/worker_drift.py --kernel attention_split --probe wg256_ch64_sf32 \
        --shape head_dim=256,n_heads=8,n_kv_heads=4,history_len=4096,pos=4095,window=0
"""

from __future__ import annotations

import argparse
import json
import time

from wgslgen.render.renderer import render
from wgslgen.run.harness import Harness
from wgslgen.spec.kernel import parse_shape
from wgslgen.spec.loader import discover, select


def main() -> None:
    """Print the probe's median at each stage."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernel", required=True)
    ap.add_argument("--probe", required=True, help="variant name without the kernel prefix")
    ap.add_argument("--shape", required=True, type=parse_shape)
    ap.add_argument("--adapter", default="gpu")
    ap.add_argument("--json")
    args = ap.parse_args()
    spec = select(discover(), [args.kernel])[0]
    rendered = [render(v) for v in spec.variants]
    probe = next(r for r in rendered if r.name == f"{spec.name}__{args.probe}")
    stages: dict[str, float] = {}

    def probe_us(h: Harness, label: str) -> None:
        stages[label] = h.bench(probe, args.shape).median_ns / 1e3
        print(f"{label:40} {stages[label]:9.1f} us", flush=True)

    with Harness(args.adapter) as h:
        h.check(probe, args.shape)
        probe_us(h, "fresh worker")
        t0 = time.perf_counter()
        for i, r in enumerate(rendered):
            if h.check(r, args.shape).status == "pass":
                h.bench(r, args.shape)
            if i in (len(rendered) // 4, len(rendered) // 2):
                probe_us(h, f"same worker after {i + 1} variants")
        print(f"({len(rendered)} variants checked and timed in {time.perf_counter() - t0:.0f} s)")
        probe_us(h, f"same worker after all {len(rendered)}")
    with Harness(args.adapter) as h:
        h.check(probe, args.shape)
        probe_us(h, "fresh worker again")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(stages, f, indent=2)


if __name__ == "__main__":
    main()
