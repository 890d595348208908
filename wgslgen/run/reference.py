"""A kernel's numpy reference: loading it, making test cases, comparing, lending it to .wgsl files.

A test case is the inputs for one shape and seed, quantised through each binding's encoding
(an f16 input is rounded to f16 before the reference sees it, so a comparison measures the
kernel and not the rounding of its inputs), the bytes to upload, and the expected outputs.
What comes back is compared per output with the variant's tolerances.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import sys
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from wgslgen.errors import WgslgenError
from wgslgen.spec.expressions import BudgetExceeded, time_budget
from wgslgen.spec.interface import Binding
from wgslgen.spec.kernel import Case, KernelSpec

MakeInputs = Callable[[dict[str, int], np.random.Generator], dict[str, np.ndarray]]
ReferenceFn = Callable[[dict[str, np.ndarray], dict[str, int]], dict[str, np.ndarray]]

# Importing reference.py when no deadline is given (the harness passes its timeout).
IMPORT_SECONDS = 60.0
# Canary for output buffers: a variant that leaves part of its output unwritten shows NaN
# there (or, for integer outputs, a pattern that is rarely a real result).
_CANARY = {"f": np.nan, "u": 0xCDCDCDCD, "i": -0x32323233}


@dataclass(frozen=True)
class Reference:
    """The two functions of a kernel's reference.py."""

    path: Path
    make_inputs: MakeInputs
    reference: ReferenceFn


@dataclass(frozen=True)
class TestData:
    """One case's inputs, ready to upload, and what must come back."""

    __test__ = False  # not a pytest class

    case: Case
    data: dict[str, bytes]  # initial buffer contents per binding (canary for outputs)
    inputs: dict[str, np.ndarray]  # quantised inputs, as the reference saw them
    expected: dict[str, np.ndarray]  # reference outputs, in their natural shape


@dataclass(frozen=True)
class OutputCheck:
    """How one output compared: counts, largest errors and the worst element."""

    name: str
    ok: bool
    count: int
    bad: int  # elements outside atol + rtol·|want|
    nonfinite: int  # NaN/Inf where the reference is finite (NaN is the canary)
    max_abs: float
    max_rel: float
    worst_index: tuple[int, ...]
    got: float
    want: float

    def summary(self) -> str:
        """One line: what is off, by how much, and where."""
        where = f"[{', '.join(map(str, self.worst_index))}]"
        text = (
            f"{self.name}: {self.bad}/{self.count} off, max abs {self.max_abs:.3g}, "
            f"max rel {self.max_rel:.3g}, worst at {where} (got {self.got:.6g}, "
            f"want {self.want:.6g})"
        )
        if self.nonfinite:
            text += f"; {self.nonfinite} NaN/Inf (NaN is the canary: unwritten?)"
        return text


def compare(name: str, got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> OutputCheck:
    """Compare ``got`` with ``want``: an element fails when |got−want| > atol + rtol·|want|."""
    want = np.asarray(want)
    got = np.asarray(got, dtype=np.float64).reshape(want.shape)
    want = want.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        finite = np.isfinite(want)
        diff = np.abs(got - want)
        allowed = atol + rtol * np.abs(want)
        # NaN or Inf passes only where the reference has the same there.
        special_ok = (np.isnan(want) & np.isnan(got)) | (~np.isnan(want) & (got == want))
        bad = np.where(finite, ~(diff <= allowed), ~special_ok)
        diff = np.where(bad & ~np.isfinite(diff), np.inf, np.where(np.isfinite(diff), diff, 0.0))
        rel = np.where(want != 0, diff / np.abs(want), np.where(diff > 0, np.inf, 0.0))
        score = np.where(allowed > 0, diff / allowed, np.where(diff > 0, np.inf, 0.0))
    flat = int(np.argmax(score)) if score.size else 0
    index = tuple(int(i) for i in np.unravel_index(flat, want.shape)) if want.size else ()
    return OutputCheck(
        name=name,
        ok=not bad.any(),
        count=int(want.size),
        bad=int(bad.sum()),
        nonfinite=int((finite & ~np.isfinite(got)).sum()),
        max_abs=float(diff.max()) if diff.size else 0.0,
        max_rel=float(rel.max()) if rel.size else 0.0,
        worst_index=index,
        got=float(got.reshape(-1)[flat]) if want.size else 0.0,
        want=float(want.reshape(-1)[flat]) if want.size else 0.0,
    )


_loaded: dict[tuple[str, int], Reference] = {}
# A failed import, per file version and deadline: every case of the kernel would import it
# again, and a hanging one would wait its deadline each time.
_failed: dict[tuple[str, int, float], WgslgenError] = {}


def load_reference(spec: KernelSpec, timeout: float | None = None) -> Reference:
    """Import ``spec``'s reference.py (cached per file version) within ``timeout`` seconds
    (default IMPORT_SECONDS); errors name the file."""
    path = spec.reference_path
    if path is None:
        how = (
            "a plain .wgsl kernel borrows one with --reference KERNEL"
            if spec.plain
            else f"add reference.py next to {spec.spec_path}"
        )
        raise WgslgenError(f"kernel {spec.name} has no numpy reference; {how}")
    key = (str(path.resolve()), path.stat().st_mtime_ns)
    if key in _loaded:
        return _loaded[key]
    budget = timeout if timeout and timeout > 0 else IMPORT_SECONDS
    if (*key, budget) in _failed:
        raise _failed[(*key, budget)].with_traceback(None)
    try:
        _loaded[key] = _import(spec, path, key[0], budget)
    except WgslgenError as exc:
        _failed[(*key, budget)] = exc
        raise
    return _loaded[key]


def _import(spec: KernelSpec, path: Path, resolved: str, budget: float) -> Reference:
    """Execute reference.py as a module of its own and take its two functions."""
    digest = hashlib.sha256(resolved.encode()).hexdigest()[:12]
    name = f"wgslgen_reference_{spec.name.replace('-', '_')}_{digest}"
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:
        raise WgslgenError(f"{path}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module  # dataclasses and pickling inside the module look it up here
    try:
        with contextlib.redirect_stdout(sys.stderr), time_budget(budget):
            module_spec.loader.exec_module(module)
    except BudgetExceeded:
        sys.modules.pop(name, None)
        raise WgslgenError(
            f"{path}: importing the reference timed out: it did not finish within the "
            f"deadline of {budget:g} s"
        ) from None
    except SystemExit as exc:  # would end wgslgen itself, with the reference's exit code
        sys.modules.pop(name, None)
        raise WgslgenError(
            f"{_user_frame(exc, path)}: importing the reference called sys.exit({exc.code!r}); "
            "a reference must define its functions, not exit"
        ) from None
    except Exception as exc:
        sys.modules.pop(name, None)
        raise WgslgenError(
            f"{_user_frame(exc, path)}: importing the reference failed: {type(exc).__name__}: {exc}"
        ) from None
    functions = {}
    for fn in ("make_inputs", "reference"):
        functions[fn] = getattr(module, fn, None)
        if not callable(functions[fn]):
            raise WgslgenError(
                f"{path}: defines no function {fn}(...)",
                hint="a reference.py defines make_inputs(shape, rng) and reference(inputs, "
                "shape): `wgslgen docs kernel-format` shows one, and so does the example "
                "kernel `wgslgen init` writes (kernels/rmsnorm/reference.py)",
            )
    return Reference(path, functions["make_inputs"], functions["reference"])


def _user_frame(exc: BaseException, path: Path) -> str:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == str(path)]
    return f"{path}:{frames[-1].lineno}" if frames else str(path)


def _encoded(b: Any, arr: np.ndarray, where: str) -> bytes:
    """``arr`` in the binding's encoding; a finite value that the encoding cannot hold (past
    f16's ±65504) is the input's fault, said here rather than as the reference's NaN/Inf."""
    with np.errstate(over="ignore", invalid="ignore"):
        data = b.encoding.encode(arr)
    host = np.dtype(b.encoding.host_dtype)
    if host.kind == "f" and arr.dtype.kind == "f":
        back = np.frombuffer(data, dtype=host)[: arr.size]
        lost = np.isfinite(arr.reshape(-1)) & ~np.isfinite(back)
        if lost.any():
            i = int(np.flatnonzero(lost)[0])
            raise WgslgenError(
                f"{where}: {b.name!r}[{i}] = {arr.reshape(-1)[i]:g} does not fit {b.encoding.name} "
                f"storage (largest finite {float(np.finfo(host).max):g}); {lost.sum()} value(s) "
                "would become Inf"
            )
    return data


def make_case(
    case: Case, ref: Reference, seed: int = 0, deadline_s: float | None = None
) -> TestData:
    """Inputs, upload bytes and expected outputs of a case (a variant at a shape).

    make_inputs and reference each run within ``deadline_s`` (the variant's deadline).
    """
    variant, counts = case.variant, case.counts
    # The shape plus derived values (not the axes): a constant such as eps is written once.
    sizes = {k: v for k, v in case.scope.items() if k not in variant.params}
    where = f"{ref.path}"
    rng = np.random.default_rng(seed)
    raw = _call(ref.make_inputs, where, "make_inputs", deadline_s, dict(sizes), rng)
    names = [b.name for b in variant.interface.bindings]
    stray = sorted(set(raw) - set(names)) if isinstance(raw, dict) else []
    if stray:  # a misspelt binding would otherwise be filled with nothing but a canary
        raise WgslgenError(
            f"{where}: make_inputs() gave {', '.join(map(repr, stray))}, which no binding of "
            f"{variant.spec.name} is named (its bindings: {', '.join(names)})"
        )
    data: dict[str, bytes] = {}
    inputs: dict[str, np.ndarray] = {}
    for b in variant.interface.bindings:
        if b.name in raw:  # an output given by make_inputs is an in-out buffer
            arr = _numeric(raw[b.name], b.name, f"{where}: make_inputs()")
            _check_size(arr, b, counts[b.name], f"{where}: make_inputs()")
            data[b.name] = _encoded(b, arr, f"{where}: make_inputs()")
            inputs[b.name] = b.encoding.decode(data[b.name], counts[b.name]).reshape(arr.shape)
        elif b.is_output or b.scratch:  # NaN canary: a pass reading unwritten scratch fails
            dtype = np.dtype(b.encoding.host_dtype)
            canary = np.full(counts[b.name], _CANARY[dtype.kind], dtype=dtype)
            data[b.name] = b.encoding.encode(canary)
        else:
            raise WgslgenError(f"{where}: make_inputs() gave no array for input binding {b.name!r}")
    expected = _call(ref.reference, where, "reference", deadline_s, dict(inputs), dict(sizes))
    out: dict[str, np.ndarray] = {}
    for b in variant.interface.bindings:
        if b.is_output:
            if b.name not in expected:
                raise WgslgenError(f"{where}: reference() returned no array for output {b.name!r}")
            arr = _numeric(expected[b.name], b.name, f"{where}: reference()", finite=True)
            _check_size(arr, b, counts[b.name], f"{where}: reference()")
            if arr.dtype.kind in "biu" and np.dtype(b.encoding.host_dtype).kind == "f":
                raise WgslgenError(  # e.g. an .astype(int) left in: every value truncated
                    f"{where}: reference(): {b.name!r} is an array of {arr.dtype} for a "
                    f"{b.encoding.name} binding; return floats (.astype(float) if whole "
                    "numbers are meant)"
                )
            out[b.name] = arr.astype(np.float64) if arr.dtype.kind == "f" else arr
    return TestData(case, data, inputs, out)


def _call(
    fn: Callable[..., Any], where: str, name: str, deadline_s: float | None, *args: Any
) -> dict[str, Any]:
    """Run the user's function: its prints go to stderr (stdout may carry JSON), and it must
    finish within ``deadline_s`` like the variant it judges."""
    try:
        with contextlib.redirect_stdout(sys.stderr), _deadline(deadline_s):
            result = fn(*args)
    except WgslgenError:
        raise
    except BudgetExceeded:
        raise WgslgenError(
            f"{where}: {name}() did not finish within the variant's deadline of {deadline_s:g} s"
        ) from None
    except SystemExit as exc:  # would end wgslgen itself (exit 0 over a failed run)
        raise WgslgenError(
            f"{_user_frame(exc, Path(where))}: {name}() called sys.exit({exc.code!r}); "
            "a reference must return its arrays, not exit"
        ) from None
    except Exception as exc:
        raise WgslgenError(
            f"{_user_frame(exc, Path(where))}: {name}() failed: {type(exc).__name__}: {exc}"
        ) from None
    if not isinstance(result, Mapping):
        raise WgslgenError(f"{where}: {name}() must return a dict of arrays by binding name")
    return dict(result)


def _deadline(seconds: float | None) -> contextlib.AbstractContextManager[None]:
    return time_budget(seconds) if seconds and seconds > 0 else contextlib.nullcontext()


def _numeric(value: Any, name: str, where: str, finite: bool = False) -> np.ndarray:
    """``value`` as a numeric array; a non-numeric array (or NaN/Inf with ``finite``) is the
    reference's error, not the kernel's."""
    try:
        arr = np.asarray(value)
    except Exception as exc:
        raise WgslgenError(f"{where}: {name!r} is not an array: {exc}") from None
    if arr.dtype.kind not in "biuf":
        raise WgslgenError(f"{where}: {name!r} is an array of {arr.dtype}, not of numbers")
    if finite and arr.dtype.kind == "f" and not np.isfinite(arr).all():
        i = int(np.flatnonzero(~np.isfinite(arr.ravel()))[0])
        raise WgslgenError(
            f"{where}: {name!r} holds NaN or Inf (first at flat index {i}: "
            f"{arr.ravel()[i]}); a reference must give finite expected values"
        )
    return arr


def _check_size(arr: np.ndarray, b: Binding, count: int, where: str) -> None:
    if arr.size != count:
        raise WgslgenError(
            f"{where}: {b.name!r} has {arr.size} elements (shape {arr.shape}), but the "
            f"interface says count = {b.count} = {count}"
        )
