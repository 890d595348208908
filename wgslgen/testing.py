"""For users' own pytest suites: check that a project's kernels pass, without the CLI.

Example, in a project that keeps its kernels under ``kernels/`` and its tests under
``tests/`` (a path from the test file's folder: pytest may run from any folder)::

    from pathlib import Path

    from wgslgen.testing import assert_kernel_passes

    KERNELS = Path(__file__).parent.parent / "kernels"

    def test_softmax_kernels():
        assert_kernel_passes("softmax", templates=[KERNELS], adapter="cpu")
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from wgslgen.config import load_project
from wgslgen.errors import WgslgenError
from wgslgen.render.build import apply_overrides
from wgslgen.run.borrowed_reference import with_reference
from wgslgen.run.harness import DEFAULT_TIMEOUT_S, Report, check_kernels
from wgslgen.spec.kernel import KernelSpec, Variant, parse_shape
from wgslgen.spec.loader import discover, select

__all__ = ["Report", "assert_kernel_passes", "check_kernel"]


def check_kernel(
    name: str,
    templates: Sequence[Path | str] | Path | str | None = None,
    shapes: Sequence[Mapping[str, int] | str] | None = None,
    adapter: str | None = None,
    *,
    profile: str = "adapter",
    reference: str | None = None,
    only: Mapping[str, object] | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    seed: int = 0,
) -> Report:
    """Run kernel ``name``'s variants that fit ``profile`` against its reference; the Report.

    ``shapes`` default to the spec's test shapes (dicts or ``"k=v,..."`` text); ``only``
    keeps the variants with these axis values; ``reference`` lets a plain .wgsl kernel borrow
    a named kernel's interface and reference, as ``wgslgen test --reference`` does.
    ``templates`` default to the project's, as for the CLI: those of the wgslgen.toml (or
    pyproject.toml's [tool.wgslgen]) found from the current folder up, else the bundled ones.
    """
    if templates is None:
        templates = list(load_project().templates)
    elif isinstance(templates, str | Path):  # one folder (a str would be read letter by letter)
        templates = [templates]
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        raise WgslgenError(f"timeout must be a positive number of seconds, not {timeout!r}")
    broken: list[WgslgenError] = []  # another kernel's broken kernel.toml does not stop this one
    found = discover(templates, broken=broken)
    if broken and name not in {k.name for k in found}:
        raise broken[0]  # it may be this kernel's
    kernels = with_reference(select(found, [name]), reference, templates)
    parsed = [parse_shape(s) if isinstance(s, str) else dict(s) for s in shapes or []]

    def chooser(spec: KernelSpec) -> list[Variant]:
        return apply_overrides(spec, {k: str(v) for k, v in (only or {}).items()})

    return check_kernels(
        kernels,
        shapes=parsed or None,
        profile=profile,
        adapter=adapter,
        timeout=timeout,
        seed=seed,
        select=chooser if only else None,
    )


def assert_kernel_passes(
    name: str,
    templates: Sequence[Path | str] | Path | str | None = None,
    shapes: Sequence[Mapping[str, int] | str] | None = None,
    adapter: str | None = None,
    *,
    profile: str = "adapter",
    reference: str | None = None,
    only: Mapping[str, object] | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    seed: int = 0,
) -> Report:
    """Like :func:`check_kernel`, but raise AssertionError listing every failing case."""
    report = check_kernel(
        name, templates, shapes, adapter, profile=profile, reference=reference, only=only,
        timeout=timeout, seed=seed,
    )  # fmt: skip
    if not report.ok:
        raise AssertionError(f"kernel {name} does not pass:\n{report.failure_table()}")
    return report
