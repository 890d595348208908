"""Validation throughput: renderings per second of `wgslgen.validate` over the whole library.

Renders the bundled library once (timed apart: rendering is not validation), then runs
``validate(rendered, [webgpu], engines)`` for each engine set, each run from a fresh engine
(Node and naga's WebAssembly, the wgpu adapter and device, Dawn's worker all start inside the
timed interval, as in a `wgslgen validate` command). The first run of a set also pays one-time
costs of this process (loading wgpu-native, lavapipe's first pipeline), so it is shown apart
and the figure is the median of the rest. The static analysis and limit checks every run does
are included (and Tint's static rules when Dawn is not among the engines; their cost alone is
a row of its own). Also times naga's translation of the library to SPIR-V (`translate_many`).

Every engine row compiles every shader (verdicts remembered across runs are off); the rows
marked "remembered" time the same set with the verdict cache on, filled by their first run
(a fresh cache folder, so the first run is a cold one and the median is of runs that find
every verdict: what a second `wgslgen validate` of an unchanged library costs).

    python benchmarks/bench_validate.py           # naga, wgpu, naga+wgpu, dawn, all three
    python benchmarks/bench_validate.py --repeat 5 --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from wgslgen.atomic import atomic_write_text  # noqa: E402
from wgslgen.check import tint_rules  # noqa: E402
from wgslgen.check.engines.naga_translate import NagaTranslator  # noqa: E402
from wgslgen.check.limits import load_profile  # noqa: E402
from wgslgen.check.validate import resolve_engines, validate  # noqa: E402
from wgslgen.render.renderer import RenderedVariant, render_families  # noqa: E402
from wgslgen.spec.loader import discover  # noqa: E402

ENGINE_SETS = ("naga", "wgpu", "naga,wgpu", "dawn", "naga,wgpu,dawn")  # the last: the default


def render_library() -> tuple[list[RenderedVariant], float]:
    """Every rendering of the bundled library, and the seconds rendering took."""
    start = time.perf_counter()
    rendered = [r for k in discover() for v in k.variants for r in render_families(v)]
    return rendered, time.perf_counter() - start


def time_validation(
    rendered: list[RenderedVariant], engines: list[str], repeat: int, remember: bool = False
) -> dict:
    """Seconds of each validate() run of ``rendered`` with ``engines``; failures counted."""
    profiles = [load_profile("webgpu")]
    times, failures = [], 0
    for _ in range(repeat):
        start = time.perf_counter()
        report = validate(rendered, profiles, engines, remember=remember)
        times.append(time.perf_counter() - start)
        if report.engines_missing:
            raise SystemExit(f"engine(s) missing: {report.engines_missing}")
        failures = len(report.compile_failures())
        # Renderings an engine actually read (Dawn reads only the Tint family's, naga naga's).
        read = sum(1 for r in report.results if r.engines)
    return {"engines": engines, "times_s": times, "read": read, "compile_failures": failures}


def time_static_rules(rendered: list[RenderedVariant], repeat: int) -> dict:
    """Seconds of Tint's static rules over the renderings Tint reads (done when Dawn is not
    among the engines, inside validate(): shown apart to say what they cost)."""
    sources = [r.source for r in rendered if r.family in ("any", "tint")]
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        tint_rules.check_many(sources)  # as validate() does, in a process of its own
        times.append(time.perf_counter() - start)
    return {"engines": ["tint rules (static)"], "times_s": times, "read": len(sources)}


def time_translation(rendered: list[RenderedVariant], repeat: int) -> dict:
    """Seconds of each translate_many() of the naga-family renderings to SPIR-V."""
    sources = [
        (r.relpath, r.source, r.entry_point) for r in rendered if r.family in ("any", "naga")
    ]
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        NagaTranslator().translate_many(sources, ["spv"])
        times.append(time.perf_counter() - start)
    return {"engines": ["naga → spv"], "times_s": times, "read": len(sources)}


def _row(label: str, n: int, run: dict) -> list[str]:
    times = run["times_s"]
    steady = statistics.median(times[1:]) if len(times) > 1 else times[0]
    run["median_s"], run["per_s"] = steady, n / steady
    return [label, str(n), f"{times[0]:.2f}", f"{steady:.2f}", f"{n / steady:.0f}"]


def main() -> int:
    """Render once, time each engine set, print the table."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument(
        "--engines",
        action="append",
        metavar="LIST",
        help=f"engine sets to time (repeatable; default: {' '.join(ENGINE_SETS)})",
    )
    p.add_argument("--repeat", type=int, default=4, help="runs per engine set (default 4)")
    p.add_argument("--no-translate", action="store_true", help="skip the SPIR-V translation")
    p.add_argument(
        "--remembered",
        action="append",
        metavar="LIST",
        help="engine sets also timed with the verdict cache (default: naga,wgpu,dawn)",
    )
    p.add_argument("--json", type=Path, help="also write the figures here")
    args = p.parse_args()

    rendered, render_s = render_library()
    n = len(rendered)
    print(
        f"{n} renderings of the bundled library, rendered in {render_s:.2f} s "
        f"({n / render_s:.0f}/s); {os.cpu_count()} CPU core(s)"
    )
    runs = {}
    for names in args.engines or ENGINE_SETS:
        engines = [e.strip() for e in names.split(",")]
        _, missing = resolve_engines(engines)
        if missing:
            print(f"skipping {names}: {'; '.join(missing.values())}")
            continue
        runs[names] = time_validation(rendered, engines, args.repeat)
    for names in args.remembered or ["naga,wgpu,dawn"]:
        engines = [e.strip() for e in names.split(",")]
        if resolve_engines(engines)[1]:
            continue
        with tempfile.TemporaryDirectory() as cache:
            os.environ["WGSLGEN_CACHE_DIR"] = cache  # empty: the first run fills it
            try:
                runs[f"{names} (remembered)"] = time_validation(
                    rendered, engines, args.repeat, remember=True
                )
            finally:
                del os.environ["WGSLGEN_CACHE_DIR"]
    runs["tint rules alone (in naga/wgpu runs)"] = time_static_rules(rendered, args.repeat)
    if not args.no_translate:
        runs["naga → spv (transpile)"] = time_translation(rendered, args.repeat)

    header = ["engines", "renderings", "first run s", "median s", "renderings/s"]
    rows = [header] + [_row(label, n, run) for label, run in runs.items()]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    for k, row in enumerate(rows):
        print(
            "  ".join(
                c.ljust(w) if i == 0 else c.rjust(w)
                for i, (c, w) in enumerate(zip(row, widths, strict=True))
            )
        )
        if k == 0:
            print("  ".join("-" * w for w in widths))
    print(f"(median of runs 2..{args.repeat}; each run starts its engines afresh)")
    if args.json:
        atomic_write_text(
            args.json,
            json.dumps({"renderings": n, "render_s": render_s, "runs": runs}, indent=2) + "\n",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
