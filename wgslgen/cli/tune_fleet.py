"""`wgslgen tune --ray`: connect to Ray, show the fleet, tune every device group with a
progress display per node (tune/fleet.py does the work)."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields
from typing import Any

from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from wgslgen.cli.output import console, err_console
from wgslgen.tune.db import ResultsDB
from wgslgen.tune.options import Totals, TuneOptions
from wgslgen.tune.selection import ShapePlan, ShapeReport


@dataclass
class DeviceRun:
    """What one device group's tune found, for printing and JSON."""

    label: str
    digest: str
    nodes: list[dict[str, Any]]  # host, slots, tasks done, retried and lost, alive at the end
    reports: list[ShapeReport]
    totals: Totals


class FleetView:
    """A rich progress display: one overall bar, one line per node (device, tasks running,
    done, retried, lost). Quiet when stderr is not a terminal or with --json."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled and err_console.is_terminal
        self.bar: Progress | None = None
        self.total: Any = None
        self.rows: dict[str, Any] = {}

    @contextmanager
    def shown(self, groups: list[Any]) -> Iterator[FleetView]:
        """Display while the block runs."""
        if not self.enabled:
            yield self
            return
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("{task.fields[state]}"), TimeElapsedColumn())  # fmt: skip
        with Progress(*columns, console=err_console, transient=True) as bar:
            self.bar = bar
            self.total = bar.add_task("tuning", total=0, state="")
            for g in groups:
                for n in g.nodes:
                    what = f"  {n.host} · {g.label}"
                    self.rows[n.node_id] = bar.add_task(escape(what), total=0, state="idle")
            yield self
        self.bar = None

    def add_steps(self, n: int) -> None:
        """More steps to the overall bar (a group planned its shapes)."""
        if self.bar is not None:
            self.bar.update(self.total, total=self.bar.tasks[self.total].total + n)

    def step(self, label: str) -> None:
        """One variant looked up or measured."""
        if self.bar is not None:
            self.bar.update(self.total, advance=1, description=escape(label))

    def event(self, group: Any, node: Any, what: str) -> None:
        """A task started, finished, was retried or lost on ``node``."""
        if self.bar is None:
            return
        state = f"{node.running} running, {node.retried} retried, {node.lost} lost"
        if not node.alive:
            state += " [red](node gone)[/]"
        submitted = node.done + node.running + node.lost
        self.bar.update(self.rows[node.node_id], total=submitted, completed=node.done,
                        state=state)  # fmt: skip


def tune_on_ray(
    args: argparse.Namespace,
    options: TuneOptions,
    db: ResultsDB,
    plans: Callable[[Any], list[ShapePlan]],
    on_report: Callable[[ShapeReport], None],
) -> tuple[list[DeviceRun], list[dict[str, str]]]:
    """Connect (``args.ray``: "" a local instance, else an address or "auto"), probe the
    nodes, and tune ``plans(session)`` for each device group: each group's run, and the
    nodes not used ({host, why})."""
    from wgslgen.tune import fleet, ray_session

    view = FleetView(enabled=not args.json)
    # Ray prints some news (a raylet's death) on stdout: keep it off the JSON document.
    quiet = contextlib.redirect_stdout(sys.stderr) if args.json else contextlib.nullcontext()
    with quiet, ray_session.connect(args.ray or None) as connection:
        setup = fleet.WorkerSetup.of(options)
        cluster = fleet.Fleet(
            connection.ray, setup, view.event, owns_instance=connection.started_here
        )
        groups = cluster.probe()
        if not args.json:
            _print_fleet(cluster)

        def planned(session: Any) -> list[ShapePlan]:
            ps = plans(session)
            view.add_steps(sum(p.steps for p in ps))
            return ps

        with view.shown(groups):
            results = fleet.tune_groups(cluster, options, db, planned, on_step=view.step)
        cluster.refresh()  # which nodes died during the tune, for the record
    runs = []
    for session, reports in results:
        g = session.group
        runs.append(DeviceRun(g.label, g.digest, [_node(n) for n in g.nodes], reports,
                              session.totals))  # fmt: skip
        if not args.json:
            console.print(f"\n[bold]device {escape(g.label)}[/] ({g.digest})", markup=True)
            for report in reports:
                on_report(report)
    return runs, [{"host": host, "why": why} for host, why in cluster.unusable]


def _node(n: Any) -> dict[str, Any]:
    keys = ("host", "node_id", "slots", "gpu", "done", "retried", "lost", "alive")
    return {k: getattr(n, k) for k in keys}


def _print_fleet(cluster: Any) -> None:
    for g in cluster.groups:
        slots = [f"{n.host} ({n.slots} {'GPU' if n.gpu else 'CPU'} slot(s))" for n in g.nodes]
        nodes = ", ".join(slots)
        console.print(f"device {g.label} [{g.digest}]: {nodes}", markup=False)
    for host, why in cluster.unusable:
        console.print(f"[yellow]note:[/] node {escape(host)} is not used: {escape(why)}")


def sum_totals(runs: list[DeviceRun]) -> Totals:
    """The totals of every device group together."""
    out = Totals()
    for run in runs:
        for f in fields(Totals):
            setattr(out, f.name, getattr(out, f.name) + getattr(run.totals, f.name))
    return out
