"""`wgslgen db show|merge|prune`: look at, combine and clean the results database."""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Sequence
from pathlib import Path

from rich.markup import escape

from wgslgen.cli.output import (
    add_common_options,
    console,
    emit_json,
    err_console,
    print_table,
    progress,
)
from wgslgen.config import default_project
from wgslgen.errors import WgslgenError
from wgslgen.tune.bench import format_ns
from wgslgen.tune.db import Record, ResultsDB, canonical_shape, latest, stale
from wgslgen.tune.records import STATUSES

DEFAULT_DB = Path("tuning/results.jsonl")


def report_problems(path: Path, problems: Sequence[tuple[int, str]], quiet: bool = False) -> None:
    """Warn (stderr) about each unreadable line of a results file: it is skipped, not fatal."""
    if quiet:
        return
    for line, why in problems:
        err_console.print(
            f"[yellow]warning:[/] {escape(f'{path}:{line}: unreadable record skipped: {why}')}",
            markup=True,
            soft_wrap=True,
        )


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``db`` command and its sub-commands."""
    p = sub.add_parser("db", help="show, merge or prune the tuning results database")
    dbsub = p.add_subparsers(dest="db_command", metavar="SUBCOMMAND", required=True)

    show = dbsub.add_parser("show", help="a table of the records (latest per key)")
    _db_option(show)
    add_common_options(show, templates=False)
    show.add_argument("--kernel", action="append", metavar="K", help="only this kernel")
    show.add_argument("--shape", action="append", metavar="k=v,...", help="only this shape")
    show.add_argument(
        "--status", action="append", choices=STATUSES, metavar="S",
        help=f"only this status ({', '.join(STATUSES)})",
    )  # fmt: skip
    show.add_argument("--all", action="store_true", help="every line, not just the latest")
    show.set_defaults(run=run_show)

    merge = dbsub.add_parser("merge", help="add other machines' results files, once each")
    _db_option(merge)
    merge.add_argument("--json", action="store_true", help="print JSON for machines")
    merge.add_argument("others", nargs="+", type=Path, metavar="FILE", help="results files")
    merge.set_defaults(run=run_merge)

    prune = dbsub.add_parser(
        "prune", help="drop records of renderings the current templates no longer produce"
    )
    _db_option(prune)
    add_common_options(prune, templates=True)
    prune.add_argument(
        "--all",
        action="store_true",
        help="also drop records of kernels the templates do not define (kept by default: "
        "they may come from another --templates folder); with --kernel, only those named",
    )
    prune.add_argument("--dry-run", action="store_true", help="say what would go; change nothing")
    prune.set_defaults(run=run_prune)


def _db_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--db", type=Path, default=DEFAULT_DB, help=f"results database (default {DEFAULT_DB})"
    )


def check_kernel_names(names: Sequence[str] | None, defined: Iterable[str], records) -> None:
    """Refuse a --kernel that names neither a kernel of the templates nor one the database
    holds records of (a kernel since removed is still known there), as other commands do."""
    known = list(dict.fromkeys([*defined, *sorted({r.kernel for r in records})]))
    unknown = [n for n in names or [] if n not in known]
    if unknown:
        raise WgslgenError(
            f"unknown kernel(s) {', '.join(unknown)}; known: {', '.join(known) or '(none)'}"
        )


def _project_kernels(args: argparse.Namespace) -> list[str]:
    """The names of the project's kernels (none when its templates cannot be read)."""
    from wgslgen.spec.loader import discover

    project = getattr(args, "project", None) or default_project()
    try:
        return [k.name for k in discover(list(project.templates))]
    except WgslgenError:
        return []


def _existing_db(args: argparse.Namespace) -> Path:
    """``args.db``; one given on the command line that is not there is refused (read as an
    empty database, a mistyped path would find nothing, or prune nothing, and exit 0). The
    project's own, before any tune wrote it, is empty."""
    project = getattr(args, "project", None) or default_project()
    if not args.db.is_file() and args.db.resolve() != Path(project.db).resolve():
        raise WgslgenError(
            f"{args.db}: no such results database", hint="`wgslgen tune` writes one", option="db"
        )
    return args.db


def run_show(args: argparse.Namespace) -> int:
    """Print the records that match the filters."""
    report = ResultsDB(_existing_db(args)).load()
    report_problems(args.db, report.problems)
    if args.kernel:
        check_kernel_names(args.kernel, _project_kernels(args), report.records)
    records = report.records if args.all else latest(report.records)
    shapes = {canonical_shape(s) for s in args.shape or []}
    records = [
        r
        for r in records
        if (not args.kernel or r.kernel in args.kernel)
        and (not shapes or r.key.shape in shapes)
        and (not args.status or r.status in args.status)
    ]
    # Grouped by device (a fleet tune fills one database for many), fastest first per shape.
    records.sort(key=lambda r: (r.key.device, r.kernel, r.key.shape, _median(r), r.variant))
    if args.json:
        emit_json(
            {
                "db": str(args.db),
                "records": [r.to_dict() for r in records],
                "skipped_lines": [{"line": n, "problem": why} for n, why in report.problems],
            }
        )
        return 0
    by_device: dict[str, list[Record]] = {}
    for r in records:
        by_device.setdefault(r.key.device, []).append(r)
    for digest, group in by_device.items() or [("", [])]:
        label = group[0].device_info.get("label", digest) if group else ""
        title = f"{args.db}: {label} [{digest}]" if group else str(args.db)
        print_table(title, _SHOW_COLUMNS, [_row(r) for r in group])  # plain text, no markup
    skipped = f", {len(report.problems)} unreadable line(s) skipped" if report.problems else ""
    devices = f" on {len(by_device)} devices" if len(by_device) > 1 else ""
    console.print(f"{len(records)} record(s){skipped}{devices}", markup=False)
    return 0


_SHOW_COLUMNS = ["kernel", "variant", "shape", "status", "median", "IQR", "reps",
                 "measured (UTC)", "sha256"]  # fmt: skip


def _row(r: Record) -> tuple:
    """One line of `db show`'s table (the device is the table's title)."""
    return (
        r.kernel,
        _short(r),
        r.key.shape,
        r.status,
        format_ns(r.measurement.median_ns if r.measurement else None),
        format_ns(r.measurement.iqr_ns if r.measurement else None),
        r.measurement.reps if r.measurement else "-",
        r.measured_at[:19].replace("T", " "),
        r.key.source_sha256[:10],
    )


def _median(r: Record) -> float:
    return r.measurement.median_ns if r.measurement else float("inf")


def _short(r: Record) -> str:
    prefix = f"{r.kernel}__"
    return r.variant[len(prefix) :] if r.variant.startswith(prefix) else r.variant


def run_merge(args: argparse.Namespace) -> int:
    """Merge the given results files into the database."""
    stats = ResultsDB(args.db).merge(args.others)
    for path, line, why in stats.problems:
        report_problems(Path(path), [(line, why)])
    for path, what in stats.conflicts:
        err_console.print(f"conflict: {path}: {what}", markup=False, soft_wrap=True)
    moved = (
        f"{stats.moved_lines} unreadable line(s) of {args.db} moved to {stats.rejected_path}"
        if stats.moved_lines
        else ""
    )
    if args.json:
        emit_json(
            {
                "db": str(args.db),
                "added": stats.added,
                "duplicates": stats.duplicates,
                "conflicts": [{"file": f, "what": w} for f, w in stats.conflicts],
                "moved_lines": stats.moved_lines,
                "rejected_path": str(stats.rejected_path) if stats.moved_lines else None,
                "skipped_lines": [
                    {"file": f, "line": n, "problem": w} for f, n, w in stats.problems
                ],
            }
        )
    else:
        others = len(stats.problems) - stats.moved_lines
        text = (
            f"{args.db}: {stats.added} record(s) added, {stats.duplicates} exact duplicate(s) "
            f"dropped"
        )
        if stats.conflicts:
            text += f", {len(stats.conflicts)} conflict(s) kept both ways"
        if others > 0:
            text += f", {others} unreadable line(s) of the other files skipped"
        console.print(text + (f"; {moved}" if moved else ""), markup=False)
    return 0


def run_prune(args: argparse.Namespace) -> int:
    """Drop records whose code or judging the templates no longer produce."""
    from wgslgen.spec.loader import discover
    from wgslgen.tune.keys import recorded_variants
    from wgslgen.tune.selection import current_keys

    defined = discover(args.templates)
    db = ResultsDB(_existing_db(args))
    report = db.load()
    report_problems(args.db, report.problems)
    check_kernel_names(args.kernel, [k.name for k in defined], report.records)
    # A kernel named that only the database knows has no current renderings: all stale.
    kernels = [k for k in defined if not args.kernel or k.name in args.kernel]
    names = {k.name for k in kernels}
    # With --kernel only the kernels named are judged (--all reaches no further): records
    # of the others were not judged, and are never dropped.
    scope, reach_all = (set(args.kernel), False) if args.kernel else (names, args.all)

    def doomed_of(records: Iterable[Record]) -> list[Record]:
        return stale(records, keep, scope, reach_all)

    # Only the variants the database is about are rendered (a space may hold millions).
    total = sum(len(recorded_variants(k, report.records)) for k in kernels if k.problem)
    with progress("rendering", total, not args.json) as bar:
        keep = current_keys(kernels, bar.advance, report.records)
    doomed = doomed_of(report.records)
    kept_foreign = 0 if args.all else sum(1 for r in report.records if r.kernel not in names)
    judged = {(r.kernel, r.variant) for r in report.records}
    moved = 0
    if not args.dry_run and (doomed or report.problems):
        # The same rule, applied to the file as it is under the lock; a record that arrived
        # since (a tune running beside us) was not judged here and is kept.
        _, moved = db.prune(lambda r: (r.kernel, r.variant) in judged and bool(doomed_of([r])))
    if args.json:
        emit_json(
            {
                "db": str(args.db),
                "dropped": len(doomed),
                "kept": len(report.records) - len(doomed),
                "kept_other_kernels": kept_foreign,
                "dry_run": args.dry_run,
                "moved_lines": moved,
                "stale": [{"kernel": r.kernel, "variant": r.variant, "shape": r.key.shape,
                           "sha256": r.key.source_sha256} for r in doomed],
            }
        )  # fmt: skip
        return 0
    verb = "would drop" if args.dry_run else "dropped"
    for r in doomed:
        line = f"  {verb} {r.variant} {r.key.shape} ({r.key.source_sha256[:10]}, stale)"
        console.print(line, markup=False)
    text = (
        f"{args.db}: {verb} {len(doomed)} stale record(s), kept {len(report.records) - len(doomed)}"
    )
    if kept_foreign:
        text += f" ({kept_foreign} of kernels not in the templates; --all drops them)"
    if moved:
        text += f"; {moved} unreadable line(s) removed from it, moved to {db.rejected_path}"
    console.print(text, markup=False)
    return 0
