"""Texts a compiler must not be given: a NUL byte, and brackets nested deep enough to crash
the in-process wgpu compiler. Each check is cheap and says why, so that one odd file gets
its own verdict instead of a misleading one, or a crash that loses every other file's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from wgslgen.check.wgsl_tokens import strip_comments
from wgslgen.errors import WgslgenError

if TYPE_CHECKING:
    from wgslgen.render.renderer import RenderedVariant

# wgpu-native's WGSL parser (the naga inside wgpu-native 29) recurses once per nested ( or [
# with no bound of its own, on the calling thread, and a stack overflow kills the whole
# process. Measured with wgpu-native 29.0.1.1 (about 2.8 KiB of stack a level): 2955 nested
# parentheses pass on an 8 MiB stack and 2956 crash; on 64 MiB, 23683 pass. WgpuEngine
# compiles on threads of WGPU_THREAD_STACK bytes, and texts nested deeper than
# WGPU_MAX_BRACKET_DEPTH are not given to it at all: a margin of 23, still 3 on 8 MiB. No
# browser compiles such a text: naga 30 refuses from about 200 nested parentheses ("Parser
# recursion limit exceeded"), Tint from 127 ("maximum parser recursive depth reached").
WGPU_MAX_BRACKET_DEPTH = 1000
WGPU_THREAD_STACK = 64 << 20

_BRACKET = re.compile(r"[(\[{]|[)\]}]")


def nul_byte_at(source: str) -> tuple[int, int] | None:
    """The 1-based line and column of the first NUL byte in ``source``, None if it holds
    none. No compiler should be given such a text: C strings end at a NUL, so a compiler
    would judge only the text before it (naga-wasm passes it, wgpu and Dawn then find no
    entry point), and the verdict would be about another shader."""
    at = source.find("\0")
    if at < 0:
        return None
    line = source.count("\n", 0, at) + 1
    return line, at - (source.rfind("\n", 0, at) + 1) + 1


def bracket_depth(source: str) -> int:
    """How deep ( [ { nest outside comments (an unterminated comment: in all the text)."""
    try:
        text = strip_comments(source)
    except WgslgenError:
        text = source  # counting inside the comment too can only overstate the depth
    depth = deepest = 0
    for m in _BRACKET.finditer(text):
        if m.group() in "([{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth = max(0, depth - 1)
    return deepest


def wgpu_nesting_refusal(source: str) -> str | None:
    """Why the in-process wgpu compiler is not given ``source`` (brackets nested deeper
    than it survives), or None."""
    # No text holding fewer opening brackets than the bound can nest deeper: counted at C
    # speed, this spares nearly every text the scan.
    if sum(source.count(c) for c in "([{") <= WGPU_MAX_BRACKET_DEPTH:
        return None
    depth = bracket_depth(source)
    if depth <= WGPU_MAX_BRACKET_DEPTH:
        return None
    return (
        f"not compiled by wgpu: brackets nest {depth} deep (wgslgen allows "
        f"{WGPU_MAX_BRACKET_DEPTH}); wgpu-native's parser would overflow its stack and crash "
        "(naga itself refuses from about 200 nested parentheses, Tint from 127)"
    )


def nul_refusals(renderings: Sequence[RenderedVariant | None]) -> dict[int, tuple[str, int, int]]:
    """By index in ``renderings``: why no engine is given a rendering's text (a NUL byte in
    it), and where in the rendering (line, column); the message names the line of the
    user's own file when the rendering is a plain file (behind wgslgen's header)."""
    out = {}
    for index, r in enumerate(renderings):
        at = None if r is None else nul_byte_at(r.source)
        if r is None or at is None:
            continue
        line, column = at
        shown = (r.origin(line)[1] or line) if r.variant.spec.plain else line
        why = f"contains a NUL byte at line {shown}, column {column}: cannot be compiled as given"
        out[index] = (why, line, column)
    return out
