"""What tuning one shape found and what it decides: candidates, outcomes, the leaderboard,
the finalists, the winner, the portable default, the speedup and the selection entry
(selection_file.py writes the file).

Correct before fast: only variants whose record says "ok" (they matched the reference, then
were timed) ever reach the decision, so a wrong-but-fast variant cannot be selected.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from wgslgen.check.wgsl import WgslFacts
from wgslgen.render.renderer import RenderedVariant
from wgslgen.spec.kernel import KernelSpec, format_shape
from wgslgen.tune.bench import Measurement, format_ns, pick_winner
from wgslgen.tune.db import Choice, Record, SelectionEntry
from wgslgen.tune.keys import (  # noqa: F401  (re-exported: callers import them from here)
    JUDGE_VERSION,
    current_keys,
    judge_sha256,
    result_sha256,
)
from wgslgen.tune.search import Budget

TieKey = Callable[[str], tuple]


@dataclass(frozen=True)
class Candidate:
    """A variant as it runs here (the naga rendering) and what is known of it statically."""

    rendered: RenderedVariant
    facts: WgslFacts
    misfits: tuple[str, ...]  # why it does not fit the profile (empty: it fits)
    portable: bool  # fits the `webgpu` profile and needs no optional feature

    @property
    def name(self) -> str:
        """The variant name."""
        return self.rendered.name

    @property
    def sha256(self) -> str:
        """The results key (result_sha256)."""
        return result_sha256(self.rendered)

    @cached_property
    def judge(self) -> str:
        """How this variant is judged (judge_sha256), part of its results key."""
        return judge_sha256(self.rendered.variant)

    @cached_property
    def profiles_fitted(self) -> int:
        """How many built-in limit profiles this variant fits."""
        from wgslgen.check.limits import BUILTIN_PROFILES, check_passes

        r = self.rendered
        return sum(not check_passes(r.facts, p, r.features) for p in BUILTIN_PROFILES.values())

    def tie_key(self) -> tuple:
        """Deterministic tie-break: fewer optional features, then more limit profiles fitted
        (the more portable variant), then fewer invocations per workgroup, then the name."""
        r = self.rendered
        return (len(r.features), -self.profiles_fitted, self.facts.invocations, self.name)


@dataclass
class Outcome:
    """One variant at one shape in this run: its record, new or reused from the database."""

    candidate: Candidate
    record: Record
    reused: bool
    eligible: bool  # may win (fits the profile); the baseline may be measured without

    @property
    def name(self) -> str:
        """The variant name."""
        return self.candidate.name

    @property
    def portable(self) -> bool:
        """Whether the variant fits `webgpu` and needs no optional feature."""
        return self.candidate.portable

    @property
    def status(self) -> str:
        """The record's status (db.STATUSES)."""
        return self.record.status

    @property
    def error(self) -> str | None:
        """Why it failed, if it did."""
        return self.record.error

    @property
    def measurement(self) -> Measurement | None:
        """The timing, when the status is ok."""
        return self.record.measurement


@dataclass
class ShapePlan:
    """What tuning one kernel at one shape will consider."""

    spec: KernelSpec
    shape: dict[str, int]
    eligible: list[Candidate]
    excluded: list[tuple[str, str]]  # (variant, why it is not a candidate)
    baseline: Candidate
    strategy: str
    budget: Budget

    @property
    def steps(self) -> int:
        """An upper bound of the variants this shape will look at (for progress bars)."""
        n = len(self.eligible)
        return min(n, self.budget.variants) + 2 if self.budget.variants is not None else n + 2


@dataclass
class ShapeReport:
    """What tuning one kernel at one shape found and decided."""

    plan: ShapePlan
    outcomes: list[Outcome] = field(default_factory=list)
    decision: Decision | None = None
    notes: list[str] = field(default_factory=list)
    selection: SelectionEntry | None = None
    error: str | None = None  # the reference.py failed: the shape was not tuned (why)

    def tried_portable(self) -> bool:
        """Whether any portable variant was a candidate here (run, found or failed)."""
        return any(o.eligible and o.portable for o in self.outcomes)

    def default_label(self, prefix: str) -> str:
        """The portable default for people, or why there is none."""
        if self.decision is not None and self.decision.default:
            return self.decision.default.removeprefix(prefix)
        if self.tried_portable():
            return "none (no portable variant passed)"
        return (
            "none among the candidates (each needs an optional feature or exceeds the webgpu "
            "profile): the selection keeps an earlier entry's default, if it has one"
        )

    def baseline_outcome(self) -> Outcome | None:
        """The baseline's outcome when it was run or found."""
        name = self.plan.baseline.name
        return next((o for o in self.outcomes if o.name == name), None)

    def rows(self) -> list[dict[str, Any]]:
        """The leaderboard (see selection.leaderboard)."""
        base = self.baseline_outcome()
        ok = base is not None and base.measurement is not None and base.status == "ok"
        return leaderboard(self.outcomes, self.decision, base.measurement.median_ns if ok else None)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able summary of this shape."""
        d = self.decision
        return {
            "kernel": self.plan.spec.name,
            "shape": format_shape(self.plan.shape),
            "strategy": self.plan.strategy,
            "budget": {"variants": self.plan.budget.variants, "seconds": self.plan.budget.seconds},
            "candidates": len(self.plan.eligible),
            "excluded": [{"variant": v, "reason": r} for v, r in self.plan.excluded],
            "leaderboard": self.rows(),
            "winner": d.winner if d else None,
            "default": d.default if d else None,
            "baseline": self.plan.baseline.name,
            "baseline_ran": bool(d and d.baseline),
            "speedup": d.speedup if d else None,
            "speedup_significant": d.significant if d else None,
            "reason": d.reason if d else None,
            "head_to_head": {n: m.to_dict() for n, m in d.head_to_head.items()} if d else {},
            "notes": self.notes + (list(d.notes) if d else []),
            "error": self.error,
        }


def finalists(
    results: Mapping[str, Measurement], tie_key: TieKey, count: int = 3, margin: float = 0.10
) -> list[str]:
    """Up to ``count`` fastest names whose median is within ``margin`` of the best one."""
    if not results:
        return []
    order = sorted(results, key=lambda n: (results[n].median_ns, tie_key(n)))
    limit = results[order[0]].median_ns * (1.0 + margin)
    return [n for n in order if results[n].median_ns <= limit][: max(1, count)]


@dataclass(frozen=True)
class Decision:
    """What one shape's tuning concluded, and the numbers it rests on."""

    winner: str
    reason: str
    finalists: tuple[str, ...]
    default: str | None  # fastest variant that fits `webgpu` and needs no optional feature
    baseline: str | None  # None when the baseline did not run
    medians: dict[str, float]  # per name, from head-to-head when it ran there, else the DB
    head_to_head: dict[str, Measurement] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    significant: bool | None = None  # whether the winner beats the baseline beyond the noise

    @property
    def speedup(self) -> float | None:
        """Baseline median / winner median, from the same measurement round when possible."""
        if self.baseline is None:
            return None
        return self.medians[self.baseline] / self.medians[self.winner]

    def source(self, name: str) -> str:
        """Where a median comes from: 'head-to-head' or 'database'."""
        return "head-to-head" if name in self.head_to_head else "database"


_FASTER_BASELINE = (
    "the baseline, not eligible (not among the variants tuned, or outside the profile), is "
    "faster than the winner ({ratio:.2f}x); the selection still records the winner"
)


def decide(
    eligible: Mapping[str, Measurement],
    portable: Iterable[str],
    baseline: tuple[str, Measurement] | None,
    head_to_head: Mapping[str, Measurement],
    tie_key: TieKey,
    finalist_names: Iterable[str],
    notes: Iterable[str] = (),
) -> Decision:
    """The winner among finalists (head-to-head when it ran), the portable default, speedup.

    ``eligible`` are the variants that fit the profile and passed; the baseline is compared
    against even when it is not eligible (e.g. it needs more workgroup memory than allowed).
    """
    names = tuple(finalist_names)
    h2h = dict(head_to_head)
    # Everyone eligible in the head-to-head round competes: an eligible baseline or portable
    # variant that was timed alongside the finalists and beat them must win.
    pool = {n: m for n, m in h2h.items() if n in eligible}
    if not set(names) <= set(pool):  # head-to-head did not run (or failed): the DB decides
        pool, h2h = {n: eligible[n] for n in names}, {}
    names = tuple(dict.fromkeys([*names, *pool]))
    winner, reason = pick_winner(pool, tie_key)
    base = baseline[0] if baseline else None
    if base in pool and base != winner and pool[base].median_ns < pool[winner].median_ns:
        # Never declare a winner that was slower than the baseline in the same round.
        reason = (
            f"the baseline beat {winner} in the same head-to-head round "
            f"({format_ns(pool[base].median_ns)} vs {format_ns(pool[winner].median_ns)})"
        )
        winner = base
    medians = {n: m.median_ns for n, m in eligible.items()}
    if baseline is not None:
        medians[baseline[0]] = baseline[1].median_ns
    # The caller puts the baseline into the head-to-head round whenever it ran, so the
    # speedup is a ratio of two numbers from one round.
    medians.update({n: m.median_ns for n, m in h2h.items()})
    base_name = baseline[0] if baseline else None
    default = portable_default(eligible, portable, tie_key, winner)
    notes = list(notes)
    significant = None
    if baseline is not None:
        # The same noise rule as pick_winner: a gap smaller than it would not reproduce.
        same_round = h2h if base_name in h2h else {**pool, base_name: baseline[1]}
        fastest = min(same_round.values(), key=lambda m: m.median_ns)
        noise = max(fastest.iqr_ns, 0.02 * fastest.median_ns)
        gap, ratio = medians[base_name] - medians[winner], medians[base_name] / medians[winner]
        significant = gap > noise
        if gap < -noise:
            notes.append(_FASTER_BASELINE.format(ratio=ratio))
        elif not significant and base_name != winner:
            notes.append(
                f"the baseline is within the noise ({format_ns(noise)}) of the winner: the "
                f"{ratio:.2f}x speedup is not significant"
            )
    return Decision(
        winner, reason, names, default, base_name, medians, h2h, tuple(notes), significant
    )


def portable_default(
    eligible: Mapping[str, Measurement], portable: Iterable[str], tie_key: TieKey, winner: str
) -> str | None:
    """The winner when it is portable, else the fastest portable variant (noise-aware)."""
    port = {n: m for n, m in eligible.items() if n in set(portable)}
    if not port:
        return None
    if winner in port:
        return winner
    return pick_winner(port, tie_key)[0]


def entry(
    decision: Decision,
    kernel: str,
    device: str,
    device_label: str,
    shape: str,
    shas: Mapping[str, str],
) -> SelectionEntry:
    """The selection file's entry for one kernel, device and shape (None: did not run)."""

    def choice(name: str | None) -> Choice | None:
        if name is None:
            return None
        return Choice(name, float(decision.medians[name]), shas.get(name))

    reason = "; ".join([decision.reason, *decision.notes])
    return SelectionEntry(
        kernel=kernel,
        device=device,
        device_label=device_label,
        shape=shape,
        winner=choice(decision.winner),
        default=choice(decision.default),
        baseline=choice(decision.baseline),
        speedup=None if decision.speedup is None else float(decision.speedup),
        reason=reason,
    )


def leaderboard(
    outcomes: Iterable[Outcome], decision: Decision | None, baseline_median: float | None
) -> list[dict[str, Any]]:
    """Rows for people and machines: passing variants fastest first, then the failures.

    ``outcomes`` have ``name``, ``status``, ``measurement``, ``reused``, ``error``, ``portable``
    and ``eligible``; speedups are against the baseline's database median (same method).
    """
    rows: list[dict[str, Any]] = []
    done = [o for o in outcomes if o.status == "ok" and o.measurement is not None]
    best = min((o.measurement.median_ns for o in done if o.eligible), default=None)
    for o in sorted(done, key=lambda o: o.measurement.median_ns):
        m = o.measurement
        rows.append(
            {
                "variant": o.name,
                "status": o.status,
                "median_ns": m.median_ns,
                "iqr_ns": m.iqr_ns,
                "q1_ns": m.q1_ns,
                "q3_ns": m.q3_ns,
                "reps": m.reps,
                "speedup": baseline_median / m.median_ns if baseline_median else None,
                "pct_of_best": 100.0 * best / m.median_ns if best else None,
                "reused": o.reused,
                "eligible": o.eligible,
                "portable": o.portable,
                "tags": _tags(o, decision),
                "error": None,
            }
        )
    for o in outcomes:
        if o.status != "ok":
            rows.append(
                {
                    "variant": o.name, "status": o.status, "median_ns": None, "iqr_ns": None,
                    "q1_ns": None, "q3_ns": None, "reps": 0, "speedup": None,
                    "pct_of_best": None, "reused": o.reused,
                    "eligible": o.eligible, "portable": o.portable, "tags": [],
                    "error": one_line(o.error) if o.error else None,
                }
            )  # fmt: skip
    return rows


def one_line(error: str) -> str:
    """The gist of a recorded error on one line (wgpu's cause chain condensed)."""
    head, sep, rest = error.partition("GPUValidationError: ")
    if sep:
        from wgslgen.check.engines.wgpu_native import wgpu_message

        return f"{head}{wgpu_message(rest)}"[:200]
    return error.strip().splitlines()[0][:200] if error.strip() else ""


def _tags(o: Outcome, d: Decision | None) -> list[str]:
    name, tags = o.name, []
    if d is not None:
        if name == d.winner:
            tags.append("winner")
        if name == d.default:
            tags.append("default")
        if name == d.baseline:
            tags.append("baseline")
        if name in d.finalists and name != d.winner:
            tags.append("finalist")
    if not o.eligible:
        # only the baseline is measured while not eligible: a misfit, or left out by --set
        tags.append("outside profile" if o.candidate.misfits else "outside --set")
    return tags
