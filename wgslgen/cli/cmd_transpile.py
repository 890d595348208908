"""`wgslgen transpile`: naga's SPIR-V, MSL, HLSL and GLSL of every variant, SPIR-V checked."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.markup import escape

from wgslgen.check.transpile import (
    DEFAULT_OUT,
    NAGA_FAMILIES,
    TARGETS,
    TranspileReport,
    parse_targets,
    transpile,
)
from wgslgen.check.transpile_ledger import check_folder
from wgslgen.cli.kernels import selected_kernels
from wgslgen.cli.output import (
    add_common_options,
    clipped_frame,
    console,
    emit_json,
    print_table,
    progress,
)
from wgslgen.render.build import apply_overrides, parse_overrides
from wgslgen.render.renderer import RenderedVariant, render_families


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``transpile`` command."""
    p = sub.add_parser(
        "transpile", help="translate every variant with naga to SPIR-V, MSL, HLSL and GLSL"
    )
    add_common_options(p, variants=True)
    p.add_argument(
        "--to",
        default=",".join(TARGETS),
        metavar="LIST",
        help=f"comma-separated targets: {','.join(TARGETS)} (default: all)",
    )
    p.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        metavar="DIR",
        help=f"output folder (default: {DEFAULT_OUT}/): new, empty or one transpile wrote; "
        "files are <kernel>/<variant>.<ext>, listed in its wgslgen-transpiled.json",
    )
    p.set_defaults(run=run)


def _renderings(args: argparse.Namespace) -> list[RenderedVariant]:
    kernels = selected_kernels(args)
    overrides = parse_overrides(args.set)
    variants = [v for k in kernels for v in (apply_overrides(k, overrides))]
    out = []
    with progress("rendering", len(variants), enabled=not args.json) as bar:
        for variant in variants:
            out.extend(render_families(variant))
            bar.advance()
    return out


def run(args: argparse.Namespace) -> int:
    """Translate, write, report; exit 1 when a translation failed or spirv-val rejected one."""
    targets = parse_targets(args.to)
    check_folder(args.out)  # before any work: a refused folder costs nothing
    rendered = _renderings(args)
    total = sum(1 for r in rendered if r.family in NAGA_FAMILIES)
    with progress("translating", total, enabled=not args.json) as bar:

        def advance(n: int) -> None:
            for _ in range(n):
                bar.advance()

        report = transpile(rendered, targets, args.out, on_progress=advance)
    if args.json:
        emit_json(report.to_dict())
    else:
        _print_report(report)
    return 1 if report.failures() else 0


def _cell(counts: dict[str, int]) -> str:
    parts = [f"{counts['ok']} ok"] if counts.get("ok") else []
    parts += [f"{counts[s]} {s}" for s in ("unsupported", "error", "rejected") if counts.get(s)]
    return ", ".join(parts) or "-"


def _print_report(report: TranspileReport) -> None:
    rows = [
        [
            kernel,
            sum(per_target[report.targets[0]].values()),
            *(_cell(per_target[t]) for t in report.targets),
        ]
        for kernel, per_target in report.counts().items()
    ]
    print_table(
        f"wgslgen transpile → {report.out}", ["kernel", "renderings", *report.targets], rows
    )
    # The same message across many variants is one problem: show it once, with the variants.
    groups: dict[tuple[str, str, str, str], list[str]] = {}
    for r in report.results:
        for t, o in r.outcomes.items():
            if o.status != "ok":
                key = (o.status, t, o.message, o.template or "")
                groups.setdefault(key, []).append(r.rendered.name)
    details = {(r.rendered.name, t): r.outcomes[t].diagnostic for r, t in report.failures()}
    for (status, target, message, template), names in sorted(groups.items()):
        shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
        colour = "yellow" if status == "unsupported" else "bold red"
        where = f"\n  --> template {escape(template)}" if template else ""
        console.print(
            f"[{colour}]{status}[/] ({target}): {escape(message)}{where}\n"
            f"  in {len(names)} variant(s): {shown}",
            markup=True,
        )
        detail = details.get((names[0], target), "")
        if detail and detail.strip() != message:
            console.print(clipped_frame(detail), markup=False)
    if report.skipped:
        console.print(
            f"{len(report.skipped)} rendering(s) for Tint/Dawn not translated "
            "(naga reads the naga rendering of the same variant)"
        )
    checked = (
        f"SPIR-V checked by {report.spirv_val} (--target-env vulkan1.0; vulkan1.1 for SPIR-V 1.3)"
        if report.spirv_val
        else "SPIR-V not checked: spirv-val not found (apt-get install spirv-tools)"
        if "spv" in report.targets
        else ""
    )
    written = sum(1 for r in report.results for o in r.outcomes.values() if o.path)
    console.print(
        f"{written} file(s) written under {report.out}, "
        f"{len(report.failures())} failure(s); naga: {report.naga}"
        + (f"; {checked}" if checked else "")
    )
