"""Tint's static rules that naga does not check, applied without Dawn.

``check(source)`` returns what Tint would reject a module for beyond what naga validates:
stage and address-space rules, ``@workgroup_size`` argument typing, behaviour analysis
(loops that never exit, functions that may not return a value) and the uniformity analysis.
Tint stops at its first error; so do these rules, in that order.
"""

from __future__ import annotations

from wgslgen.check.behaviour import Behaviours, check_behaviour
from wgslgen.check.stage_rules import Finding, stage_rules, workgroup_size_types
from wgslgen.check.uniformity import Analysis
from wgslgen.check.wgsl_body import BodyParser
from wgslgen.check.wgsl_reader import Module
from wgslgen.errors import WgslgenError

__all__ = ["Finding", "check"]


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
