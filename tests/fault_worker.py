"""A device worker with faults injected on purpose, for tests of hang and crash recovery.

Production code knows nothing of it: tests point ``WorkerClient.module`` here. Faults come from
``WGSLGEN_TEST_FAULT="ACTION:KIND:TEXT[,...]"``: hang (ACTION "hang") or die ("crash") on a job
of KIND (run, bench, head_to_head) whose label contains TEXT. An ``AbortJob`` always dies.
"killparent" SIGKILLs the process that started the worker (a Ray worker in a fleet tune),
then dies; "killnode" SIGKILLs that process's parent too (the Ray node's raylet). With a "1"
appended they do so once only: when a marker file in the folder
``WGSLGEN_TEST_FAULT_MARKERS`` can be created for that fault. ``WGSLGEN_TEST_FAKE_DEVICE``
makes the workers of one Ray node report a second device (see ``_simulated``).
"""

from __future__ import annotations

import os
import resource
import signal
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from wgslgen.run import worker
from wgslgen.run.protocol import Hello, Reply
from wgslgen.run.worker_client import WorkerClient

FAULT_ENV = "WGSLGEN_TEST_FAULT"
FAKE_DEVICE_ENV = "WGSLGEN_TEST_FAKE_DEVICE"
MODULE = "tests.fault_worker"


@dataclass(frozen=True)
class AbortJob:
    """Makes the worker die with SIGABRT."""

    label: str = "abort"
    kind: str = "abort"


def _die() -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core file for it
    os.abort()


def _simulated() -> bool:
    """Whether this worker plays a second device: ``WGSLGEN_TEST_FAKE_DEVICE`` names the Ray
    node (its raylet's pid, which Ray workers and their children inherit) whose adapter is
    reported as another device without shader-f16."""
    raylet = os.environ.get(FAKE_DEVICE_ENV)
    return bool(raylet) and raylet == os.environ.get("RAY_RAYLET_PID")


def _features(job: Any) -> set[str]:
    jobs = getattr(job, "finalists", {}).values() or [job]
    return {f for j in jobs for f in getattr(j, "features", ())}


class FaultyRunner(worker.Runner):
    """The worker's Runner, hanging or dying where the environment asks."""

    def describe(self) -> Hello:
        hello = super().describe()
        if not _simulated():
            return hello
        key = {**hello.key, "device": hello.key["device"] + " (simulated second device)"}
        features = tuple(f for f in hello.features if f != "shader-f16")
        return replace(hello, key=key, label="simulated " + hello.label, features=features)

    def handle(self, job: Any) -> Reply:
        if isinstance(job, AbortJob) or getattr(job, "kind", None) == "abort":
            _die()
        if _simulated() and "shader-f16" in _features(job):
            _die()  # the simulated device lacks it: it must never receive such a job
        for fault in filter(None, os.environ.get(FAULT_ENV, "").split(",")):
            action, _, rest = fault.partition(":")
            kind, _, text = rest.partition(":")
            if kind == str(job.kind) and text in job.label:
                if action == "hang":
                    time.sleep(1e6)
                if action.startswith(("killparent", "killnode")):
                    if action.endswith("1") and not _first_time(fault):
                        continue
                    parent = os.getppid()
                    if action.startswith("killnode"):  # the Ray worker's parent: the raylet
                        stat = Path(f"/proc/{parent}/stat").read_text()
                        os.kill(int(stat.rsplit(")", 1)[1].split()[1]), signal.SIGKILL)
                    os.kill(parent, signal.SIGKILL)
                _die()
        return super().handle(job)


def _first_time(fault: str) -> bool:
    marker = Path(os.environ["WGSLGEN_TEST_FAULT_MARKERS"]) / fault.replace(":", "_")
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


class FaultyWorkerClient(WorkerClient):
    """A WorkerClient whose child is the faulty worker."""

    module = MODULE


def use_faulty_worker() -> None:
    """Make every WorkerClient in this process start the faulty worker."""
    WorkerClient.module = MODULE


if __name__ == "__main__":
    sys.exit(worker.main(runner_class=FaultyRunner))
