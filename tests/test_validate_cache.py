"""Verdicts remembered by what decides them: the same verdicts as compiling again, each
distinct shader compiled once per run, engine failures never remembered."""

from __future__ import annotations

import importlib
import sqlite3
from pathlib import Path

import pytest

from wgslgen.check import verdict_cache
from wgslgen.check.engines import get_engine
from wgslgen.check.engines.base import ShaderInput, Verdict
from wgslgen.check.limits import load_profile
from wgslgen.check.validate import validate
from wgslgen.render.renderer import render_families
from wgslgen.spec.loader import discover

GOOD = """
@group(0) @binding(0) var<storage, read_write> out: array<f32>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3u) {
    out[g.x] = 1.0;
}
"""
BAD = GOOD.replace("out[g.x] = 1.0;", "let bad: f32 = g.x;\n    out[g.x] = bad;")
TWO_ENTRIES = (
    GOOD
    + """
@compute @workgroup_size(32) fn other(@builtin(global_invocation_id) g: vec3u) {
    out[g.x] = 2.0;
}
"""
)


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("WGSLGEN_CACHE_DIR", str(folder))
    monkeypatch.delenv("WGSLGEN_NO_CACHE", raising=False)
    # The naga-wasm copy stays where it is (a checkout's node_modules is used first).
    return folder


def _renderings(tmp_path: Path, files: dict[str, str]) -> list:
    folder = tmp_path / "shaders"
    folder.mkdir(exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return [r for k in discover([folder]) for v in k.variants for r in render_families(v)]


def _verdicts(report) -> dict[str, dict]:
    out = {}
    for r in report.results:
        for name, v in r.engines.items():
            out[f"{r.file}:{name}"] = (v.ok, v.message, v.diagnostic, v.line, v.column)
    return out


class _Counting:
    """The real engine, counting the shaders it is asked to compile (a spy, not a fake)."""

    def __init__(self, monkeypatch, name: str) -> None:
        self.seen: list[ShaderInput] = []
        engine_type = type(get_engine(name))
        real = engine_type.validate

        def validate(engine, shaders):
            self.seen.extend(shaders)
            return real(engine, shaders)

        monkeypatch.setattr(engine_type, "validate", validate)


def test_remembered_verdicts_equal_fresh_ones_and_skip_the_compiler(
    tmp_path: Path, cache_dir: Path, monkeypatch
) -> None:
    rendered = _renderings(tmp_path, {"good.wgsl": GOOD, "bad.wgsl": BAD, "two.wgsl": TWO_ENTRIES})
    profiles = [load_profile("webgpu")]
    fresh = validate(rendered, profiles, ["naga", "wgpu"], remember=False)
    assert not (cache_dir / "verdicts.sqlite3").exists()
    first = validate(rendered, profiles, ["naga", "wgpu"], remember=True)
    assert _verdicts(first) == _verdicts(fresh)
    bad = next(r for r in fresh.results if r.file.endswith("bad.wgsl"))
    assert not bad.engines["naga"].ok and bad.engines["naga"].line is not None

    with sqlite3.connect(cache_dir / "verdicts.sqlite3") as db:
        (rows,) = db.execute("SELECT COUNT(*) FROM verdicts").fetchone()
    assert rows == 3 + 4 + 3  # naga: one per file; wgpu: one per entry point; Tint's rules

    spies = {name: _Counting(monkeypatch, name) for name in ("naga", "wgpu")}
    again = validate(rendered, profiles, ["naga", "wgpu"], remember=True)
    assert _verdicts(again) == _verdicts(fresh)
    assert [s for spy in spies.values() for s in spy.seen] == []


def test_identical_shaders_are_compiled_once_per_run(tmp_path: Path, monkeypatch) -> None:
    rendered = _renderings(tmp_path, {"a.wgsl": GOOD})
    twice = rendered + rendered  # e.g. one rendering reached through two profiles' builds
    spy = _Counting(monkeypatch, "wgpu")
    report = validate(twice, [load_profile("webgpu")], ["wgpu"], remember=False)
    assert len(spy.seen) == 1
    assert [r.engines["wgpu"].ok for r in report.results] == [True, True]
    ids = {r.engines["wgpu"].id.split(":")[0] for r in report.results}
    assert ids == {"0", "1"}  # each rendering gets its own verdict back


def test_the_key_covers_what_decides_a_verdict() -> None:
    base = ShaderInput("0", GOOD, frozenset(), {"max-x": 1}, "a.wgsl", "main", {"k": 1})
    key = verdict_cache.shader_key("naga 30", base)
    changed = [
        ShaderInput("0", BAD, frozenset(), {"max-x": 1}, "a.wgsl", "main", {"k": 1}),
        ShaderInput("0", GOOD, frozenset({"shader-f16"}), {"max-x": 1}, "a.wgsl", "main", {"k": 1}),
        ShaderInput("0", GOOD, frozenset(), {"max-x": 2}, "a.wgsl", "main", {"k": 1}),
        ShaderInput("0", GOOD, frozenset(), {"max-x": 1}, "b.wgsl", "main", {"k": 1}),
        ShaderInput("0", GOOD, frozenset(), {"max-x": 1}, "a.wgsl", "other", {"k": 1}),
        ShaderInput("0", GOOD, frozenset(), {"max-x": 1}, "a.wgsl", "main", {"k": 2}),
    ]
    keys = {verdict_cache.shader_key("naga 30", s) for s in changed}
    keys.add(verdict_cache.shader_key("naga 31", base))
    assert key not in keys and len(keys) == len(changed) + 1
    # The id only names the shader in one run: not part of what decides the verdict.
    renamed = ShaderInput("9", GOOD, frozenset(), {"max-x": 1}, "a.wgsl", "main", {"k": 1})
    assert verdict_cache.shader_key("naga 30", renamed) == key


def test_engine_failures_are_not_remembered(tmp_path: Path) -> None:
    store = verdict_cache.VerdictCache(tmp_path / "v.sqlite3")
    crashed = Verdict("0", "naga", False, "naga engine failure: timed out after 60 s")
    refused = Verdict("1", "naga", False, "bad type", "error: bad type", 3, 5)
    store.store({"crashed": crashed, "refused": refused})
    assert store.lookup(["crashed", "refused"]) == {
        "refused": {
            "ok": False,
            "message": "bad type",
            "diagnostic": "error: bad type",
            "line": 3,
            "column": 5,
        }
    }
    store.close()


def test_a_broken_store_only_means_compiling_again(tmp_path: Path) -> None:
    path = tmp_path / "v.sqlite3"
    path.write_bytes(b"not a database" * 100)
    store = verdict_cache.VerdictCache(path)
    shaders = [ShaderInput("0", GOOD, path="a.wgsl", entry_point="main")]
    verdicts = store.judge("id", "naga", shaders, lambda todo: [Verdict("0", "naga", True)])
    assert verdicts == [Verdict("0", "naga", True)]
    store.close()


NONUNIFORM = """
@group(0) @binding(0) var<storage, read_write> out: array<f32>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3u) {
    if (out[g.x] > 0.0) {
        return;
    }
    storageBarrier();
    out[g.x] = 1.0;
}
"""


def test_tints_static_findings_are_remembered(tmp_path: Path, cache_dir: Path, monkeypatch) -> None:
    validate_module = importlib.import_module("wgslgen.check.validate")

    rendered = _renderings(tmp_path, {"barrier.wgsl": NONUNIFORM, "good.wgsl": GOOD})
    profiles = [load_profile("webgpu")]
    first = validate(rendered, profiles, ["naga"], remember=True)
    findings = {r.file: r.tint_static.findings for r in first.results}
    assert [f.rule for f in findings[str(tmp_path / "shaders" / "barrier.wgsl")]] == ["uniformity"]

    read: list = []
    real = validate_module._static_findings

    def spy(sources, **options):
        read.extend(s for s in sources if s is not None)
        return real(sources, **options)

    monkeypatch.setattr(validate_module, "_static_findings", spy)
    again = validate(rendered, profiles, ["naga"], remember=True)
    assert read == []
    assert {r.file: r.tint_static.findings for r in again.results} == findings


def test_tints_static_rules_read_in_several_processes_keep_their_order(monkeypatch) -> None:
    from wgslgen.check import tint_rules

    validate_module = importlib.import_module("wgslgen.check.validate")

    sources = [NONUNIFORM if i % 7 == 3 else GOOD if i % 5 else None for i in range(60)]
    shares: list[int] = []
    real = validate_module._static_findings_apart

    def counted(part):
        shares.append(len(part))
        return real(part)

    monkeypatch.setattr(validate_module, "_static_findings_apart", counted)
    found = validate_module._static_findings(sources, jobs=3)
    assert shares == [20, 20, 20]  # 50 texts: three processes (at least 16 each), 20 entries each
    assert found == tint_rules.check_many(sources)
    assert [bool(f) for f in found] == [s is NONUNIFORM for s in sources]
