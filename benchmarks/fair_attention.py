"""A fair comparison of the attention family with PyTorch, and with the floor, on one GPU.

One device session measures three things (run it on the GPU machine, CUDA + Vulkan):

* **PyTorch**: the same GQA math, eager and ``torch.compile``, each **captured in a CUDA
  graph** (no CPU launch gaps), with K/V in f32 and in f16; warm (back-to-back replays) and
  cold (a write of ``--l2-flush`` bytes before each replay, outside the timed interval);
  CUDA events around each replay; median of ``--reps``; each figure after ``--spin-up-s`` of
  back-to-back replays (the GPU's clock drops while compiling leaves it idle).
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
import statistics
import sys
import time
from pathlib import Path

from wgslgen.atomic import atomic_write_text
from wgslgen.tune.bench import SPIN_UP_S

ROOT = Path(__file__).resolve().parents[1]
FLOOR_KERNELS = ROOT / "benchmarks" / "kernels"

# The shapes: (head_dim, n_heads, n_kv_heads, history_len).
SHAPES = [(256, 8, 4, 4096), (256, 8, 4, 1024), (256, 8, 1, 4096), (128, 32, 8, 4096)]
# math → wgslgen kernels that compute it (the first kernel's baseline is the baseline).
FAMILIES = {
    "bwd_dq": ["attention_bwd_dq", "attention_bwd_dq_split"],
    "bwd_dkv": ["attention_bwd_dkv"],
    "forward": ["attention", "attention_split"],
    "probs": ["attention_probs"],
}
FORWARD = {"attention", "attention_split", "attention_probs"}
# Single-workgroup-per-head kernels are 10-100x slower than the split ones and have many
# variants: only these (plus the baseline) are timed.
SINGLE_PASS_ONLY = {"max_history": 0, "workgroup_size": 256}
KV_OF_STORAGE = {"f32": "f32", "f16": "f16", "pf16": "f16"}


def shape_of(kernel: str, s: tuple[int, int, int, int]) -> dict[str, int]:
    d, h, g, n = s
    shape = {"head_dim": d, "n_heads": h, "n_kv_heads": g, "history_len": n}
    if kernel in FORWARD:
        shape |= {"pos": n - 1, "window": 0}
    return shape


def bytes_moved(family: str, s: tuple[int, int, int, int], kv: str) -> int:
    """The bytes the math must read and write at least once (f32 except K/V)."""
    d, h, g, n = s
    kvb = 4 if kv == "f32" else 2
    hist = n * g * d * kvb
    if family == "bwd_dq":  # K, V, probs, d_out → d_scores, d_q
        return 2 * hist + 4 * (2 * h * n + 2 * h * d)
    if family == "bwd_dkv":  # q, d_out, probs, d_scores → d_k, d_v
        return 2 * hist + 4 * (2 * h * n + 2 * h * d)
    if family == "forward":  # K, V, q → out
        return 2 * hist + 4 * 2 * h * d
    return hist + 4 * (h * d + h * n)  # probs: K, q → probs


# ---------------------------------------------------------------- PyTorch


def torch_fns(torch):
    """The math of each family, GQA through views (no repeat_interleave copies)."""

    def bwd_dq(k, v, probs, d_out):
        n, g, d = k.shape
        r = probs.shape[0] // g
        do = d_out.view(g, r, d).to(k.dtype)
        d_probs = torch.einsum("grd,ngd->grn", do, v).float().view(g * r, n)
        sum_pd = (probs * d_probs).sum(dim=1, keepdim=True)
        d_scores = probs * (d_probs - sum_pd)
        dq = torch.einsum("grn,ngd->grd", d_scores.view(g, r, n).to(k.dtype), k)
        return d_scores, dq.float().view(g * r, d)

    def bwd_dkv(q, d_out, probs, d_scores, kv_dtype):
        h, d = q.shape
        g = kv_dtype[1]
        r = h // g
        ds = d_scores.view(g, r, -1)
        p = probs.view(g, r, -1)
        dk = torch.einsum("grn,grd->ngd", ds, q.view(g, r, d))
        dv = torch.einsum("grn,grd->ngd", p, d_out.view(g, r, d))
        return dk.to(kv_dtype[0]), dv.to(kv_dtype[0])

    def probs_of(k, q, pos):
        n, g, d = k.shape
        r = q.shape[0] // g
        s = torch.einsum("grd,ngd->grn", q.view(g, r, d).to(k.dtype), k).float()
        s = s.view(g * r, n)
        j = torch.arange(n, device=k.device)
        return torch.softmax(s.masked_fill(j > pos, float("-inf")), dim=1)

    def forward(k, v, q, pos):
        n, g, d = k.shape
        r = q.shape[0] // g
        p = probs_of(k, q, pos).view(g, r, n).to(v.dtype)
        return torch.einsum("grn,ngd->grd", p, v).float().view(g * r, d)

    # The same math with GQA as materialised copies (torch.repeat_interleave), as written in
    # the earlier benchmark: torch.compile fuses it differently, sometimes faster.
    def bwd_dq_rep(k, v, probs, d_out):
        rep = probs.shape[0] // k.shape[1]
        kk, vv = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        d_probs = torch.einsum("hd,nhd->hn", d_out.to(k.dtype), vv).float()
        sum_pd = (probs * d_probs).sum(dim=1, keepdim=True)
        d_scores = probs * (d_probs - sum_pd)
        return d_scores, torch.einsum("hn,nhd->hd", d_scores.to(k.dtype), kk).float()

    def probs_rep(k, q, pos):
        kk = k.repeat_interleave(q.shape[0] // k.shape[1], dim=1)
        s = torch.einsum("hd,nhd->hn", q.to(k.dtype), kk).float()
        j = torch.arange(s.shape[1], device=k.device)
        return torch.softmax(s.masked_fill(j > pos, float("-inf")), dim=1)

    def forward_rep(k, v, q, pos):
        vv = v.repeat_interleave(q.shape[0] // k.shape[1], dim=1)
        return torch.einsum("hn,nhd->hd", probs_rep(k, q, pos).to(v.dtype), vv).float()

    return {
        "bwd_dq": {"einsum": bwd_dq, "repeat": bwd_dq_rep},
        "bwd_dkv": {"einsum": bwd_dkv},
        "forward": {"einsum": forward, "repeat": forward_rep},
        "probs": {"einsum": probs_of},
    }


def torch_args(torch, family, s, kv):
    d, h, g, n = s
    gen = torch.Generator(device="cuda").manual_seed(0)
    dt = torch.float32 if kv == "f32" else torch.float16

    def r(*size, dtype=torch.float32):
        return torch.randn(*size, device="cuda", generator=gen).to(dtype)

    probs = torch.softmax(r(h, n), dim=1)
    if family == "bwd_dq":
        return (r(n, g, d, dtype=dt), r(n, g, d, dtype=dt), probs, r(h, d))
    if family == "bwd_dkv":
        return (r(h, d), r(h, d), probs, r(h, n), (dt, g))
    if family == "forward":
        return (r(n, g, d, dtype=dt), r(n, g, d, dtype=dt), r(h, d), n - 1)
    return (r(n, g, d, dtype=dt), r(h, d), n - 1)


def spin_up(torch, graph, seconds: float) -> None:
    """Replay ``graph`` back to back for ``seconds``: the same clock ramp our side gets."""
    # Compiling leaves the GPU idle for seconds and the driver lowers the SM clock; 100 replays
    # (~2 ms) would be timed before it comes back (wgslgen.tune.bench.SPIN_UP_S says why).
    end = time.perf_counter() + seconds
    while True:
        for _ in range(32):
            graph.replay()
        torch.cuda.synchronize()
        if time.perf_counter() >= end:
            return


def graph_times(torch, fn, args, reps, flush, spin_up_s):
    """Capture fn(*args) in a CUDA graph; per-replay CUDA-event times, warm and cold (µs)."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn(*args)
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn(*args)
    out = {}
    for mode in ("warm", "cold"):
        spin_up(torch, graph, spin_up_s)
        ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(reps)]  # fmt: skip
        torch.cuda.synchronize()
        for start, end in ev:  # queued ahead of the GPU: no CPU gap inside an interval
            if mode == "cold":
                flush.zero_()
            start.record()
            graph.replay()
            end.record()
        torch.cuda.synchronize()
        samples = [s.elapsed_time(e) * 1e3 for s, e in ev]
        q = statistics.quantiles(samples, n=4)
        out[mode] = {"median_us": statistics.median(samples), "iqr_us": q[2] - q[0]}
    return out


def run_torch(args) -> dict:
    import torch

    flush = torch.empty(args.l2_flush, dtype=torch.uint8, device="cuda")
    fns = torch_fns(torch)
    rows = []
    for family in args.families:
        for s in SHAPES:
            for kv in ("f32", "f16"):
                a = torch_args(torch, family, s, kv)
                row = {"family": family, "shape": list(s), "kv": kv}
                for mode in ("eager", "compile"):
                    forms = {}
                    for form, fn in fns[family].items():
                        t0 = time.perf_counter()
                        if mode == "compile":
                            torch._dynamo.reset()
                            fn = torch.compile(fn, dynamic=False)
                        try:
                            forms[form] = graph_times(
                                torch, fn, a, args.reps, flush, args.spin_up_s
                            )
                        except Exception as exc:  # a failure is reported, never hidden
                            forms[form] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
                        forms[form]["setup_s"] = round(time.perf_counter() - t0, 1)
                    # The best form per measurement (warm and cold may differ).
                    best = {}
                    for m in ("warm", "cold"):
                        ok = [(f, r[m]) for f, r in forms.items() if m in r]
                        if ok:
                            f, r = min(ok, key=lambda x: x[1]["median_us"])
                            best[m] = {**r, "form": f}
                    row[mode] = {**best, "forms": forms}
                print(json.dumps(row), flush=True)
                rows.append(row)
    return {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
            "l2_flush_bytes": args.l2_flush, "reps": args.reps, "spin_up_s": args.spin_up_s,
            "results": rows}  # fmt: skip


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
        for s in SHAPES:
            for kv in ("f32", "f16"):
                rows = [r for r in fam_rows if tuple(r["shape"]) == s]
                base = next((r for r in rows if r["baseline"]), None)
                mine = [r for r in rows if r["kv"] == kv and not r["baseline"]] + [
                    r for r in rows if r["kv"] == kv and r["baseline"]
                ]
                if not mine:
                    continue
                bw = min(mine, key=lambda r: r["warm"]["median_us"])
                bc = min(mine, key=lambda r: r["cold"]["median_us"])
                t = tor.get((family, s, kv), {})

                def tt(mode, which, t=t):
                    return t.get(mode, {}).get(which, {}).get("median_us")

                tw = min(
                    (x for x in (tt("eager", "warm"), tt("compile", "warm")) if x), default=None
                )
                tc = min(
                    (x for x in (tt("eager", "cold"), tt("compile", "cold")) if x), default=None
                )
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
    ap.add_argument("--shape", action="append", help="d,H,KV,N (repeatable; default: the issue's)")
    ap.add_argument("--json")
    args = ap.parse_args()
    if args.shape:
        SHAPES[:] = [tuple(int(x) for x in s.split(",")) for s in args.shape]
    if args.what == "table":
        t, o = (json.loads(Path(f).read_text()) for f in args.files)
        print(table(t, o, args.bandwidth))
        return 1 if o["failures"] else 0
    data = run_torch(args) if args.what == "torch" else run_ours(args)
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
