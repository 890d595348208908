"""A kernel's space without enumerating it: count, index and sample its variants.

A space of six axes of ten values is a million combinations; building a ``Variant`` for each
(let alone rendering it) takes minutes. ``VariantSpace`` numbers the combinations of the
axis product (the order of ``itertools.product``, last axis fastest), so a search can draw
index ``i``, check the constraints for that one combination and render only what it
proposes. ``count`` evaluates each constraint over the values of the axes it names only,
then combines the tables (numpy broadcasting): a constraint over two axes of a million-point
space costs a hundred evaluations, not a million.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from wgslgen.errors import WgslgenError

if TYPE_CHECKING:
    from wgslgen.spec.expressions import Expression
    from wgslgen.spec.kernel import KernelSpec, Variant

# One constraint is evaluated at most this many times to count a space (each evaluation is
# tens of microseconds); a constraint naming axes with more combinations is left out of the
# count, which is then an upper bound.
COUNT_EVALUATIONS = 50_000
# The tables of constraints that share axes are combined in one array of this many cells at
# most (one byte each); a larger group of axes is counted without its constraints.
COUNT_CELLS = 1 << 25


@dataclass(frozen=True)
class SpaceCount:
    """How many variants a space holds: exact, or an upper bound before some constraints."""

    n: int
    exact: bool
    uncounted: tuple[str, ...] = ()  # constraints left out of an upper bound

    def text(self) -> str:
        """``960,000``, or ``<= 1,000,000`` with the constraints it is before."""
        if self.exact:
            return f"{self.n:,}"
        return f"<= {self.n:,} (before constraint(s) {', '.join(map(repr, self.uncounted))})"


@dataclass(frozen=True, eq=False)
class VariantSpace:
    """The combinations of a kernel's axis values (all, or those ``where`` keeps), numbered."""

    spec: KernelSpec
    values: tuple[tuple[Any, ...], ...]  # per axis, in declaration order

    @property
    def names(self) -> tuple[str, ...]:
        """Axis names, in declaration order."""
        return self.spec.axis_names

    @property
    def axes(self) -> dict[str, list[Any]]:
        """The values of each axis (what a model-based search chooses from)."""
        return {n: list(v) for n, v in zip(self.names, self.values, strict=True)}

    @property
    def size(self) -> int:
        """Combinations before the constraints: indices run from 0 to size - 1."""
        return math.prod(len(v) for v in self.values)

    def where(self, wanted: Mapping[str, Sequence[Any]]) -> VariantSpace:
        """The sub-space whose axes (named in ``wanted``) take only the given values."""
        values = list(self.values)
        for name, keep in wanted.items():
            i = self.names.index(self.spec.axis(name).name)
            values[i] = tuple(v for v in values[i] if v in keep)
        return VariantSpace(self.spec, tuple(values))

    def params_at(self, index: int) -> dict[str, Any]:
        """The axis values of combination ``index`` (constraints not checked)."""
        if not 0 <= index < self.size:
            raise IndexError(f"combination {index} of {self.size}")
        out = {}
        for name, vals in zip(reversed(self.names), reversed(self.values), strict=True):
            index, j = divmod(index, len(vals))
            out[name] = vals[j]
        return {n: out[n] for n in self.names}

    @cached_property
    def _positions(self) -> tuple[dict[Any, int], ...]:
        return tuple({_hashable(v): j for j, v in enumerate(vals)} for vals in self.values)

    def index_of(self, params: Mapping[str, Any]) -> int | None:
        """The index of the combination ``params``, or None when it is outside this space."""
        index = 0
        for name, vals, pos in zip(self.names, self.values, self._positions, strict=True):
            j = pos.get(_hashable(params.get(name)))
            if j is None:
                return None
            index = index * len(vals) + j
        return index

    def at(self, index: int) -> Variant | None:
        """The variant at ``index``, or None when a constraint rejects that combination."""
        from wgslgen.spec.kernel import Variant

        params = self.params_at(index)
        if all(c(params) for c in self.spec.constraints):
            return Variant(self.spec, tuple(params.items()))
        return None

    def contains(self, variant: Variant) -> bool:
        """Whether ``variant`` is one of this space's (axis values kept, constraints hold)."""
        params = variant.params
        return self.index_of(params) is not None and all(c(params) for c in self.spec.constraints)

    def __iter__(self) -> Iterator[Variant]:
        """Every variant, in index order (this builds each one: small spaces only)."""
        from wgslgen.spec.kernel import Variant

        for combo in itertools.product(*self.values):
            params = dict(zip(self.names, combo, strict=True))
            if all(c(params) for c in self.spec.constraints):
                yield Variant(self.spec, tuple(params.items()))

    @cached_property
    def count(self) -> SpaceCount:
        """The number of variants, counted without building any (see the module's doc)."""
        sizes = [len(v) for v in self.values]
        groups, uncounted = _groups(self.spec.constraints, self.names, sizes)
        total, exact = 1, not uncounted
        free = set(range(len(sizes)))
        for axes, constraints in groups:
            free -= set(axes)
            cells = math.prod(sizes[a] for a in axes)
            if cells > COUNT_CELLS:
                uncounted += [c.text for c in constraints]
                exact, total = False, total * cells
                continue
            total *= self._count_group(axes, constraints)
        for a in free:
            total *= sizes[a]
        return SpaceCount(total, exact, tuple(uncounted))

    def _count_group(self, axes: list[int], constraints: list[Expression]) -> int:
        """Combinations of ``axes`` that satisfy every one of ``constraints``."""
        shape = tuple(len(self.values[a]) for a in axes)
        ok = np.ones(shape, dtype=bool)
        for c in constraints:
            own = [a for a in axes if self.names[a] in c.names]
            table = np.fromiter(
                (
                    bool(c(dict(zip((self.names[a] for a in own), combo, strict=True))))
                    for combo in itertools.product(*(self.values[a] for a in own))
                ),
                dtype=bool,
                count=math.prod(len(self.values[a]) for a in own),
            )
            view = [len(self.values[a]) if a in own else 1 for a in axes]
            ok &= table.reshape(view) if own else table.reshape([1] * len(axes))
        return int(ok.sum())


def _groups(
    constraints: Sequence[Expression], names: Sequence[str], sizes: Sequence[int]
) -> tuple[list[tuple[list[int], list[Expression]]], list[str]]:
    """Constraints joined into groups that share axes, each with its axes (union-find); a
    constraint too costly to evaluate over its own axes is returned apart, uncounted."""
    parent = list(range(len(names)))

    def root(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    kept, uncounted = [], []
    for c in constraints:
        own = [i for i, n in enumerate(names) if n in c.names]
        if math.prod(sizes[a] for a in own) > COUNT_EVALUATIONS:
            uncounted.append(c.text)
            continue
        kept.append((c, own))
        for a in own[1:]:
            parent[root(a)] = root(own[0])
    by_root: dict[int, tuple[list[int], list[Expression]]] = {}
    for c, own in kept:
        key = root(own[0]) if own else -1  # a constraint naming no axis: its own group
        by_root.setdefault(key, ([], []))[1].append(c)
    for key, (axes, _) in by_root.items():
        axes.extend(a for a in range(len(names)) if key >= 0 and root(a) == key)
    return list(by_root.values()), uncounted


def _hashable(value: Any) -> Any:
    # 1, 1.0 and True are equal as dict keys; an axis value keeps its type.
    return (type(value).__name__, value) if not isinstance(value, list) else ("list", repr(value))


def full_space(spec: KernelSpec) -> VariantSpace:
    """Every combination of ``spec``'s axis values."""
    return VariantSpace(spec, tuple(a.values for a in spec.axes))


def overridden(spec: KernelSpec, overrides: Mapping[str, str | Sequence[str]]) -> VariantSpace:
    """The space of ``--set axis=value`` texts (as ``render.build.apply_overrides`` reads
    them: several values of one axis keep each of them), an unknown value named."""
    wanted: dict[str, list[Any]] = {}
    for name, texts in overrides.items():
        axis = spec.axis(name)
        for text in [texts] if isinstance(texts, str) else texts:
            matches = [v for v in axis.values if str(v) == text]
            if not matches:
                raise WgslgenError(
                    f"kernel {spec.name}: axis {axis.name} has no value {text!r}; "
                    f"values: {', '.join(map(str, axis.values))}"
                )
            wanted.setdefault(axis.name, []).append(matches[0])
    return full_space(spec).where(wanted)
