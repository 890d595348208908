"""Where a multi-pass variant's time goes: each pass timed alone, and all of them together.

    python benchmarks/pass_breakdown.py --kernel attention_bwd_dq_split \
        --variant wg256_ch128_g1_u4_e4_sf16 --shape 256,8,4,4096 [--adapter gpu] [--json F]

Each variant is first checked against the reference at each shape (a wrong variant is not
timed); then the passes are timed with wgslgen's own method (GPU timestamps, warm and cold)
on the same buffers: all passes, then each pass alone. A pass timed alone still pays one
dispatch's launch, so the parts add up to more than the whole by about (passes − 1) launches.
Shapes are (head_dim, n_heads, n_kv_heads, history_len), as in fair_attention.py. A shape
the variant does not apply to (its preconditions: a `fixed_head_dim` of another head_dim, a
`group` the heads do not divide) is skipped with a line saying why; any other outcome of the
check than pass stops the run.

``--ablate NAME`` (repeatable) also times the variant with its text changed so that one cost
is gone, to see what the rest costs (the results are wrong, so these are timed unchecked):
``k-hits``/``v-hits`` read element 0 of K/V wherever they read it (every load an L1 hit: no
K/V traffic, the same instructions), ``o-hits``/``p-hits`` the same for d_out and probs,
``part-hits``/``ds-hits`` for the reads (only) of the scratch partials and of d_scores (the
compiler may then merge a thread's identical loads into one), ``no-barriers`` drops every
workgroupBarrier(), ``empty`` returns at the top of every entry point (the cost of launching
the grid: workgroups that do nothing). ``const-params`` writes every ``params.<field>`` as the
timed shape's value (no uniform load before the first address, and what the compiler can fold
with the values known), ``const-heads`` only head_dim and the head counts (what a variant
rendered for one model would know), ``no-clamp`` drops the split kernels' clamp of each key to
the chunk's last (right where the history is a whole number of chunks, or where a read past
the buffer gives a finite value, as wgpu's bounds checks do); these three keep the results
right at the shapes they are meant for, so they are checked there before they are timed.
``skip-ds-stores``/``skip-dq-stores`` put the stores of d_scores / d_q behind a test that
never holds (their values still computed), ``stub`` reduces an entry point to one such store
(a real kernel with almost no code; ``stub-smem`` also writes workgroup memory).
``no-nwg`` gives bwd_dq's finalize its grid's height from head_dim instead of from
``@builtin(num_workgroups)`` (checked too). ``NAME@ENTRY`` confines a text ablation to one
entry point (``empty@finalize``: the partials pass as is, then an empty second pass), so a
pass's cost can be read inside the whole sequence, where the alone figures mislead (on an
H100 an empty pass alone read 1.6-3.7 µs from call to call; two in sequence, 3.3 every time).
``stub`` and ``stub-smem`` are only taken as ``stub@ENTRY`` (they write bwd_dq's d_q).
``--in-sequence`` adds ``empty`` and ``empty@`` each entry point, and prints what each pass adds
to the whole sequence, warm (all passes as is, minus all with that pass empty).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from attention_shapes import shape_of  # noqa: E402

from wgslgen.atomic import atomic_write_text  # noqa: E402
from wgslgen.errors import WgslgenError  # noqa: E402
from wgslgen.render.renderer import render  # noqa: E402
from wgslgen.run.harness import Harness  # noqa: E402
from wgslgen.run.protocol import JobKind  # noqa: E402
from wgslgen.spec.loader import discover, select  # noqa: E402
from wgslgen.tune.bench import Measurement  # noqa: E402

# name -> (pattern, replacement) of an ablation (see the module docstring)
ABLATIONS = {
    "k-hits": (r"\bk_hist\[[^\]]*\]", "k_hist[0u]"),
    "v-hits": (r"\bv_hist\[[^\]]*\]", "v_hist[0u]"),
    "o-hits": (r"\bd_out\[[^\]]*\]", "d_out[0u]"),
    "p-hits": (r"\bprobs\[[^\]]*\]", "probs[0u]"),
    # reads only (not followed by an assignment): the writes stay where they were
    "part-hits": (r"\bpart\[[^\]]*\](?!\s*=[^=])", "part[0u]"),
    "ds-hits": (r"\bd_scores\[[^\]]*\](?!\s*=[^=])", "d_scores[0u]"),
    "no-barriers": (r"\n\s*workgroupBarrier\(\);", ""),
    # the entry point reduced to one store that never runs (a real kernel with almost no
    # code), with or without a use of the module's workgroup memory (s_part)
    "stub": (r"(?s)(\)\s*\{).*\Z", "\\1\n    if (params.n_heads == 0u) { d_q[0] = 1.0; }\n}\n"),
    "stub-smem": (
        r"(?s)(\)\s*\{).*\Z",
        "\\1\n    s_part[tid] = 1.0;\n    if (params.n_heads == 0u) { d_q[0] = s_part[0]; }\n}\n",
    ),
    # stores skipped at run time (a test the compiler cannot fold), their values still computed
    "skip-ds-stores": (
        r"(?m)^(\s*)(d_scores\[[^\]\n]*\]\s*=[^=][^;\n]*;)",
        r"\1if (params.n_heads == 0u) { \2 }",
    ),
    "skip-dq-stores": (
        r"(?m)^(\s*)(d_q\[[^\]\n]*\]\s*=[^=][^;\n]*;)",
        r"\1if (params.n_heads == 0u) { \2 }",
    ),
    "empty": (r"(@compute[^{]*\{)", r"\1\n    return;"),
}
# Ablations that keep the results right at the shapes they are meant for (checked there):
# the shaped ones fill in the case's values, `no-clamp` drops the split kernels' clamp of a
# key to the chunk's last.
SHAPED_ABLATIONS = {
    "const-params": r"\bparams\.(\w+)\b",
    "const-heads": r"\bparams\.(head_dim|n_heads|n_kv_heads|heads_per_kv)\b",
}
EXACT_ABLATIONS = {
    "no-clamp": (r"\bmin\((kg \+ \d+u|jk\d+), last\)", r"\1"),
    # bwd_dq's finalize: its grid's height from head_dim, not from @builtin(num_workgroups)
    "no-nwg": (
        r"\s*@builtin\(num_workgroups\) nwg: vec3<u32>,|\bnwg\.y\b",
        lambda m: "" if m.group(0).lstrip().startswith("@") else "((head_dim + 31u) / 32u)",
    ),
}
# ablations that only make sense inside one entry point (NAME@ENTRY)
WHOLE_ENTRY_POINT = {"stub", "stub-smem"}
FIXED_TEXT = {**ABLATIONS, **EXACT_ABLATIONS}  # name -> (pattern, replacement)
CHECKED = {*SHAPED_ABLATIONS, *EXACT_ABLATIONS}
EVERY_ABLATION = [*FIXED_TEXT, *SHAPED_ABLATIONS]


def ablated(rendered, names: list[str], scope: dict | None = None):
    """``rendered`` with the text changes of the ablations ``names``, under its own hash.

    ``scope`` (the case's sizes and derived values) fills in the shaped ablations.
    """
    source = rendered.source
    for name in names:
        if name in WHOLE_ENTRY_POINT:
            raise SystemExit(
                f"ablation {name} replaces an entry point's body: name it, {name}@ENTRY"
            )
        if "@" in name:
            source, count = _within_entry_point(source, *name.split("@", 1), rendered, scope)
        else:
            source, count = _apply(name, source, rendered, scope)
        if not count:
            raise SystemExit(f"ablation {name}: nothing to change in {rendered.name}")
    digest = hashlib.sha256(source.encode()).hexdigest()
    return dataclasses.replace(rendered, source=source, sha256=digest)


def _apply(name: str, text: str, rendered, scope: dict | None) -> tuple[str, int]:
    """Ablation ``name``'s text change in ``text``: (changed text, number of changes)."""
    if name not in SHAPED_ABLATIONS:
        pattern, replacement = FIXED_TEXT[name]
        return re.subn(pattern, replacement, text)
    fields = set(re.findall(SHAPED_ABLATIONS[name], text))
    if unknown := sorted(fields - set(scope or {})):
        raise SystemExit(
            f"ablation {name}: {rendered.name} reads params.{', params.'.join(unknown)}, "
            "which the shape does not give"
        )
    return re.subn(SHAPED_ABLATIONS[name], lambda m: f"{int(scope[m.group(1)])}u", text)


def _within_entry_point(
    source: str, name: str, entry: str, rendered, scope: dict | None
) -> tuple[str, int]:
    """Ablation ``name`` applied to entry point ``entry``'s body only: (source, changes)."""
    head = re.search(rf"@compute[^{{]*fn {re.escape(entry)}\(", source)
    if head is None:
        raise SystemExit(f"ablation {name}@{entry}: no entry point {entry}")
    # the body ends at a column-0 brace (or with the text)
    end = source.find("\n}\n", head.end())
    end = len(source) if end < 0 else end + 3
    body, count = _apply(name, source[head.start() : end], rendered, scope)
    return source[: head.start()] + body + source[end:], count


def time_passes(h: Harness, rendered, shape: dict[str, int], budget_s: float) -> dict:
    """{'all' | entry point: {'warm': µs, 'cold': µs}} of one checked variant at one shape."""
    data = h.test_data(rendered.variant.case(shape))
    job = h.job(rendered, data, JobKind.BENCH)
    subsets = {"all": job.passes} | {p.entry_point: (p,) for p in job.passes}
    out = {}
    for label, passes in subsets.items():
        out[label] = {}
        for mode in ("warm", "cold"):
            timed = dataclasses.replace(
                job, passes=passes, options={"warm": mode == "warm", "budget_s": budget_s}
            )
            reply = h.worker.call(timed, h.timeout)
            if not reply.ok or reply.measurement is None:
                raise SystemExit(f"{rendered.name} {label}: {reply.stage} failed: {reply.error}")
            out[label][mode] = Measurement.from_dict(reply.measurement).median_ns / 1e3
    return out


def spec_of(kernel: str):
    """The bundled templates' spec of ``kernel`` (exits with the error if there is none)."""
    try:
        return select(discover([ROOT / "templates"]), [kernel])[0]
    except WgslgenError as e:
        raise SystemExit(f"error: {e}") from None


def time_case(h: Harness, rendered, name: str, s: str, shape: dict, ablations, budget_s: float):
    """Rows of variant ``name`` (checked) at shape ``s``: as is, then each ablation (checked
    first where it keeps the results right)."""
    scope = rendered.variant.problem_scope(shape)
    rows = []
    for names in [[], *ablations]:
        h.worker.close()
        timed = ablated(rendered, names, scope) if names else rendered
        if names and all(n.split("@")[0] in CHECKED for n in names):
            ablated_check = h.check(timed, shape)
            if ablated_check.status != "pass":
                raise SystemExit(
                    f"{name} @ {s} [{'+'.join(names)}]: {ablated_check.status}: "
                    f"{ablated_check.message}"
                )
        times = time_passes(h, timed, shape, budget_s)
        label = "+".join(names) or "as is"
        rows.append({"variant": name, "shape": s, "ablation": label, "times_us": times})
        parts = "  ".join(f"{k} {v['warm']:.1f}/{v['cold']:.1f}" for k, v in times.items())
        print(f"{name} @ {s} [{label}]: {parts}  (µs warm/cold)", flush=True)
    return rows


def sequence_summary(rows: list[dict]) -> str:
    """What each pass adds to the whole sequence, warm, from one case's rows (--in-sequence):
    the time of all passes minus that with the pass empty; the launches are all passes empty."""
    warm = {r["ablation"]: r["times_us"]["all"]["warm"] for r in rows}
    adds = [
        f"{label.removeprefix('empty@')} adds {warm['as is'] - t:.1f}"
        for label, t in warm.items()
        if label.startswith("empty@")
    ]
    return (
        f"in sequence, warm µs: all {warm['as is']:.1f}, launches (all empty) {warm['empty']:.1f}; "
        + ", ".join(adds)
    )


def main() -> int:
    """Check, time and print each variant × shape's passes."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kernel", required=True)
    ap.add_argument("--variant", action="append", required=True, help="name without kernel__")
    ap.add_argument("--shape", action="append", required=True, help="d,H,KV,N (repeatable)")
    ap.add_argument("--adapter", default="gpu")
    ap.add_argument("--budget-s", type=float, default=0.2)
    ap.add_argument("--json", type=Path)
    ap.add_argument(
        "--in-sequence",
        action="store_true",
        help="also time all passes empty and each pass empty in turn, and print what each "
        "pass adds to the whole sequence (warm)",
    )
    ap.add_argument(
        "--ablate",
        action="append",
        default=[],
        metavar="NAMES",
        help="also time with these text changes (comma-separated; from "
        f"{', '.join(EVERY_ABLATION)}; NAME@ENTRY: in that entry point only)",
    )
    args = ap.parse_args()
    spec = spec_of(args.kernel)
    ablations = [[n.strip() for n in a.split(",")] for a in args.ablate]
    if args.in_sequence:
        ablations += [["empty"]] + [[f"empty@{e}"] for e in spec.entry_points]
    # Named before the device starts: a wrong name would otherwise stop the run after the
    # variants before it were checked and timed.
    for name in (n for names in ablations for n in names):
        base, _, entry = name.partition("@")
        if base not in EVERY_ABLATION:
            raise SystemExit(f"unknown ablation {name}")
        if entry and entry not in spec.entry_points:
            raise SystemExit(
                f"ablation {name}: {args.kernel} has no entry point {entry} "
                f"(it has {', '.join(spec.entry_points)})"
            )
        if base in WHOLE_ENTRY_POINT and not entry:
            raise SystemExit(
                f"ablation {name} replaces an entry point's body: name it, {name}@ENTRY"
            )
    by_name = {v.name: v for v in spec.variants}
    unknown = [n for n in args.variant if f"{args.kernel}__{n}" not in by_name]
    if unknown:
        raise SystemExit(f"{args.kernel} has no variant {', '.join(unknown)}")
    rows = []
    with Harness(args.adapter, timeout=120) as h:
        print(f"adapter: {h.adapter_info['label']}")
        for name in args.variant:
            rendered = render(by_name[f"{args.kernel}__{name}"], "naga")
            for s in args.shape:
                # A fresh worker (device) per case: a long-lived one drifts (README: timing drift).
                h.worker.close()
                shape = shape_of(args.kernel, tuple(int(x) for x in s.split(",")))
                check = h.check(rendered, shape)
                if check.status == "n/a":
                    print(f"{name} @ {s}: n/a, not timed ({check.message})", flush=True)
                    continue
                if check.status != "pass":
                    raise SystemExit(f"{name} @ {s}: {check.status}: {check.message}")
                rows += time_case(h, rendered, name, s, shape, ablations, args.budget_s)
                if args.in_sequence:
                    print(f"{name} @ {s}: {sequence_summary(rows[-len(ablations) - 1 :])}")
    if args.json:
        atomic_write_text(args.json, json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
