"""A plain .wgsl file tested as a kernel it implements: the kernel found by name (--reference
or the file's wgslgen header) lends it its interface, problem, tests and reference."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from wgslgen.errors import WgslgenError
from wgslgen.spec.kernel import Axis, KernelSpec


def find_kernel(
    name: str,
    templates: Sequence[Path | str] | None = None,
    fallback: Sequence[Path | str] | None = None,
) -> KernelSpec:
    """The kernel ``name`` from the given template folders, else from ``fallback`` (the
    project's templates: a plain file given on its own may borrow a project kernel), else
    from the bundled ones."""
    from wgslgen.spec.loader import DEFAULT_TEMPLATES, discover

    searched = [list(templates)] if templates else []
    searched.append(list(fallback or [DEFAULT_TEMPLATES]))
    for dirs in searched:
        for spec in discover(dirs):
            if spec.name == name:
                return spec
    known = sorted({s.name for dirs in searched for s in discover(dirs)})
    raise WgslgenError(f"{name!r}: no such kernel; known: {', '.join(known)}", option="reference")


def borrow(plain: KernelSpec, donor: KernelSpec) -> KernelSpec:
    """A plain .wgsl kernel given the donor's interface, problem, tests and reference.

    Every donor axis is pinned: to the values the file's own wgslgen header declares (a
    generated or vendored file of the donor: an f16 file then gets f16 buffers), else to the
    baseline. Binding types, preconditions and tolerances then resolve as they do there.
    """
    if donor.plain or donor.problem is None:
        raise WgslgenError(
            f"{donor.name}: that kernel declares no [problem] to lend", option="reference"
        )
    values = declared_axes(plain.template_path, donor) or {a.name: a.baseline for a in donor.axes}
    pinned = tuple(Axis(a.name, a.key, (values[a.name],), values[a.name]) for a in donor.axes)
    return dataclasses.replace(
        plain,
        axes=pinned,
        constraints=(),
        uniform=donor.uniform,
        bindings=donor.bindings,
        problem=donor.problem,
        test_shapes=donor.test_shapes,
        tune_shapes=donor.tune_shapes,
        tolerances=donor.tolerances,
        reference_path=donor.reference_path,
        description=f"{plain.description}, run as {donor.name} ({_axes_text(values)})",
    )


# The axis values a wgslgen file declares: generated/ ("// kernel: K ..." then
# "// axes: a=1, b=2") or vendored ("... kernel=K ... axes=a=1,b=2 ...").
_GENERATED = re.compile(r"^// kernel: (\S+) .*\n// axes: (.*)$", re.M)
_VENDORED = re.compile(r"^// .* vendor: kernel=(\S+) .* axes=(\S+) ", re.M)


def declared_axes(path: Path | None, donor: KernelSpec) -> dict[str, Any] | None:
    """The donor's axis values named by the header of a wgslgen file, or None."""
    try:
        head = (
            "".join(path.read_text(encoding="utf-8").splitlines(keepends=True)[:6]) if path else ""
        )
    except (OSError, UnicodeDecodeError):  # rendering the file names what is wrong with it
        return None
    m = _GENERATED.search(head) or _VENDORED.search(head)
    if not m or m.group(1) != donor.name:
        return None
    items = dict(p.strip().partition("=")[::2] for p in re.split(r",\s*", m.group(2)) if "=" in p)
    values = {}
    for axis in donor.axes:
        match = [v for v in axis.values if str(v) == items.get(axis.name)]
        if not match:
            return None  # another version of the kernel: fall back to the baseline
        values[axis.name] = match[0]
    return values


def _axes_text(values: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in values.items())


def with_reference(
    kernels: Sequence[KernelSpec],
    donor_name: str | None,
    templates: Sequence[Path | str] | None = None,
    fallback: Sequence[Path | str] | None = None,
) -> list[KernelSpec]:
    """``kernels`` with every plain one borrowing ``donor_name``'s reference (if given)."""
    if not donor_name:
        return list(kernels)
    if not any(k.plain for k in kernels):
        raise WgslgenError(
            "a reference kernel is lent to plain .wgsl kernels, and none is selected",
            option="reference",
        )
    donor = find_kernel(donor_name, templates, fallback)
    return [borrow(k, donor) if k.plain else k for k in kernels]
