"""Does a kernel's code size explain its time? The driver's statistics joined with fair timings.

    python benchmarks/code_vs_time.py --stats STATS.json OURS.json... [--kernel K] [--json F]

STATS.json is a `pipeline_stats.py --json` file (registers and binary size per entry point);
each OURS.json a `fair_attention.py ours` file. No device is needed: this reads what earlier
calls measured. Two tables, per shape and K/V dtype:

* every timed variant that has statistics: the registers of its largest entry point, its code
  (the binary sizes of all its entry points), warm, cold and the cold − warm gap in µs (the
  median where several files timed it);
* every pair of such variants that differ in one name part only (`e0`→`e4`, `u2`→`u4`, ...):
  what the change adds in code and in registers, and what it does to warm, cold and the gap.

If code size were what a split kernel's time is made of (instructions fetched from L2 or
DRAM), the pairs that add the most code would slow down the most, cold above all.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # wgslgen, run from anywhere
sys.path.insert(0, str(Path(__file__).resolve().parent))  # pipeline_stats beside it

from pipeline_stats import statistics_by_entry

from wgslgen.atomic import atomic_write_text

Key = tuple[str, tuple[int, ...], str]  # variant (name without kernel__), shape, K/V dtype


class InputError(Exception):
    """A file that cannot be read as what it should be: the message names it."""


def _load(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise InputError(f"{path}:{e.lineno}:{e.colno}: invalid JSON: {e.msg}") from None


def code_stats(path: Path, kernel: str) -> dict[str, tuple[int, int]]:
    """{variant: (registers of its largest entry point, bytes of code of all of them)}."""
    data = _load(path)
    out: dict[str, list[int]] = {}
    try:
        for (file, _entry), executables in statistics_by_entry(data).items():
            if not file.startswith(f"{kernel}__"):
                continue
            variant = file.split("__", 1)[1]
            regs, size = out.setdefault(variant, [0, 0])
            for stats in executables:
                regs, size = max(regs, int(stats["Register Count"])), size + stats["Binary Size"]
            out[variant] = [regs, size]
    except (KeyError, TypeError, ValueError) as e:
        raise InputError(f"{path}: not a pipeline_stats.py --json file (at {e!r})") from None
    return {variant: (regs, size) for variant, (regs, size) in out.items()}


def timings(paths: list[Path], kernel: str) -> dict[Key, tuple[float, float]]:
    """{(variant, shape, kv): (warm µs, cold µs)}: medians over the files that timed it."""
    seen: dict[Key, list[tuple[float, float]]] = defaultdict(list)
    for path in paths:
        data = _load(path)
        try:
            for row in data["results"]:
                if row["kernel"] != kernel or "warm" not in row or "cold" not in row:
                    continue  # another kernel, or a variant that failed its check
                key = (row["variant"].split("__", 1)[1], tuple(row["shape"]), row["kv"])
                seen[key].append((row["warm"]["median_us"], row["cold"]["median_us"]))
        except (KeyError, TypeError, IndexError) as e:
            raise InputError(f"{path}: not a fair_attention.py ours file (at {e!r})") from None
    # A file may list one measurement twice (a variant in two families' rows): count it once.
    return {
        key: (
            statistics.median(w for w, _ in set(ms)),
            statistics.median(c for _, c in set(ms)),
        )
        for key, ms in seen.items()
    }


def rows(stats: dict[str, tuple[int, int]], times: dict[Key, tuple[float, float]]) -> list[dict]:
    """One row per timed variant with statistics, sorted by shape, dtype and name."""
    out = []
    for (variant, shape, kv), (warm, cold) in sorted(times.items(), key=lambda t: (t[0][1:], t[0])):
        if variant in stats:
            regs, size = stats[variant]
            out.append(
                {"variant": variant, "shape": list(shape), "kv": kv, "registers": regs,
                 "code_kb": size / 1024, "warm_us": warm, "cold_us": cold,
                 "gap_us": cold - warm}
            )  # fmt: skip
    return out


def one_part_pairs(table: list[dict]) -> list[dict]:
    """Pairs of rows at one shape and dtype whose names differ in exactly one `_` part."""
    by_case: dict[tuple, list[dict]] = defaultdict(list)
    for row in table:
        by_case[(tuple(row["shape"]), row["kv"])].append(row)
    out = []
    for case_rows in by_case.values():
        for i, a in enumerate(case_rows):
            for b in case_rows[i + 1 :]:
                pa, pb = a["variant"].split("_"), b["variant"].split("_")
                diff = [n for n, (x, y) in enumerate(zip(pa, pb, strict=False)) if x != y]
                if len(pa) != len(pb) or len(diff) != 1:
                    continue
                small, big = (a, b) if a["code_kb"] <= b["code_kb"] else (b, a)
                was, now = (r["variant"].split("_")[diff[0]] for r in (small, big))
                out.append(
                    {"shape": small["shape"], "kv": small["kv"], "change": f"{was}→{now}",
                     "from": small["variant"], "to": big["variant"],
                     "code_kb": big["code_kb"] - small["code_kb"],
                     "registers": big["registers"] - small["registers"],
                     "warm_us": big["warm_us"] - small["warm_us"],
                     "cold_us": big["cold_us"] - small["cold_us"],
                     "gap_us": big["gap_us"] - small["gap_us"]}
                )  # fmt: skip
    return sorted(out, key=lambda p: (p["shape"], p["kv"], -p["code_kb"]))


def _markdown(table: list[dict], pairs: list[dict]) -> str:
    lines = [
        "| shape (d, H, KV, N) | K/V | variant | registers | code KB | warm | cold | gap |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in table:
        lines.append(
            f"| {tuple(r['shape'])} | {r['kv']} | {r['variant']} | {r['registers']} | "
            f"{r['code_kb']:.1f} | {r['warm_us']:.1f} | {r['cold_us']:.1f} | {r['gap_us']:.1f} |"
        )
    lines += [
        "",
        "| shape (d, H, KV, N) | K/V | change | from | + code KB | + registers "
        "| Δ warm | Δ cold | Δ gap |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for p in pairs:
        lines.append(
            f"| {tuple(p['shape'])} | {p['kv']} | {p['change']} | {p['from']} | "
            f"{p['code_kb']:+.1f} | {p['registers']:+d} | {p['warm_us']:+.1f} | "
            f"{p['cold_us']:+.1f} | {p['gap_us']:+.1f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Join, print both tables (and write them as JSON if asked)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("ours", nargs="+", type=Path, help="fair_attention.py ours files")
    ap.add_argument("--stats", type=Path, required=True, help="a pipeline_stats.py --json file")
    ap.add_argument("--kernel", default="attention_bwd_dq_split")
    ap.add_argument("--json", type=Path, help="also write both tables here")
    args = ap.parse_args(argv)
    try:
        table = rows(code_stats(args.stats, args.kernel), timings(args.ours, args.kernel))
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if not table:
        print(f"error: no variant of {args.kernel} is timed and in {args.stats}", file=sys.stderr)
        return 2
    pairs = one_part_pairs(table)
    print(_markdown(table, pairs))
    if args.json:
        atomic_write_text(args.json, json.dumps({"rows": table, "pairs": pairs}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
