"""Bindings that kernel.toml declares and no rendering uses: a forgotten use, or a binding to
drop (the harness fills and passes it all the same, so no test notices)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from wgslgen.check.wgsl_tokens import strip_comments
from wgslgen.errors import WgslgenError
from wgslgen.spec.kernel import KernelSpec
from wgslgen.spec.toml_lines import located


def unused_bindings(spec: KernelSpec, sources: Iterable[str]) -> list[str]:
    """Messages for ``spec``'s bindings named by none of ``sources`` but in their declaration."""
    if spec.plain or spec.spec_path is None:
        return []
    names = {b.name for b in spec.bindings}
    for source in sources:
        try:
            code = strip_comments(source)
        except WgslgenError:  # an unterminated comment: the compilers say so
            return []
        names = {n for n in names if len(re.findall(rf"\b{re.escape(n)}\b", code)) < 2}
        if not names:
            return []
    return [
        f"{located(spec.spec_path, ('binding', i, 'name'))}: binding {b.name!r} is declared "
        "but no variant's code uses it (a use forgotten in the template, or a binding to drop)"
        for i, b in enumerate(spec.bindings)
        if b.name in names
    ]
