"""Constraint, precondition and dispatch expressions: Jinja's sandboxed expression language.

Specs are vendored from other projects, so their expressions never reach ``eval``: they are
compiled by Jinja's sandbox, and the names they use are checked against the names in scope
before anything is evaluated.
"""

from __future__ import annotations

import contextlib
import math
import re
import signal
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import jinja2
import jinja2.compiler
import jinja2.filters
import jinja2.meta
import jinja2.nodes
import jinja2.sandbox

from wgslgen.errors import WgslgenError

MAX_INT_BITS = 4096  # no kernel size, dispatch or constant comes near; 10**(10**10) does
MAX_SEQUENCE = 1 << 22  # characters or items one `*` may build (a whole rendering's budget)
EXPRESSION_SECONDS = 2.0


_WIDE_FORMAT = re.compile(r"%[-+ #0]*(\d{7,}|\*)|\.\d{7,}")


class BudgetExceeded(Exception):
    """A template or expression needed more time, memory or digits than any kernel needs."""


_STATE = threading.local()


def check_deadline() -> None:
    """Raise BudgetExceeded when the running render or evaluation is past its deadline."""
    deadline = getattr(_STATE, "deadline", None)
    if deadline is not None and time.monotonic() > deadline[0]:
        if deadline[2]:  # this check wins: the timer must not fire into the error handling
            signal.setitimer(signal.ITIMER_REAL, 0)
        raise BudgetExceeded(f"took longer than its {deadline[1]:g} s budget")


@contextlib.contextmanager
def time_budget(seconds: float, interrupt: bool = True) -> Iterator[None]:
    """Bound the wall time of the block: every sandboxed call, operator and range step checks
    the deadline, and with ``interrupt`` (main thread only) a timer signal also stops a loop
    that makes no call at all."""
    outer = getattr(_STATE, "deadline", None)
    use_signal = (
        interrupt and threading.current_thread() is threading.main_thread() and outer is None
    )
    _STATE.deadline = (time.monotonic() + seconds, seconds, use_signal)
    if use_signal:

        def on_alarm(signum: int, frame: Any) -> None:
            raise BudgetExceeded(f"took longer than its {seconds:g} s budget")

        previous = signal.signal(signal.SIGALRM, on_alarm)
        # A little after the deadline: the checks in calls and ranges usually stop the work
        # first; the timer is for loops that make no call at all.
        signal.setitimer(signal.ITIMER_REAL, seconds + 0.25)
    try:
        yield
    finally:
        if use_signal:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
        _STATE.deadline = outer


def _bits(x: Any) -> float:
    if isinstance(x, bool) or not isinstance(x, int):
        return 0.0
    return float(abs(x).bit_length())


def _check_binop(operator: str, left: Any, right: Any) -> None:
    """Refuse an operation whose result would be absurdly large, before computing it."""
    if operator == "**" and isinstance(left, int) and isinstance(right, int) and right > 0:
        if abs(left) > 1 and right * math.log2(abs(left)) > MAX_INT_BITS:
            raise BudgetExceeded(f"{left} ** {right} has more than {MAX_INT_BITS} bits")
    elif operator == "*":
        for seq, n in ((left, right), (right, left)):
            repeated = isinstance(seq, str | list | tuple) and isinstance(n, int) and n > 0
            if repeated and len(seq) * n > MAX_SEQUENCE:
                raise BudgetExceeded(
                    f"repeating a {type(seq).__name__} of length {len(seq)} {n} times "
                    f"exceeds {MAX_SEQUENCE} items"
                )
        if _bits(left) + _bits(right) > MAX_INT_BITS:
            raise BudgetExceeded(f"a product of more than {MAX_INT_BITS} bits")
    elif operator == "%" and isinstance(left, str) and _WIDE_FORMAT.search(left):
        raise BudgetExceeded(f"format {left!r} pads to a width of millions of characters")
    elif operator == "+" and isinstance(left, str | list | tuple) and hasattr(right, "__len__"):
        _check_length(len(left) + len(right), "+")


def _check_length(n: int, how: str) -> None:
    """Refuse a string or list of more than MAX_SEQUENCE characters or items built by ``how``
    (doubling in a loop would otherwise reach gigabytes long before the time budget ends)."""
    if n > MAX_SEQUENCE:
        raise BudgetExceeded(f"{how} would build {n} characters or items (over {MAX_SEQUENCE})")


def _bounded_concat(parts: tuple[Any, ...]) -> str:
    """``a ~ b ~ …`` within MAX_SEQUENCE characters."""
    check_deadline()
    texts = [str(x) for x in parts]
    _check_length(sum(map(len, texts)), "~")
    return "".join(texts)


def _bounded_join(environment: Any, value: Any, d: str = "", attribute: Any = None) -> str:
    """The join filter within MAX_SEQUENCE characters."""
    items = [str(x) for x in value] if attribute is None else None
    if items is not None:
        _check_length(sum(map(len, items)) + len(d) * max(len(items) - 1, 0), "join")
        return d.join(items)
    text = jinja2.filters.do_join(environment, value, d, attribute)
    _check_length(len(text), "join")
    return text


class _BoundedConcatGenerator(jinja2.compiler.CodeGenerator):
    """Compiles ``~`` to a length-checked join (Jinja's own has no operator hook for it)."""

    def visit_Concat(self, node: jinja2.nodes.Concat, frame: Any) -> None:
        self.write("environment.bounded_concat((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")


_WIDE_BRACE_FORMAT = re.compile(r"\{[^{}]*:[^{}]*(\d{7,}|\{)")


class _BoundedRange:
    """range() whose iteration checks the deadline (nested loops cannot run for hours)."""

    def __init__(self, *args: int) -> None:
        self._range = jinja2.sandbox.safe_range(*args)

    def __len__(self) -> int:
        return len(self._range)

    def __getitem__(self, i: Any) -> Any:
        return self._range[i]

    def __contains__(self, x: object) -> bool:
        return x in self._range

    def __iter__(self) -> Iterator[int]:
        for i in self._range:
            check_deadline()
            yield i


class BoundedSandbox(jinja2.sandbox.ImmutableSandboxedEnvironment):
    """Jinja's immutable sandbox plus bounds on arithmetic, repetition, ranges and time."""

    intercepted_binops = frozenset({"**", "*", "+", "//", "%"})
    code_generator_class = _BoundedConcatGenerator

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.globals["range"] = _BoundedRange
        self.filters["join"] = jinja2.filters.pass_environment(_bounded_join)
        self.bounded_concat = _bounded_concat

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        """Check the size of the result and the deadline, then compute."""
        check_deadline()
        _check_binop(operator, left, right)
        return super().call_binop(context, operator, left, right)

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        """Every call made by a template or expression checks the deadline first."""
        check_deadline()
        bound = getattr(__obj, "__wrapped__", __obj)  # the sandbox wraps str.format
        text = getattr(bound, "__self__", None)
        formats = getattr(bound, "__name__", "") in ("format", "format_map")
        if formats and isinstance(text, str) and _WIDE_BRACE_FORMAT.search(text):
            raise BudgetExceeded(f"format {text!r} pads to a width of millions of characters")
        return super().call(__context, __obj, *args, **kwargs)


_ENV = BoundedSandbox(undefined=jinja2.StrictUndefined)


@dataclass(frozen=True)
class Expression:
    """A compiled expression with the text and place it came from, for error messages."""

    text: str
    where: str
    names: frozenset[str]
    _compiled: Any = field(compare=False, repr=False)

    def __call__(self, scope: Mapping[str, Any]) -> Any:
        """Evaluate in ``scope``; an error names the expression and where it was written."""
        try:
            # Expressions cannot loop, so the cheap deadline checks suffice (no timer signal).
            with time_budget(EXPRESSION_SECONDS, interrupt=False):
                return self._compiled(**scope)
        except BudgetExceeded as exc:
            raise WgslgenError(f"{self.where}: expression {self.text!r}: {exc}") from None
        except jinja2.UndefinedError as exc:
            raise WgslgenError(f"{self.where}: expression {self.text!r}: {exc}") from None
        except Exception as exc:  # arithmetic on the user's values: ZeroDivisionError, ...
            raise WgslgenError(
                f"{self.where}: expression {self.text!r} failed: {type(exc).__name__}: {exc}"
            ) from None


def compile_expression(text: Any, where: str, known: Iterable[str]) -> Expression:
    """Compile ``text``, refusing syntax errors and names not in ``known``."""
    if isinstance(text, bool | int | float):
        text = repr(text).lower() if isinstance(text, bool) else str(text)
    if not isinstance(text, str) or not text.strip():
        raise WgslgenError(f"{where}: expected an expression string, got {text!r}")
    try:
        names = jinja2.meta.find_undeclared_variables(_ENV.parse("{{ " + text + " }}"))
        compiled = _ENV.compile_expression(text, undefined_to_none=False)
    except jinja2.TemplateSyntaxError as exc:
        raise WgslgenError(f"{where}: expression {text!r} is not valid: {exc.message}") from None
    known = set(known)
    unknown = sorted(set(names) - known)
    if unknown:
        raise WgslgenError(
            f"{where}: expression {text!r} names unknown variable(s) {', '.join(unknown)}; "
            f"known: {', '.join(sorted(known)) or '(none)'}"
        )
    return Expression(text=text, where=where, names=frozenset(names), _compiled=compiled)
