"""Verdicts per implementation: does a rendering compile in naga/wgpu (Firefox, wgpu) and in
Tint (Chrome)? Kept apart from the limit profiles, with known implementation gaps marked.

A gap is a refusal by one implementation of something WebGPU allows: it says nothing about
the shader. The table below names those wgslgen recognises in the compilers' own messages.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from wgslgen.check.engines.base import Verdict
from wgslgen.check.stage_rules import Finding
from wgslgen.check.wgsl import WgslFacts

IMPLEMENTATIONS = {"naga": ("naga", "wgpu"), "tint": ("dawn",)}  # which engines answer for each

# (pattern in naga's or wgpu-native's diagnostic, what the gap is)
KNOWN_GAPS = (
    (
        re.compile(r"`subgroups` enable-extension is not yet supported"),
        "naga 30 does not implement `enable subgroups;` (standard WebGPU; Chrome accepts it)",
    ),
    (
        re.compile(r"is a pointer of space (?:Storage|Uniform|WorkGroup)"),
        "naga 30 does not implement unrestricted pointer parameters (a `ptr<storage|uniform|"
        "workgroup, ...>` function parameter; Tint accepts it)",
    ),
    (
        re.compile(r"Capabilities\(IMMEDIATES\) is not supported"),
        "wgpu-native needs its native `immediates` feature for `var<immediate>` "
        "(Dawn offers 64 B by default)",
    ),
    (
        re.compile(r"`@diagnostic\(…\)` attribute\(s\) not yet implemented"),
        "naga 30 does not implement `@diagnostic` attributes on statements",
    ),
)


def known_gap(text: str) -> str | None:
    """The implementation gap a compiler message shows, or None."""
    for pattern, gap in KNOWN_GAPS:
        if pattern.search(text):
            return gap
    return None


@dataclass
class Implementation:
    """One implementation's verdict on one rendering."""

    name: str  # "naga" (naga / wgpu-native: Firefox, wgpu) or "tint" (Dawn: Chrome)
    ok: bool | None  # None: not judged (the rendering is for the other family, or no engine)
    reasons: list[str] = field(default_factory=list)
    gap: bool = False  # refused only for known gaps of the implementation
    source: str = ""  # which engines answered, or "static" (wgslgen's own reading)
    findings: list[Finding] = field(default_factory=list)  # static Tint-rule findings

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {
            "ok": self.ok,
            "gap": self.gap,
            "source": self.source,
            "reasons": self.reasons,
        }


def naga_verdict(engines: dict[str, Verdict], limit: Callable[[Verdict], bool]) -> Implementation:
    """naga/wgpu's verdict from their engine verdicts (limit refusals excluded)."""
    used = [e for e in IMPLEMENTATIONS["naga"] if e in engines]
    out = Implementation("naga", None, source=",".join(used))
    if not used:
        return out
    gaps, reasons = [], []
    for v in (engines[e] for e in used):
        if not v.ok and not limit(v):
            gap = known_gap(v.diagnostic or v.message)
            (gaps if gap else reasons).append(gap or f"{v.engine}: {v.message}")
    out.reasons = list(dict.fromkeys(reasons + gaps))
    out.gap = bool(gaps) and not reasons
    out.ok = not out.reasons
    return out


def tint_static(
    naga: Implementation, findings: list[Finding], directives: list[str], facts: WgslFacts
) -> Implementation:
    """Tint's verdict predicted without Dawn: what naga/wgpu refuse for a reason that is not
    a naga gap, Tint's own rules, the enables Tint needs, 64-bit integers."""
    out = Implementation("tint", True, source="static", findings=list(findings))
    if naga.ok is False and not naga.gap:
        out.reasons += [r for r in naga.reasons if known_gap(r) is None]
    out.reasons += [f.text() for f in findings]
    out.reasons += directives
    out.reasons += [f"unresolved type '{t}'" for t in sorted(facts.int64)]
    out.reasons = list(dict.fromkeys(out.reasons))
    out.ok = not out.reasons
    return out


def tint_dawn(
    engines: dict[str, Verdict], limit: Callable[[Verdict], bool]
) -> Implementation | None:
    """Dawn's own verdict (limit refusals excluded), when Dawn ran."""
    verdict = engines.get("dawn")
    if verdict is None:
        return None
    reasons = [] if verdict.ok or limit(verdict) else [f"dawn: {verdict.message}"]
    return Implementation("tint", not reasons, reasons, source="dawn")
