"""Whether a device worker kept across variants still times as it did: a canary timed again.

On an NVIDIA H200 a worker that had served a few dozen variants timed the same kernel up to
4.6x slower (benchmarks/README.md, sessions 8-9); the cause was the SM clock the driver lowers
after a few seconds idle, which the 0.5 s spin-up before every measurement now undoes. This
watch lets `tune --fresh-worker auto` keep one worker on a GPU anyway: the first variant
timed at a shape is the canary, timed again every CHECK_EVERY variants and before the shape
is decided; when it reads further from its first timing than TOLERANCE of it plus twice the
larger IQR of the two (so a noisy adapter's spread is not taken for drift), it and the
variants timed since its last good reading are timed again, each in a new worker, as every
later one is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from wgslgen.errors import WgslgenError
from wgslgen.run.worker_client import WorkerFailure
from wgslgen.tune.bench import Measurement, format_ns
from wgslgen.tune.selection import Candidate

# A false alarm costs only time (the old fresh-worker-per-variant runs); the drift it guards
# against was 2-4.6x. Cold medians of one variant in two workers agreed within 11 % on an H100.
TOLERANCE = 0.15
CHECK_EVERY = 16


@dataclass
class DriftWatch:
    """The canary of the shape being tuned and the variants whose timings it vouches for."""

    mode: str = "auto"  # TuneOptions.fresh_worker
    canary: Candidate | None = None
    first: Measurement | None = None  # the canary's first timing
    suspects: list[Candidate] = field(default_factory=list)
    drifted: str | None = None  # why kept workers are no longer trusted (the whole session)

    def keeps_worker(self) -> bool:
        """Whether the next variant may run in the worker the last one ran in. (A new device
        in one process cannot be made more than ~60 times on an H200, "Parent device is
        lost", so a new worker is a new process: ~1.2 s on a GPU.)"""
        return self.mode == "never" or (self.mode == "auto" and not self.drifted)

    def watching(self, on_cpu: bool) -> bool:
        """Whether timings need the canary: "auto" on a GPU until a drift is found."""
        return self.mode == "auto" and not on_cpu and not self.drifted

    def start_shape(self) -> None:
        """Forget the last shape's canary (a drift found stays found)."""
        self.canary, self.first, self.suspects = None, None, []

    def timed(self, candidate: Candidate, m: Measurement) -> bool:
        """Note a variant timed in the kept worker; True when the canary is due again."""
        if self.canary is None:
            self.canary, self.first = candidate, m
            return False
        self.suspects.append(candidate)
        return len(self.suspects) >= CHECK_EVERY

    def recheck(self, time_it: Callable[[Candidate], Measurement]) -> bool:
        """Time the canary again with ``time_it`` (failing to counts as drift) and judge."""
        assert self.canary is not None
        try:
            return self.judge(time_it(self.canary))
        except (WorkerFailure, WgslgenError) as e:
            return self.judge(None, str(e).splitlines()[0])

    def take_redo(self) -> list[Candidate]:
        """After a drift: the canary (its first reading may be the odd one) and the variants
        it no longer vouches for, to be timed again; nothing otherwise."""
        if not (self.drifted and self.suspects and self.canary):
            return []
        redo, self.suspects = [self.canary, *self.suspects], []
        return redo

    def judge(self, again: Measurement | None, why_not: str = "") -> bool:
        """Whether the canary's new timing (None: it could not be timed, ``why_not``) says
        the worker drifted; a good timing vouches for the variants timed before it."""
        assert self.canary is not None and self.first is not None
        was = self.first
        if again is not None:
            band = TOLERANCE * was.median_ns + 2 * max(was.iqr_ns, again.iqr_ns)
            if abs(again.median_ns - was.median_ns) <= band:
                self.suspects.clear()
                return False
        first = f"{self.canary.name} took {format_ns(was.median_ns)}"
        later = f"could not be timed ({why_not})" if again is None else format_ns(again.median_ns)
        self.drifted = (
            f"the kept device worker's timings drifted ({first}, then {later} after "
            f"{len(self.suspects)} more variant(s), beyond ±{TOLERANCE:.0%} and the noise): "
            "they were timed again and every later variant is timed in a new worker "
            "(as --fresh-worker always)"
        )
        return True
