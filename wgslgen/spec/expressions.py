"""Constraint, precondition and dispatch expressions: Jinja's sandboxed expression language.

Specs are vendored from other projects, so their expressions never reach ``eval``: they are
compiled by Jinja's sandbox, and the names they use are checked against the names in scope
before anything is evaluated.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import jinja2
import jinja2.meta
import jinja2.sandbox

from wgslgen.errors import WgslgenError

_ENV = jinja2.sandbox.ImmutableSandboxedEnvironment(undefined=jinja2.StrictUndefined)


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
            return self._compiled(**scope)
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
