"""What runs on a Ray node for tune/fleet.py: the probe and the trial/head-to-head task.

Each task starts a fresh device worker (run.worker_client) on its node, as the driver's
settings say (adapter, worker module, WGSLGEN_ variables), and runs the shipped trial or
head-to-head job there. On a CPU adapter in "auto" mode the worker is kept for the next task
in this Ray worker process, as a local tune keeps it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import socket
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from wgslgen.errors import WgslgenError
from wgslgen.run.device import DeviceKey, is_cpu_adapter
from wgslgen.run.protocol import HeadToHeadJob, Hello
from wgslgen.run.worker_client import WorkerClient, WorkerFailure
from wgslgen.tune.bench import Measurement
from wgslgen.tune.options import TuneOptions
from wgslgen.tune.trial import Trial, TrialResult, head_to_head_results, run_trial

# The driver's own settings travel to the nodes' device workers (e.g. WGSLGEN_NAGA).
_ENV_PREFIX = "WGSLGEN_"


@dataclass(frozen=True)
class WorkerSetup:
    """How a node starts its device worker: the driver's adapter choice and worker module."""

    adapter: str | None
    timeout: float
    fresh: str = "auto"  # TuneOptions.fresh_worker
    module: str = WorkerClient.module
    env: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, options: TuneOptions) -> WorkerSetup:
        """The setup a tune with ``options`` uses, as this process would start its worker."""
        env = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith(_ENV_PREFIX)))
        return cls(options.adapter, options.timeout, options.fresh_worker, WorkerClient.module, env)


@dataclass(frozen=True)
class HeadToHeadResult:
    """A head-to-head's measurements by name, or why it failed."""

    results: dict[str, Measurement]
    error: str | None = None


_CLIENTS: dict[tuple[Any, ...], WorkerClient] = {}  # kept device workers (CPU adapters)


@contextlib.contextmanager
def _environment(env: Sequence[tuple[str, str]]) -> Iterator[None]:
    """The driver's WGSLGEN_ settings, for the device worker started in this block."""
    old = {k: os.environ.get(k) for k, _ in env}
    os.environ.update(dict(env))
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _client(setup: WorkerSetup) -> tuple[WorkerClient, bool]:
    """(client, whether to close it after the task): a fresh worker per task, except on a CPU
    adapter in "auto" mode (as locally: a new worker costs more than the drift it avoids)."""
    key = (setup.adapter, setup.module, setup.env)
    client = _CLIENTS.get(key) or WorkerClient(setup.adapter)
    client.module = setup.module
    hello = client.start()
    keep = setup.fresh == "never" or (setup.fresh == "auto" and is_cpu_adapter(hello.key))
    if keep:
        _CLIENTS[key] = client
    else:
        _CLIENTS.pop(key, None)
    return client, not keep


def probe_node(setup: WorkerSetup) -> tuple[Hello | None, str, str]:
    """(what the node's device worker reports, host name, error): a Ray task."""
    host = socket.gethostname()
    try:
        with _environment(setup.env):
            client, close = _client(setup)
        if close:
            client.close()
        return client.info, host, ""
    except WgslgenError as e:
        return None, host, str(e).splitlines()[0]


def run_on_node(
    setup: WorkerSetup, digest: str, host: str, work: Trial | HeadToHeadJob
) -> TrialResult | HeadToHeadResult:
    """Run one trial or head-to-head on this node's device worker: a Ray task."""
    with _environment(setup.env):
        client, close = _client(setup)
    try:
        found = DeviceKey(**client.info.key).digest()
        if found != digest:  # never expected: the node was probed; say so rather than mix
            raise WgslgenError(f"{host}'s adapter is {client.info.label}, not device {digest}")
        if isinstance(work, HeadToHeadJob):
            try:
                reply = client.call(work, setup.timeout * len(work.finalists))
                return HeadToHeadResult(head_to_head_results(reply))
            except WorkerFailure as e:
                return HeadToHeadResult({}, f"{e.kind}: {str(e).splitlines()[0]}")
            except WgslgenError as e:
                return HeadToHeadResult({}, str(e))
        result = run_trial(client, work, setup.timeout)
        return _with_place(result, host)
    finally:
        if close:
            client.close()


def _with_place(result: TrialResult, host: str) -> TrialResult:
    return dataclasses.replace(result, node=host, host_pid=os.getpid())
