"""Every rendering through the real compilers, Tint's static rules and the limit profiles.

Each rendering (or file that could not be rendered) gets its own verdicts and nothing aborts
the run: file problems (unreadable, not WebGPU, override values missing), one verdict per
implementation (naga/wgpu, Tint) with known implementation gaps marked, and one limit
verdict per profile.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from wgslgen import children
from wgslgen.check import tint_rules, verdict_cache
from wgslgen.check.engines import ENGINES, get_engine
from wgslgen.check.engines.base import ShaderInput, Verdict, contiguous_shares
from wgslgen.check.interface_check import declares_only, interface_mismatches
from wgslgen.check.limits import LimitProfile, check_directives, check_passes
from wgslgen.check.report import ValidationReport, file_path
from wgslgen.check.source_guards import nul_refusals
from wgslgen.check.stage_rules import Finding
from wgslgen.check.verdicts import Implementation, known_gap, naga_verdict, tint_dawn, tint_static
from wgslgen.check.wgsl import WgslFacts, analyze_entries, compute_entry_points
from wgslgen.children import python_env, run_process
from wgslgen.errors import WgslgenError
from wgslgen.render.renderer import RenderedVariant
from wgslgen.spec.interface import Interface

__all__ = [
    "FileProblem",
    "ValidationReport",
    "VariantResult",
    "is_limit_failure",
    "resolve_engines",
    "validate",
]

# Which compiler family each engine reads: wgpu-native compiles with naga, Chrome with Tint.
ENGINE_FAMILY = {"naga": "naga", "wgpu": "naga", "dawn": "tint"}

# Dawn worker processes at most (each holds its own Dawn instance: ~100 MB), and the most
# processes that read Tint's static rules (fewest texts each: a process starts in ~0.3 s).
MAX_DAWN_WORKERS = 4
MAX_RULES_PROCESSES = 4
_RULES_PER_PROCESS = 16

# A compiler refusing a variant because of a device limit gives a profile verdict, not a bug.
_LIMIT_MESSAGE = re.compile(
    r"maximum allowed|exceeds|too many|larger than the (?:max|limit)|limit", re.IGNORECASE
)


@dataclass(frozen=True)
class FileProblem:
    """A kernel or plain file that could not be rendered at all, and why."""

    kernel: str
    file: str
    reason: str


@dataclass
class VariantResult:
    """One rendering's verdicts (or one file's problem when there is no rendering)."""

    rendered: RenderedVariant | None
    kernel: str = ""
    name: str = ""
    file: str = ""
    problems: list[str] = field(default_factory=list)  # the file as a whole
    facts: dict[str, WgslFacts] = field(default_factory=dict)  # every @compute entry point
    constants: dict[str, float] = field(default_factory=dict)  # pipeline constants given
    engines: dict[str, Verdict] = field(default_factory=dict)
    profiles: dict[str, list[str]] = field(default_factory=dict)
    implementations: dict[str, Implementation] = field(default_factory=dict)
    tint_static: Implementation | None = None  # Tint predicted without Dawn (when Dawn did not run)
    interface: list[str] = field(default_factory=list)  # how it differs from kernel.toml
    interface_of: str = ""  # the kernel whose kernel.toml it was compared with
    expected: Interface | None = field(default=None, repr=False)  # to compare with, if needed

    def compile_errors(self) -> list[Verdict]:
        """Engine failures that are neither device limits nor known implementation gaps."""
        return [
            v
            for v in self.engines.values()
            if not v.ok and not is_limit_failure(v) and not known_gap(v.diagnostic or v.message)
        ]

    def fits(self, profile: str) -> bool:
        """Whether the file is usable and the static limit check accepts the profile."""
        return not self.problems and not self.profiles.get(profile)

    def compiles(self, implementation: str) -> bool:
        """Whether the implementation accepts the rendering (not judged counts as yes)."""
        verdict = self.implementations.get(implementation)
        return not self.problems and (verdict is None or verdict.ok is not False)


def is_limit_failure(verdict: Verdict) -> bool:
    """Whether a failing verdict is a device-limit refusal rather than a compile error."""
    return not verdict.ok and bool(_LIMIT_MESSAGE.search(verdict.message))


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


def _prepare(
    rendered: RenderedVariant,
    overrides: Mapping[str, float],
    expected: tuple[str, Interface] | None = None,
) -> VariantResult:
    """Facts for every @compute entry point (with the override values), file problems, and
    how the declarations differ from the interface of ``expected`` (kernel name, interface)
    or, for a template's rendering, of its own kernel.toml."""
    spec = rendered.variant.spec
    # A plain file is named by its own path; a template's rendering by its generated path.
    file = str(spec.template_path) if spec.plain else rendered.relpath
    res = VariantResult(rendered, rendered.kernel, rendered.name, file)
    facts = dict(rendered.facts)
    declared = next(iter(facts.values())).overrides if facts else frozenset()
    res.constants = {k: v for k, v in overrides.items() if k in declared}
    try:
        entries = compute_entry_points(rendered.source) if spec.plain else ()
        todo = [e for e in dict.fromkeys([*facts, *entries]) if e not in facts or res.constants]
        if todo:
            facts.update(analyze_entries(rendered.source, todo, res.constants))
    except WgslgenError as e:
        res.problems.append(f"cannot analyse: {e}")
    res.facts = facts
    if expected is None and not spec.plain:
        expected = (spec.name, rendered.variant.interface)
    if expected:
        res.interface_of = expected[0]
        if not declares_only(rendered.source, expected[1]):
            res.expected = expected[1]
    missing = sorted(
        {n for f in facts.values() for n in (*f.needs_overrides, *f.unset_overrides)}
        - set(res.constants)  # given: a value the analysis refused is told on its own
    )
    if missing:
        res.problems.append(f"needs override values: {', '.join(missing)}")
    int64 = sorted({t for f in facts.values() for t in f.int64})
    if int64:
        res.problems.append(f"uses {', '.join(f'`{t}`' for t in int64)}: not WebGPU")
    return res


def _prepare_all(
    rendered: Sequence[RenderedVariant],
    overrides: Mapping[str, float],
    interfaces: Mapping[str, tuple[str, Interface]],
) -> list[VariantResult]:
    """_prepare of every rendering, with its overrides and the interface it must match."""
    return [
        _prepare(r, _overrides_of(r, overrides), interfaces.get(str(r.variant.spec.template_path)))
        for r in rendered
    ]


def _overrides_of(rendered: RenderedVariant, given: Mapping[str, float]) -> dict[str, float]:
    """The kernel.toml [overrides] values of the rendering's variant, then ``given`` (which
    win, as the command line does)."""
    return {**rendered.variant.override_values, **given}


def _shaders(
    results: list[VariantResult], engine: str, limits: Mapping[str, int], written_to: str | None
) -> list[ShaderInput]:
    """What one engine reads: its family's renderings; a pipeline per compute entry point."""
    family = ENGINE_FAMILY[engine]
    out = []
    for i, res in enumerate(results):
        r = res.rendered
        needs = any(p.startswith("needs override values") for p in res.problems)
        if r is None or r.family not in ("any", family) or (needs and engine != "naga"):
            continue  # a pipeline cannot be made without its override values
        # naga judges a module; wgpu and Dawn build a pipeline, so once per entry point.
        for entry in (list(res.facts) or [None]) if engine != "naga" else [None]:
            out.append(
                ShaderInput(
                    id=f"{i}:{entry}",
                    source=r.source,
                    features=r.features,
                    limits=limits,
                    path=file_path(written_to, r.relpath),
                    entry_point=entry,
                    constants=res.constants,
                )
            )
    return out


def _judge(res: VariantResult, profiles: Sequence[LimitProfile], findings: list) -> None:
    """Limit verdicts per profile, implementation verdicts, Tint's static rules."""
    r = res.rendered
    assert r is not None
    for profile in profiles:
        reasons = [] if res.problems else check_passes(res.facts, profile, r.features)
        res.profiles[profile.name] = reasons
    first = next(iter(res.facts.values()), None)
    naga = naga_verdict(res.engines, is_limit_failure)
    if first is not None and naga.ok is None and r.family in ("any", "naga"):
        gaps = check_directives(first, "naga")  # no engine ran: what wgslgen knows
        naga = Implementation("naga", None, gaps, gap=bool(gaps), source="static")
    tint_directives = check_directives(first, "tint") if first else []
    if r.family in ("any", "tint") and first is not None and "dawn" not in res.engines:
        res.tint_static = tint_static(naga, findings, tint_directives, first)
    res.implementations = {
        "naga": naga if r.family in ("any", "naga") else Implementation("naga", None),
        "tint": tint_dawn(res.engines, is_limit_failure)
        or res.tint_static
        or Implementation("tint", None),
    }


def _merge(results: list[VariantResult], verdicts: list[tuple[int, Verdict]]) -> None:
    """Each engine's verdict into its rendering's result; a failing pass decides."""
    for index, verdict in verdicts:
        seen = results[index].engines.get(verdict.engine)
        if seen is None or (seen.ok and not verdict.ok):
            results[index].engines[verdict.engine] = verdict


def _compare_interfaces(results: list[VariantResult], store: verdict_cache.VerdictCache) -> None:
    """Each rendering's declarations against its kernel.toml's (remembered like verdicts)."""
    todo = [r for r in results if r.expected is not None and r.rendered is not None]
    keys = [
        verdict_cache.value_key("interface", r.rendered.source, repr(r.expected), r.constants)
        for r in todo
        if r.rendered is not None
    ]
    known = store.lookup(sorted(set(keys)))
    fresh: dict[str, list[str]] = {}
    for r, key in zip(todo, keys, strict=True):
        if key not in known and key not in fresh:
            assert r.rendered is not None and r.expected is not None
            fresh[key] = interface_mismatches(r.rendered.source, r.expected, r.constants)
        r.interface = list(known[key] if key in known else fresh[key])
    store.store_values(fresh)


def _remembered_findings(
    sources: list[str | None], store: verdict_cache.VerdictCache, jobs: int = 1
) -> list[list[Finding]]:
    """Tint's rules over many texts: the findings remembered for a text, the others read
    (by ``jobs`` processes at most)."""
    keys = [None if s is None else verdict_cache.value_key("tint rules", s) for s in sources]
    known = store.lookup(sorted({k for k in keys if k}))
    todo = [s if k not in known else None for s, k in zip(sources, keys, strict=True)]
    found = _static_findings(todo, jobs=jobs)
    fresh = {k: f for k, f, s in zip(keys, found, todo, strict=True) if k and s is not None}
    store.store_values({k: [dataclasses.asdict(f) for f in fs] for k, fs in fresh.items()})
    return [
        [Finding(**f) for f in known[k]] if k in known else fs
        for k, fs in zip(keys, found, strict=True)
    ]


def _static_findings(sources: list[str | None], jobs: int = 1) -> list[list[Finding]]:
    """Tint's rules over many texts, in child processes when there are enough of them (up
    to ``jobs``, each reading a contiguous share): the reading is pure Python, and in this
    process it would hold the GIL that wgpu's thread needs for each of its many calls."""
    count = sum(s is not None for s in sources)
    if count < _RULES_PER_PROCESS:
        return tint_rules.check_many(sources)
    # as many shares as the texts to read are worth, cut by position (None: nothing to read)
    parts = contiguous_shares(sources, min(jobs, count // _RULES_PER_PROCESS), 1)
    with ThreadPoolExecutor(max_workers=len(parts)) as pool:
        return [f for part in pool.map(_static_findings_apart, parts) for f in part]


def _static_findings_apart(sources: list[str | None]) -> list[list[Finding]]:
    """Tint's rules over ``sources`` in a child process (here if its answer is unreadable)."""
    argv = [sys.executable, "-m", "wgslgen.check.tint_rules"]
    done = run_process(argv, 600.0, env=python_env(), input_text=json.dumps(sources))
    try:
        return [[Finding(**f) for f in each] for each in json.loads(done.stdout)]
    except (ValueError, TypeError):
        return tint_rules.check_many(sources)


def _judge_with(
    engines: Mapping[str, Any],
    name: str,
    shaders: list[ShaderInput],
    store: verdict_cache.VerdictCache,
    refused: Mapping[int, tuple[str, int, int]],
) -> list[Verdict]:
    """One engine's verdicts: remembered ones, the others compiled (each distinct one once),
    and for the shaders of the renderings ``refused`` (nul_refusals), their refusal."""
    engine = engines[name]
    # The engines share the cores: on few, one naga or Dawn process beside the other engines
    # costs less than several; on many, each takes its share.
    share = max(1, len(os.sched_getaffinity(0)) // len(engines))
    if name == "naga" and len(engines) > 1:
        engine.jobs = max(1, min(engine.jobs, share))
    if name == "dawn":
        engine.workers = min(MAX_DAWN_WORKERS, share)
    identity = getattr(engine, "identity", lambda: None)()
    # A text no compiler reads as given gets its verdict here, the same from every engine.
    given = [s for s in shaders if _index(s) not in refused]
    judged = iter(store.judge(identity, name, given, engine.validate) if given else [])
    return [
        Verdict(shader.id, name, False, r[0], r[0], r[1], r[2])
        if (r := refused.get(_index(shader)))
        else next(judged)
        for shader in shaders
    ]


def _index(shader: ShaderInput) -> int:
    """The index in the results of the rendering ``shader`` was made from."""
    return int(shader.id.split(":")[0])


def validate(
    rendered: Sequence[RenderedVariant],
    profiles: Sequence[LimitProfile],
    engine_names: Sequence[str] | None = None,
    on_done: Callable[[str], None] | None = None,
    overrides: Mapping[str, float] | None = None,
    unreadable: Sequence[FileProblem] = (),
    written_to: Path | str | None = None,
    remember: bool | None = None,
    interfaces: Mapping[str, tuple[str, Interface]] | None = None,
) -> ValidationReport:
    """Judge every rendering with each engine of its family, Tint's rules and each profile.

    ``overrides`` are values for ``override`` declarations (pipeline constants), used by the
    static facts and passed to wgpu and Dawn; ``unreadable`` are files that could not be
    rendered, each reported with its reason; ``written_to`` is the folder the renderings were
    written into (diagnostics name the files there), None when they exist only in memory;
    ``remember`` keeps verdicts across runs (None: unless WGSLGEN_NO_CACHE is set), each
    distinct shader being compiled once per run in any case; ``interfaces`` gives, by a
    plain file's path, the kernel (name, interface) its declarations must match.
    """
    folder = None if written_to is None else str(written_to)
    engines, missing = resolve_engines(engine_names)
    results = _prepare_all(rendered, overrides or {}, interfaces or {})
    # Engines compile with the first profile's limits; the static check covers the rest.
    limits = dict(profiles[0].limits) if profiles else {}
    store = verdict_cache.open_cache(remember)
    refused = nul_refusals([res.rendered for res in results])

    def run_engine(name: str) -> list[tuple[int, Verdict]]:
        shaders = _shaders(results, name, limits, folder)
        verdicts = _judge_with(engines, name, shaders, store, refused)
        if on_done:
            on_done(name)
        return [(int(v.id.split(":")[0]), v) for v in verdicts]

    # Tint's verdict comes from Dawn itself when Dawn runs; else from its rules, read in a
    # process of their own while the engines run (in this process, pure-Python work would
    # hold the GIL that wgpu's thread needs for each of its many calls).
    static = "dawn" not in engines
    asked = [r.source if static and r.family in ("any", "tint") else None for r in rendered]
    # naga and Dawn run in their own processes, so the engines overlap well in threads.
    # The rules take the cores the engines leave (one share more than the engines').
    jobs = min(MAX_RULES_PROCESSES, max(1, len(os.sched_getaffinity(0)) // (len(engines) + 1)))
    calls = [partial(_remembered_findings, asked, store, jobs)]
    calls += [partial(run_engine, name) for name in engines]
    # interfaces are compared here meanwhile: pure Python too, but short
    findings, *verdicts = children.in_threads(calls, lambda: _compare_interfaces(results, store))
    _merge(results, [v for part in verdicts for v in part])
    for res, found in zip(results, findings, strict=True):
        _judge(res, profiles, found)
    results += [
        VariantResult(None, p.kernel, p.kernel, p.file, problems=[p.reason]) for p in unreadable
    ]
    store.close()
    versions = {name: engine.version() for name, engine in engines.items()}
    for engine in engines.values():
        getattr(engine, "close", lambda: None)()
    return ValidationReport(results, versions, missing, [p.name for p in profiles], folder)
