"""The floor of a two-pass kernel, measured: stream the bytes a shape's math must move, then
one dependent pass, on the same device through the same API as our kernels.

    python benchmarks/stream_floor.py measure --json stream.json [--adapter gpu] [--families F ...]
    python benchmarks/stream_floor.py table stream.json ours.json [torch.json]

``fair_attention.py``'s floor is computed: an empty dependent dispatch × passes + bytes /
a bandwidth given on the command line. This one is timed: ``benchmarks/kernels/stream_floor``
reads exactly ``bytes_moved(family, shape, K/V dtype)`` bytes (rounded up to whole 4 KB rows
of a workgroup), every thread's 16-byte loads issued before any is used, sums them to one word
per workgroup and, in a second dispatch that depends on the first, sums those. Besides the
loads it does only that sum (a workgroup atomic per thread and two barriers), which any kernel
that reduces those bytes across a workgroup also pays in some form, so a two-pass kernel that
reads them can hardly be faster: a target clearly below it is out of reach for such kernels on
this device and API (within a few tenths of a µs, it is a judgement call). Each `loads`
variant (bytes per thread: more workgroups or more in flight per thread) is checked against
its numpy reference, then timed warm and cold (wgslgen's own timing, a fresh worker per
variant and size, as in ``fair_attention.py``); the floor of a shape is the fastest variant,
warm and cold apart.

``table`` sets the floors beside the best variant of each family at each shape of a
``fair_attention.py ours`` file, and with its ``torch`` file beside the issue's target for the
family (bwd_dq ≤ 0.5×, forward and bwd_dkv ≤ 0.7× PyTorch's best graph): "target ÷ floor"
below 1 means the target is below what
streaming the bytes alone costs here.

bwd_dkv reads little and writes its K/V-sized d_k and d_v, in one pass: its floor is
``benchmarks/kernels/write_floor`` instead, one dispatch writing those bytes (``stores``
16-byte vectors a thread) after one load of a row every workgroup shares.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from attention_shapes import FAMILIES, SHAPES, TARGET_OF_TORCH, bytes_moved, parse_shape  # noqa: E402
from fair_attention import FLOOR_KERNELS  # noqa: E402
from result_files import best_ours, best_torch_us, load_results  # noqa: E402

from wgslgen.atomic import atomic_write_text  # noqa: E402
from wgslgen.errors import WgslgenError  # noqa: E402

ROW_BYTES = 256 * 16  # one load of every thread of a workgroup
KV_DTYPES = ("f32", "f16")
# The floor kernel of a family (others: stream_floor) and the axis of each that sets the
# 16-byte vectors a thread moves
WRITE_FLOOR_FAMILIES = ("bwd_dkv",)
PER_THREAD_AXIS = {"stream_floor": "loads", "write_floor": "stores"}


def floor_kernel(family: str) -> str:
    """``family``'s floor kernel: write_floor where its bytes are written, else stream_floor."""
    return "write_floor" if family in WRITE_FLOOR_FAMILIES else "stream_floor"


def floored_bytes(family: str, s: tuple[int, int, int, int], kv: str) -> int:
    """The bytes ``family``'s floor kernel moves: the K/V-sized outputs for a writer, else all."""
    if floor_kernel(family) == "write_floor":
        d, _, g, n = s
        return 2 * n * g * d * (4 if kv == "f32" else 2)  # d_k and d_v
    return bytes_moved(family, s, kv)


def workgroups(n_bytes: int, loads: int) -> int:
    """Workgroups of the stream pass that read at least ``n_bytes`` with ``loads`` rows each."""
    return max(1, math.ceil(n_bytes / (ROW_BYTES * loads)))


def sizes_to_measure(families: list[str]) -> dict[tuple[str, int], list[dict]]:
    """(floor kernel, bytes) → the (family, shape, K/V) entries it stands for (measured once)."""
    out: dict[tuple[str, int], list[dict]] = {}
    for family in families:
        for s in SHAPES:
            for kv in KV_DTYPES:
                key = (floor_kernel(family), floored_bytes(family, s, kv))
                out.setdefault(key, []).append({"family": family, "shape": list(s), "kv": kv})
    return out


def measure(args: argparse.Namespace) -> int:
    """Check and time every stream_floor variant at every byte count; rows into args.json."""
    from wgslgen.render.renderer import render
    from wgslgen.run.harness import Harness
    from wgslgen.spec.loader import discover, select

    found = discover([FLOOR_KERNELS])
    specs = {k: select(found, [k])[0] for k in PER_THREAD_AXIS}
    rows, failures = [], []
    data = {"adapter": None, "results": rows, "failures": failures}
    with Harness(args.adapter, timeout=120) as h:
        data["adapter"] = h.adapter_info["label"]
        print(f"adapter: {data['adapter']}", flush=True)
        for (kernel, n_bytes), uses in sorted(sizes_to_measure(args.families).items()):
            for v in specs[kernel].variants:
                rendered = render(v, "naga")
                loads = v.params[PER_THREAD_AXIS[kernel]]  # or stores: vectors a thread
                shape = {"n_wg": workgroups(n_bytes, loads)}
                h.worker.close()  # a fresh device per variant and size (fair_attention.py)
                row = {"kernel": kernel, "bytes": n_bytes, "variant": rendered.name,
                       "loads": loads, "n_wg": shape["n_wg"],
                       "streamed": shape["n_wg"] * ROW_BYTES * loads, "uses": uses}  # fmt: skip
                res = h.check(rendered, shape)
                if res.status != "pass":
                    failures.append({**row, "check": res.status, "message": res.message})
                    print(f"FAIL {rendered.name} n_wg={shape['n_wg']}: {res.message}", flush=True)
                    continue
                for mode in ("warm", "cold"):
                    m = h.bench(rendered, shape, warm=mode == "warm", budget_s=args.budget_s)
                    row[mode] = {"median_us": m.median_ns / 1e3, "iqr_us": m.iqr_ns / 1e3}
                rows.append(row)
                warm, cold = (row[m]["median_us"] for m in ("warm", "cold"))
                print(f"{n_bytes / 1e6:7.2f} MB  {rendered.name:<18} n_wg={shape['n_wg']:<6} "
                      f"warm {warm:.2f}  cold {cold:.2f} µs", flush=True)  # fmt: skip
                if args.json:  # a run cut short keeps what it measured
                    atomic_write_text(Path(args.json), json.dumps({**data, "partial": True}))
    if args.json:
        atomic_write_text(Path(args.json), json.dumps(data, indent=1))
    for f in failures:
        print(f"MISMATCH {f['variant']} n_wg={f['n_wg']}: {f['message']}", file=sys.stderr)
    return 1 if failures else 0


def floors(stream: dict, kernel: str = "stream_floor") -> dict[int, dict[str, tuple[float, str]]]:
    """bytes → {'warm'|'cold': (fastest µs, its variant)} of one floor kernel's rows."""
    out: dict[int, dict[str, tuple[float, str]]] = {}
    # rows of files from before write_floor name no kernel: they are stream_floor's
    for r in (r for r in stream["results"] if r.get("kernel", "stream_floor") == kernel):
        best = out.setdefault(r["bytes"], {})
        for mode in ("warm", "cold"):
            t = (r[mode]["median_us"], r["variant"].split("__")[-1])
            if mode not in best or t < best[mode]:
                best[mode] = t
    return out


def _best_ours(rows: list[dict], mode: str) -> float | None:
    best = best_ours([r for r in rows if not r["baseline"]], mode)
    return None if best is None else best[mode]["median_us"]


def _pair(a: float | None, b: float | None, fmt: str = "{:.1f}") -> str:
    return " / ".join("—" if x is None else fmt.format(x) for x in (a, b))


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a / b


def table(stream: dict, ours: dict, torch_data: dict | None) -> str:
    """Markdown: per family, shape and K/V the measured floor beside ours (and the target)."""
    fl = {k: floors(stream, k) for k in PER_THREAD_AXIS}
    torch_rows = {
        (r["family"], tuple(r["shape"]), r["kv"]): r for r in (torch_data or {}).get("results", [])
    }
    out = [f"Measured floor on {stream['adapter']} (fastest variant, warm / cold µs): a "
           "streamed two-pass read, for bwd_dkv one pass writing d_k and d_v (MB: all the bytes "
           "of the math); ours: the best variant of `fair_attention.py ours`; target: the "
           "issue's fraction (in the heading) × the best PyTorch graph.", ""]  # fmt: skip
    for family in FAMILIES:
        fam_rows = [r for r in ours["results"] if r["family"] == family]
        if not fam_rows:
            continue
        share = TARGET_OF_TORCH.get(family)
        out += [f"### {family}" + (f" (target {share} × PyTorch)" if share else ""), "",
                "| shape (d, H, KV, N) | K/V | MB | floor (variant) | best ours | ours ÷ floor "
                "| target | target ÷ floor |", "|---|---|---|---|---|---|---|---|"]  # fmt: skip
        # the shapes the rows were timed at (fair_attention.py --shape), in order
        for s in dict.fromkeys(tuple(r["shape"]) for r in fam_rows):
            for kv in KV_DTYPES:
                rows = [r for r in fam_rows if tuple(r["shape"]) == s and r["kv"] == kv]
                f = fl[floor_kernel(family)].get(floored_bytes(family, s, kv))
                if not rows or not f:
                    continue
                fw, fc = f["warm"][0], f["cold"][0]
                ow, oc = _best_ours(rows, "warm"), _best_ours(rows, "cold")
                t = torch_rows.get((family, s, kv), {})
                tw, tc = (
                    None if x is None or share is None else share * x
                    for x in (best_torch_us(t, m) for m in ("warm", "cold"))
                )
                out.append(
                    f"| {s} | {kv} | {bytes_moved(family, s, kv) / 1e6:.1f} | "
                    f"{fw:.1f} ({f['warm'][1]}) / {fc:.1f} ({f['cold'][1]}) | {_pair(ow, oc)} | "
                    f"{_pair(_ratio(ow, fw), _ratio(oc, fc), '{:.2f}×')} | {_pair(tw, tc)} | "
                    f"{_pair(_ratio(tw, fw), _ratio(tc, fc), '{:.2f}×')} |"
                )
        out.append("")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=["measure", "table"])
    ap.add_argument("files", nargs="*", help="table: stream.json ours.json [torch.json]")
    ap.add_argument("--families", nargs="+", default=["bwd_dq", "forward"], choices=list(FAMILIES))
    ap.add_argument("--adapter", default="gpu")
    ap.add_argument("--budget-s", type=float, default=0.05, help="measure: bench time per figure")
    ap.add_argument(
        "--shape", action="append", type=parse_shape,
        help="d,H,KV,N (repeatable; default: the issue's)",
    )  # fmt: skip
    ap.add_argument("--json", help="measure: write the rows here")
    args = ap.parse_args()
    if args.shape:
        SHAPES[:] = args.shape
    if args.what == "measure":
        try:
            return measure(args)
        except WgslgenError as exc:  # no such adapter, a worker that died: one line
            print(f"stream_floor: {exc}", file=sys.stderr)
            return 2
    if len(args.files) not in (2, 3):
        ap.error("table takes stream.json ours.json [torch.json]")
    stream, ours, *rest = (load_results(f, "stream_floor") for f in args.files)
    try:
        print(table(stream, ours, rest[0] if rest else None))
    except KeyError as exc:
        names = " ".join(args.files)
        raise SystemExit(
            f"stream_floor: a row of {names} lacks {exc} (another version's file?)"
        ) from None
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
