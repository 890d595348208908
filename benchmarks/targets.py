"""Issue 12's targets, each figure met or not, from the fair runs of one device session.

    python benchmarks/targets.py RUN_DIR [RUN_DIR...] [--bandwidth 4.3e12] [--json F]

Each RUN_DIR is one `gpu_fair.sh` output (one call): `torch.json` and `ours.json`, and
`largest.json` when its test step ran. Ratios are only formed within one RUN_DIR (PyTorch and
ours measured side by side); where several RUN_DIRs time the same family, shape and K/V dtype,
each gives its own figure. The targets (ours = the fastest variant, warm and cold):

* bwd_dq ≤ 0.5× the better PyTorch graph at the same K/V dtype at history 4096; ≤ 1.0× at 1024
* bwd_dq cold ≤ 1.5× the floor at history 4096 (the empty dependent dispatch of the run ×
  passes + bytes / --bandwidth: fair_attention.py's floor column)
* forward and bwd_dkv ≤ 0.7× their PyTorch graphs
* every variant a run timed passes at its largest shape (largest.json)

Each figure also gives the time ours must reach (bound × against) and, when missed, the share
of ours that is still to cut.

Exit status 0 when every figure meets its target, 1 when some does not, 2 on unreadable input.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # the shared benchmark modules, and wgslgen

from attention_shapes import TARGET_OF_TORCH, bytes_moved  # noqa: E402
from result_files import best_ours, best_torch_us, load_results  # noqa: E402

from wgslgen.atomic import atomic_write_text  # noqa: E402

FLOOR_SHARE = 1.5  # bwd_dq cold ÷ the floor at history 4096
# bwd_dq's targets, held to bwd_dq_out too (the same outputs, given the forward's output)
DQ_FAMILIES = ("bwd_dq", "bwd_dq_out")


def _share(family: str, history: int) -> float | None:
    """The target share of PyTorch's time (bwd_dq at history ≤ 1024: parity)."""
    if family in DQ_FAMILIES and history <= 1024:
        return 1.0
    return TARGET_OF_TORCH.get(family)


def figures(run: str, torch_data: dict, ours: dict, bandwidth: float) -> list[dict]:
    """Every target figure of one run: what it compares, the ratio, the bound, met or not."""
    out = []
    torch_rows = {(r["family"], tuple(r["shape"]), r["kv"]): r for r in torch_data["results"]}
    groups: dict[tuple, list[dict]] = {}
    for r in ours["results"]:
        groups.setdefault((r["family"], tuple(r["shape"]), r["kv"]), []).append(r)
    for (family, shape, kv), rows in groups.items():
        share = _share(family, shape[3])
        torch_row = torch_rows.get((family, shape, kv))
        for mode in ("warm", "cold"):
            best = best_ours(rows, mode)
            theirs = best_torch_us(torch_row, mode) if torch_row else None
            if share is None or best is None or theirs is None:
                continue
            ratio = best[mode]["median_us"] / theirs
            out.append({
                "run": run, "target": f"{family} ≤ {share:g}× torch", "family": family,
                "shape": list(shape), "kv": kv, "mode": mode, "ours_us": best[mode]["median_us"],
                "variant": best["variant"], "against_us": theirs, "ratio": ratio,
                "bound": share, "needed_us": share * theirs, "met": ratio <= share,
            })  # fmt: skip
        best = best_ours(rows, "cold")
        if family in DQ_FAMILIES and shape[3] >= 4096 and best is not None:
            floor = best["passes"] * ours["dispatch_us"] + bytes_moved(family, shape, kv) / (
                bandwidth / 1e6
            )
            ratio = best["cold"]["median_us"] / floor
            out.append({
                "run": run, "target": f"{family} cold ≤ {FLOOR_SHARE:g}× floor", "family": family,
                "shape": list(shape), "kv": kv, "mode": "cold",
                "ours_us": best["cold"]["median_us"], "variant": best["variant"],
                "against_us": floor, "ratio": ratio, "bound": FLOOR_SHARE,
                "needed_us": FLOOR_SHARE * floor, "met": ratio <= FLOOR_SHARE,
            })  # fmt: skip
    return out


def largest_shapes(run: str, ours: dict, largest: dict | None) -> dict:
    """Whether every variant the run timed passed at its largest shape."""
    timed = sorted({r["variant"] for r in ours["results"]})
    if largest is None:
        return {"run": run, "timed": len(timed), "passed": None, "missing": timed}
    passed = {r["variant"] for r in largest["results"] if r["status"] == "pass"}
    missing = [v for v in timed if v not in passed]
    return {
        "run": run,
        "timed": len(timed),
        "passed": len(timed) - len(missing),
        "missing": missing,
    }


def report(figs: list[dict], checks: list[dict]) -> str:
    """Markdown: a line per target with its count, then every figure."""
    out = ["| target | met |", "|---|---|"]
    for target in dict.fromkeys(f["target"] for f in figs):
        mine = [f for f in figs if f["target"] == target]
        out.append(f"| {target} | {sum(f['met'] for f in mine)} of {len(mine)} |")
    for c in checks:
        got = "not run" if c["passed"] is None else f"{c['passed']} of {c['timed']}"
        out.append(f"| every timed variant passes at its largest shape ({c['run']}) | {got} |")
    # "needed": the time ours must reach (bound × against), and for a miss the share to cut
    out += ["", "| run | target | shape (d, H, KV, N) | K/V | | ours µs | against µs | ratio | |"
            " needed µs |", "|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for f in figs:
        share = 100 * (1 - f["needed_us"] / f["ours_us"])
        cut = "" if f["met"] else f" (−{share:.{0 if share >= 1 else 1}f}%)"  # a near miss: 0.4%
        out.append(
            f"| {f['run']} | {f['target']} | {tuple(f['shape'])} | {f['kv']} | {f['mode']} | "
            f"{f['ours_us']:.1f} ({f['variant'].split('__')[-1]}) | {f['against_us']:.1f} | "
            f"{f['ratio']:.2f}× | {'met' if f['met'] else '**not met**'} | "
            f"{f['needed_us']:.2f}{cut} |"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """Read the runs, print the targets, exit 1 when some figure misses."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("runs", nargs="+", type=Path, help="gpu_fair.sh output folders")
    ap.add_argument("--bandwidth", type=float, default=4.3e12, help="bytes/s for the floor")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    figs: list[dict] = []
    checks: list[dict] = []
    for run in args.runs:
        for need in ("torch.json", "ours.json"):
            if not (run / need).is_file():
                print(f"targets: {run}: no {need} (a gpu_fair.sh output folder?)", file=sys.stderr)
                return 2
        try:
            torch_data = load_results(run / "torch.json", "targets")
            ours = load_results(run / "ours.json", "targets")
            largest = load_results(run / "largest.json", "targets") if (
                run / "largest.json"
            ).is_file() else None  # fmt: skip
        except SystemExit as bad:  # one line naming the file; 1 would read "a target missed"
            print(bad, file=sys.stderr)
            return 2
        try:
            figs += figures(str(run), torch_data, ours, args.bandwidth)
        except KeyError as exc:
            print(f"targets: a row under {run} lacks {exc} (another version's file?)",
                  file=sys.stderr)  # fmt: skip
            return 2
        checks.append(largest_shapes(str(run), ours, largest))
    print(report(figs, checks))
    if args.json:
        atomic_write_text(args.json, json.dumps({"figures": figs, "largest": checks}, indent=1))
    met = all(f["met"] for f in figs) and all(not c["missing"] for c in checks)
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
