"""Which variants one shape's search considers, when each is rendered, and the search loop.

A small space (at most ``EAGER_MAX`` variants), or a search that measures everything, is
planned as before: every variant is rendered and checked against the shape's preconditions
and the limit profile up front, so the candidates are known and counted exactly. A large
space searched with a budget, a time limit or a sampling strategy is drawn lazily instead:
the strategy proposes an index into the axis product (``VariantSpace``), and only then is
that one combination checked against the constraints and preconditions and, if it passes,
rendered. A million-variant space thus costs a handful of renderings, not a million.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from wgslgen.errors import WgslgenError
from wgslgen.spec.kernel import KernelSpec, Variant, format_shape, shape_mismatch
from wgslgen.spec.space import SpaceCount, VariantSpace
from wgslgen.tune import search
from wgslgen.tune.selection import Candidate, ShapePlan
from wgslgen.tune.trial import precondition

if TYPE_CHECKING:
    from wgslgen.tune.runner import TuneSession

# Up to this many variants a plan renders every one first (exact candidate counts, the
# behaviour of small spaces); above, a sampling search draws them lazily.
EAGER_MAX = 256
# Draws in a row that give no candidate (a constraint, precondition or the profile rejects
# each) before a lazy search stops looking.
MAX_MISSES = 2_000


class Pool:
    """A shape's candidates drawn on demand (search.Points): index ``i`` is combination ``i``
    of the space, except that index 0 and the baseline's swap places, so that exhaustive
    search starts with the baseline as it does over a rendered list."""

    def __init__(
        self, space: VariantSpace, first: int | None, admit: Callable[[Variant], Candidate | None]
    ) -> None:
        self.space, self._first, self._admit = space, first, admit
        self._seen: dict[int, Candidate | None] = {}

    def __len__(self) -> int:
        return self.space.size

    @property
    def axes(self) -> dict[str, list[Any]]:
        """The values of each axis."""
        return self.space.axes

    @property
    def drawn(self) -> int:
        """How many combinations were looked at."""
        return len(self._seen)

    def _swap(self, i: int) -> int:
        if self._first is None:
            return i
        return self._first if i == 0 else 0 if i == self._first else i

    def index(self, params: Mapping[str, Any]) -> int | None:
        """The index of these axis values (None outside the space)."""
        raw = self.space.index_of(params)
        return None if raw is None else self._swap(raw)

    def params(self, index: int) -> dict[str, Any]:
        """The axis values at ``index``."""
        return self.space.params_at(self._swap(index))

    def candidate(self, index: int) -> Candidate | None:
        """The candidate at ``index``, checked (and rendered) the first time it is drawn;
        None when a constraint, a precondition or the profile rejects it."""
        if index not in self._seen:
            variant = self.space.at(self._swap(index))
            self._seen[index] = None if variant is None else self._admit(variant)
        return self._seen[index]

    def draws(self, seed: int) -> Iterator[Candidate]:
        """Candidates in a seeded random order, until MAX_MISSES draws in a row give none."""
        order, misses = search.RandomSearch(len(self), seed), 0
        while misses < MAX_MISSES and (i := order.ask()) is not None:
            c = self.candidate(i)
            misses = 0 if c is not None else misses + 1
            if c is not None:
                yield c


@dataclass
class SampledPlan(ShapePlan):
    """A ShapePlan over a large space: ``eligible`` and ``excluded`` grow as ``pool`` is
    drawn; ``count`` is the number of variants in the space (constraints applied)."""

    pool: Pool | None = None
    count: SpaceCount | None = None

    @property
    def steps(self) -> int:
        """An upper bound of the variants this shape will look at (for progress bars)."""
        n = self.count.n if self.count else 0
        return min(n, self.budget.variants) + 2 if self.budget.variants is not None else n + 2


def lazy(options: Any, count: SpaceCount) -> bool:
    """Whether a space of ``count`` variants is drawn lazily under these TuneOptions: it is
    larger than EAGER_MAX and the search samples it (not exhaustive without a limit)."""
    if count.n <= EAGER_MAX:
        return False
    return options.strategy != "exhaustive" or not options.budget.unlimited


def plan_shape(
    session: TuneSession,
    spec: KernelSpec,
    shape: Mapping[str, int],
    variants: Sequence[Variant] | VariantSpace | None,
) -> ShapePlan:
    """The candidates at ``shape`` (all of ``variants``, a space or a list, default the
    kernel's whole space): rendered up front, or drawn lazily (see the module's doc)."""
    if spec.problem is None:
        raise WgslgenError(f"kernel {spec.name} declares no [problem]; it cannot be tuned")
    if why := shape_mismatch(spec.problem.sizes, shape):
        raise WgslgenError(f"kernel {spec.name}: shape {format_shape(shape)} {why}")
    spec.check_shape_values(shape)
    space = spec.space if variants is None else variants
    if isinstance(space, VariantSpace) and lazy(session.options, space.count):
        return _lazy_plan(session, spec, shape, space)
    if variants is None:
        listed: Sequence[Variant] = spec.variants  # an empty space is an error here
    else:
        listed = list(space)
    baseline = session.candidate(spec.baseline)
    plan = ShapePlan(spec, dict(shape), [], [], baseline, "", search.Budget())
    for variant in listed:
        admit(session, plan, variant)
    # Baseline first: exhaustive search and every budget then start with the reference.
    plan.eligible.sort(key=lambda c: c.name != plan.baseline.name)
    plan.strategy, plan.budget = search.resolve(
        session.options.strategy, len(plan.eligible), session.options.budget
    )
    return plan


def _lazy_plan(
    session: TuneSession, spec: KernelSpec, shape: Mapping[str, int], space: VariantSpace
) -> SampledPlan:
    strategy, budget = search.resolve(
        session.options.strategy, space.count.n, session.options.budget
    )
    plan = SampledPlan(spec, dict(shape), [], [], session.candidate(spec.baseline), strategy,
                       budget, count=space.count)  # fmt: skip
    first = space.index_of(spec.baseline.params) if space.contains(spec.baseline) else None
    plan.pool = Pool(space, first, lambda v: admit(session, plan, v))
    if first is not None:
        plan.pool.candidate(0)  # the baseline is known to be a candidate (or why not) at once
    return plan


def admit(session: TuneSession, plan: ShapePlan, variant: Variant) -> Candidate | None:
    """Render and check ``variant`` at the plan's shape: add it to ``eligible`` and return
    it, or add it to ``excluded`` with the reason (a lazy plan checks the precondition
    first: it costs no rendering)."""
    why = precondition(variant, plan.shape)
    if why and isinstance(plan, SampledPlan):
        plan.excluded.append((variant.name, why))
        return None
    c = session.candidate(variant)
    if c.misfits:  # a small space says this first, as it always did
        plan.excluded.append(
            (c.name, f"does not fit {session.options.profile}: " + "; ".join(c.misfits))
        )
    elif why:
        plan.excluded.append((c.name, why))
    else:
        plan.eligible.append(c)
        return c
    return None


def portable_todo(plan: ShapePlan, tried: Mapping[str, Any], seed: int) -> Iterator[Candidate]:
    """Portable candidates not tried yet, to find a portable default: the known ones, then
    (a lazy plan) more drawn at random, at most the budget's worth."""
    known = [c for c in plan.eligible if c.portable and c.name not in tried]
    yield from known
    pool = getattr(plan, "pool", None)
    if pool is None:
        return
    limit = plan.budget.variants or search.DEFAULT_SAMPLE_BUDGET
    for c in pool.draws(seed + 1):
        if limit <= 0:
            return
        if c.portable and c.name not in tried:
            limit -= 1
            yield c


def run_search(
    plan: ShapePlan,
    obtain: Callable[[list[Candidate]], list[Any]],
    seed: int,
    wave_size: Callable[[ShapePlan], int],
) -> str | None:
    """Ask the plan's strategy for waves of ``wave_size(plan)`` candidates, measure each wave
    with ``obtain`` (its Outcomes) and tell the strategy each median; a lazy plan's proposals
    that are not candidates are told as failures. A note when the search stopped early."""
    pool = getattr(plan, "pool", None)
    points = pool if pool is not None else [c.rendered.params for c in plan.eligible]
    strategy = search.make(plan.strategy, points, seed)
    pick = pool.candidate if pool is not None else plan.eligible.__getitem__
    started, proposed, misses = time.perf_counter(), 0, 0
    while (pool or plan.eligible) and not plan.budget.exhausted(proposed, started):
        wave: list[tuple[int, Candidate]] = []
        while len(wave) < wave_size(plan) and not plan.budget.exhausted(proposed, started):
            i = strategy.ask()
            if i is None:
                break
            if (c := pick(i)) is None:
                strategy.tell(i, None)
                if (misses := misses + 1) >= MAX_MISSES:
                    return f"search stopped: {misses} draws in a row found no candidate"
                continue
            misses, proposed = 0, proposed + 1
            wave.append((i, c))
        if not wave:
            break
        for (i, _), out in zip(wave, obtain([c for _, c in wave]), strict=True):
            strategy.tell(i, out.measurement.median_ns if out.status == "ok" else None)
    return None
