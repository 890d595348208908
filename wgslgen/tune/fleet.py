"""Tuning on a Ray cluster (`wgslgen tune --ray`): the driver plans, the nodes measure.

The driver probes every node once (a device worker reports its adapter), groups the nodes by
device key, and runs one TuneSession per group with the same planning, search and decision
code as a local tune (runner.py). Only the measuring differs: each variant's check and timing
is a Ray task (``num_gpus=1`` on a GPU adapter, one CPU slot on a CPU adapter) pinned to a
node of its group, where a fresh device worker process runs it (trial.py). The reference
runs on the driver; what travels is the trial: rendered WGSL, buffers, expected outputs.

The driver is the only writer of the results database: a record is appended (one fsynced
line) as each task finishes. A task whose worker or node dies is tried again on a node with
the same device key (another one first), at most MAX_ATTEMPTS times, else recorded ``lost``
with the reason; a rerun measures it again. docs/fleet.md has the design.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from wgslgen.errors import WgslgenError
from wgslgen.run.device import DeviceKey, is_cpu_adapter
from wgslgen.run.harness import Harness
from wgslgen.run.protocol import HeadToHeadJob, Hello
from wgslgen.tune.db import ResultsDB
from wgslgen.tune.fleet_node import HeadToHeadResult, WorkerSetup, probe_node, run_on_node
from wgslgen.tune.options import TuneOptions
from wgslgen.tune.runner import Measured, TuneSession
from wgslgen.tune.selection import Candidate, ShapePlan, ShapeReport
from wgslgen.tune.trial import (
    Trial,
    TrialResult,
    build_trial,
    head_to_head_job,
    sample_time_ns,
)

MAX_ATTEMPTS = 3  # per task: the first try and two retries after a worker or node died


@dataclass
class Node:
    """One Ray node of a device group, and what it is doing."""

    node_id: str
    host: str
    slots: int  # tasks at once: its GPUs, or its CPUs on a CPU adapter
    gpu: bool  # whether tasks ask Ray for a GPU
    alive: bool = True
    running: int = 0
    done: int = 0
    retried: int = 0
    lost: int = 0


@dataclass
class DeviceGroup:
    """The nodes whose adapters share one device key."""

    digest: str
    hello: Hello
    nodes: list[Node] = field(default_factory=list)

    @property
    def label(self) -> str:
        """The adapter, for people."""
        return self.hello.label


@dataclass(frozen=True)
class Lost:
    """A task that could not be completed: its worker or node died too often, or none of
    its device group is left."""

    reason: str


Event = Callable[[DeviceGroup, Node, str], None]  # (group, node, "start"/"done"/"retry"/"lost")


class Fleet:
    """The cluster's device groups and a scheduler that keeps each node's slots busy."""

    def __init__(
        self,
        ray: Any,
        setup: WorkerSetup,
        on_event: Event | None = None,
        owns_instance: bool = False,
    ) -> None:
        self.ray = ray
        # Ray (2.60) can abort the driver when a force-cancel races a task's reply; an
        # instance started here is shut down on the way out, which stops its tasks anyway.
        self.cancel_on_exit = not owns_instance
        self.setup = setup
        self.on_event = on_event or (lambda group, node, what: None)
        self.groups: list[DeviceGroup] = []
        self.unusable: list[tuple[str, str]] = []  # (host, why it has no adapter)
        self.lock = threading.Lock()  # one database writer at a time across groups
        self._task = ray.remote(run_on_node)

    def probe(self) -> list[DeviceGroup]:
        """Ask every alive node which adapter its device worker gets; group them by key."""
        nodes = [n for n in self.ray.nodes() if n.get("Alive")]
        probe = self.ray.remote(probe_node)
        refs = [
            probe.options(num_cpus=0, scheduling_strategy=self._pin(n["NodeID"])).remote(self.setup)
            for n in nodes
        ]
        groups: dict[str, DeviceGroup] = {}
        for n, (hello, host, error) in zip(nodes, self.ray.get(refs), strict=True):
            if hello is None:
                self.unusable.append((host, error))
                continue
            name = f"{host}:{n['NodeID'][:6]}"
            node = _node(n, hello, name)
            if node is None:
                self.unusable.append((name, "Ray gives it no CPU (or GPU) for tasks"))
                continue
            digest = DeviceKey(**hello.key).digest()
            groups.setdefault(digest, DeviceGroup(digest, hello)).nodes.append(node)
        if not groups:
            why = "; ".join(f"{h}: {e}" for h, e in self.unusable) or "the cluster has no node"
            raise WgslgenError(f"no Ray node can run the device worker ({why})")
        self.groups = list(groups.values())
        return self.groups

    def free_slots(self, group: DeviceGroup) -> int:
        """Slots of the group's alive nodes not running a task now."""
        return sum(n.slots - n.running for n in group.nodes if n.alive)

    def run(
        self, group: DeviceGroup, items: Iterable[tuple[Any, Trial | HeadToHeadJob]]
    ) -> Iterator[tuple[Any, TrialResult | HeadToHeadResult | Lost]]:
        """Run each (key, work) on a node of ``group``; yield (key, outcome) as each finishes."""
        queue: deque[tuple[Any, Any, int, Node | None]] = deque((k, w, 0, None) for k, w in items)
        pending: dict[Any, tuple[Any, Any, int, Node]] = {}
        try:
            while queue or pending:
                while queue and (node := self._free_node(group, queue[0][3])):
                    key, work, attempts, _ = queue.popleft()
                    pending[self._submit(group, node, work)] = (key, work, attempts, node)
                if not pending:  # nothing runs and nothing can: the group has no node left
                    while queue:
                        key, *_ = queue.popleft()
                        yield key, Lost(f"no node with {group.label} is left in the cluster")
                    return
                done, _ = self.ray.wait(list(pending), num_returns=1, timeout=1.0)
                for ref in done:
                    key, work, attempts, node = pending.pop(ref)
                    node.running -= 1
                    outcome = self._outcome(group, node, ref, attempts)
                    if outcome is None:  # worker or node died: again, elsewhere if possible
                        queue.appendleft((key, work, attempts + 1, node))
                        continue
                    yield key, outcome
        finally:
            for ref in pending if self.cancel_on_exit else ():
                self.ray.cancel(ref, force=True)  # interrupted: leave nothing running there

    def _outcome(self, group: DeviceGroup, node: Node, ref: Any, attempts: int):
        """The task's result; None when it should be tried again; Lost when it may not."""
        exc = self.ray.exceptions
        try:
            result = self.ray.get(ref)
        except (exc.WorkerCrashedError, exc.NodeDiedError, exc.LocalRayletDiedError,
                exc.ObjectLostError, exc.OwnerDiedError, exc.TaskUnschedulableError,
                exc.RaySystemError) as e:  # fmt: skip
            self.refresh(group)
            why = f"{type(e).__name__} on {node.host}: {str(e).splitlines()[0]}"
            if attempts + 1 < MAX_ATTEMPTS and any(n.alive for n in group.nodes):
                node.retried += 1
                self.on_event(group, node, "retry")
                return None
            node.lost += 1
            self.on_event(group, node, "lost")
            return Lost(f"lost after {attempts + 1} attempt(s): {why}")
        except exc.RayError as e:  # our task code failed: trying again would fail again
            node.lost += 1
            self.on_event(group, node, "lost")
            return Lost(f"task failed on {node.host}: {str(e).splitlines()[-1]}")
        node.done += 1
        self.on_event(group, node, "done")
        return result

    def _submit(self, group: DeviceGroup, node: Node, work: Trial | HeadToHeadJob) -> Any:
        node.running += 1
        self.on_event(group, node, "start")
        resources = {"num_gpus": 1, "num_cpus": 0} if node.gpu else {"num_cpus": 1}
        task = self._task.options(
            **resources, max_retries=0, scheduling_strategy=self._pin(node.node_id)
        )
        return task.remote(self.setup, group.digest, node.host, work)

    def _free_node(self, group: DeviceGroup, avoid: Node | None) -> Node | None:
        """The alive node with the most free slots; never ``avoid`` (where the task's worker
        or node just died) while another node of the group is alive."""
        alive = [n for n in group.nodes if n.alive]
        if avoid is not None and len(alive) > 1:
            alive = [n for n in alive if n is not avoid]
        free = [n for n in alive if n.running < n.slots]
        return max(free, key=lambda n: n.slots - n.running, default=None)

    def refresh(self, *groups: DeviceGroup) -> None:
        """Mark the nodes Ray no longer lists as alive (every group's by default)."""
        alive = {n["NodeID"] for n in self.ray.nodes() if n.get("Alive")}
        for group in groups or self.groups:
            for node in group.nodes:
                node.alive = node.alive and node.node_id in alive

    def _pin(self, node_id: str) -> Any:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        return NodeAffinitySchedulingStrategy(node_id, soft=False)


def _node(info: Mapping[str, Any], hello: Hello, host: str) -> Node | None:
    """A node's slots: one per CPU on a CPU adapter; one task at a time on a GPU (asking Ray
    for a GPU when it counts them); None without a CPU for the task (a head node started
    with --num-cpus=0).

    One at a time even on a node with several GPUs: the device worker picks its adapter by
    the --adapter selector, not by the GPU Ray assigns (Vulkan ignores CUDA_VISIBLE_DEVICES),
    so two tasks would time on the same GPU at once.
    """
    resources = info.get("Resources", {})
    gpus = int(resources.get("GPU", 0))
    cpus = int(resources.get("CPU", 0))
    cpu_adapter = is_cpu_adapter(hello.key)
    if gpus and not cpu_adapter:
        return Node(info["NodeID"], host, 1, True)
    if not cpus:
        return None
    return Node(info["NodeID"], host, cpus if cpu_adapter else 1, False)


class _GroupAdapter:
    """Stands in for a WorkerClient on the driver: what the group's nodes reported about their
    adapter (planning needs its limits and features); jobs run on the nodes, not here."""

    def __init__(self, hello: Hello) -> None:
        self.info = hello

    def start(self) -> Hello:
        """The group's adapter facts."""
        return self.info

    def call(self, job: Any, timeout: float) -> Any:
        """Never called: a fleet tune sends its jobs through Fleet.run."""
        raise WgslgenError("internal error: a fleet tune ran a job on the driver")

    def close(self) -> None:
        """Nothing to stop."""


class FleetSession(TuneSession):
    """A TuneSession for one device group whose variants are measured on its nodes."""

    def __init__(
        self, options: TuneOptions, db: ResultsDB, fleet: Fleet, group: DeviceGroup,
        on_step: Callable[[str], None] | None = None,
    ) -> None:  # fmt: skip
        stand_in = Harness(options.adapter, options.timeout, options.input_seed,
                           worker=_GroupAdapter(group.hello))  # type: ignore[arg-type]  # fmt: skip
        super().__init__(options, db, on_step, harness=stand_in)
        self.fleet, self.group = fleet, group

    def close(self) -> None:
        """Nothing runs here; the caller ends the database session once every group is done."""

    def wave_size(self, plan: ShapePlan) -> int:
        """TPE and a time budget learn from each wave: the free slots. Otherwise every
        candidate at once, queued on the nodes."""
        if plan.strategy == "tpe" or plan.budget.seconds is not None:
            return max(1, self.fleet.free_slots(self.group))
        return max(1, plan.steps - 2)

    def _measure_many(self, cands: Sequence[Candidate], shape: Mapping[str, int]
                      ) -> Iterator[Measured]:  # fmt: skip
        bench = {"warm": self.options.warm, "l2_bytes": self.options.l2_bytes}
        trials = [(c, build_trial(self.harness, c.rendered, shape, **bench)) for c in cands]
        for c, res in self.fleet.run(self.group, trials):
            if isinstance(res, Lost):
                yield c, "lost", res.reason, None
            else:
                assert isinstance(res, TrialResult)
                self.totals.check_s += res.check_s
                self.totals.bench_s += res.bench_s
                yield c, res.status, res.error, res.measurement

    def _record(self, *args: Any, **kwargs: Any) -> Any:
        with self.fleet.lock:  # the groups' sessions run in threads; one writer at a time
            return super()._record(*args, **kwargs)

    def _head_to_head(self, cands: list[Candidate], shape: Mapping[str, int]):
        """The finalists timed in alternation on one node of this group's device."""
        o = self.options
        job = head_to_head_job(self.harness, [c.rendered for c in cands], shape,
                               rounds=o.rounds, warm=o.warm, l2_bytes=o.l2_bytes)  # fmt: skip
        t0 = time.perf_counter()
        ((_, res),) = self.fleet.run(self.group, [("h2h", job)])
        self.totals.head_to_head_s += time.perf_counter() - t0
        if isinstance(res, Lost):
            return {}, f"lost: {res.reason}"
        assert isinstance(res, HeadToHeadResult)
        if res.error:
            return {}, res.error
        self.totals.head_to_head_ns += sum(sample_time_ns(m) for m in res.results.values())
        return res.results, None


def tune_groups(
    fleet: Fleet,
    options: TuneOptions,
    db: ResultsDB,
    plans: Callable[[FleetSession], list[ShapePlan]],
    on_step: Callable[[str], None] | None = None,
) -> list[tuple[FleetSession, list[ShapeReport]]]:
    """Tune ``plans(session)`` for every device group, the groups at the same time."""
    sessions = [FleetSession(options, db, fleet, g, on_step) for g in fleet.groups]

    def one(session: FleetSession) -> list[ShapeReport]:
        reports = []
        for plan in plans(session):
            report = session.run(plan)
            with fleet.lock:
                session.select(report)
            reports.append(report)
        return reports

    try:
        if len(sessions) == 1:
            return [(sessions[0], one(sessions[0]))]
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(len(sessions)) as pool:
            futures = [pool.submit(one, s) for s in sessions]
            return [(s, f.result()) for s, f in zip(sessions, futures, strict=True)]
    finally:
        db.end_session()
