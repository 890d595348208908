"""Every variant a fair run timed, checked against the numpy reference at its largest shape.

    python benchmarks/largest_shapes.py OURS.json [OURS.json ...] [--adapter gpu] [--json F]

Reads the variants of ``fair_attention.py ours`` output files and runs each once, on one
device, at head_dim 256, 8 heads, 4 KV heads and history 32,768 (``--shape``), or at its own
``max_history`` where that is smaller (the single-pass kernels' shared-memory variants): the
shape lavapipe cannot run (it cuts loops off after 65,535 iterations), so CI never does.
A variant that cannot take those heads (a precondition: four query heads per KV head, say) is
checked at the heads of the largest shape it was timed at, with the same history. Prints one
line per variant and exits 1 if any variant does not pass, n/a included (a timed variant that
can take neither was not checked), or if a name is not in ``templates/`` (an ours.json from
another checkout).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from attention_shapes import shape_of  # noqa: E402

from wgslgen.atomic import atomic_write_text  # noqa: E402
from wgslgen.errors import WgslgenError  # noqa: E402
from wgslgen.render.renderer import render  # noqa: E402
from wgslgen.run.harness import Harness  # noqa: E402
from wgslgen.spec.kernel import Variant  # noqa: E402
from wgslgen.spec.loader import discover  # noqa: E402

LARGEST = (256, 8, 4, 32768)


Heads = tuple[int, int, int]  # head_dim, n_heads, n_kv_heads


def timed_variants(files: list[Path]) -> dict[tuple[str, str], list[Heads]]:
    """(kernel, variant name) of every row of these ours.json files, first seen first, with
    the heads it was timed at, the most K/V elements per history row first."""
    seen: dict[tuple[str, str], set[Heads]] = {}
    for f in files:
        try:
            for r in json.loads(f.read_text(encoding="utf-8"))["results"]:
                key = (r["kernel"], r["variant"])
                d, h, kv, _ = (int(x) for x in r["shape"])
                seen.setdefault(key, set()).add((d, h, kv))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise SystemExit(f"{f}: not a fair_attention.py ours file ({exc!r})") from None
    return {key: sorted(heads, key=lambda x: (x[0] * x[2], x), reverse=True)
            for key, heads in seen.items()}  # fmt: skip


def largest_shape(kernel: str, params: dict, largest: tuple[int, ...]) -> dict[str, int]:
    """``largest``, with the history cut to the variant's ``max_history`` where it has one."""
    d, h, kv, n = largest
    if params.get("max_history"):
        n = min(n, params["max_history"])
    return shape_of(kernel, (d, h, kv, n))


def check(
    h: Harness, variant: Variant, kernel: str, largest: tuple[int, ...], timed: list[Heads]
) -> dict:
    """Check one variant at its largest shape (at its largest timed heads where the largest
    shape's are n/a for it); print and return its row."""
    rendered = render(variant, "naga")
    shape = largest_shape(kernel, variant.params, largest)
    res = h.check(rendered, shape)
    fallback = ""
    if res.status == "n/a" and timed and timed[0] != tuple(largest[:3]):
        fallback = f"the --shape heads are n/a: {res.message}"
        shape = largest_shape(kernel, variant.params, (*timed[0], largest[3]))
        res = h.check(rendered, shape)
    message = "; ".join(filter(None, [res.message, fallback]))
    heads = f"({shape['head_dim']}, {shape['n_heads']}, {shape['n_kv_heads']})"
    note = f"  {message}" if message else ""
    print(f"{res.status:>7}  {variant.name} @ {heads} history {shape['history_len']}{note}",
          flush=True)  # fmt: skip
    return {"kernel": kernel, "variant": variant.name, "shape": shape, "status": str(res.status),
            "message": message, "seconds": res.seconds}  # fmt: skip


def main() -> int:
    """Check every timed variant at its largest shape; exit 1 on any that does not pass."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("ours", nargs="+", type=Path, help="fair_attention.py ours --json files")
    ap.add_argument("--adapter", default="gpu")
    ap.add_argument("--shape", default=",".join(map(str, LARGEST)), help="d,H,KV,N")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per variant")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    try:
        largest = tuple(int(x) for x in args.shape.split(","))
        if len(largest) != 4 or min(largest) < 1:
            raise ValueError
    except ValueError:
        ap.error(f"--shape {args.shape!r}: four positive integers d,H,KV,N")
    wanted = timed_variants(args.ours)
    kernels = {k for k, _ in wanted}
    by_name = {v.name: v for s in discover([ROOT / "templates"]) if s.name in kernels
               for v in s.variants}  # fmt: skip
    if missing := [name for _, name in wanted if name not in by_name]:
        print(f"not in templates/: {', '.join(missing)}", file=sys.stderr)
        return 1
    try:
        with Harness(args.adapter, timeout=args.timeout) as h:
            adapter = h.adapter_info["label"]
            print(f"adapter: {adapter}", flush=True)
            rows = []
            for (kernel, name), timed in wanted.items():
                rows.append(check(h, by_name[name], kernel, largest, timed))
                if args.json:  # after every variant: a run cut short keeps what it checked
                    done = {"adapter": adapter, "results": rows}
                    atomic_write_text(args.json, json.dumps(done, indent=1))
    except WgslgenError as exc:  # no such adapter, a worker that cannot start
        print(f"error: {exc}", file=sys.stderr)
        return 1
    bad = [r for r in rows if r["status"] != "pass"]
    print(f"{len(rows) - len(bad)} of {len(rows)} variants pass at their largest shape")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
