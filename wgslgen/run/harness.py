"""Inputs → device → outputs → comparison with the numpy reference, for every variant and shape.

The parent process never touches wgpu: a :class:`~wgslgen.worker.WorkerClient` owns the
device, and each job runs under a deadline, so a variant that hangs or crashes the device is
recorded as ``timeout`` or ``crash`` and the run goes on with a fresh worker.
"""

from __future__ import annotations

import dataclasses
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from wgslgen.errors import WgslgenError
from wgslgen.render.renderer import RenderedVariant, render
from wgslgen.run.protocol import (
    BufferBinding,
    DispatchJob,
    HeadToHeadJob,
    JobKind,
    PassDispatch,
    Reply,
)
from wgslgen.run.reference import TestData, compare, load_reference, make_case
from wgslgen.run.report import CaseResult, NotRun, Report, RunPlan, Status
from wgslgen.run.worker_client import WorkerClient, WorkerFailure
from wgslgen.spec.kernel import (
    Case,
    KernelSpec,
    PreconditionError,
    Variant,
    format_shape,
    shape_mismatch,
)

DEFAULT_TIMEOUT_S = 60.0
_BUFFER_TYPE = {"read": "read-only-storage", "read_write": "storage"}


class ReferenceFailure(WgslgenError):
    """The kernel's reference.py failed (import, make_inputs or reference): no variant of the
    kernel can be judged at that shape, and none is at fault."""


class Harness:
    """Runs rendered variants on one adapter, in a worker process, against their reference."""

    def __init__(
        self,
        adapter: str | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        seed: int = 0,
        worker: WorkerClient | None = None,
    ) -> None:
        self.worker = worker or WorkerClient(adapter)
        self.timeout = timeout
        self.seed = seed
        self.profile_name = "adapter"
        self.limits: dict[str, int] | None = None  # requested on devices; None: the adapter's
        self._cases: OrderedDict[tuple[Any, ...], TestData] = OrderedDict()

    def __enter__(self) -> Harness:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the worker."""
        self.worker.close()

    @property
    def adapter_info(self) -> dict[str, Any]:
        """What the worker reports about its adapter: label, key, limits, features."""
        return dataclasses.asdict(self.worker.start())

    def profile(self, name: str = "adapter") -> Any:
        """The limit profile ``name``; "adapter" is what this harness's adapter reports."""
        from wgslgen.check.limits import LimitProfile, load_profile

        if name == "adapter":
            info = self.worker.start()
            return LimitProfile("adapter", dict(info.limits), frozenset(info.features))
        return load_profile(name)

    def misfits(self, rendered: RenderedVariant, profile: Any) -> list[str]:
        """Why ``rendered`` does not fit ``profile`` or this adapter; empty when it does."""
        from wgslgen.check.limits import check_passes

        reasons = check_passes(rendered.facts, profile, rendered.features)
        have = set(self.worker.start().features)
        reasons += [f"adapter lacks feature {f}" for f in sorted(rendered.features - have)]
        return reasons

    def test_data(self, case: Case) -> TestData:
        """Inputs and expected outputs of ``case``.

        They depend on the encodings and counts, not on the variant, so the reference runs
        once per shape and encoding, not once per variant. Importing reference.py, like its
        functions, has the harness's timeout; a failure raises ReferenceFailure.
        """
        spec = case.variant.spec
        encodings = tuple(b.encoding.name for b in case.variant.interface.bindings)
        key = (spec.name, str(spec.reference_path), tuple(sorted(case.sizes.items())), self.seed,
               encodings, tuple(case.counts.values()), case.uniform)  # fmt: skip
        if key in self._cases:
            self._cases.move_to_end(key)
            return dataclasses.replace(self._cases[key], case=case)
        try:
            data = make_case(case, load_reference(spec, self.timeout), self.seed, self.timeout)
        except WgslgenError as exc:
            raise ReferenceFailure(str(exc)) from None
        self._cases[key] = data
        while len(self._cases) > 64:
            self._cases.popitem(last=False)
        return data

    def job(
        self, rendered: RenderedVariant, data: TestData, kind: JobKind = JobKind.RUN, **options: Any
    ) -> DispatchJob:
        """The worker job that dispatches ``rendered`` on the case's buffers."""
        variant, case = rendered.variant, data.case
        bindings = []
        if variant.spec.uniform is not None:
            u = variant.spec.uniform
            bindings.append(BufferBinding(u.group, u.binding, "uniform", case.uniform or b""))
        for b in variant.interface.bindings:
            kind_of = _BUFFER_TYPE[b.access]
            bindings.append(
                BufferBinding(b.group, b.binding, kind_of, data.data[b.name], b.is_output, b.name)
            )
        # Timestamps on every device: bench jobs need them (else the wall clock), and one
        # device per feature set lets checking and timing share one pipeline.
        timestamps = {"timestamp-query"} & set(self.worker.start().features)
        return DispatchJob(
            kind=kind,
            label=f"{rendered.name} @ {case.shape_text}",
            source=rendered.source,
            sha256=rendered.sha256,
            features=tuple(sorted(rendered.features | timestamps)),
            limits=dict(self.limits or self.worker.start().limits),
            bindings=tuple(bindings),
            passes=tuple(PassDispatch(entry, dispatch) for entry, dispatch in case.passes),
            options=options,
            constants=rendered.constants,
        )

    def run(self, rendered: RenderedVariant, shape: Mapping[str, int]) -> dict[str, np.ndarray]:
        """Outputs of ``rendered`` at ``shape``, in the reference's shapes; refuses bad shapes."""
        data = self.test_data(rendered.variant.case(shape))
        reply = self.worker.call(self.job(rendered, data), self.timeout)
        if not reply.ok:
            raise WgslgenError(f"{rendered.name}: {reply.stage} failed: {reply.error}")
        return self._outputs(rendered, data, reply)

    def bench(self, rendered: RenderedVariant, shape: Mapping[str, int], **options: Any) -> Any:
        """Time ``rendered`` at ``shape`` with bench.measure in the worker (options passed on)."""
        from wgslgen.tune.bench import Measurement

        data = self.test_data(rendered.variant.case(shape))
        reply = self.worker.call(self.job(rendered, data, JobKind.BENCH, **options), self.timeout)
        if not reply.ok or reply.measurement is None:
            raise WgslgenError(f"{rendered.name}: {reply.stage} failed: {reply.error}")
        return Measurement.from_dict(reply.measurement)

    def head_to_head(
        self, finalists: Sequence[RenderedVariant], shape: Mapping[str, int], **options: Any
    ) -> dict[str, Any]:
        """Finalists timed alternately on one device (bench.head_to_head): name → Measurement.

        Raises WorkerFailure when the worker hangs or dies, WgslgenError when the job fails.
        """
        from wgslgen.tune.bench import Measurement

        jobs = {
            r.name: self.job(r, self.test_data(r.variant.case(shape)), JobKind.BENCH)
            for r in finalists
        }
        job = HeadToHeadJob(f"head-to-head @ {format_shape(shape)}", jobs, options)
        reply = self.worker.call(job, self.timeout * len(jobs))
        if not reply.ok:
            raise WgslgenError(f"{reply.stage}: {reply.error}")
        return {n: Measurement.from_dict(d) for n, d in reply.results.items()}

    def _outputs(self, rendered: RenderedVariant, data: TestData, reply: Reply):
        out = {}
        for b in rendered.variant.interface.bindings:
            if b.is_output:
                raw = reply.outputs[(b.group, b.binding)]
                flat = b.encoding.decode(raw, data.case.counts[b.name])
                out[b.name] = flat.reshape(data.expected[b.name].shape)
        return out

    def check(self, rendered: RenderedVariant, shape: Mapping[str, int]) -> CaseResult:
        """Run and compare one case; never raises for the kernel's faults, it reports them."""
        start = time.monotonic()

        def result(status: Status, message: str = "", checks=(), stage: str | None = None):
            seconds = round(time.monotonic() - start, 3)
            return CaseResult(
                rendered.kernel, rendered.name, dict(shape), status, message, tuple(checks),
                seconds, stage,
            )  # fmt: skip

        try:  # a malformed shape (ShapeError) is the caller's error and propagates
            case = rendered.variant.case(shape)
        except PreconditionError as exc:
            return result(Status.NOT_APPLICABLE, str(exc))
        try:
            data = self.test_data(case)
        except WgslgenError as exc:
            return result(Status.ERROR, f"reference: {exc}", stage="reference")
        try:
            reply = self.worker.call(self.job(rendered, data), self.timeout)
        except WorkerFailure as exc:
            return result(Status(exc.kind), str(exc))
        if not reply.ok:
            return result(Status.ERROR, f"{reply.stage} failed: {reply.error}", stage=reply.stage)
        tol = rendered.variant.tolerance()
        got = self._outputs(rendered, data, reply)
        checks = [compare(n, got[n], data.expected[n], tol.rtol, tol.atol) for n in got]
        bad = [c.summary() for c in checks if not c.ok]
        return result(Status.FAIL if bad else Status.PASS, "\n".join(bad), checks)

    def plan(
        self,
        kernels: Iterable[KernelSpec],
        shapes: Sequence[Mapping[str, int]] | None = None,
        profile: str = "adapter",
        select: Callable[[KernelSpec], Sequence[Variant]] | None = None,
    ) -> RunPlan:
        """The cases to run: variants that fit ``profile``, over the test (or given) shapes."""
        prof = self.profile(profile)
        self.profile_name, self.limits = prof.name, dict(prof.limits)
        plan = RunPlan()
        for spec in kernels:
            if spec.problem is None:
                why = (
                    "a plain .wgsl file has no interface; borrow one with --reference KERNEL"
                    if spec.plain
                    else "kernel.toml declares no [problem]"
                )
                plan.not_run.append(NotRun(spec.name, None, why))
                continue
            if spec.reference_path is None:
                plan.not_run.append(NotRun(spec.name, None, "no reference.py"))
                continue
            if shapes:  # given shapes apply to the kernels whose sizes they set
                todo = [dict(s) for s in shapes if set(s) == set(spec.problem.sizes)]
                # each shape's own mismatch ("must set exactly ...; missing eps")
                why = "; ".join(
                    f"shape {format_shape(s)} {shape_mismatch(spec.problem.sizes, s)}"
                    for s in shapes
                )
            else:
                todo, why = [dict(s) for s in spec.test_shapes], "no [test] shapes"
            if not todo:
                plan.not_run.append(NotRun(spec.name, None, why))
                continue
            for variant in select(spec) if select else spec.variants:
                rendered = render(variant, "naga")  # wgpu-native compiles with naga
                reasons = self.misfits(rendered, prof)
                if reasons:
                    plan.not_run.append(NotRun(spec.name, variant.name, "; ".join(reasons)))
                    continue
                plan.cases.extend((rendered, s) for s in todo)
        return plan

    def execute(self, plan: RunPlan, on_case: Callable[[CaseResult], None] | None = None) -> Report:
        """Run every case of ``plan`` and collect the report."""
        report = Report(self.adapter_info["label"], self.profile_name, not_run=list(plan.not_run))
        for rendered, shape in plan.cases:
            if any(f.workgroup_bytes for f in rendered.facts.values()):
                report.workgroup_memory.add(rendered.name)
            res = self.check(rendered, shape)
            report.results.append(res)
            if on_case:
                on_case(res)
        return report


def check_kernels(
    kernels: Iterable[KernelSpec],
    *,
    shapes: Sequence[Mapping[str, int]] | None = None,
    profile: str = "adapter",
    adapter: str | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    seed: int = 0,
    select: Callable[[KernelSpec], Sequence[Variant]] | None = None,
    on_case: Callable[[CaseResult], None] | None = None,
) -> Report:
    """Test every variant of ``kernels`` that fits ``profile`` on one adapter."""
    with Harness(adapter, timeout, seed) as harness:
        return harness.execute(harness.plan(kernels, shapes, profile, select), on_case)
