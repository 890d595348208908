"""What `wgslgen tune` prints: each shape's leaderboard and winner, the summary, the JSON."""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from rich.table import Table

from wgslgen.cli.cmd_db import format_ns
from wgslgen.cli.options import one_profile
from wgslgen.cli.output import console
from wgslgen.spec.kernel import format_shape
from wgslgen.tune.runner import ShapeReport, Totals, TuneOptions
from wgslgen.tune.selection import Decision, ShapePlan


def method_line(options: TuneOptions) -> str:
    """How samples are timed: warm, or cold with the flush size."""
    if options.warm:
        return "warm cache"
    return f"cold cache (flush {format_bytes(options.flush_bytes())} before each sample)"


def format_bytes(n: int) -> str:
    """Bytes for people, in binary units."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:g} {unit}"
    return f"{n} B"


def print_shape(report: ShapeReport, top: int) -> None:
    plan, d = report.plan, report.decision
    console.print(_shape_header(plan), markup=True)
    rows, shown = report.rows(), []
    prefix = f"{plan.spec.name}__"
    for i, r in enumerate(rows):
        if r["status"] == "ok" and i >= top and not r["tags"]:
            continue
        notes = (
            r["tags"] + (["cached"] if r["reused"] else []) + ([r["error"]] if r["error"] else [])
        )
        shown.append((
            i + 1 if r["status"] == "ok" else "-",
            r["variant"].removeprefix(prefix),
            format_ns(r["median_ns"]) if r["status"] == "ok" else r["status"],
            format_ns(r["iqr_ns"]),
            f"{r['speedup']:.2f}x" if r["speedup"] else "-",
            f"{r['pct_of_best']:.0f}%" if r["pct_of_best"] else "-",
            ", ".join(notes),
        ))  # fmt: skip
    table = Table(title_justify="left")
    for col in ("#", "variant", "median", "IQR", "speedup", "% of best", "notes"):
        # Variant names are what people copy: never wrap or cut them.
        table.add_column(col, no_wrap=col in ("variant", "median", "IQR"), overflow="fold")
    for row in shown:
        table.add_row(*(escape(str(c)) for c in row))  # error texts may hold [brackets]
    if shown:  # a shape whose reference failed ran nothing: its error says why, no empty table
        console.print(table)
        console.print(
            "  median, IQR: the search's timing of each variant; speedup: the baseline's "
            "median ÷ the variant's (above 1: faster)",
            style="dim", markup=False,
        )  # fmt: skip
    if d is not None:
        _print_decision(report, d, prefix)
    for note in report.notes + (list(d.notes) if d else []):
        console.print(f"[yellow]note:[/] {escape(note)}", markup=True)
    if report.error:
        console.print(f"[bold red]error, not tuned:[/] {escape(report.error)}", markup=True)


def _print_decision(report: ShapeReport, d: Decision, prefix: str) -> None:
    """The head-to-head round (the decision), the winner and the portable default."""
    if d.head_to_head:
        rounds = next(iter(d.head_to_head.values())).reps
        line = ", ".join(
            f"{n.removeprefix(prefix)} {format_ns(m.median_ns)}"
            for n, m in sorted(d.head_to_head.items(), key=lambda x: x[1].median_ns)
        )
        console.print(
            f"head-to-head, the decision (the finalists timed again side by side, {rounds} "
            f"rounds): {line}",
            markup=False,
        )
    where = " in the head-to-head" if d.winner in d.head_to_head else ""
    speed = (
        f"{where}, speedup {d.speedup:.2f}x over the baseline"
        if d.speedup
        else f"{where}, no baseline time"
    )
    console.print(
        f"[green]winner[/] {escape(d.winner.removeprefix(prefix))} "
        f"({format_ns(d.medians[d.winner])}{speed}): {escape(d.reason.replace(prefix, ''))}",
        markup=True,
    )
    console.print(f"portable default: {report.default_label(prefix)}", markup=False)


def _shape_header(plan: ShapePlan) -> str:
    """The kernel, shape, search and how many candidates it had (or drew, lazily)."""
    fits = sum(1 for _, why in plan.excluded if why.startswith("does not fit"))
    excluded = (
        f"; excluded: {fits} outside the profile, {len(plan.excluded) - fits} by preconditions"
    )
    pool = getattr(plan, "pool", None)
    found = (
        f"{len(plan.eligible)} candidate(s) among {pool.drawn:,} drawn from "
        f"{plan.count.text()} variants"
        if pool is not None
        else f"{len(plan.eligible)} candidate(s)"
    )
    return (
        f"\n[bold]{escape(plan.spec.name)}[/] @ {escape(format_shape(plan.shape))}: "
        f"{plan.strategy} search, {escape(found)}" + (excluded if plan.excluded else "")
    )


def print_summary(args: Any, reports: list[ShapeReport], t: Totals, wall: float, n: int) -> None:
    timed = t.timed_ns + t.head_to_head_ns
    overhead = (
        f" (wall {wall / (timed * 1e-9):.1f}x the timed: compiles, checks, flushes)"
        if timed
        else ""
    )
    console.print(
        f"\n{t.measured} run(s) ({t.failed} failed), {t.reused} reused from {args.db}; "
        f"wall {wall:.1f} s, timed repetitions {timed * 1e-9:.2f} s{overhead}",
        markup=False,
    )
    if n:
        text = f"selection: {n} entr{'y' if n == 1 else 'ies'} written to {args.selection}"
        console.print(text, markup=False)
    elif not reports or not all(r.error for r in reports):  # else the errors below say why
        console.print("[bold red]nothing selected: no variant passed[/]", markup=True)
    for r in (r for r in reports if r.error):  # shown with its shape, and again here at the end
        where = f"{r.plan.spec.name} @ {format_shape(r.plan.shape)}"
        console.print(f"[bold red]not tuned[/] {escape(where)}: {escape(r.error)}", markup=True)
    if args.plot:
        console.print(f"plot: {args.plot}", markup=False)


def report_json(
    args: Any, reports: list[ShapeReport], t: Totals, device: dict, wall: float, problems: list
) -> dict[str, Any]:
    """The run as `--json` prints it (docs/json-output.md)."""
    return {
        "device": device,
        "profile": one_profile(args),
        "db": str(args.db),
        "selection": str(args.selection),
        "shapes": [{**r.to_dict(), "space": _space(r.plan)} for r in reports],
        "totals": {"measured": t.measured, "reused": t.reused, "failed": t.failed,
                   "timed_s": t.timed_ns * 1e-9, "head_to_head_s": t.head_to_head_ns * 1e-9,
                   "wall_s": wall},
        "skipped_lines": [{"line": n, "problem": why} for n, why in problems],
    }  # fmt: skip


def _space(plan: ShapePlan) -> dict[str, Any]:
    """How the shape's variants were found: rendered up front, or drawn lazily."""
    pool = getattr(plan, "pool", None)
    if pool is None:
        n = len(plan.eligible) + len(plan.excluded)
        return {"variants": n, "exact": True, "lazy": False, "drawn": n}
    return {"variants": plan.count.n, "exact": plan.count.exact, "lazy": True,
            "drawn": pool.drawn}  # fmt: skip
