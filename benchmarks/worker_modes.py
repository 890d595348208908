"""Does `wgslgen tune` pick the same winners with one worker as with a new worker per variant?

    python benchmarks/worker_modes.py run OUTDIR [--modes always,auto] -- TUNE_ARGS...
    python benchmarks/worker_modes.py compare OUTDIR/always.json OUTDIR/auto.json

`run` tunes the same variants once per `--fresh-worker` mode, each with a database and
selection of its own (OUTDIR/MODE.jsonl, OUTDIR/sel_MODE.json; the report in MODE.json, the
progress in MODE.err), so nothing is reused between them, then compares the first mode's
report with each other's. `compare` reads two `tune --json` reports: per shape the winners and
whether a canary drift was reported (tune/drift.py), per variant the medians and their ratio,
and the wall time of each run. It writes nothing but its table (and --json).
Session 20 (H100) found one worker as good in 0.42x the time; the GPU check of `auto`'s
canary is this script on an H200 (benchmarks/README.md, session 21).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # wgslgen, run from anywhere

from wgslgen.atomic import atomic_write_text

# Medians of the same variant in two runs this close count as the same (the H100's spread).
SAME = 0.025


def _medians(report: dict[str, Any]) -> dict[tuple[str, str], float]:
    """(shape, variant) → cold median in ns, for the variants timed ok."""
    return {
        (s["shape"], row["variant"]): row["median_ns"]
        for s in report["shapes"]
        for row in s["leaderboard"]
        if row.get("status") == "ok" and row.get("median_ns")
    }


def compare(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """What differs between report ``a`` and report ``b`` of the same tune."""
    winners = {s["shape"]: [s["winner"], None] for s in a["shapes"]}
    for s in b["shapes"]:
        winners.setdefault(s["shape"], [None, None])[1] = s["winner"]
    drift = [n for s in b["shapes"] for n in s["notes"] if "drifted" in n]
    ma, mb = _medians(a), _medians(b)
    rows = [
        {"shape": k[0], "variant": k[1], "a_ns": ma[k], "b_ns": mb[k], "ratio": mb[k] / ma[k]}
        for k in sorted(ma.keys() & mb.keys())
    ]
    return {
        "wall_s": [a["totals"]["wall_s"], b["totals"]["wall_s"]],
        "winners": winners,
        "same_winners": all(x == y for x, y in winners.values()),
        "drift_notes": drift,
        "variants": rows,
        "within": sum(abs(r["ratio"] - 1) <= SAME for r in rows),
    }


def _table(c: dict[str, Any], names: tuple[str, str]) -> str:
    a, b = names
    lines = [
        f"wall: {a} {c['wall_s'][0]:.1f} s, {b} {c['wall_s'][1]:.1f} s "
        f"({c['wall_s'][1] / c['wall_s'][0]:.2f}x)",
        f"winners {'the same' if c['same_winners'] else 'DIFFER'}:",
    ]
    lines += [f"  {shape}: {x} | {y}" for shape, (x, y) in c["winners"].items()]
    lines.append(f"drift reported by {b}: " + ("; ".join(c["drift_notes"]) or "none"))
    lines.append(f"{'variant':44} {'shape':52} {a + ' µs':>10} {b + ' µs':>10} {'ratio':>6}")
    for r in c["variants"]:
        lines.append(
            f"{r['variant'].split('__')[-1]:44} {r['shape'][:52]:52} "
            f"{r['a_ns'] / 1e3:10.2f} {r['b_ns'] / 1e3:10.2f} {r['ratio']:6.3f}"
        )
    n = len(c["variants"])
    lines.append(f"medians within {SAME:.1%}: {c['within']} of {n}")
    return "\n".join(lines)


def _run(out: Path, modes: list[str], tune_args: list[str]) -> int:
    # Another run's database would be reused (and its files overwritten): refuse instead.
    taken = [f for m in modes for f in (f"{m}.json", f"{m}.err", f"{m}.jsonl", f"sel_{m}.json")
             if (out / f).exists()]  # fmt: skip
    if taken:
        print(f"worker_modes: {out} already holds {', '.join(taken)}: give a new folder",
              file=sys.stderr)  # fmt: skip
        return 2
    out.mkdir(parents=True, exist_ok=True)
    for mode in modes:
        files = ["--db", str(out / f"{mode}.jsonl"), "--selection", str(out / f"sel_{mode}.json")]
        argv = [sys.executable, "-m", "wgslgen", "tune", *tune_args, "--fresh-worker", mode]
        with open(out / f"{mode}.json", "w") as so, open(out / f"{mode}.err", "w") as se:
            done = subprocess.run([*argv, *files, "--json"], stdout=so, stderr=se)
        if done.returncode != 0:
            print(f"tune --fresh-worker {mode} failed ({done.returncode}): see {mode}.err")
            return 1
    first = out / f"{modes[0]}.json"
    return max(_compare(first, out / f"{m}.json", None) for m in modes[1:])


def _compare(a: Path, b: Path, json_out: str | None) -> int:
    try:
        c = compare(json.loads(a.read_text()), json.loads(b.read_text()))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"worker_modes: {a} or {b} is not a `wgslgen tune --json` report: {exc!r}",
              file=sys.stderr)  # fmt: skip
        return 2
    print(_table(c, (a.stem, b.stem)))
    if json_out:
        atomic_write_text(json_out, json.dumps(c, indent=2))
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run both modes or compare two reports."""
    argv = sys.argv[1:] if argv is None else argv
    tune_args: list[str] = []
    if "--" in argv:
        at = argv.index("--")
        argv, tune_args = argv[:at], argv[at + 1 :]
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="tune once per mode, then compare (tune arguments after --)")
    r.add_argument("out", type=Path)
    r.add_argument("--modes", default="always,auto", help="comma-separated, the first compared")
    c = sub.add_parser("compare", help="compare two tune --json reports")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    c.add_argument("--json")
    args = ap.parse_args(argv)
    if args.cmd == "run":
        modes = args.modes.split(",")
        if len(modes) < 2 or not tune_args:
            ap.error("run needs two modes or more and the tune arguments after --")
        return _run(args.out, modes, tune_args)
    return _compare(args.a, args.b, args.json)


if __name__ == "__main__":
    sys.exit(main())
