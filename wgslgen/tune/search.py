"""Search strategies over a kernel's space: which variant to measure next.

A strategy proposes indices into ``Points``: the candidates of a small space, rendered and
filtered (constraints, the shape's preconditions, the limit profile) before the search, or
the whole axis product of a large one (tune/planning.py), where the driver checks only what
is proposed. The driver measures a proposal (or finds it in the database) and tells the
strategy the median time, or None when the variant failed or is not a candidate. Budgets are
the driver's business: a strategy just proposes until it has nothing left.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from wgslgen.errors import WgslgenError

STRATEGIES = ("auto", "exhaustive", "random", "tpe")
# "auto" measures everything up to this many candidates per shape; beyond, it samples.
AUTO_EXHAUSTIVE_MAX = 128
# "auto" and the sampling strategies measure this many per shape when no budget is given.
DEFAULT_SAMPLE_BUDGET = 32
# TPE proposes combinations outside the candidate set (constraints, profile) or repeats
# itself; after this many misses in a row the strategy takes an unmeasured one at random.
_TPE_MAX_MISSES = 25
_TPE_INSTALL_HINT = "pip install 'wgslgen[tune]' (or optuna alone)"


class Strategy(Protocol):
    """Proposes candidates one at a time and learns from their times."""

    name: str

    def ask(self) -> int | None:
        """Index of the next candidate to measure, or None when there is nothing left."""
        ...

    def tell(self, index: int, median_ns: float | None) -> None:
        """The result of candidate ``index``: its median time, or None when it failed."""
        ...


@dataclass(frozen=True)
class Budget:
    """When a search stops: after ``variants`` proposals and/or ``seconds`` of search."""

    variants: int | None = None
    seconds: float | None = None

    @property
    def unlimited(self) -> bool:
        """Whether neither limit is set."""
        return self.variants is None and self.seconds is None

    def exhausted(self, proposed: int, started: float) -> bool:
        """Whether ``proposed`` proposals since ``started`` (perf_counter) use the budget up."""
        if self.variants is not None and proposed >= self.variants:
            return True
        return self.seconds is not None and time.perf_counter() - started >= self.seconds


class Exhaustive:
    """Every candidate, in the given order (the caller puts the baseline first)."""

    name = "exhaustive"

    def __init__(self, n: int) -> None:
        self._next, self._n = 0, n

    def ask(self) -> int | None:
        """The next candidate in order."""
        if self._next >= self._n:
            return None
        self._next += 1
        return self._next - 1

    def tell(self, index: int, median_ns: float | None) -> None:
        """Exhaustive search learns nothing."""


class RandomSearch:
    """Candidates in a seeded random order: the same seed proposes the same sequence.

    The order is a Fisher-Yates shuffle done one step per ask (the swaps kept in a dict), so
    drawing a few of a million candidates costs a few steps, not a million-item list.
    """

    name = "random"

    def __init__(self, n: int, seed: int) -> None:
        self._n, self._next = n, 0
        self._swapped: dict[int, int] = {}
        self._rng = random.Random(seed)

    def ask(self) -> int | None:
        """The next candidate of the shuffled order."""
        i = self._next
        if i >= self._n:
            return None
        j = self._rng.randrange(i, self._n)
        picked = self._swapped.get(j, j)
        self._swapped[j] = self._swapped.pop(i, i)
        self._next += 1
        return picked

    def tell(self, index: int, median_ns: float | None) -> None:
        """Random search learns nothing."""


class Points(Protocol):
    """The candidates as axis values: a list of them, or a whole space drawn lazily."""

    def __len__(self) -> int: ...

    @property
    def axes(self) -> Mapping[str, Sequence[Any]]:
        """The values each axis may take."""
        ...

    def index(self, params: Mapping[str, Any]) -> int | None:
        """The candidate with these axis values, or None when there is none."""
        ...

    def params(self, index: int) -> dict[str, Any]:
        """The axis values of candidate ``index``."""
        ...


class PointList:
    """Points given one by one (the candidates of a planned shape)."""

    def __init__(self, points: Sequence[Mapping[str, Any]]) -> None:
        self._points = [dict(p) for p in points]
        self._index = {_point_key(p): i for i, p in enumerate(self._points)}
        axes: dict[str, list[Any]] = {}
        for p in self._points:
            for k, v in p.items():
                axes.setdefault(k, [])
                if v not in axes[k]:
                    axes[k].append(v)
        self.axes = axes

    def __len__(self) -> int:
        return len(self._points)

    def index(self, params: Mapping[str, Any]) -> int | None:
        """The position of these axis values in the list."""
        return self._index.get(_point_key(params))

    def params(self, index: int) -> dict[str, Any]:
        """The axis values at ``index``."""
        return self._points[index]


class TPESearch:
    """Tree-structured Parzen estimator over the axes (optuna), for large spaces.

    It suggests axis values, not indices: a suggestion outside the candidates (a constraint,
    a precondition or the profile excludes it) is told as a failed trial.
    """

    name = "tpe"

    def __init__(self, points: Points, seed: int) -> None:
        optuna = import_optuna()
        from optuna.distributions import CategoricalDistribution

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self._optuna = optuna
        self._points = points
        self._dists = {k: CategoricalDistribution(list(vs)) for k, vs in points.axes.items()}
        self._study = optuna.create_study(
            direction="minimize",
            sampler=optuna.samplers.TPESampler(seed=seed, n_startup_trials=min(8, len(points))),
        )
        self._fallback = RandomSearch(len(points), seed)
        self._told: dict[int, float | None] = {}
        self._pending: dict[int, Any] = {}

    def ask(self) -> int | None:
        """TPE's next suggestion among the unmeasured candidates."""
        if len(self._told) + len(self._pending) >= len(self._points):
            return None
        from optuna.trial import TrialState

        for _ in range(_TPE_MAX_MISSES):
            trial = self._study.ask(self._dists)
            i = self._points.index(trial.params)
            if i is None:
                # Outside the candidate set: TPE learns nothing from a failed trial, so
                # misses end in a random pick below.
                self._study.tell(trial, state=TrialState.FAIL)
            elif i in self._told:
                # A repeat: give TPE the known answer so it moves on.
                value = self._told[i]
                if value is None:
                    self._study.tell(trial, state=TrialState.FAIL)
                else:
                    self._study.tell(trial, value)
            elif i in self._pending:
                self._study.tell(trial, state=TrialState.FAIL)
            else:
                self._pending[i] = trial
                return i
        while (i := self._fallback.ask()) is not None:  # each index comes up once
            if i not in self._told and i not in self._pending:
                self._pending[i] = None  # no trial: tell() adds a finished one with its params
                return i
        return None

    def tell(self, index: int, median_ns: float | None) -> None:
        """Report the median (or failure) of a proposed candidate to the model."""
        from optuna.trial import TrialState

        trial = self._pending.pop(index, None)
        self._told[index] = median_ns
        if trial is None:
            # A random fallback pick: record it as a finished trial with its exact params.
            if median_ns is not None:
                self._study.add_trial(
                    self._optuna.trial.create_trial(
                        params=self._points.params(index),
                        distributions=self._dists,
                        value=median_ns,
                    )
                )
            return
        if median_ns is None:
            self._study.tell(trial, state=TrialState.FAIL)
        else:
            self._study.tell(trial, median_ns)


def _point_key(params: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, repr(v)) for k, v in params.items()))


def import_optuna() -> Any:
    """optuna, or a WgslgenError saying how to install it."""
    try:
        import optuna
    except ImportError:
        raise WgslgenError(
            "the tpe strategy needs optuna, which is not installed",
            hint=_TPE_INSTALL_HINT,
            option="strategy",
        ) from None
    return optuna


def have_optuna() -> bool:
    """Whether optuna can be imported (the model-based strategy is available)."""
    try:
        import optuna  # noqa: F401
    except ImportError:
        return False
    return True


def resolve(name: str, n_candidates: int, budget: Budget) -> tuple[str, Budget]:
    """The concrete strategy and budget for ``--strategy name`` over ``n_candidates``.

    ``auto`` measures everything when the space is small and no budget is given; otherwise it
    samples (TPE when optuna is installed, random otherwise) within the budget.
    """
    if name not in STRATEGIES:
        raise WgslgenError(f"unknown strategy {name!r}; choose one of {', '.join(STRATEGIES)}")
    if name == "auto":
        if budget.unlimited and n_candidates <= AUTO_EXHAUSTIVE_MAX:
            return "exhaustive", budget
        name = "tpe" if have_optuna() else "random"
    if name in ("random", "tpe") and budget.unlimited:
        budget = Budget(variants=DEFAULT_SAMPLE_BUDGET)
    return name, budget


def make(name: str, points: Sequence[Mapping[str, Any]] | Points, seed: int = 0) -> Strategy:
    """A fresh strategy called ``name`` (not "auto": resolve() it first) over ``points`` (a
    list of axis values, or a ``Points`` such as a whole space drawn lazily)."""
    if isinstance(points, Sequence):
        points = PointList(points)
    if name == "exhaustive":
        return Exhaustive(len(points))
    if name == "random":
        return RandomSearch(len(points), seed)
    if name == "tpe":
        return TPESearch(points, seed)
    raise WgslgenError(f"unknown strategy {name!r}; choose one of {', '.join(STRATEGIES[1:])}")
