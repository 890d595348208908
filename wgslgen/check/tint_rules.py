"""Tint's static rules that naga does not check, applied without Dawn.

``check(source)`` returns what Tint would reject a module for beyond what naga validates:
stage and address-space rules, ``@workgroup_size`` argument typing, behaviour analysis
(loops that never exit, functions that may not return a value) and the uniformity analysis.
Tint stops at its first error; so do these rules, in that order.
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys

from wgslgen.check.behaviour import Behaviours, check_behaviour
from wgslgen.check.stage_rules import Finding, stage_rules, workgroup_size_types
from wgslgen.check.uniformity import Analysis
from wgslgen.check.wgsl_body import BodyParser
from wgslgen.check.wgsl_reader import Module, strip_comments
from wgslgen.errors import WgslgenError

__all__ = ["Finding", "check", "check_many"]


def check(source: str) -> list[Finding]:
    """Tint-rule violations of a WGSL module, first one first; [] when none is found.

    A text this reader cannot follow gives no findings (the compilers judge it instead):
    a limitation of the reader must never turn into a verdict about the shader.
    """
    try:
        mod = Module(source)
        for rule in (stage_rules, workgroup_size_types):
            if found := rule(mod):
                return found[:1]
        parser = BodyParser(mod)
        beh = Behaviours(mod)
        if found := check_behaviour(mod, parser, beh):
            return found[:1]
        return Analysis(mod, parser, beh).run()[:1]
    except (WgslgenError, IndexError, KeyError, ValueError, RecursionError):
        return []


def check_many(sources: list[str | None]) -> list[list[Finding]]:
    """``check`` of each text (None: not asked, []); a job for a process of its own.

    Texts that differ only in the values of numeric literals (the variants of one template,
    mostly) share one reading when it finds nothing: no rule here depends on a literal's
    value, only on its suffix, which is kept. (A text with findings is read on its own, so
    that each finding's column is its own.)
    """
    out: list[list[Finding]] = []
    clean: set[str] = set()
    for source in sources:
        if source is None:
            out.append([])
            continue
        try:
            key = _NUMBER.sub("0", strip_comments(source))
        except WgslgenError:
            key = None
        found = [] if key in clean else check(source)
        if key is not None and not found:
            clean.add(key)
        out.append(found)
    return out


_NUMBER = re.compile(r"\b\d+")  # a numeric literal's digits (never an identifier's)


def main() -> int:
    """``python -m wgslgen.check.tint_rules``: a JSON list of texts (or null) on stdin, the
    findings of each on stdout (``[[{"rule", "message", "line", "column"}, ...], ...]``)."""
    sources = json.load(sys.stdin)
    found = check_many(sources)
    json.dump([[dataclasses.asdict(f) for f in each] for each in found], sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
