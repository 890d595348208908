"""Every rendering through the real compilers and the limit profiles; diagnostics for people."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from wgslgen.check.engines import ENGINES, get_engine
from wgslgen.check.engines.base import ShaderInput, Verdict
from wgslgen.check.limits import LimitProfile, check_directives, check_passes
from wgslgen.render.renderer import RenderedVariant

# Which compiler family each engine reads: wgpu-native compiles with naga, Chrome with Tint.
ENGINE_FAMILY = {"naga": "naga", "wgpu": "naga", "dawn": "tint"}

# A compiler refusing a variant because of a device limit gives a profile verdict, not a bug.
_LIMIT_MESSAGE = re.compile(
    r"maximum allowed|exceeds|too many|larger than the (?:max|limit)|limit", re.IGNORECASE
)


@dataclass
class VariantResult:
    """One rendering's verdicts: one per engine that read it, and one per profile."""

    rendered: RenderedVariant
    engines: dict[str, Verdict] = field(default_factory=dict)
    profiles: dict[str, list[str]] = field(default_factory=dict)

    def compile_errors(self) -> list[Verdict]:
        """Engine failures that are not about device limits."""
        return [v for v in self.engines.values() if not v.ok and not is_limit_failure(v)]

    def fits(self, profile: str) -> bool:
        """Whether the static check and every engine that checks limits accept the profile."""
        return not self.profiles.get(profile)


@dataclass
class Diagnostic:
    """One failure message, shown once with every rendering it occurred in."""

    engine: str
    message: str
    generated: str  # generated/<file>:line
    template: str  # template file:line the line came from
    detail: str
    variants: list[str]


@dataclass
class ValidationReport:
    """Verdicts of every rendering, the engines used and those that were not available."""

    results: list[VariantResult]
    engine_versions: dict[str, str]
    engines_missing: dict[str, str]
    profiles: list[str]

    def compile_failures(self) -> list[VariantResult]:
        """Renderings at least one compiler rejected for a reason other than a limit."""
        return [r for r in self.results if r.compile_errors()]

    def not_fitting(self, profile: str) -> list[VariantResult]:
        """Renderings that do not fit ``profile``."""
        return [r for r in self.results if not r.fits(profile)]

    def diagnostics(self) -> list[Diagnostic]:
        """Compile errors grouped by (engine, message, template line)."""
        groups: dict[tuple[str, str, str], Diagnostic] = {}
        for r in self.results:
            for v in r.compile_errors():
                origin = r.rendered.origin(v.line) if v.line else ("?", 0)
                template = f"{origin[0]}:{origin[1]}" if origin[1] else origin[0]
                key = (v.engine, v.message, template)
                if key not in groups:
                    where = f"generated/{r.rendered.relpath}:{v.line or '?'}"
                    groups[key] = Diagnostic(v.engine, v.message, where, template, v.diagnostic, [])
                groups[key].variants.append(r.rendered.name)
        return list(groups.values())

    def to_dict(self) -> dict[str, Any]:
        """Everything, every diagnostic included, for --json."""
        return {
            "engines": self.engine_versions,
            "engines_missing": self.engines_missing,
            "profiles": self.profiles,
            "summary": {
                "renderings": len(self.results),
                "compile_failures": len(self.compile_failures()),
                "not_fitting": {p: len(self.not_fitting(p)) for p in self.profiles},
            },
            "results": [
                {
                    "kernel": r.rendered.kernel,
                    "variant": r.rendered.name,
                    "family": r.rendered.family,
                    "file": r.rendered.relpath,
                    "engines": {
                        name: {
                            "ok": v.ok,
                            "limit": is_limit_failure(v),
                            "message": v.message,
                            "line": v.line,
                            "column": v.column,
                            "diagnostic": v.diagnostic,
                            "template": _template_origin(r.rendered, v),
                        }
                        for name, v in r.engines.items()
                    },
                    "profiles": r.profiles,
                }
                for r in self.results
            ],
        }


def is_limit_failure(verdict: Verdict) -> bool:
    """Whether a failing verdict is a device-limit refusal rather than a compile error."""
    return not verdict.ok and bool(_LIMIT_MESSAGE.search(verdict.message))


def _template_origin(rendered: RenderedVariant, verdict: Verdict) -> str | None:
    if verdict.ok or not verdict.line:
        return None
    file, line = rendered.origin(verdict.line)
    return f"{file}:{line}"


def resolve_engines(names: Sequence[str] | None) -> tuple[dict[str, Any], dict[str, str]]:
    """The engines to use (default: every available one) and why the others are missing."""
    wanted = list(names) if names else list(ENGINES)
    engines, missing = {}, {}
    for name in wanted:
        engine = get_engine(name)
        why = engine.availability()
        if why is None:
            engines[name] = engine
        else:
            missing[name] = why
    return engines, missing


def validate(
    rendered: Sequence[RenderedVariant],
    profiles: Sequence[LimitProfile],
    engine_names: Sequence[str] | None = None,
    on_done: Callable[[str], None] | None = None,
) -> ValidationReport:
    """Judge every rendering with each engine of its family and against each profile."""
    engines, missing = resolve_engines(engine_names)
    results = [VariantResult(r) for r in rendered]
    # Engines compile with the first profile's limits; the static check covers the rest.
    limits = dict(profiles[0].limits) if profiles else {}
    for res in results:
        facts = res.rendered.facts[res.rendered.entry_point]
        for profile in profiles:
            reasons = check_passes(res.rendered.facts, profile, res.rendered.features)
            family = res.rendered.family
            for fam in ENGINE_FAMILY.values() if family == "any" else [family]:
                reasons += [r for r in check_directives(facts, fam) if r not in reasons]
            res.profiles[profile.name] = reasons

    def run_engine(name: str) -> list[tuple[int, Verdict]]:
        family = ENGINE_FAMILY[name]
        mine = [i for i, r in enumerate(results) if r.rendered.family in ("any", family)]
        # naga judges a module; wgpu and Dawn build a pipeline, so once per pass's entry point.
        per_pass = name != "naga"
        shaders = [
            ShaderInput(
                id=f"{i}:{entry}",
                source=results[i].rendered.source,
                features=results[i].rendered.features,
                limits=limits,
                path=f"generated/{results[i].rendered.relpath}",
                entry_point=entry,
            )
            for i in mine
            for entry in (results[i].rendered.entry_points if per_pass else [None])
        ]
        verdicts = engines[name].validate(shaders) if shaders else []
        if on_done:
            on_done(name)
        return [(int(v.id.split(":")[0]), v) for v in verdicts]

    # naga and Dawn run in their own processes, so the engines overlap well in threads.
    with ThreadPoolExecutor(max_workers=max(1, len(engines))) as pool:
        for pairs in pool.map(run_engine, list(engines)):
            for index, verdict in pairs:
                seen = results[index].engines.get(verdict.engine)
                if seen is None or (seen.ok and not verdict.ok):  # a failing pass decides
                    results[index].engines[verdict.engine] = verdict
    versions = {name: engine.version() for name, engine in engines.items()}
    for engine in engines.values():
        getattr(engine, "close", lambda: None)()
    return ValidationReport(results, versions, missing, [p.name for p in profiles])
