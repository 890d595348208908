"""An experiment's two sides side by side: its pass_breakdown.py and pipeline_stats.py files.

    python benchmarks/experiments/compare.py OUTDIR [--json F]

OUTDIR holds library_<variant>.json (timed from the library's templates) and
changed_<variant>.json (from the experiment's); each file is pass_breakdown.py's --json (a
list of rows with variant, shape and times_us: {all | entry point: {warm, cold}}). Printed,
per shape: every variant timed on both sides (all passes, warm / cold µs, and changed −
library), then the variants timed only with the change, against the fastest library variant
at that shape. Where OUTDIR also holds stats_library.json and stats_changed.json
(pipeline_stats.py --json of both sides' SPIR-V), every entry point whose registers or local
memory (spilled registers on NVIDIA) differ. An experiment's run.sh writes such a folder
(session 12's: results/h200_s12_raw_kv/experiment/run.sh). A one-line error for a missing
folder or an unreadable file.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # wgslgen, run from anywhere
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/pipeline_stats

from pipeline_stats import statistics_by_entry

from wgslgen.atomic import atomic_write_text

Times = dict[tuple[str, str], tuple[float, float]]  # (variant, shape) -> all passes warm, cold
Stats = dict[tuple[str, str], tuple[int, int]]  # (variant, entry point) -> registers, local B
# NVIDIA's driver (580) reports "Local Memory Size" as 2**36 plus the bytes per thread.
LOCAL_BYTES_MASK = 2**36 - 1


def read_side(folder: Path, side: str) -> Times:
    """Warm and cold µs of all passes per (variant, shape) from ``side``_*.json in ``folder``."""
    out: Times = {}
    for path in sorted(folder.glob(f"{side}_*.json")):
        try:
            rows = json.loads(path.read_text())
            for row in rows:
                if row.get("ablation", "as is") == "as is":
                    t = row["times_us"]["all"]
                    out[(row["variant"], row["shape"])] = (float(t["warm"]), float(t["cold"]))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
            raise SystemExit(
                f"error: {path}: not a pass_breakdown.py --json file ({e!r})"
            ) from None
    return out


def read_stats(path: Path) -> Stats:
    """(variant, entry point) -> (registers, local memory bytes) from a pipeline_stats.py file."""
    try:
        out: Stats = {}
        for (file, entry), executables in statistics_by_entry(json.loads(path.read_text())).items():
            stats = executables[0]  # a compute pipeline has one
            local = int(stats.get("Local Memory Size", 0)) & LOCAL_BYTES_MASK
            out[(file.split("__", 1)[1], entry)] = (int(stats["Register Count"]), local)
        return out
    except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError) as e:
        raise SystemExit(f"error: {path}: not a pipeline_stats.py --json file ({e!r})") from None


def register_changes(library: Stats, changed: Stats) -> list[dict]:
    """Entry points compiled on both sides whose registers or local memory differ."""
    return [
        {
            "variant": v,
            "entry": e,
            "library": list(library[(v, e)]),
            "changed": list(changed[(v, e)]),
        }
        for v, e in sorted(changed)
        if (v, e) in library and library[(v, e)] != changed[(v, e)]
    ]


def compare(library: Times, changed: Times) -> dict[str, list[dict]]:
    """{shape: rows}: both sides where both were timed, then the changed side's own variants."""
    shapes: dict[str, list[dict]] = defaultdict(list)

    def order(item: tuple[tuple[str, str], tuple[float, float]]) -> tuple[str, bool, str]:
        (variant, shape), _ = item
        return shape, (variant, shape) not in library, variant

    for (variant, shape), (cw, cc) in sorted(changed.items(), key=order):
        if (variant, shape) in library:
            lw, lc = library[(variant, shape)]
            shapes[shape].append(
                {"variant": variant, "library": [lw, lc], "changed": [cw, cc],
                 "delta": [cw - lw, cc - lc]}
            )  # fmt: skip
        else:
            best = [(w, c, v) for (v, s), (w, c) in library.items() if s == shape]
            bw, bc, bv = min(best) if best else (float("nan"), float("nan"), "none")
            shapes[shape].append(
                {"variant": variant, "changed": [cw, cc], "best_library": bv,
                 "library": [bw, bc], "delta": [cw - bw, cc - bc]}
            )  # fmt: skip
    return dict(shapes)


def main(argv: list[str] | None = None) -> int:
    """Print the comparison (and write it as JSON if asked)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir", type=Path)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    if not args.outdir.is_dir():
        print(f"error: {args.outdir}: no such folder", file=sys.stderr)
        return 2
    library, changed = read_side(args.outdir, "library"), read_side(args.outdir, "changed")
    if not changed:
        print(f"error: {args.outdir}: no changed_*.json files", file=sys.stderr)
        return 2
    table = compare(library, changed)
    stats = [args.outdir / f"stats_{side}.json" for side in ("library", "changed")]
    registers = register_changes(*map(read_stats, stats)) if all(map(Path.exists, stats)) else []
    for shape, rows in table.items():
        print(f"\n{shape}: all passes, warm / cold µs")
        for r in rows:
            against = f"best library {r['best_library']}" if "best_library" in r else "library"
            print(
                f"  {r['variant']:28s} changed {r['changed'][0]:6.1f} / {r['changed'][1]:6.1f}"
                f"   {against} {r['library'][0]:6.1f} / {r['library'][1]:6.1f}"
                f"   Δ {r['delta'][0]:+5.1f} / {r['delta'][1]:+5.1f}"
            )
    if registers:
        print("\nregisters, local memory B: library -> changed (entry points that differ)")
    for r in registers:
        (lr, ll), (cr, cl) = r["library"], r["changed"]
        print(f"  {r['variant']:28s} {r['entry']:10s} {lr:4d}, {ll:3d} -> {cr:4d}, {cl:3d}")
    if args.json:
        result = {"times": table, "registers": registers}
        atomic_write_text(args.json, json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
