"""PyTorch timings of the attention family's math, for comparison with tuned wgslgen variants.

Runs on a CUDA GPU (the H200 device machine): eager and torch.compile, f32, the same shapes
and the same cold-cache method as wgslgen's bench.py (an L2 flush outside each timed
interval, CUDA events around one call, median of many repetitions).

    python benchmarks/torch_attention.py --history 1024 4096 --json out.json
"""

from __future__ import annotations

import argparse
import json
import statistics

import torch


def make(history: int, head_dim: int = 256, n_heads: int = 8, n_kv: int = 4) -> dict:
    """Inputs on the GPU in the kernels' layouts: K/V [history, n_kv, head_dim]."""
    g = torch.Generator(device="cuda").manual_seed(0)
    r = lambda *s: torch.randn(*s, device="cuda", generator=g)  # noqa: E731
    probs = torch.softmax(r(n_heads, history), dim=1)
    return {
        "k": r(history, n_kv, head_dim),
        "v": r(history, n_kv, head_dim),
        "q": r(n_heads, head_dim),
        "d_out": r(n_heads, head_dim),
        "probs": probs,
        "d_scores": r(n_heads, history),
        "rep": n_heads // n_kv,
        "pos": history - 1,
    }


def attention_bwd_dq(x: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """d_scores and d_q."""
    k = x["k"].repeat_interleave(x["rep"], dim=1)
    v = x["v"].repeat_interleave(x["rep"], dim=1)
    d_probs = torch.einsum("hd,nhd->hn", x["d_out"], v)
    sum_pd = (x["probs"] * d_probs).sum(dim=1, keepdim=True)
    d_scores = x["probs"] * (d_probs - sum_pd)
    return d_scores, torch.einsum("hn,nhd->hd", d_scores, k)


def attention_bwd_dkv(x: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """d_k and d_v, summed over the query heads of each KV head."""
    n_kv = x["k"].shape[1]
    ds = x["d_scores"].view(n_kv, x["rep"], -1)
    p = x["probs"].view(n_kv, x["rep"], -1)
    q = x["q"].view(n_kv, x["rep"], -1)
    d_out = x["d_out"].view(n_kv, x["rep"], -1)
    return torch.einsum("grn,grd->ngd", ds, q), torch.einsum("grn,grd->ngd", p, d_out)


def _masked_probs(x: dict) -> torch.Tensor:
    k = x["k"].repeat_interleave(x["rep"], dim=1)
    scores = torch.einsum("hd,nhd->hn", x["q"], k)
    j = torch.arange(scores.shape[1], device="cuda")
    return torch.softmax(scores.masked_fill(j > x["pos"], float("-inf")), dim=1)


def attention(x: dict) -> torch.Tensor:
    """Forward decode output."""
    v = x["v"].repeat_interleave(x["rep"], dim=1)
    return torch.einsum("hn,nhd->hd", _masked_probs(x), v)


def attention_probs(x: dict) -> torch.Tensor:
    """Forward softmax probabilities."""
    return _masked_probs(x)


KERNELS = {f.__name__: f for f in (attention_bwd_dq, attention_bwd_dkv, attention, attention_probs)}


def time_ms(fn, x: dict, reps: int = 200) -> dict:
    """Median and IQR of one call, cold L2 (a 256 MiB write between calls)."""
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    for _ in range(10):
        fn(x)
    torch.cuda.synchronize()
    samples = []
    for _ in range(reps):
        flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn(x)
        end.record()
        torch.cuda.synchronize()
        samples.append(start.elapsed_time(end))
    q = statistics.quantiles(samples, n=4)
    return {"median_ms": statistics.median(samples), "iqr_ms": q[2] - q[0]}


def main() -> None:
    """Time every kernel's math at each history length, eager and compiled."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--history", type=int, nargs="+", default=[1024, 4096])
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    out = []
    for history in args.history:
        x = make(history)
        for name, fn in KERNELS.items():
            eager = time_ms(fn, x)
            compiled = time_ms(torch.compile(fn), x)
            row = {"kernel": name, "history_len": history, "eager": eager, "compiled": compiled}
            out.append(row)
            print(
                f"{name:18} history={history:5}  eager {eager['median_ms']:.4f} ms  "
                f"compile {compiled['median_ms']:.4f} ms"
            )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {
                    "device": torch.cuda.get_device_name(),
                    "torch": torch.__version__,
                    "results": out,
                },
                f,
                indent=2,
            )


if __name__ == "__main__":
    main()
