"""`wgslgen tune`: time the correct variants per shape, keep every result, select the winners."""

from __future__ import annotations

import argparse
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from wgslgen.cli.cmd_db import DEFAULT_DB, report_problems
from wgslgen.cli.kernels import selected_kernels
from wgslgen.cli.options import (
    add_device_options,
    add_input_seed_option,
    add_profile_option,
    add_shape_option,
    duration,
    fraction,
    integer,
    one_profile,
    ray_address,
    size_in_bytes,
)
from wgslgen.cli.output import (
    add_common_options,
    console,
    emit_json,
    err_console,
    print_adapter,
    progress,
    warn,
)
from wgslgen.cli.tune_output import method_line, print_shape, print_summary, report_json
from wgslgen.errors import WgslgenError
from wgslgen.render.build import parse_overrides
from wgslgen.spec.kernel import KernelSpec, format_shape, shape_mismatch
from wgslgen.spec.space import overridden
from wgslgen.tune.db import ResultsDB, check_writable, read_selection
from wgslgen.tune.runner import ShapeReport, TuneOptions, TuneSession
from wgslgen.tune.search import STRATEGIES, Budget
from wgslgen.tune.selection import ShapePlan
from wgslgen.tune.selection_file import SelectionEntry, update_selection
from wgslgen.tune.standing import standing_of

DEFAULT_SELECTION = Path("tuning/selection.json")
WARN_EXHAUSTIVE = 2_000  # variants: as many renderings as `build` warns about


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``tune`` command."""
    p = sub.add_parser("tune", help="time the correct variants per shape and select the fastest")
    add_common_options(p, variants=True)
    add_shape_option(p, "problem shape to tune for (repeatable; default: the spec's [tune].shapes)")
    p.add_argument(
        "--strategy",
        choices=STRATEGIES,
        default="auto",
        help="exhaustive, random, tpe (needs optuna) or auto (default: exhaustive "
        "for a small space without a budget, else tpe or random)",
    )
    p.add_argument("--budget", type=integer(1), metavar="N", help="at most N variants per shape")
    p.add_argument(
        "--time",
        type=duration,
        metavar="DURATION",
        help="search at most this long per shape, e.g. 60s or 2m",
    )
    p.add_argument(
        "--search-seed",
        type=integer(0),
        default=0,
        metavar="N",
        help="seed of the random and tpe search order (0)",
    )
    add_input_seed_option(p)
    add_device_options(p, "deadline per check, per timing job and per reference.py import")
    add_profile_option(p, "tune", "a variant must fit to be a candidate")
    _add_timing_options(p)
    _add_output_options(p)
    p.set_defaults(run=run)


def _add_timing_options(p: argparse.ArgumentParser) -> None:
    """How variants are timed and the finalists decided, and what is measured again."""
    p.add_argument(
        "--warm",
        action="store_true",
        help="time with warm caches (default: flush the cache before each sample)",
    )
    p.add_argument(
        "--l2-bytes",
        type=size_in_bytes,
        metavar="SIZE",
        help="last-level cache size to flush, e.g. 32M (default 128M: 256M written)",
    )
    p.add_argument(
        "--finalists",
        type=integer(1),
        default=3,
        metavar="N",
        help="re-time up to N variants within --margin of the best head-to-head (3)",
    )
    p.add_argument(
        "--margin",
        type=fraction,
        default=0.10,
        metavar="F",
        help="finalists are within this fraction of the best median (0.10)",
    )
    p.add_argument("--rounds", type=integer(1), default=15, help="head-to-head rounds (15)")
    p.add_argument(
        "--fresh-worker",
        choices=("auto", "always", "never"),
        default="auto",
        help="check and time each variant in a new worker process: always, never, or auto "
        "(one worker; on a GPU a canary variant is timed again every 16 variants and before "
        "each decision, and from the first drift on every variant gets a new worker)",
    )
    p.add_argument(
        "--retry-failed",
        action="store_true",
        help="run again variants recorded as timeout, crash or wrong (records judged with "
        "another tolerance, reference or dispatch are never reused anyway)",
    )


def _add_output_options(p: argparse.ArgumentParser) -> None:
    """Where results go (--db, --selection, --plot, --top) and where they are made (--ray)."""
    p.add_argument(
        "--db", type=Path, default=DEFAULT_DB, help=f"results database (default {DEFAULT_DB})"
    )
    p.add_argument(
        "--selection",
        type=Path,
        default=DEFAULT_SELECTION,
        help=f"selection file to update (default {DEFAULT_SELECTION})",
    )
    p.add_argument(
        "--plot", type=Path, metavar="OUT.png", help="plot the time per variant (needs matplotlib)"
    )
    p.add_argument(
        "--top",
        type=integer(1),
        default=20,
        metavar="N",
        help="leaderboard rows per shape (20; tagged rows are always shown)",
    )
    p.add_argument(
        "--ray",
        nargs="?",
        const="",
        type=ray_address,
        metavar="ADDRESS",
        help="measure on a Ray cluster (needs wgslgen[ray]): without ADDRESS a local Ray "
        "instance, 'auto' the cluster this machine joined, or HOST:PORT; every node's device "
        "fills the database (wgslgen docs fleet)",
    )


def _refuse_bad_input(args: argparse.Namespace, kernels: list[KernelSpec]) -> list[SelectionEntry]:
    """Every mistake in the command line that can be seen before the adapter starts; the
    selection file's entries (read here, so that a broken file is refused first)."""
    if len(kernels) > 1 and not args.kernel:
        names = ", ".join(k.name for k in kernels)
        raise WgslgenError(f"name the kernel(s) to tune with --kernel (found: {names})")
    if args.plot:
        from wgslgen.tune.plot import check_plot_path

        args.plot = check_plot_path(args.plot)
    entries = read_selection(args.selection) if args.selection.exists() else []
    for spec in kernels:  # a shape of other sizes, or one the uniform cannot hold
        for shape in (args.shape or []) if spec.problem is not None else ():
            if why := shape_mismatch(spec.problem.sizes, shape):
                raise WgslgenError(f"kernel {spec.name}: shape {format_shape(shape)} {why}")
            spec.check_shape_values(shape)
    return entries


def run(args: argparse.Namespace) -> int:
    """Plan every (kernel, shape), tune with a progress bar, print, write the selection."""
    started = time.perf_counter()
    kernels = selected_kernels(args)
    standing = standing_of(_refuse_bad_input(args, kernels))
    overrides = parse_overrides(args.set)
    for spec in kernels if overrides else ():  # an unknown axis or value: before the adapter
        overridden(spec, overrides)
    options = _options(args, standing)
    if args.ray is not None:
        from wgslgen.tune.ray_session import import_ray

        import_ray()  # missing: say so before anything else
    check_writable(args.db, "results database")  # before measuring anything
    check_writable(args.selection, "selection file")
    db = ResultsDB(args.db)
    problems = db.load().problems
    report_problems(args.db, problems)

    def plans(session: TuneSession) -> list[ShapePlan]:
        return _plans(session, kernels, overrides, args.shape)

    if args.ray is not None:
        from wgslgen.cli.tune_fleet import sum_totals, tune_on_ray

        if not args.json:
            console.print(f"Ray: {args.ray or 'a local instance'}   profile: {options.profile}"
                          f"   timing: {method_line(options)}", markup=False)  # fmt: skip
        runs, unused = tune_on_ray(args, options, db, plans, lambda r: print_shape(r, args.top))
        reports = [r for run in runs for r in run.reports]
        totals = sum_totals(runs)
        devices = [{"label": r.label, "digest": r.digest, "nodes": r.nodes} for r in runs]
    else:
        reports, totals, device = _tune_here(args, options, db, plans)
        devices, unused = [device], []
    device = devices[0]
    entries = [r.selection for r in reports if r.selection is not None]
    _update_selection(args.selection, reports, entries)
    wall = time.perf_counter() - started
    if args.plot:
        from wgslgen.tune.plot import plot_reports

        plot_reports(reports, args.plot, device["label"])
    if args.json:
        emit_json(
            {
                **report_json(args, reports, totals, device, wall, problems),
                "devices": devices,
                "unused_nodes": unused,
            }
        )
    else:
        print_summary(args, reports, totals, wall, len(entries))
    return 0 if entries and not any(r.error for r in reports) else 1


def _update_selection(
    path: Path, reports: list[ShapeReport], entries: list[SelectionEntry]
) -> None:
    """Write this tune's entries into the selection file; drop the entries whose chosen
    variant it found failing; keep those it measured nothing new for and chose the same."""
    failing = _now_failing(reports)
    if not entries and not failing:
        return
    keep = {(e.kernel, e.device, e.shape) for r in reports
            if (e := r.selection) is not None and not r.tried_portable()}  # fmt: skip
    reused = {(e.kernel, e.device, e.shape) for r in reports
              if (e := r.selection) and all(o.reused for o in r.outcomes)}  # fmt: skip

    def dropped(e: SelectionEntry, variant: str) -> None:
        warn(f"{path}: entry {e.kernel} at {e.shape} on {e.device_label} removed: "
             f"its chosen {variant} fails now")  # fmt: skip

    update_selection(path, entries, keep_default_for=keep, now_failing=failing,
                     on_drop=dropped, nothing_measured=reused)  # fmt: skip


def _now_failing(reports: list[ShapeReport]) -> dict[tuple[str, str, str], set[str]]:
    """Per (kernel, device, shape), the variants this tune found failing: not a slow or lost
    run (timeouts can be the machine's), a wrong, non-compiling or crashing one."""
    out: dict[tuple[str, str, str], set[str]] = {}
    for r in reports:
        for o in r.outcomes:
            if o.status in ("wrong", "compile-error", "crash"):
                key = (o.record.kernel, o.record.key.device, o.record.key.shape)
                out.setdefault(key, set()).add(o.name)
    return out


def _options(args: argparse.Namespace, standing: Mapping[Any, Any]) -> TuneOptions:
    """The tune's settings from the command line, and the choices the selection holds."""
    return TuneOptions(
        standing=standing,
        adapter=args.adapter, profile=one_profile(args), warm=args.warm, l2_bytes=args.l2_bytes,
        strategy=args.strategy, budget=Budget(args.budget, args.time), seed=args.search_seed,
        input_seed=args.input_seed,
        timeout=args.timeout, finalists=args.finalists, margin=args.margin, rounds=args.rounds,
        retry_failed=args.retry_failed, fresh_worker=args.fresh_worker,
    )  # fmt: skip


def _plans(session: TuneSession, kernels: list, overrides: Any, shapes: Any) -> list[ShapePlan]:
    """Every (kernel, shape) the session will tune, planned for its device."""
    plans = []
    for spec in kernels:
        # A space, not a list: a large one is counted and drawn from, never enumerated.
        space = overridden(spec, overrides) if overrides else spec.space
        if space.count.exact and space.count.n == 0 and overrides:
            raise WgslgenError(
                f"kernel {spec.name}: no variant satisfies the constraints with "
                + ", ".join(f"{k}={'|'.join(v)}" for k, v in overrides.items())
            )
        todo = shapes or list(spec.tune_shapes)
        if not todo:
            raise WgslgenError(f"kernel {spec.name} has no [tune].shapes; pass --shape K=V,...")
        opts = session.options
        if (
            opts.strategy == "exhaustive"
            and opts.budget.unlimited
            and space.count.n > WARN_EXHAUSTIVE
        ):
            err_console.print(
                f"warning: exhaustive search renders and measures all {space.count.text()} "
                f"variants of {spec.name} per shape; --budget or --time samples them",
                markup=False,
            )
        plans += [session.plan(spec, s, space) for s in todo]
    return plans


def _tune_here(args: Any, options: TuneOptions, db: ResultsDB, plans: Any):
    """Tune on this machine's adapter: (reports, totals, device)."""
    reports: list[ShapeReport] = []
    with TuneSession(options, db) as session:
        extra = f"   profile: {options.profile}   timing: {method_line(options)}"
        print_adapter(session.harness.adapter_info, args.json, extra)
        todo = plans(session)
        with progress("tuning", sum(p.steps for p in todo), enabled=not args.json) as bar:
            session.on_step = bar.advance
            try:
                for plan in todo:
                    report = session.run(plan)
                    session.select(report)
                    reports.append(report)
                    if not args.json:
                        print_shape(report, args.top)
            except KeyboardInterrupt:  # the shapes already decided keep their decision
                entries = [r.selection for r in reports if r.selection is not None]
                if entries:
                    _update_selection(args.selection, reports, entries)
                    warn(f"{args.selection}: holds the {len(entries)} shape(s) decided before "
                         "the interrupt")  # fmt: skip
                raise
        device = {"label": session.device_label, "digest": session.device_key.digest()}
        return reports, session.totals, device
