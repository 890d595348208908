"""`wgslgen test`: every variant that fits the profile, against its numpy reference, on a device."""

from __future__ import annotations

import argparse
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from rich import box
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from wgslgen.check.engines.base import find_location
from wgslgen.cli.kernels import selected_kernels
from wgslgen.cli.options import (
    add_device_options,
    add_input_seed_option,
    add_profile_option,
    add_shape_option,
    one_profile,
)
from wgslgen.cli.output import (
    add_common_options,
    console,
    emit_json,
    print_adapter,
    print_title,
    progress,
)
from wgslgen.cli.space_guard import add_max_variants_option, check_space
from wgslgen.config import default_project
from wgslgen.errors import WgslgenError
from wgslgen.render.build import apply_overrides, parse_overrides
from wgslgen.render.renderer import RenderedVariant
from wgslgen.run.borrowed_reference import with_reference
from wgslgen.run.harness import CaseResult, Harness, Report
from wgslgen.spec.kernel import KernelSpec, format_shape, shape_mismatch

_CELL = {
    "pass": "[green]pass[/]",
    "fail": "[bold red]FAIL[/]",
    "error": "[bold red]ERROR[/]",
    "timeout": "[bold red]TIMEOUT[/]",
    "crash": "[bold red]CRASH[/]",
    "n/a": "[dim]n/a[/]",
}


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``test`` command."""
    p = sub.add_parser("test", help="run every variant against its numpy reference on a device")
    add_common_options(p, variants=True)
    add_shape_option(p, "test at this problem shape instead of the spec's (repeatable)")
    add_profile_option(p, "test", "a variant must fit to be run")
    add_device_options(p, "deadline per variant and shape and per reference.py import")
    add_input_seed_option(p)
    add_max_variants_option(p, "test")
    p.add_argument(
        "--reference",
        metavar="KERNEL",
        help="plain .wgsl kernels borrow this kernel's interface, problem, test "
        "shapes, tolerances and reference (as its baseline variant)",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Plan, run with a progress bar, print the table; 1 when anything failed."""
    kernels = selected_kernels(args)
    if not kernels:
        raise WgslgenError("no kernel found in the templates given")
    project = getattr(args, "project", None) or default_project()
    kernels = with_reference(kernels, args.reference, args.templates, project.templates)
    overrides = parse_overrides(args.set)
    check_space(kernels, overrides, args.max_variants, "test")
    chooser = (lambda spec: apply_overrides(spec, overrides)) if overrides else None
    _check_shapes(kernels, args.shape)
    profile = one_profile(args)
    with Harness(args.adapter, args.timeout, args.input_seed) as harness:
        print_adapter(harness.adapter_info, args.json)
        plan = harness.plan(kernels, args.shape, profile, chooser)
        with progress("testing", len(plan.cases), enabled=not args.json) as bar:
            report = harness.execute(
                plan, on_case=lambda r: bar.advance(f"{r.variant} {format_shape(r.shape)}")
            )
    if args.json:
        emit_json(report.to_dict())
    else:
        renderings = {rendered.name: rendered for rendered, _ in plan.cases}
        _print_report(report, renderings)
    return 0 if report.ok else 1


def _check_shapes(kernels: Sequence[KernelSpec], shapes: Sequence[dict] | None) -> None:
    """Refuse a --shape that sets the sizes of none of the kernels (a typo, a size left out)
    before the device opens, as `tune` does; a shape applies to the kernels whose sizes it
    sets, so with several kernels each shape must fit one of them."""
    runnable = [k for k in kernels if k.problem is not None]
    for shape in shapes or []:
        fitting = [k for k in runnable if set(shape) == set(k.problem.sizes)]
        for k in fitting:
            k.check_shape_values(shape)
        if not runnable or fitting:
            continue
        if len(runnable) == 1:
            (k,) = runnable
            why = shape_mismatch(k.problem.sizes, shape)
            raise WgslgenError(f"kernel {k.name}: shape {format_shape(shape)} {why}")
        wanted = "; ".join(f"{k.name}: {', '.join(k.problem.sizes)}" for k in runnable)
        raise WgslgenError(
            f"shape {format_shape(shape)} sets exactly the sizes of none of the kernels ({wanted})",
        )


def _print_report(report: Report, renderings: Mapping[str, RenderedVariant]) -> None:
    by_kernel: dict[str, list[CaseResult]] = {}
    for r in report.results:
        by_kernel.setdefault(r.kernel, []).append(r)
    for kernel, results in by_kernel.items():
        _print_kernel_table(kernel, results, report)
    _print_details("failures", report.failures, renderings)
    _print_details(
        "n/a (preconditions exclude the shape)",
        [r for r in report.results if r.status == "n/a"],
        renderings,
        style="dim",
    )
    for n in report.not_run:
        console.print(f"[dim]not run[/] {escape(f'{n.variant or n.kernel}: {n.reason}')}")
    for note in report.notes():
        console.print(note, style="yellow", markup=False)
    style = "green" if report.ok else "bold red"
    console.print(report.summary(), style=style, markup=False)
    if not report.results:
        console.print("[bold red]nothing was run[/]")


def _print_kernel_table(kernel: str, results: list[CaseResult], report: Report) -> None:
    shapes = list(dict.fromkeys(format_shape(r.shape) for r in results))
    print_title(f"wgslgen test: {kernel} on {report.adapter} (profile {report.profile})")
    for i, s in enumerate(shapes, 1):
        console.print(f"  S{i}: {s}", markup=False)
    rows: dict[str, dict[str, CaseResult]] = {}
    for r in results:
        rows.setdefault(r.variant, {})[format_shape(r.shape)] = r
    name_width = min(60, max(len(r.variant) for r in results))
    cell = max(len(f"S{len(shapes)}"), *(len(r.status) for r in results))
    # As many shape columns (each its width, 2 of padding and 1 of rule) as the terminal holds
    # beside the names and the error column, the rest in further blocks: rich would drop the
    # columns that do not fit, without a word.
    err = "max abs err"
    fits = max(1, (console.width - (name_width + 3) - (len(err) + 3)) // (cell + 3))
    for first in range(0, len(shapes), fits):
        block = list(enumerate(shapes, 1))[first : first + fits]
        table = Table(box=box.SIMPLE_HEAD, pad_edge=False)  # no vertical rules
        table.add_column("variant", no_wrap=True, min_width=name_width)
        for i, _ in block:
            table.add_column(f"S{i}", no_wrap=True, min_width=cell)
        table.add_column(err, justify="right", no_wrap=True, min_width=len(err))
        for variant, cells in rows.items():
            errors = [c.max_abs for c in cells.values() if c.max_abs is not None]
            worst = f"{max(errors):.1e}" if errors else ""
            statuses = (_CELL[cells[s].status] if s in cells else "" for _, s in block)
            table.add_row(Text(variant), *statuses, worst)
        console.print(table)


def _print_details(
    title: str,
    results: Sequence[CaseResult],
    renderings: Mapping[str, RenderedVariant],
    style: str = "bold red",
) -> None:
    """Each distinct problem once: the cases whose message is the same (but for the line of
    the generated file it names) and that come from the same template line are one group,
    shown with that template line and the variants and shapes it hit (--json lists every
    case)."""
    if not results:
        return
    console.print(f"[bold]{title}:[/]")
    for group in _grouped(results, renderings):
        first, template = group.cases[0], group.template
        if len(group.cases) == 1:
            where = f"{first.variant} @ {format_shape(first.shape)}"
        else:
            variants = list(dict.fromkeys(r.variant for r in group.cases))
            shapes = list(dict.fromkeys(format_shape(r.shape) for r in group.cases))
            named = ", ".join(variants[:4]) + (
                f" and {len(variants) - 4} more" if len(variants) > 4 else ""
            )
            at = shapes[0] if len(shapes) == 1 else f"{len(shapes)} shape(s)"
            where = f"in {len(group.cases)} case(s), {len(variants)} variant(s) at {at}: {named}"
        console.print(f"  [{style}]{first.status}[/] {escape(where)}")
        if template:
            console.print(f"      --> template {template}", markup=False)
        for line in first.message.splitlines():
            console.print(f"      {line}", markup=False, highlight=False)


_CARETS = re.compile(r"\s*\^+.*")


def _without_quotes(message: str) -> str:
    """``message`` without the source lines a compiler diagnostic quotes: naga/wgpu's
    codespan block ("41 │   acc += vv;", "┌─ wgsl:41:16") and Tint's line over its carets."""
    lines = message.splitlines()
    kept = []
    for i, text in enumerate(lines):
        under = lines[i + 1] if i + 1 < len(lines) else ""
        if "│" in text or "┌─" in text or _CARETS.fullmatch(text) or _CARETS.fullmatch(under):
            continue
        kept.append(text)
    return "\n".join(kept)


@dataclass
class _Group:
    template: str | None
    cases: list[CaseResult] = field(default_factory=list)


def _grouped(
    results: Sequence[CaseResult], renderings: Mapping[str, RenderedVariant]
) -> list[_Group]:
    """``results`` grouped by (status, stage, template line, message). The message is
    compared without the generated file's line number and the quoted source lines (a
    variant's rendering of the template line may differ, e.g. its dtype), so one template
    error is one group across the variants and shapes it hit, as `validate` shows it."""
    groups: dict[tuple, _Group] = {}
    for r in results:
        line, _ = find_location(r.message)
        rendered = renderings.get(r.variant)
        template = None
        message = r.message
        if line is not None:
            if rendered is not None:
                path, number = rendered.origin(line)
                template = f"{path}:{number}" if number else None
            message = re.sub(rf"(?<!\d){line}(?!\d)", "#", message)
            message = _without_quotes(message)
        key = (r.status, r.stage, template, " ".join(message.split()))
        groups.setdefault(key, _Group(template)).cases.append(r)
    return list(groups.values())
