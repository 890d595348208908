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

from dataclasses import dataclass, field

from wgslgen.tune.bench import Measurement, format_ns
from wgslgen.tune.selection import Candidate

# A false alarm costs only time (the old fresh-worker-per-variant runs); the drift it guards
# against was 2-4.6x. Cold medians of one variant in two workers agreed within 11 % on an H100.
TOLERANCE = 0.15
CHECK_EVERY = 16


@dataclass
class DriftWatch:
    """The canary of the shape being tuned and the variants whose timings it vouches for."""

    canary: Candidate | None = None
    first: Measurement | None = None  # the canary's first timing
    suspects: list[Candidate] = field(default_factory=list)
    drifted: str | None = None  # why kept workers are no longer trusted (the whole session)

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
