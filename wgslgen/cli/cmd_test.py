"""`wgslgen test`: every variant that fits the profile, against its numpy reference, on a device."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from rich import box
from rich.table import Table

from wgslgen.cli.options import (
    add_device_options,
    add_input_seed_option,
    add_profile_option,
    add_shape_option,
    one_profile,
)
from wgslgen.cli.output import add_common_options, console, emit_json, print_adapter, progress
from wgslgen.cli.space_guard import add_max_variants_option, check_space
from wgslgen.errors import WgslgenError
from wgslgen.render.build import apply_overrides, parse_overrides
from wgslgen.run.harness import CaseResult, Harness, Report
from wgslgen.run.reference import with_reference
from wgslgen.spec.kernel import format_shape
from wgslgen.spec.loader import discover, select

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
    add_device_options(p, "deadline per variant and shape")
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
    kernels = select(discover(args.templates), args.kernel)
    if not kernels:
        raise WgslgenError("no kernel found in the templates given")
    kernels = with_reference(kernels, args.reference, args.templates)
    overrides = parse_overrides(args.set)
    check_space(kernels, overrides, args.max_variants, "test")
    chooser = (lambda spec: apply_overrides(spec, overrides)) if overrides else None
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
        _print_report(report)
    return 0 if report.ok else 1


def _print_report(report: Report) -> None:
    by_kernel: dict[str, list[CaseResult]] = {}
    for r in report.results:
        by_kernel.setdefault(r.kernel, []).append(r)
    for kernel, results in by_kernel.items():
        _print_kernel_table(kernel, results, report)
    _print_details("failures", report.failures)
    _print_details(
        "n/a (preconditions exclude the shape)",
        [r for r in report.results if r.status == "n/a"],
        style="dim",
    )
    for n in report.not_run:
        console.print(f"[dim]not run[/] {n.variant or n.kernel}: {n.reason}")
    for note in report.notes():
        console.print(f"[yellow]{note}[/]")
    style = "green" if report.ok else "bold red"
    console.print(f"[{style}]{report.summary()}[/]")
    if not report.results:
        console.print("[bold red]nothing was run[/]")


def _print_kernel_table(kernel: str, results: list[CaseResult], report: Report) -> None:
    shapes = list(dict.fromkeys(format_shape(r.shape) for r in results))
    for i, s in enumerate(shapes, 1):
        console.print(f"  S{i}: {s}")
    table = Table(
        title=f"wgslgen test: {kernel} on {report.adapter} (profile {report.profile})",
        title_justify="left",
        box=box.SIMPLE_HEAD,  # no vertical rules: the matrix fits 80 columns
        pad_edge=False,
    )
    # The variant name is what a reader needs whole; rich squeezes the other columns first.
    table.add_column(
        "variant", no_wrap=True, min_width=min(60, max(len(r.variant) for r in results))
    )
    width = max(len(r.status) for r in results)
    for i in range(1, len(shapes) + 1):
        table.add_column(f"S{i}", no_wrap=True, min_width=width)
    table.add_column("max err", justify="right", no_wrap=True)
    rows: dict[str, dict[str, CaseResult]] = {}
    for r in results:
        rows.setdefault(r.variant, {})[format_shape(r.shape)] = r
    for variant, cells in rows.items():
        errors = [c.max_abs for c in cells.values() if c.max_abs is not None]
        worst = f"{max(errors):.1e}" if errors else ""
        table.add_row(
            variant, *(_CELL[cells[s].status] if s in cells else "" for s in shapes), worst
        )
    console.print(table)


def _print_details(title: str, results: Sequence[CaseResult], style: str = "bold red") -> None:
    if not results:
        return
    console.print(f"[bold]{title}:[/]")
    for r in results:
        console.print(f"  [{style}]{r.status}[/] {r.variant} @ {format_shape(r.shape)}")
        for line in r.message.splitlines():
            console.print(f"      {line}", markup=False, highlight=False)
