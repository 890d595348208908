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
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from wgslgen.errors import WgslgenError
from wgslgen.render.renderer import RenderedVariant, render
from wgslgen.run.reference import OutputCheck, TestData, compare, load_reference, make_case
from wgslgen.run.worker import WorkerClient, WorkerFailure
from wgslgen.spec.kernel import Case, KernelSpec, PreconditionError, Variant, format_shape

DEFAULT_TIMEOUT_S = 60.0
# Seen on Mesa 22.3: llvmpipe counts loop iterations per invocation with one counter shared
# by every loop of the shader and leaves all loops after 65,535 in total, silently.
LLVMPIPE_NOTE = (
    "note: llvmpipe/lavapipe (seen on Mesa 22.3) ends every loop of an invocation after "
    "65,535 iterations in total, silently; a failure at a large shape may be that, not the kernel"
)
FAILING = ("fail", "error", "timeout", "crash")
_BUFFER_TYPE = {"read": "read-only-storage", "read_write": "storage"}


@dataclass(frozen=True)
class CaseResult:
    """One variant at one shape: pass, fail, error, timeout, crash or n/a."""

    kernel: str
    variant: str
    shape: dict[str, int]
    status: str
    message: str = ""
    checks: tuple[OutputCheck, ...] = ()
    seconds: float = 0.0

    @property
    def failed(self) -> bool:
        """Whether this case counts against the run."""
        return self.status in FAILING

    @property
    def max_abs(self) -> float | None:
        """The largest |got−want| over the outputs (None when nothing was compared)."""
        return max((c.max_abs for c in self.checks), default=None)

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON-able data."""
        d = asdict(self)
        d["shape_text"] = format_shape(self.shape)
        d["max_abs"] = self.max_abs
        return d


@dataclass(frozen=True)
class NotRun:
    """A variant (or a whole kernel, when ``variant`` is None) that was not run, and why."""

    kernel: str
    variant: str | None
    reason: str


@dataclass
class Report:
    """Everything a test run found, by variant and shape."""

    adapter: str
    profile: str
    results: list[CaseResult] = field(default_factory=list)
    not_run: list[NotRun] = field(default_factory=list)

    @property
    def failures(self) -> list[CaseResult]:
        """The cases that failed, errored, timed out or crashed."""
        return [r for r in self.results if r.failed]

    @property
    def ok(self) -> bool:
        """No failure, and at least one case passed (a run that tested nothing is not green)."""
        return not self.failures and any(r.status == "pass" for r in self.results)

    def counts(self) -> dict[str, int]:
        """Number of cases per status."""
        out: dict[str, int] = {}
        for r in self.results:
            out[r.status] = out.get(r.status, 0) + 1
        return out

    def summary(self) -> str:
        """One line: counts per status and how many variants were not run."""
        parts = [f"{n} {s}" for s, n in sorted(self.counts().items())] or ["nothing run"]
        variants = len({(r.kernel, r.variant) for r in self.results})
        text = f"{variants} variant(s), {len(self.results)} case(s): {', '.join(parts)}"
        skipped = [n for n in self.not_run if n.variant is not None]
        if skipped:
            text += f"; {len(skipped)} variant(s) not run (do not fit profile {self.profile})"
        return text

    def notes(self) -> list[str]:
        """Caveats about this adapter that bear on the failures found."""
        if "llvmpipe" in self.adapter and any(r.status == "fail" for r in self.results):
            return [LLVMPIPE_NOTE]
        return []

    def failure_table(self) -> str:
        """Plain text listing every failing case with its message (for assertion errors)."""
        lines = [f"adapter {self.adapter}, profile {self.profile}: {self.summary()}"]
        for r in self.failures:
            lines.append(f"  {r.status.upper():8} {r.variant} @ {format_shape(r.shape)}")
            lines.extend(f"           {m}" for m in r.message.splitlines())
        if not self.results:
            lines.extend(f"  not run: {n.variant or n.kernel}: {n.reason}" for n in self.not_run)
        return "\n".join(lines + self.notes())

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-able data."""
        return _jsonable(
            {
                "adapter": self.adapter,
                "profile": self.profile,
                "ok": self.ok,
                "counts": self.counts(),
                "notes": self.notes(),
                "results": [r.to_dict() for r in self.results],
                "not_run": [asdict(n) for n in self.not_run],
            }
        )


def _jsonable(obj: Any) -> Any:
    """``obj`` with NaN and ±Inf as strings: strict JSON readers reject the bare tokens."""
    if isinstance(obj, float) and not np.isfinite(obj):
        return str(obj)
    if isinstance(obj, dict):
        return {k: _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_jsonable(v) for v in obj]
    return obj


@dataclass
class RunPlan:
    """What a run will do: (rendering, shape) cases in order, and what it leaves out."""

    cases: list[tuple[RenderedVariant, dict[str, int]]] = field(default_factory=list)
    not_run: list[NotRun] = field(default_factory=list)


class Harness:
    """Runs rendered variants on one adapter, in a worker process, against their reference."""

    def __init__(
        self, adapter: str | None = None, timeout: float = DEFAULT_TIMEOUT_S, seed: int = 0
    ) -> None:
        self.worker = WorkerClient(adapter)
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
        return self.worker.start()

    def profile(self, name: str = "adapter") -> Any:
        """The limit profile ``name``; "adapter" is what this harness's adapter reports."""
        from wgslgen.check.limits import LimitProfile, load_profile

        if name == "adapter":
            info = self.adapter_info
            return LimitProfile("adapter", dict(info["limits"]), frozenset(info["features"]))
        return load_profile(name)

    def misfits(self, rendered: RenderedVariant, profile: Any) -> list[str]:
        """Why ``rendered`` does not fit ``profile`` or this adapter; empty when it does."""
        from wgslgen.check.limits import check_passes

        reasons = check_passes(rendered.facts, profile, rendered.features)
        have = set(self.adapter_info["features"])
        reasons += [f"adapter lacks feature {f}" for f in sorted(rendered.features - have)]
        return reasons

    def test_data(self, case: Case) -> TestData:
        """Inputs and expected outputs of ``case``.

        They depend on the encodings and counts, not on the variant, so the reference runs
        once per shape and encoding, not once per variant.
        """
        spec = case.variant.spec
        encodings = tuple(b.encoding.name for b in case.variant.interface.bindings)
        key = (spec.name, str(spec.reference_path), tuple(sorted(case.sizes.items())), self.seed,
               encodings, tuple(case.counts.values()), case.uniform)  # fmt: skip
        if key in self._cases:
            self._cases.move_to_end(key)
            return dataclasses.replace(self._cases[key], case=case)
        data = make_case(case, load_reference(spec), self.seed)
        self._cases[key] = data
        while len(self._cases) > 64:
            self._cases.popitem(last=False)
        return data

    @property
    def _timestamp_feature(self) -> frozenset[str]:
        return frozenset({"timestamp-query"} & set(self.adapter_info["features"]))

    def job(self, rendered: RenderedVariant, data: TestData, kind: str = "run") -> dict[str, Any]:
        """The worker job that dispatches ``rendered`` on the case's buffers."""
        variant, case = rendered.variant, data.case
        bindings = []
        if variant.spec.uniform is not None:
            u = variant.spec.uniform
            bindings.append(
                {"group": u.group, "binding": u.binding, "type": "uniform", "data": case.uniform}
            )
        for b in variant.interface.bindings:
            bindings.append(
                {
                    "group": b.group,
                    "binding": b.binding,
                    "type": _BUFFER_TYPE[b.access],
                    "data": data.data[b.name],
                    "read_back": b.is_output,
                    "name": b.name,
                }
            )
        return {
            "kind": kind,
            "label": f"{rendered.name} @ {case.shape_text}",
            "source": rendered.source,
            "sha256": rendered.sha256,
            # Timestamps on every device: bench jobs need them (else the wall clock), and one
            # device per feature set lets checking and timing share one pipeline.
            "features": sorted(rendered.features | self._timestamp_feature),
            "limits": dict(self.limits or self.adapter_info["limits"]),
            "bindings": bindings,
            "passes": [
                {"entry_point": entry, "dispatch": list(dispatch)}
                for entry, dispatch in case.passes
            ],
        }

    def run(self, rendered: RenderedVariant, shape: Mapping[str, int]) -> dict[str, np.ndarray]:
        """Outputs of ``rendered`` at ``shape``, in the reference's shapes; refuses bad shapes."""
        data = self.test_data(rendered.variant.case(shape))
        reply = self.worker.call(self.job(rendered, data), self.timeout)
        if not reply["ok"]:
            raise WgslgenError(f"{rendered.name}: {reply['stage']} failed: {reply['error']}")
        return self._outputs(rendered, data, reply)

    def bench(self, rendered: RenderedVariant, shape: Mapping[str, int], **options: Any) -> Any:
        """Time ``rendered`` at ``shape`` with bench.measure in the worker (options passed on)."""
        from wgslgen.tune.bench import Measurement

        data = self.test_data(rendered.variant.case(shape))
        job = {**self.job(rendered, data, "bench"), "options": options}
        reply = self.worker.call(job, self.timeout)
        if not reply["ok"]:
            raise WgslgenError(f"{rendered.name}: {reply['stage']} failed: {reply['error']}")
        return Measurement.from_dict(reply["measurement"])

    def _outputs(self, rendered: RenderedVariant, data: TestData, reply: dict[str, Any]):
        out = {}
        for b in rendered.variant.interface.bindings:
            if b.is_output:
                raw = reply["outputs"][(b.group, b.binding)]
                flat = b.encoding.decode(raw, data.case.counts[b.name])
                out[b.name] = flat.reshape(data.expected[b.name].shape)
        return out

    def check(self, rendered: RenderedVariant, shape: Mapping[str, int]) -> CaseResult:
        """Run and compare one case; never raises for the kernel's faults, it reports them."""
        start = time.monotonic()

        def result(status: str, message: str = "", checks: Sequence[OutputCheck] = ()):
            return CaseResult(
                rendered.kernel,
                rendered.name,
                dict(shape),
                status,
                message,
                tuple(checks),
                round(time.monotonic() - start, 3),
            )

        _check_sizes(rendered.variant.spec, shape)  # a malformed shape is the caller's error
        try:
            case = rendered.variant.case(shape)
        except PreconditionError as exc:
            return result("n/a", str(exc))
        try:
            data = self.test_data(case)
        except WgslgenError as exc:
            return result("error", f"reference: {exc}")
        try:
            reply = self.worker.call(self.job(rendered, data), self.timeout)
        except WorkerFailure as exc:
            return result(exc.kind, str(exc))
        if not reply["ok"]:
            return result("error", f"{reply['stage']} failed: {reply['error']}")
        tol = rendered.variant.tolerance()
        got = self._outputs(rendered, data, reply)
        checks = [compare(n, got[n], data.expected[n], tol.rtol, tol.atol) for n in got]
        bad = [c.summary() for c in checks if not c.ok]
        return result("fail" if bad else "pass", "\n".join(bad), checks)

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
                why = f"no --shape sets exactly its sizes {', '.join(spec.problem.sizes)}"
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
            res = self.check(rendered, shape)
            report.results.append(res)
            if on_case:
                on_case(res)
        return report


def _check_sizes(spec: KernelSpec, shape: Mapping[str, int]) -> None:
    assert spec.problem is not None
    sizes = set(spec.problem.sizes)
    if set(shape) != sizes:
        raise WgslgenError(
            f"kernel {spec.name}: shape {format_shape(shape)} must set exactly "
            f"{', '.join(spec.problem.sizes)}"
        )


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
