"""Tuning overhead: wall time of a tune / the summed time of the repetitions it measured.

A tune spends its time checking each variant against the reference, warming up and
calibrating, flushing the cache before every cold sample, re-timing finalists head-to-head,
and starting the worker; only the timed repetitions themselves are "useful" device time.
This runs one complete tune into a fresh database (nothing reused) and reports the ratio and
where the rest went.

    python benchmarks/bench_tune_overhead.py                      # whole attention_bwd_dq space
    python benchmarks/bench_tune_overhead.py --set wg=64 --warm   # a subset, warm caches
    python benchmarks/bench_tune_overhead.py --json out.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from wgslgen.atomic import atomic_write_text  # noqa: E402
from wgslgen.render.build import apply_overrides, parse_overrides  # noqa: E402
from wgslgen.spec.kernel import format_shape, parse_shape  # noqa: E402
from wgslgen.spec.loader import discover, select  # noqa: E402
from wgslgen.tune.db import ResultsDB  # noqa: E402
from wgslgen.tune.runner import TuneOptions, TuneSession  # noqa: E402

DEFAULT_SHAPE = "head_dim=64,n_heads=8,n_kv_heads=4,history_len=256"


def main() -> int:
    """Run one tune, print the overhead figure and its breakdown."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--kernel", default="attention_bwd_dq")
    p.add_argument("--shape", default=DEFAULT_SHAPE, type=parse_shape)
    p.add_argument("--set", action="append", metavar="AXIS=VALUE", help="restrict the space")
    p.add_argument("--adapter", default="cpu")
    p.add_argument("--warm", action="store_true")
    p.add_argument("--l2-bytes", type=int, default=None)
    p.add_argument("--json", type=Path, help="also write the figures here")
    args = p.parse_args()

    (spec,) = select(discover(), [args.kernel])
    overrides = parse_overrides(args.set)
    variants = apply_overrides(spec, overrides) if overrides else None
    options = TuneOptions(adapter=args.adapter, warm=args.warm, l2_bytes=args.l2_bytes)
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        with TuneSession(options, ResultsDB(Path(tmp) / "results.jsonl")) as session:
            plan = session.plan(spec, args.shape, variants)
            report = session.run(plan)
            label = session.device_label
        wall = time.perf_counter() - start
    t = session.totals
    timed = (t.timed_ns + t.head_to_head_ns) * 1e-9
    other = wall - t.check_s - t.bench_s - t.head_to_head_s
    figures = {
        "kernel": spec.name,
        "shape": format_shape(args.shape),
        "device": label,
        "subset": args.set or "whole space (every variant that fits the adapter)",
        "timing": "warm" if args.warm else f"cold, flush {options.flush_bytes()} B per sample",
        "variants_run": t.measured,
        "failed": t.failed,
        "excluded": len(plan.excluded),
        "wall_s": wall,
        "timed_repetitions_s": timed,
        "overhead": wall / timed if timed else None,
        "breakdown_s": {
            "check against reference (run jobs)": t.check_s,
            "timing jobs (warm-up, calibration, flushes, samples)": t.bench_s,
            "head-to-head": t.head_to_head_s,
            "other (worker start, rendering, database, decisions)": other,
        },
        "winner": report.decision.winner if report.decision else None,
    }
    print(f"{spec.name} @ {figures['shape']} on {label} ({figures['timing']})")
    print(f"subset: {figures['subset']}")
    print(f"{t.measured} variant(s) run ({t.failed} failed, {len(plan.excluded)} excluded)")
    print(f"wall {wall:.1f} s, timed repetitions {timed:.2f} s → overhead {wall / timed:.1f}x")
    for what, s in figures["breakdown_s"].items():
        print(f"  {s:7.1f} s  {what}")
    if args.json:
        atomic_write_text(args.json, json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
