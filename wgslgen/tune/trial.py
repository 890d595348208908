"""One variant's check and timing as a self-contained job, and what its outcome is called.

A :class:`Trial` is built on the driver from the harness's public pieces: the worker job
(rendered WGSL, buffer contents, passes, features, limits), what to read back and how to
decode it, the reference's expected outputs and the tolerance. It needs neither the
templates nor reference.py, so it can run on any machine with wgslgen and an adapter
(tune/fleet.py sends it to Ray nodes). :func:`run_trial` runs it on a worker: the check
first, timing only after a pass, with the same statuses and messages as the local path
(runner.TuneSession._measure, which goes through Harness.check and Harness.bench).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from wgslgen.errors import WgslgenError
from wgslgen.run.harness import CaseResult, Harness, Status
from wgslgen.run.protocol import DispatchJob, HeadToHeadJob, JobKind, Stage
from wgslgen.run.reference import compare
from wgslgen.run.worker_client import WorkerClient, WorkerFailure
from wgslgen.spec.interface import Encoding
from wgslgen.spec.kernel import PreconditionError, Variant, format_shape
from wgslgen.tune.bench import Measurement

ERROR_CHARS = 2000  # a crash's stderr tail is kept, but not without bound

# What a harness outcome is called in the results database (tune.db.STATUSES).
_RECORD_STATUS = {
    Status.FAIL: "wrong",
    Status.NOT_APPLICABLE: "skipped",
    Status.TIMEOUT: "timeout",
    Status.CRASH: "crash",
}


def record_status(result: CaseResult) -> str:
    """The database status of a harness check's result."""
    if result.status == Status.ERROR:
        return "compile-error" if result.stage == Stage.PIPELINE else "crash"
    return _RECORD_STATUS[result.status]


def precondition(variant: Variant, shape: Mapping[str, int]) -> str | None:
    """Why ``variant`` cannot run at ``shape`` (a failed precondition), or None."""
    try:
        variant.case(shape)
    except PreconditionError as e:
        return str(e).split(": ", 1)[-1]
    return None


def sample_time_ns(m: Measurement) -> float:
    """The device time a measurement's repetitions took (samples are per dispatch)."""
    return float(sum(m.samples_ns)) * m.dispatches_per_sample


@dataclass(frozen=True)
class OutputSpec:
    """One output to read back: where it binds, how to decode it, what must come back."""

    name: str
    where: tuple[int, int]  # (group, binding)
    encoding: Encoding
    count: int
    expected: np.ndarray


@dataclass(frozen=True)
class Trial:
    """Everything a worker needs to check and time one variant at one shape."""

    variant: str
    shape: str
    job: DispatchJob  # kind RUN; the timing job is the same with kind BENCH
    outputs: tuple[OutputSpec, ...]
    rtol: float
    atol: float
    bench_options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TrialResult:
    """A trial's outcome (status as in the database) and where and how long it ran."""

    status: str
    error: str | None
    measurement: Measurement | None
    device: str = ""  # DeviceKey.digest() of the adapter it ran on
    node: str = ""  # where it ran, for people
    worker_pid: int = 0  # the device worker process
    host_pid: int = 0  # the process that fed the worker (a Ray worker on a node)
    check_s: float = 0.0
    bench_s: float = 0.0


def build_trial(harness: Harness, rendered: Any, shape: Mapping[str, int], **bench: Any) -> Trial:
    """The trial of ``rendered`` at ``shape``; the reference runs here, on the driver.

    Raises WgslgenError when the user's reference fails (nothing to record: the variant is
    not at fault).
    """
    data = harness.test_data(rendered.variant.case(shape))
    tol = rendered.variant.tolerance()
    outputs = tuple(
        OutputSpec(b.name, (b.group, b.binding), b.encoding, data.case.counts[b.name],
                   data.expected[b.name])
        for b in rendered.variant.interface.bindings
        if b.is_output
    )  # fmt: skip
    return Trial(
        rendered.name, format_shape(shape), harness.job(rendered, data), outputs,
        tol.rtol, tol.atol, dict(bench),
    )  # fmt: skip


def head_to_head_job(harness: Harness, finalists: Sequence[Any], shape: Mapping[str, int],
                     **options: Any) -> HeadToHeadJob:  # fmt: skip
    """The job Harness.head_to_head sends, built here so that it can travel."""
    jobs = {
        r.name: harness.job(r, harness.test_data(r.variant.case(shape)), JobKind.BENCH)
        for r in finalists
    }
    return HeadToHeadJob(f"head-to-head @ {format_shape(shape)}", jobs, options)


def run_trial(client: WorkerClient, trial: Trial, timeout: float) -> TrialResult:
    """Check ``trial`` against its expected outputs, then time it if it passed."""
    t0 = time.perf_counter()
    status, error = _check(client, trial, timeout)
    t1 = time.perf_counter()
    m = None
    if status == "ok":
        job = dataclasses.replace(trial.job, kind=JobKind.BENCH, options=trial.bench_options)
        try:
            reply = client.call(job, timeout)
            if not reply.ok or reply.measurement is None:
                why = f"{trial.variant}: {reply.stage} failed: {reply.error}"
                status, error = "crash", f"while timing: {why}"
            else:
                m = Measurement.from_dict(reply.measurement)
        except WorkerFailure as e:
            status, error = e.kind, f"while timing: {e}"
    return TrialResult(
        status, error, m, worker_pid=client.info.pid,
        check_s=t1 - t0, bench_s=time.perf_counter() - t1,
    )  # fmt: skip


def _check(client: WorkerClient, trial: Trial, timeout: float) -> tuple[str, str | None]:
    """(status, error) of the correctness check, with Harness.check's messages."""
    try:
        reply = client.call(trial.job, timeout)
    except WorkerFailure as exc:
        return exc.kind, str(exc)
    if not reply.ok:
        status = "compile-error" if reply.stage == Stage.PIPELINE else "crash"
        return status, f"{reply.stage} failed: {reply.error}"
    bad = []
    for out in trial.outputs:
        got = out.encoding.decode(reply.outputs[out.where], out.count)
        check = compare(out.name, got.reshape(out.expected.shape), out.expected,
                        trial.rtol, trial.atol)  # fmt: skip
        if not check.ok:
            bad.append(check.summary())
    return ("wrong", "\n".join(bad)) if bad else ("ok", None)


def head_to_head_results(reply: Any) -> dict[str, Measurement]:
    """Name → Measurement from a head-to-head reply; WgslgenError when the job failed."""
    if not reply.ok:
        raise WgslgenError(f"{reply.stage}: {reply.error}")
    return {n: Measurement.from_dict(d) for n, d in reply.results.items()}
