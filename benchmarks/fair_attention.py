"""A fair comparison of the attention family with PyTorch, and with the floor, on one GPU.

One device session measures three things (run it on the GPU machine, CUDA + Vulkan):

* **PyTorch**: the same GQA math, eager and ``torch.compile``, each **captured in a CUDA
  graph** (no CPU launch gaps), with K/V in f32 and in f16; warm (back-to-back replays) and
  cold (a write of ``--l2-flush`` bytes before each replay, outside the timed interval);
  CUDA events around each replay; median of ``--reps``; each figure after ``--spin-up-s`` of
  back-to-back replays (the GPU's clock drops while compiling leaves it idle). Before any
  is timed, every form must reproduce wgslgen's numpy references (``torch_graphs.py``).
* **wgslgen**: every variant of the timed kernels, each in a fresh worker process (a
  long-lived device drifts, see worker_drift.py), through wgslgen's own timing code
  (``Harness.bench`` → ``bench.measure``: a spin-up of SPIN_UP_S, GPU timestamps, warm and
  cold, 2 × 128 MiB flushed before each cold sample). Every variant is first checked against
  the numpy reference at every shape it is timed at, and a mismatch fails the run (exit 1).
* **The floor**: an empty dependent dispatch on this device (``benchmarks/kernels/
  dispatch_floor``: 50 in one compute pass, timed by the same code) × the passes of the
  variant + the bytes the math must move / ``--bandwidth``.

    python benchmarks/fair_attention.py torch --json torch.json      # needs CUDA
    python benchmarks/fair_attention.py ours --json ours.json        # needs a WebGPU GPU
    python benchmarks/fair_attention.py table torch.json ours.json --bandwidth 4.3e12

``benchmarks/gpu_fair.sh`` runs all three plus ``wgslgen test`` at the largest shapes.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from attention_shapes import (  # noqa: E402
    FAMILIES,
    KV_OF_STORAGE,
    SHAPES,
    bytes_moved,
    parse_shape,
    shape_of,
)
from result_files import best_ours, best_torch_us, load_results  # noqa: E402
from torch_graphs import run_torch  # noqa: E402

from wgslgen.atomic import atomic_write_text  # noqa: E402
from wgslgen.errors import WgslgenError  # noqa: E402
from wgslgen.tune.bench import SPIN_UP_S  # noqa: E402

FLOOR_KERNELS = ROOT / "benchmarks" / "kernels"

# Single-workgroup-per-head kernels are 10-100x slower than the split ones and have many
# variants: only these (plus the baseline) are timed.
SINGLE_PASS_ONLY = {"max_history": 0, "workgroup_size": 256}


# ---------------------------------------------------------------- wgslgen


def _variants(spec, only, pattern):
    base = spec.baseline.name
    for v in spec.variants:
        if v.name == base or (
            all(v.params.get(k, x) == x for k, x in only.items())
            and (pattern is None or re.search(pattern, v.name))
        ):
            yield v


def run_ours(args) -> dict:
    from wgslgen.render.renderer import render
    from wgslgen.run.harness import Harness
    from wgslgen.spec.loader import discover, select

    rows, failures = [], []
    with Harness(args.adapter, timeout=120) as h:
        info = h.adapter_info
        print(f"adapter: {info['label']}", flush=True)
        floor_spec = select(discover([FLOOR_KERNELS]), ["dispatch_floor"])[0]
        floor = render(floor_spec.baseline)
        assert h.check(floor, {"n": 32}).status == "pass"
        m = h.bench(floor, {"n": 32}, warm=True)
        per_dispatch_us = m.median_ns / 1e3 / len(floor_spec.problem.passes)
        print(f"empty dependent dispatch: {per_dispatch_us:.3f} us", flush=True)
        for family in args.families:
            for kernel in FAMILIES[family]:
                spec = select(discover([ROOT / "templates"]), [kernel])[0]
                single = any(a.name == "max_history" for a in spec.axes)
                variants = list(_variants(spec, SINGLE_PASS_ONLY if single else {}, args.only))
                base = spec.baseline.name
                for v in variants:
                    if args.storage and v.params.get("storage") not in args.storage:
                        continue
                    rendered = render(v, "naga")
                    for s in SHAPES:
                        # A fresh worker (device) per variant and shape: the same kernel runs
                        # slower the longer one device has been timing (benchmarks/README.md).
                        h.worker.close()
                        shape = shape_of(kernel, s)
                        row = {"family": family, "kernel": kernel, "variant": rendered.name,
                               "baseline": v.name == base, "shape": list(s),
                               "kv": KV_OF_STORAGE[v.params["storage"]],
                               "passes": len(spec.problem.passes)}  # fmt: skip
                        res = h.check(rendered, shape)
                        row["check"] = res.status
                        if res.status == "n/a":
                            continue
                        if res.status != "pass":
                            row["message"] = res.message
                            failures.append(row)
                            print("FAIL", json.dumps(row), flush=True)
                            continue
                        for mode in ("warm", "cold"):
                            m = h.bench(rendered, shape, warm=mode == "warm",
                                        budget_s=args.budget_s, warmup_s=args.warmup_s)  # fmt: skip
                            row[mode] = {"median_us": m.median_ns / 1e3, "iqr_us": m.iqr_ns / 1e3,
                                         "reps": m.reps, "method": m.method}  # fmt: skip
                        rows.append(row)
                        print(json.dumps({k: row[k] for k in ("variant", "shape", "warm", "cold")}),
                              flush=True)  # fmt: skip
                    if args.json:  # after every variant: a run cut short keeps what it measured
                        atomic_write_text(Path(args.json), json.dumps(
                            {"adapter": info["label"], "dispatch_us": per_dispatch_us,
                             "results": rows, "failures": failures, "partial": True}))  # fmt: skip
    return {"adapter": info["label"], "dispatch_us": per_dispatch_us, "results": rows,
            "failures": failures}  # fmt: skip


# ---------------------------------------------------------------- table


def _fmt(x):
    return "—" if x is None else (f"{x:.1f}" if x < 1000 else f"{x:.0f}")


def _ratio(a, b):
    return "—" if a is None or b is None else f"{a / b:.2f}×"


def table(torch_data: dict, ours: dict, bandwidth: float) -> str:
    disp = ours["dispatch_us"]
    out = [f"wgslgen: {ours['adapter']}; PyTorch {torch_data.get('torch')} on "
           f"{torch_data.get('device')}; empty dependent dispatch {disp:.2f} µs; "
           f"bandwidth for the floor {bandwidth / 1e12:.2f} TB/s. Times in µs, warm / cold.",
           ""]  # fmt: skip
    tor = {(r["family"], tuple(r["shape"]), r["kv"]): r for r in torch_data["results"]}
    for family in FAMILIES:
        fam_rows = [r for r in ours["results"] if r["family"] == family]
        if not fam_rows:
            continue
        out += [f"### {family}", "",
                "| shape (d, H, KV, N) | K/V | baseline | best ours (warm / cold) "
                "| torch eager graph | torch.compile graph | floor "
                "| ours ÷ best torch (warm / cold) | cold ÷ floor |",
                "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
        # the shapes the rows were timed at (fair_attention.py --shape), in order
        for s in dict.fromkeys(tuple(r["shape"]) for r in fam_rows):
            for kv in ("f32", "f16"):
                rows = [r for r in fam_rows if tuple(r["shape"]) == s]
                base = next((r for r in rows if r["baseline"]), None)
                mine = [r for r in rows if r["kv"] == kv]
                if not mine:
                    continue
                bw, bc = best_ours(mine, "warm"), best_ours(mine, "cold")
                t = tor.get((family, s, kv), {})

                def tt(mode, which, t=t):
                    return t.get(mode, {}).get(which, {}).get("median_us")

                tw, tc = best_torch_us(t, "warm"), best_torch_us(t, "cold")
                floor = bc["passes"] * disp + bytes_moved(family, s, kv) / bandwidth * 1e6
                name = lambda r: r["variant"].split("__")[1]  # noqa: E731
                best = (f"{_fmt(bw['warm']['median_us'])} ({name(bw)}) / "
                        f"{_fmt(bc['cold']['median_us'])} ({name(bc)})")  # fmt: skip
                base_txt = (f"{_fmt(base['warm']['median_us'])} / {_fmt(base['cold']['median_us'])}"
                            if base else "—")  # fmt: skip
                out.append(
                    f"| {s} | {kv} | {base_txt} | {best} | "
                    f"{_fmt(tt('eager', 'warm'))} / {_fmt(tt('eager', 'cold'))} | "
                    f"{_fmt(tt('compile', 'warm'))} / {_fmt(tt('compile', 'cold'))} | "
                    f"{_fmt(floor)} ({bc['passes']} passes) | "
                    f"{_ratio(bw['warm']['median_us'], tw)} / "
                    f"{_ratio(bc['cold']['median_us'], tc)} | "
                    f"{_ratio(bc['cold']['median_us'], floor)} |"
                )
        out.append("")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=["torch", "ours", "table"])
    ap.add_argument("files", nargs="*", help="table: torch.json ours.json")
    ap.add_argument("--families", nargs="+", default=list(FAMILIES), choices=list(FAMILIES))
    ap.add_argument("--storage", nargs="*", help="ours: only these storage values")
    ap.add_argument(
        "--only", help="ours: only variants whose name matches this regex (and the baselines)"
    )
    ap.add_argument("--adapter", default="gpu")
    ap.add_argument("--budget-s", type=float, default=0.05, help="ours: bench time per figure")
    ap.add_argument(
        "--warmup-s", type=float, default=0.025,
        help="ours: seconds of running the variant before its samples (the GPU's clocks rise)",
    )  # fmt: skip
    ap.add_argument("--reps", type=int, default=200, help="torch: replays per figure")
    ap.add_argument(
        "--spin-up-s", type=float, default=SPIN_UP_S,
        help="torch: seconds of back-to-back replays before each figure (ours: bench.SPIN_UP_S)",
    )  # fmt: skip
    ap.add_argument("--l2-flush", type=int, default=256 << 20, help="torch: bytes written")
    ap.add_argument("--bandwidth", type=float, default=4.3e12, help="table: bytes/s")
    ap.add_argument(
        "--shape", action="append", type=parse_shape,
        help="d,H,KV,N (repeatable; default: the issue's)",
    )  # fmt: skip
    ap.add_argument("--json")
    args = ap.parse_args()
    if args.shape:
        SHAPES[:] = args.shape
    if args.what == "table":
        if len(args.files) != 2:
            ap.error("table takes torch.json ours.json")
        t, o = (load_results(f, "fair_attention") for f in args.files)
        try:
            print(table(t, o, args.bandwidth))
        except KeyError as exc:
            raise SystemExit(
                f"fair_attention: a row of {' '.join(args.files)} lacks {exc} "
                "(another version's file?)"
            ) from None
        return 1 if o.get("failures") else 0
    try:
        data = run_torch(args) if args.what == "torch" else run_ours(args)
    except WgslgenError as exc:  # no such adapter, a worker that died: one line
        print(f"fair_attention: {exc}", file=sys.stderr)
        return 2
    if args.json:
        atomic_write_text(Path(args.json), json.dumps(data, indent=1))
    if args.what == "ours" and data["failures"]:
        print(f"{len(data['failures'])} MISMATCH(ES) on the GPU:", file=sys.stderr)
        for r in data["failures"]:
            print(f"  {r['variant']} @ {r['shape']}: {r['check']}: {r.get('message', '')}",
                  file=sys.stderr)  # fmt: skip
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
