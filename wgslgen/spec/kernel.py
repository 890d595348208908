"""kernel.toml → KernelSpec: the tuning space, its constraints, the interface and the problem.

A kernel is a folder under a templates directory (kernel.toml, a Jinja template and
reference.py); a plain ``.wgsl`` file is a kernel with no axes.
"""

from __future__ import annotations

import itertools
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wgslgen.errors import WgslgenError
from wgslgen.spec.expressions import Expression
from wgslgen.spec.interface import ENCODINGS, Binding, Interface, UniformLayout
from wgslgen.text_file import read_user_text

if TYPE_CHECKING:
    from wgslgen.spec.space import SpaceCount, VariantSpace

# kernel.toml is validated by the models in spec/schema.py; loader.py builds these objects.


@dataclass(frozen=True)
class Axis:
    """A tuning axis: its candidate values, the baseline value and a short key for file names."""

    name: str
    key: str
    values: tuple[Any, ...]
    baseline: Any
    omit_baseline_from_name: bool = False

    def name_part(self, value: Any) -> str:
        """``key<value>`` as variant names spell it; empty for an omitted baseline."""
        if self.omit_baseline_from_name and value == self.baseline:
            return ""
        return f"{self.key}{value}"


@dataclass(frozen=True)
class Tolerance:
    """Comparison tolerance for variants where ``when`` holds."""

    when: Expression | None
    rtol: float
    atol: float


@dataclass(frozen=True)
class BindingDecl:
    """A binding as declared: its encoding may be an expression over the axes."""

    name: str
    group: int
    binding: int
    access: str
    encoding: Expression | str
    count: str
    scratch: bool = False


@dataclass(frozen=True)
class Pass:
    """One dispatch of a kernel: an entry point and its workgroup counts as expressions."""

    entry_point: str
    dispatch: tuple[Expression, ...]


@dataclass(frozen=True)
class ProblemSpec:
    """The sizes a caller sets, values derived from them, preconditions and the dispatch."""

    sizes: tuple[str, ...]
    derived: tuple[tuple[str, Expression], ...]
    preconditions: tuple[Expression, ...]
    passes: tuple[Pass, ...]  # dispatched in order in one compute pass
    counts: tuple[tuple[str, Expression], ...]  # element count per binding

    @property
    def dispatch(self) -> tuple[Expression, ...]:
        """The first pass's dispatch (the only one of a single-pass kernel)."""
        return self.passes[0].dispatch


@dataclass(frozen=True, eq=False)
class KernelSpec:
    """One kernel: where it lives, its space, interface, problem and test settings."""

    name: str
    folder: Path
    spec_path: Path | None
    template_path: Path
    entry_point: str
    description: str
    axes: tuple[Axis, ...]
    constraints: tuple[Expression, ...]
    uniform: UniformLayout | None
    bindings: tuple[BindingDecl, ...]
    problem: ProblemSpec | None
    test_shapes: tuple[dict[str, int], ...] = ()
    tune_shapes: tuple[dict[str, int], ...] = ()
    tolerances: tuple[Tolerance, ...] = ()
    reference_path: Path | None = None
    plain: bool = False
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)
    overrides: tuple[tuple[str, Expression], ...] = ()  # [overrides]: WGSL override values

    @property
    def entry_points(self) -> tuple[str, ...]:
        """Every pass's entry point, in dispatch order."""
        if self.problem is None:
            return (self.entry_point,)
        return tuple(p.entry_point for p in self.problem.passes)

    @property
    def axis_names(self) -> tuple[str, ...]:
        """Axis names in declaration order."""
        return tuple(a.name for a in self.axes)

    def check_shape_values(self, shape: Mapping[str, Any]) -> None:
        """Refuse a value the uniform cannot hold: a fraction in an integer, a negative u32."""
        if self.uniform and (why := self.uniform.refusal(shape)):
            raise WgslgenError(f"kernel {self.name}: shape {format_shape(shape)}: {why}")

    def axis(self, name: str) -> Axis:
        """The axis called ``name``; an unknown name lists the valid ones."""
        for a in self.axes:
            if a.name == name or a.key == name:
                return a
        valid = ", ".join(f"{a.name} ({a.key})" for a in self.axes) or "(this kernel has none)"
        raise WgslgenError(f"kernel {self.name}: unknown axis {name!r}; valid axes: {valid}")

    @cached_property
    def variants(self) -> tuple[Variant, ...]:
        """Every combination of axis values that satisfies the constraints, in a stable order.

        This builds every variant: for a large space, count, index or sample ``space``.
        """
        out = tuple(self.space)
        if not out:
            raise WgslgenError(self._why_empty())
        named: dict[str, Variant] = {}
        for v in out:
            if (first := named.setdefault(v.name, v)) is not v:
                raise WgslgenError(
                    f"{self.spec_path}: two variants are both named {v.name!r} "
                    f"({first.params} and {v.params}): choose axis keys and values that "
                    "tell them apart"
                )
        return out

    @cached_property
    def space(self) -> VariantSpace:
        """The space numbered without enumerating it (count, index, draw one variant)."""
        from wgslgen.spec.space import full_space

        return full_space(self)

    def variant_count(self) -> SpaceCount:
        """How many variants the constraints leave, counted without building them."""
        return self.space.count

    @property
    def baseline(self) -> Variant:
        """The variant at every axis's baseline value (the hand-written original)."""
        params = tuple((a.name, a.baseline) for a in self.axes)
        return Variant(self, params)

    def _why_empty(self) -> str:
        total = 1
        for a in self.axes:
            total *= len(a.values)
        lines = [f"{self.spec_path}: the constraints leave no variant of kernel {self.name}"]
        for c in self.constraints:
            rejected = sum(
                1
                for combo in itertools.product(*(a.values for a in self.axes))
                if not c(dict(zip(self.axis_names, combo, strict=True)))
            )
            lines.append(f"  constraint {c.text!r} rejects {rejected} of {total} combinations")
        return "\n".join(lines)


@dataclass(frozen=True)
class Variant:
    """One point of a kernel's space: the spec and one value per axis."""

    spec: KernelSpec
    param_items: tuple[tuple[str, Any], ...]

    @property
    def params(self) -> dict[str, Any]:
        """Axis values by axis name."""
        return dict(self.param_items)

    @property
    def name(self) -> str:
        """File-safe name, e.g. ``attention_bwd_dq__wg64_mh4096_sf32_wf32``."""
        parts = [p for n, v in self.param_items if (p := self.spec.axis(n).name_part(v))]
        return f"{self.spec.name}__{'_'.join(parts)}" if parts else self.spec.name

    @property
    def is_baseline(self) -> bool:
        """Whether every axis is at its baseline value."""
        return self.param_items == self.spec.baseline.param_items

    @cached_property
    def interface(self) -> Interface:
        """The interface with every binding's encoding resolved for these axis values."""
        bindings = []
        for b in self.spec.bindings:
            enc = b.encoding if isinstance(b.encoding, str) else b.encoding(self.params)
            if enc not in ENCODINGS:
                raise WgslgenError(
                    f"{self.spec.spec_path}: binding {b.name!r} resolves to type {enc!r} for "
                    f"{self.name}; known types: {', '.join(ENCODINGS)}"
                )
            bindings.append(
                Binding(b.name, b.group, b.binding, b.access, ENCODINGS[enc], b.count, b.scratch)
            )
        return Interface(self.spec.uniform, tuple(bindings))

    @cached_property
    def override_values(self) -> dict[str, float]:
        """The kernel.toml [overrides] values at these axis values: the one rule that every
        stage (facts, validation, test, tune, vendor) reads them by; a value that is not a
        number is an error naming the kernel.toml key."""
        values: dict[str, float] = {}
        for name, expression in self.spec.overrides:
            value = expression(self.params)
            # bool is an int to Python, but a WGSL override's value must be a number.
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise WgslgenError(
                    f"{expression.where}: must be a number, got {value!r} for {self.name}"
                )
            values[name] = value
        return values

    def case(self, shape: Mapping[str, int]) -> Case:
        """This variant at ``shape``: the one place a shape is checked and its scope computed.

        A shape that does not set exactly the problem's sizes is a ``ShapeError``; one that a
        precondition excludes is a ``PreconditionError`` (naming the precondition).
        """
        problem = self.spec.problem
        if problem is None:
            raise WgslgenError(f"kernel {self.spec.name} declares no [problem]; it cannot run")
        if why := shape_mismatch(problem.sizes, shape):
            raise ShapeError(f"kernel {self.spec.name}: shape {format_shape(shape)} {why}")
        # A size is an integer; a float parameter (e.g. eps) stays a float.
        sizes = {k: _size(shape[k]) for k in problem.sizes}
        scope: dict[str, Any] = {**self.params, **sizes}
        for name, expr in problem.derived:
            scope[name] = expr(scope)
        for pre in problem.preconditions:
            if not pre(scope):
                used = ", ".join(f"{n}={scope[n]}" for n in sorted(pre.names))
                raise PreconditionError(
                    f"{self.name}: precondition {pre.text!r} fails for {used} ({pre.where})"
                )
        raw = {name: (expr, expr(scope)) for name, expr in problem.counts}
        for name, (expr, value) in raw.items():
            if value != int(value):  # truncated, the buffer would hold fewer elements than meant
                raise ShapeError(
                    f"{expr.where}: the count of {name!r}, {expr.text} = {value} at "
                    f"{format_shape(shape)}, is not a whole number"
                )
        counts = {name: int(v) for name, (_, v) in raw.items()}
        empty = [f"{name} = {n}" for name, n in counts.items() if n <= 0]
        if empty:  # WebGPU has no zero-sized buffer: say so before a device is asked for one
            raise ShapeError(
                f"kernel {self.spec.name}: shape {format_shape(shape)} gives buffers with no "
                f"elements ({', '.join(empty)})"
            )
        passes = tuple(
            (p.entry_point, tuple([*(int(d(scope)) for d in p.dispatch), 1, 1, 1][:3]))
            for p in problem.passes
        )
        return Case(self, sizes, scope, counts, passes)  # type: ignore[arg-type]

    def problem_scope(self, shape: Mapping[str, int]) -> dict[str, Any]:
        """Axis values, sizes and derived values for ``shape`` (``case(shape).scope``)."""
        return dict(self.case(shape).scope)

    def tolerance(self) -> Tolerance:
        """The first tolerance whose condition holds for this variant."""
        for tol in self.spec.tolerances:
            if tol.when is None or tol.when(self.params):
                return tol
        return Tolerance(None, 1e-5, 1e-6)


class ShapeError(WgslgenError):
    """A shape that does not set exactly a kernel's problem sizes (the caller's mistake)."""


class PreconditionError(WgslgenError):
    """A shape that a variant's preconditions exclude (not a fault of the variant)."""


@dataclass(frozen=True)
class Case:
    """A variant at one problem shape: sizes, scope, buffer counts and every pass's dispatch.

    Built only by ``Variant.case`` (shape checked and preconditions held), then handed to the
    reference, the harness, tuning and selection, none of which re-derive any of it.
    """

    variant: Variant
    sizes: dict[str, int]
    scope: dict[str, Any]
    counts: dict[str, int]  # logical element count per binding
    passes: tuple[tuple[str, tuple[int, int, int]], ...]  # (entry point, workgroups) in order

    @property
    def shape_text(self) -> str:
        """The canonical ``k=v,...`` text of the shape."""
        return format_shape(self.sizes)

    @property
    def dispatch(self) -> tuple[int, int, int]:
        """Workgroup counts of the first pass."""
        return self.passes[0][1]

    @property
    def uniform(self) -> bytes | None:
        """The packed uniform buffer for this scope (None when the kernel declares none)."""
        uniform = self.variant.spec.uniform
        return uniform.pack(self.scope) if uniform else None


def format_shape(shape: Mapping[str, Any]) -> str:
    """Canonical ``k=v,k=v`` text of a shape (keys sorted)."""
    return ",".join(f"{k}={shape[k]}" for k in sorted(shape))


def shape_mismatch(sizes: Sequence[str], shape: Mapping[str, Any]) -> str | None:
    """``must set exactly a, b; missing b; unknown c``, or None when ``shape`` sets ``sizes``."""
    missing = [s for s in sizes if s not in shape]
    unknown = sorted(set(shape) - set(sizes))
    if not missing and not unknown:
        return None
    what = [f"missing {', '.join(missing)}"] if missing else []
    what += [f"unknown {', '.join(unknown)}"] if unknown else []
    return f"must set exactly {', '.join(sizes)}; {'; '.join(what)}"


def parse_shape(text: str) -> dict[str, int | float]:
    """Parse ``k=v,k=v`` into a shape (integers, or floats like eps=1e-5); names a bad item."""
    shape: dict[str, int | float] = {}
    for item in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise WgslgenError(f"shape item {item!r} is not key=value (in {text!r})")
        if key.strip() in shape:  # the last would win in silence
            raise WgslgenError(f"shape {text!r} sets {key.strip()!r} twice")
        try:
            shape[key.strip()] = _number(value)
        except ValueError:
            raise WgslgenError(f"shape item {item!r}: {value!r} is not a number") from None
    return shape


def _size(value: Any) -> int | float:
    return value if isinstance(value, float) else int(value)


def _number(text: str) -> int | float:
    try:
        return int(text)
    except ValueError:
        return float(text)


def read_toml(path: Path) -> dict[str, Any]:
    """Read a TOML file; a syntax error names file:line:col."""
    text = read_user_text(path)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        msg = str(exc)
        m = re.search(r"\(at line (\d+), column (\d+)\)", msg)
        loc = f"{m.group(1)}:{m.group(2)}" if m else "?"
        msg = re.sub(r"\s*\(at line \d+, column \d+\)", "", msg)
        raise WgslgenError(f"{path}:{loc}: invalid TOML: {msg}") from None
