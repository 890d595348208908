"""What a test run produces: per-case results with a Status, what was not run, the report."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np

from wgslgen.render.renderer import RenderedVariant
from wgslgen.run.reference import OutputCheck
from wgslgen.spec.kernel import format_shape

# Seen on Mesa 22.3: llvmpipe counts loop iterations per invocation with one counter shared
# by every loop of the shader and leaves all loops after 65,535 in total, silently.
LLVMPIPE_NOTE = (
    "note: llvmpipe/lavapipe (seen on Mesa 22.3) ends every loop of an invocation after "
    "65,535 iterations in total, silently; a failure at a large shape may be that, not the kernel"
)
# Seen through wgpu-py 0.32 (wgpu-native 29) on lavapipe (Mesa 22.3) and on an NVIDIA H100
# (benchmarks/results/h100_s41/zero_init): a workgroup starts with leftovers in var<workgroup>
# memory (an earlier workgroup's or pipeline's values; atomics too), though WGSL promises zeros.
WORKGROUP_ZEROING_NOTE = (
    "note: wgpu-native (wgpu-py 0.32; seen on lavapipe and an NVIDIA H100) does not zero "
    "var<workgroup> memory when a workgroup starts; a kernel that reads it before writing it "
    "(an atomic counter, say) fails here though WGSL zeroes it: zero it in the kernel"
)


class Status(StrEnum):
    """The outcome of one variant at one shape."""

    PASS = "pass"
    FAIL = "fail"  # ran, and an output differs from the reference
    ERROR = "error"  # did not run: see ``CaseResult.stage`` for where it stopped
    TIMEOUT = "timeout"
    CRASH = "crash"
    NOT_APPLICABLE = "n/a"  # the variant's preconditions exclude the shape


FAILING = (Status.FAIL, Status.ERROR, Status.TIMEOUT, Status.CRASH)


@dataclass(frozen=True)
class CaseResult:
    """One variant at one shape: pass, fail, error, timeout, crash or n/a."""

    kernel: str
    variant: str
    shape: dict[str, int]
    status: Status
    message: str = ""
    checks: tuple[OutputCheck, ...] = ()
    seconds: float = 0.0
    stage: str | None = None  # for ERROR: "reference" or a worker Stage ("pipeline", "run")

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
    # The variants that use var<workgroup> memory: only their failures can be wgpu-native's
    # unzeroed workgroup memory.
    workgroup_memory: set[str] = field(default_factory=set)

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
        unfit = [n for n in skipped if not n.reason.startswith("sizes unknown")]
        if unfit:
            text += f"; {len(unfit)} variant(s) not run (do not fit profile {self.profile})"
        if len(unfit) < len(skipped):  # an override with no value: no limit was judged
            text += f"; {len(skipped) - len(unfit)} variant(s) not run (sizes unknown)"
        return text

    def notes(self) -> list[str]:
        """Caveats about this adapter that bear on the failures found."""
        failed = [r for r in self.results if r.status == "fail"]
        # A loop can run 65,535 times only where the problem has that many elements.
        large = "llvmpipe" in self.adapter and any(
            math.prod(int(v) for v in r.shape.values()) >= 65_535 for r in failed
        )
        shared = any(r.variant in self.workgroup_memory for r in failed)
        return [LLVMPIPE_NOTE] * large + [WORKGROUP_ZEROING_NOTE] * shared

    def failure_table(self) -> str:
        """Plain text listing every failing case with its message (for assertion errors)."""
        lines = [f"adapter {self.adapter}, profile {self.profile}: {self.summary()}"]
        # Nothing failed yet nothing passed: every case n/a, and the reason is the point.
        shown = self.failures or [r for r in self.results if r.status == Status.NOT_APPLICABLE]
        for r in shown:
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
