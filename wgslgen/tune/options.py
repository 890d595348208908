"""How to tune (TuneOptions) and what a session counts (Totals)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from wgslgen.run.device import is_cpu_adapter
from wgslgen.run.harness import DEFAULT_TIMEOUT_S
from wgslgen.tune.bench import DEFAULT_L2_BYTES, SPIN_UP_S
from wgslgen.tune.search import Budget

if TYPE_CHECKING:
    from wgslgen.tune.db import Record


@dataclass(frozen=True)
class TuneOptions:
    """How to tune: device, profile, timing method, search and finalist settings."""

    adapter: str | None = None
    profile: str = "adapter"
    warm: bool = False
    l2_bytes: int | None = None
    strategy: str = "auto"
    budget: Budget = field(default_factory=Budget)
    seed: int = 0  # of the search order
    input_seed: int = 0  # of the random inputs every variant and the reference get
    timeout: float = DEFAULT_TIMEOUT_S
    finalists: int = 3
    margin: float = 0.10
    rounds: int = 15
    retry_failed: bool = False
    # "always", "never", or "auto": one worker, on a GPU watched by a canary (tune/drift.py)
    fresh_worker: str = "auto"
    # The selection file's choices (tune/standing.py): a shape whose every record is reused
    # keeps them, with no head-to-head.
    standing: Mapping[tuple[str, str, str], Any] = field(default_factory=dict)

    def flush_bytes(self) -> int:
        """What bench writes to flush the cache before each sample (0 when warm)."""
        return 0 if self.warm else (2 * (self.l2_bytes or DEFAULT_L2_BYTES) + 3) // 4 * 4

    def reuses(self, r: Record) -> bool:
        """Whether a database record stands for a run with these options (else: measure)."""
        if r.status == "ok":
            # A record timed another way (warm vs cold, another flush size) is not this run's;
            # nor one timed on a GPU without today's spin-up (its clock may have been low).
            m = r.measurement
            on_cpu = is_cpu_adapter(r.device_info)
            return (
                m is not None
                and m.warm == self.warm
                and (m.warm or m.l2_flush_bytes == self.flush_bytes())
                and (on_cpu or m.spin_up_s >= SPIN_UP_S)
            )
        if r.status == "lost":  # a fleet task whose node died: never measured, so measure it
            return False
        return not (self.retry_failed and r.status in ("timeout", "crash", "wrong"))


@dataclass
class Totals:
    """Counters over a session: what was measured, reused, and the time the samples took."""

    measured: int = 0
    reused: int = 0
    failed: int = 0
    timed_ns: float = 0.0  # summed duration of every timed repetition of this run
    head_to_head_ns: float = 0.0
    # Wall time of the parent's waits, by phase: where the overhead goes.
    check_s: float = 0.0
    bench_s: float = 0.0
    head_to_head_s: float = 0.0
