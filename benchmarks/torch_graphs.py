"""PyTorch's side of the fair comparison: the same GQA math, captured in CUDA graphs, timed.

Each family's math is written twice (GQA through views, and through repeat_interleave copies,
which torch.compile sometimes fuses better); eager and ``torch.compile``; K/V in f32 and f16;
warm and cold; CUDA events around each replay. Before anything is timed, every form is run on
the inputs of wgslgen's own numpy references (``templates/<kernel>/reference.py``, trusted
code) and must reproduce them: a competitor that computed something else would not be timed.

    python benchmarks/torch_graphs.py check --device cpu     # the same-math check alone

``fair_attention.py torch`` runs the timing (CUDA only).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from functools import cache
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from attention_shapes import FAMILIES, SHAPES, shape_of  # noqa: E402

# Each family's reference inputs in its torch function's argument order, and the reference's
# outputs in the order the function returns them.
ARGUMENTS = {
    "bwd_dq": (("k_hist", "v_hist", "probs", "d_out"), ("d_scores", "d_q")),
    "bwd_dq_out": (("k_hist", "v_hist", "probs", "d_out", "out"), ("d_scores", "d_q")),
    "bwd_dkv": (("q", "d_out", "probs", "d_scores"), ("d_k", "d_v")),
    "forward": (("k_hist", "v_hist", "q"), ("out",)),
    "probs": (("k_hist", "q"), ("probs",)),
}
KV_INPUTS = {"k_hist", "v_hist"}
# Small, but grouped (4 query heads per KV head) and not a power of two long.
CHECK_SHAPE = (64, 8, 2, 300)
# Largest error ÷ largest |reference| value; f16 K/V also round d_out/q/d_scores to f16.
TOLERANCE = {"f32": 1e-4, "f16": 1e-2}


def torch_fns(torch):
    """The math of each family, GQA through views (no repeat_interleave copies)."""

    def sum_pd_of(probs, d_probs, d_out, out):
        """Σ probs·d_probs, or given the forward's output (bwd_dq_out) FlashAttention's
        D = rowsum(d_out ∘ out), equal to it when out = probs·V."""
        if out is None:
            return (probs * d_probs).sum(dim=1, keepdim=True)
        return (d_out * out).sum(dim=1, keepdim=True)

    def bwd_dq(k, v, probs, d_out, out=None):
        n, g, d = k.shape
        r = probs.shape[0] // g
        do = d_out.view(g, r, d).to(k.dtype)
        d_probs = torch.einsum("grd,ngd->grn", do, v).float().view(g * r, n)
        d_scores = probs * (d_probs - sum_pd_of(probs, d_probs, d_out, out))
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
    def bwd_dq_rep(k, v, probs, d_out, out=None):
        rep = probs.shape[0] // k.shape[1]
        kk, vv = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        d_probs = torch.einsum("hd,nhd->hn", d_out.to(k.dtype), vv).float()
        d_scores = probs * (d_probs - sum_pd_of(probs, d_probs, d_out, out))
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
        "bwd_dq_out": {"einsum": bwd_dq, "repeat": bwd_dq_rep},
        "bwd_dkv": {"einsum": bwd_dkv},
        "forward": {"einsum": forward, "repeat": forward_rep},
        "probs": {"einsum": probs_of},
    }


@cache
def _reference(kernel: str):
    from wgslgen.run.reference import load_reference
    from wgslgen.spec.loader import discover, select

    return load_reference(select(discover([ROOT / "templates"]), [kernel])[0])


def torch_case(torch, family: str, s: tuple[int, int, int, int], kv: str, device: str):
    """A case of ``family`` at ``s`` from its reference's make_inputs, seeded.

    Returns the torch function's arguments on ``device`` (K/V in the ``kv`` dtype, the rest
    f32) and the inputs as numpy arrays holding exactly the values those tensors hold.
    """
    kernel = FAMILIES[family][0]
    _, _, g, n = s
    inputs = _reference(kernel).make_inputs(shape_of(kernel, s), np.random.default_rng(0))
    held = {
        name: np.asarray(x, dtype=np.float16 if kv == "f16" and name in KV_INPUTS else np.float32)
        for name, x in inputs.items()
    }
    tensors = tuple(torch.from_numpy(held[name]).to(device) for name in ARGUMENTS[family][0])
    if family == "bwd_dkv":  # the output dtype (d_k, d_v are K/V-shaped) and the KV heads
        return (*tensors, (torch.float32 if kv == "f32" else torch.float16, g)), held
    if family in ("forward", "probs"):
        return (*tensors, n - 1), held
    return tensors, held


def same_math_errors(torch, fns: dict, device: str) -> list[str]:
    """Every form of every family in ``fns`` against wgslgen's reference; one line per miss."""
    errors = []
    for family, forms in fns.items():
        kernel = FAMILIES[family][0]
        for kv in ("f32", "f16"):
            args, held = torch_case(torch, family, CHECK_SHAPE, kv, device)
            as_f64 = {name: x.astype(np.float64) for name, x in held.items()}
            want = _reference(kernel).reference(as_f64, shape_of(kernel, CHECK_SHAPE))
            for form, fn in forms.items():
                got = fn(*args)
                got = got if isinstance(got, tuple) else (got,)
                for name, tensor in zip(ARGUMENTS[family][1], got, strict=True):
                    w = np.asarray(want[name], dtype=np.float64)
                    g = tensor.float().cpu().numpy().astype(np.float64)
                    err = float(np.abs(g - w).max() / np.abs(w).max()) if g.shape == w.shape else 1
                    if not err <= TOLERANCE[kv]:
                        errors.append(
                            f"{family} ({form}, K/V {kv}) at {CHECK_SHAPE}: {name} is off by "
                            f"{err:.2g} of its largest value (allowed {TOLERANCE[kv]})"
                        )
    return errors


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
    """Every family × shape × K/V dtype, eager and compiled, each in a CUDA graph (CUDA only)."""
    import torch

    fns = {family: forms for family, forms in torch_fns(torch).items() if family in args.families}
    errors = same_math_errors(torch, fns, "cuda")
    if errors:
        raise SystemExit("PyTorch does not compute wgslgen's math:\n  " + "\n  ".join(errors))
    flush = torch.empty(args.l2_flush, dtype=torch.uint8, device="cuda")
    rows = []
    for family in args.families:
        for s in SHAPES:
            for kv in ("f32", "f16"):
                a, _ = torch_case(torch, family, s, kv, "cuda")
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
            "same_math_checked_at": list(CHECK_SHAPE), "results": rows}  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=["check"])
    ap.add_argument("--device", default="cpu", help="a torch device: cpu or cuda")
    ap.add_argument("--families", nargs="+", default=list(FAMILIES), choices=list(FAMILIES))
    args = ap.parse_args()
    import torch

    fns = {family: forms for family, forms in torch_fns(torch).items() if family in args.families}
    errors = same_math_errors(torch, fns, args.device)
    for line in errors:
        print(line, file=sys.stderr)
    count = sum(len(forms) for forms in fns.values())
    print(
        f"{count - len({e.split(',')[0] for e in errors})} of {count} forms match "
        f"wgslgen's references (f32 and f16 K/V, {CHECK_SHAPE}, torch {torch.__version__})"
    )
    return 1 if errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
