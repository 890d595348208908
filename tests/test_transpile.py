"""`wgslgen transpile` and NagaTranslator.translate_many: naga translations, spirv-val checked."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from wgslgen.check.engines.base import ShaderInput
from wgslgen.check.engines.naga import NagaEngine
from wgslgen.check.engines.naga_translate import NagaTranslator, TranslationError
from wgslgen.check.transpile import TARGETS, spirv_env, spirv_version
from wgslgen.cli import main
from wgslgen.render.renderer import render_families
from wgslgen.spec.loader import discover

from .conftest import FIXTURES, SEED, TEMPLATES

WGSL = FIXTURES / "wgsl"
F16_VARIANT = [
    "--kernel",
    "attention_bwd_dq",
    "--set",
    "workgroup_size=64",
    "--set",
    "max_history=1024",
    "--set",
    "wmem=f32",
]  # storage f32, f16 and pf16


@pytest.fixture(scope="module")
def naga() -> NagaEngine:
    engine = NagaEngine()
    if why := engine.availability():
        pytest.fail(f"naga is needed for these tests: {why}")
    return engine


def _transpile(capsys, *args: str) -> tuple[int, dict]:
    capsys.readouterr()
    code = main(["transpile", "--json", *args])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else {}


def _spirv_val(path: Path, env: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["spirv-val", "--target-env", env or spirv_env(path.read_bytes()), str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def _count_launches(monkeypatch) -> list[str]:
    """Record the program of every process started from now on (they still run for real)."""
    launched: list[str] = []

    class CountingPopen(subprocess.Popen):
        def __init__(self, args, *rest, **kwargs):
            launched.append(Path(str(args[0] if isinstance(args, (list, tuple)) else args)).name)
            super().__init__(args, *rest, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", CountingPopen)
    return launched


def test_whole_library_to_spirv_passes_spirv_val(
    capsys, monkeypatch, tmp_path: Path, naga: NagaEngine
) -> None:
    assert shutil.which("spirv-val"), "spirv-val not on PATH: apt-get install spirv-tools"
    rendered = [r for k in discover([TEMPLATES]) for v in k.variants for r in render_families(v)]
    readable = [r for r in rendered if r.family in ("any", "naga")]
    verdicts = naga.validate([ShaderInput(r.relpath, r.source) for r in readable])
    valid = {v.id for v in verdicts if v.ok}
    assert len(valid) == len(readable) >= 150  # the bundled library is valid WGSL for naga

    launches = _count_launches(monkeypatch)
    code, report = _transpile(capsys, "--to", "spv", "--out", str(tmp_path))
    monkeypatch.undo()
    assert code == 0, report["summary"]
    assert report["summary"]["renderings"] == len(readable)
    # naga writes SPIR-V 1.0 here; the subgroup variants' modules are raised to 1.3, which
    # their operations need, and checked against Vulkan 1.1.
    subgroup = {r.relpath for r in readable if "subgroup" in r.features}
    assert subgroup, "the library has subgroup variants (early = 2, 3 of the split kernels)"
    assert report["summary"]["targets"]["spv"]["ok"] == len(readable)
    assert report["spirv_val"] and "SPIRV-Tools" in report["spirv_val"]
    by_source = {r["source"]: r for r in report["results"]}
    for r in readable:
        path = tmp_path / r.kernel / f"{r.name}.spv"
        assert by_source[r.relpath]["targets"]["spv"] == {
            "status": "ok",
            "path": str(path),
            "message": "",
            "diagnostic": "",
            "template": None,
        }
        words = path.read_bytes()
        assert words[:4] == bytes.fromhex("03022307")  # SPIR-V magic
        assert spirv_version(words) == ((1, 3) if r.relpath in subgroup else (1, 0))
        done = _spirv_val(path)  # checked again here, not only through the report
        assert done.returncode == 0, f"{path.name}: {done.stdout}{done.stderr}"
        if r.relpath in subgroup:  # 1.3 is not Vulkan 1.0's: the environment matters
            assert _spirv_val(path, "vulkan1.0").returncode != 0
    # Only SPIR-V files, one per variant, and the ledger listing them; temporary files of the
    # atomic writes are gone.
    spirv = sorted(f"{r.name}.spv" for r in readable)
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == sorted(
        [*spirv, "wgslgen-transpiled.json"]
    )
    ledger = json.loads((tmp_path / "wgslgen-transpiled.json").read_text())
    assert sorted(Path(f).name for f in ledger["files"]) == spirv
    # Batched translation: a few naga processes for the whole library, not one per variant
    # (one Node process per variant took about 5 minutes); spirv-val checks each file.
    translators = [name for name in launches if name != "spirv-val"]
    assert 1 <= len(translators) <= 8 < len(readable), translators


def test_every_target_and_glsl_without_f16_is_unsupported(capsys, tmp_path: Path) -> None:
    stale = tmp_path / "attention_bwd_dq" / "attention_bwd_dq__wg64_mh1024_sf16_wf32.comp.glsl"
    stale.parent.mkdir(parents=True)
    stale.write_text("// from an earlier run\n")
    ledger = {"generator": "wgslgen transpile", "files": [stale.relative_to(tmp_path).as_posix()]}
    (tmp_path / "wgslgen-transpiled.json").write_text(json.dumps(ledger))
    code, report = _transpile(capsys, *F16_VARIANT, "--out", str(tmp_path))
    assert code == 0  # "unsupported" is not a failure
    results = {r["variant"].split("__")[1]: r["targets"] for r in report["results"]}
    assert set(results) == {
        "wg64_mh1024_sf32_wf32",
        "wg64_mh1024_sf16_wf32",
        "wg64_mh1024_spf16_wf32",
    }
    for name, targets in results.items():
        assert set(targets) == {"spv", "msl", "hlsl", "glsl"}
        for target in ("spv", "msl", "hlsl"):
            assert targets[target]["status"] == "ok"
            assert (
                Path(targets[target]["path"]).name == f"attention_bwd_dq__{name}{TARGETS[target]}"
            )
    glsl = results["wg64_mh1024_sf16_wf32"]["glsl"]
    assert glsl["status"] == "unsupported" and glsl["path"] is None
    assert glsl["message"].startswith("A scalar with an unsupported width was requested")
    assert not stale.exists()  # an earlier run's file never passes for this run's output
    for ok in ("wg64_mh1024_sf32_wf32", "wg64_mh1024_spf16_wf32"):  # pf16 needs no f16 type
        assert results[ok]["glsl"]["status"] == "ok"
    base = tmp_path / "attention_bwd_dq" / "attention_bwd_dq__wg64_mh1024_sf32_wf32"
    assert "local_size_x = 64" in Path(f"{base}.comp.glsl").read_text()
    assert "kernel void main_" in Path(f"{base}.metal").read_text()
    assert "[numthreads(64, 1, 1)]" in Path(f"{base}.hlsl").read_text()
    assert report["summary"]["targets"]["glsl"] == {
        "ok": 2,
        "unsupported": 1,
        "error": 0,
        "rejected": 0,
    }


def test_table_for_people(capsys, tmp_path: Path) -> None:
    capsys.readouterr()
    assert main(["transpile", *F16_VARIANT, "--to", "glsl,spv", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "attention_bwd_dq" in out and "2 ok, 1 unsupported" in out
    assert "unsupported (glsl): A scalar with an unsupported width" in out
    assert "in 1 variant(s): attention_bwd_dq__wg64_mh1024_sf16_wf32" in out


def test_invalid_wgsl_fails_and_the_rest_goes_on(capsys, tmp_path: Path) -> None:
    kernels = tmp_path / "kernels"
    kernels.mkdir()
    shutil.copy(WGSL / "type_error.wgsl", kernels / "broken.wgsl")
    shutil.copy(SEED, kernels / "seed.wgsl")
    code, report = _transpile(
        capsys, "--templates", str(kernels), "--to", "spv,msl", "--out", str(tmp_path / "out")
    )
    assert code == 1
    results = {r["kernel"]: r["targets"] for r in report["results"]}
    assert results["seed"]["spv"]["status"] == results["seed"]["msl"]["status"] == "ok"
    bad = results["broken"]["spv"]
    assert bad["status"] == "error" and bad["path"] is None
    assert bad["message"] == "the type of `x` is expected to be `f32`, but got `u32`"
    assert "┌─ broken/broken.wgsl:9:7" in bad["diagnostic"]  # not a temporary file
    assert bad["template"].endswith("broken.wgsl:5")  # the header's 4 lines are mapped away
    assert report["summary"]["failures"] == 2
    assert (tmp_path / "out" / "seed" / "seed.spv").is_file()


def test_spirv_val_rejection_fails(capsys, tmp_path: Path, monkeypatch) -> None:
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    fake = fake_bin / "spirv-val"
    fake.write_text(
        '#!/bin/sh\n[ "$1" = --version ] && { echo "fake SPIRV-Tools"; exit 0; }\n'
        'cat >/dev/null; echo "error: line 7: fake rejection" >&2; exit 1\n'
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake_bin}{os.pathsep}{os.environ['PATH']}")
    code, report = _transpile(
        capsys,
        "--kernel",
        "attention_bwd_dkv",
        "--set",
        "workgroup_size=64",
        "--set",
        "storage=f32",
        "--to",
        "spv,msl",
        "--out",
        str(tmp_path / "o"),
    )
    assert code == 1
    assert report["spirv_val"] == "fake SPIRV-Tools"
    for r in report["results"]:
        spv = r["targets"]["spv"]
        assert spv["status"] == "rejected" and spv["path"] is None
        assert spv["message"] == "spirv-val: error: line 7: fake rejection"
        assert r["targets"]["msl"]["status"] == "ok"
    assert not list((tmp_path / "o").rglob("*.spv"))  # rejected SPIR-V is not written


def test_subgroup_spirv_is_written_only_where_spirv_val_checks_it(
    capsys, tmp_path: Path, monkeypatch
) -> None:
    # A PATH without spirv-val: the 1.0 modules are written unchecked (as before), the
    # subgroup variants' 1.3 ones are not (nothing checked that the raised header holds).
    bare = tmp_path / "bin"
    bare.mkdir()
    for tool in ("node", "npm"):
        if found := shutil.which(tool):
            (bare / tool).symlink_to(found)
    monkeypatch.setenv("PATH", str(bare))
    args = ["--kernel", "attention_split", "--set", "wg=256", "--set", "ch=128", "--set", "g=2"]
    args += ["--set", "u=4", "--set", "s=f32", "--to", "spv", "--out", str(tmp_path / "o")]
    code, report = _transpile(capsys, *args)
    assert report["spirv_val"] is None
    outcomes = {r["variant"]: r["targets"]["spv"] for r in report["results"]}
    with_subgroups = {v for v in outcomes if "_e2_" in v}
    assert with_subgroups and len(outcomes) > len(with_subgroups)
    for variant, outcome in outcomes.items():
        spv = tmp_path / "o" / "attention_split" / f"{variant}.spv"
        if variant in with_subgroups:
            assert outcome["status"] == "unsupported" and "spirv-val" in outcome["message"]
            assert not spv.exists()
        else:
            assert outcome["status"] == "ok" and spirv_version(spv.read_bytes()) == (1, 0)
    assert code == 0


def test_bad_target_and_missing_naga(capsys, tmp_path: Path, monkeypatch) -> None:
    assert main(["transpile", "--to", "spv,dxil", "--out", str(tmp_path)]) == 2
    assert "unknown target(s) dxil; choose from spv, msl, hlsl, glsl" in capsys.readouterr().err
    monkeypatch.delenv("WGSLGEN_NAGA", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert main(["transpile", "--kernel", "attention_bwd_dkv", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "cargo install naga-cli" in err and "npm ci" in err


# -- NagaTranslator.translate_many -----------------------------------------------------


def _sources() -> list[tuple[str, str, str]]:
    return [
        ("seed", SEED.read_text(), "main"),
        ("f16", (WGSL / "f16.wgsl").read_text(), "main"),
        ("bad", (WGSL / "type_error.wgsl").read_text(), "main"),
    ]


def _summary(results: dict) -> dict:
    return {
        sid: {
            t: (v.kind, v.message) if isinstance(v, TranslationError) else type(v).__name__
            for t, v in per_target.items()
        }
        for sid, per_target in results.items()
    }


def test_translate_many_bulk_and_one_process_per_file_agree(naga: NagaEngine) -> None:
    translator = NagaTranslator(naga)
    bulk = translator.translate_many(_sources(), ["spv", "glsl"])
    expected = {
        "seed": {"spv": "bytes", "glsl": "str"},
        "f16": {
            "spv": "bytes",
            "glsl": (
                "write",
                "A scalar with an unsupported width was "
                "requested: Scalar { kind: Float, width: 2 }",
            ),
        },
        "bad": {
            t: ("parse", "the type of `x` is expected to be `f32`, but got `u32`")
            for t in ("spv", "glsl")
        },
    }
    assert _summary(bulk) == expected
    assert "┌─ bad:5:7" in bulk["bad"]["spv"].diagnostic
    assert bulk["seed"]["spv"] == translator.translate(SEED.read_text(), "spv")
    # What naga-cli proper does (no --bulk-translate): one process per file.
    single = NagaTranslator(bulk=False).translate_many(_sources(), ["spv", "glsl"])
    assert _summary(single) == expected
    assert single["seed"] == bulk["seed"]
    with pytest.raises(ValueError, match="unique"):
        translator.translate_many([_sources()[0], _sources()[0]], ["spv"])


def test_translate_many_progress_and_batches(naga: NagaEngine) -> None:
    translator = NagaTranslator(NagaEngine(batch_size=2, jobs=2))
    sources = [
        (f"v{i}", SEED.read_text().replace("4096u", f"{1000 + i}u"), "main") for i in range(5)
    ]
    seen: list[int] = []
    results = translator.translate_many(sources, ["wgsl"], on_progress=seen.append)
    assert sum(seen) == 5 and list(results) == [s[0] for s in sources]
    assert "1004u" in results["v4"]["wgsl"]


FAKE_BULK = """
import json, subprocess, sys, time
args = sys.argv[1:]
if args == ["--version"]:
    print("naga-wasm 0.0.0-fake"); sys.exit(0)
if {die_at_start} and args[0] == "--bulk-translate":
    print("cannot start", file=sys.stderr); sys.exit(7)
jobs = json.load(open(args[1]))
for job in jobs:
    text = open(job["input"]).read()
    for out in job["outputs"]:
        if "// HANG" in text:
            print("fake naga: hanging", file=sys.stderr, flush=True)
            subprocess.call(["sleep", "60"])
        if "// PANIC" in text:
            line = {{"input": job["input"], "output": out, "ok": False, "kind": "panic",
                     "error": "naga panicked: RuntimeError: unreachable"}}
            print(json.dumps(line), flush=True)
            sys.exit(101)
        if "// CRASH" in text:
            print("fake naga: segfault", file=sys.stderr, flush=True)
            sys.exit(139)
        open(out, "wb").write(b"ok")
        print(json.dumps({{"input": job["input"], "output": out, "ok": True}}), flush=True)
"""


def _fake(tmp_path: Path, die_at_start: bool = False) -> list[str]:
    fake = tmp_path / "fake_naga.py"
    fake.write_text(FAKE_BULK.format(die_at_start=die_at_start), encoding="utf-8")
    return [sys.executable, str(fake)]


def test_bulk_translate_survives_crash_and_hang(tmp_path: Path) -> None:
    translator = NagaTranslator(NagaEngine(_fake(tmp_path), timeout=2, jobs=1))
    assert translator.engine.version() == "naga-wasm 0.0.0-fake"  # so it takes the bulk path
    names = ["ok1", "CRASH", "ok2", "HANG", "PANIC", "ok3"]
    start = time.monotonic()
    sources = [(n, f"// {n}\n", "main") for n in names]
    results = translator.translate_many(sources, ["spv", "msl"])
    assert time.monotonic() - start < 20
    for n in ("ok1", "ok2", "ok3"):
        assert results[n] == {"spv": b"ok", "msl": "ok"}
    crash, hang = results["CRASH"]["spv"], results["HANG"]["spv"]
    assert isinstance(crash, TranslationError) and crash.kind == "engine"
    assert crash.message == "naga engine failure: exit code 139"
    assert "fake naga: segfault" in crash.diagnostic
    assert hang.message == "naga engine failure: timed out after 2 s without progress"
    # The other target of a crashing source is tried again in a fresh process (and crashes).
    assert results["CRASH"]["msl"].kind == "engine"
    for target in ("spv", "msl"):
        panic = results["PANIC"][target]
        assert panic.kind == "engine" and panic.message == "naga engine failure: panicked"
        assert "RuntimeError: unreachable" in panic.diagnostic


def test_bulk_translate_that_cannot_start_fails_every_source_once(
    monkeypatch, tmp_path: Path
) -> None:
    translator = NagaTranslator(NagaEngine(_fake(tmp_path, die_at_start=True), jobs=1))
    launches = _count_launches(monkeypatch)
    results = translator.translate_many([(f"s{i}", "", "main") for i in range(20)], ["spv", "msl"])
    monkeypatch.undo()
    assert len(launches) <= 2, launches  # one bulk process (and its --version), not one per source
    errors = [v for r in results.values() for v in r.values()]
    assert len(errors) == 40
    assert all(
        isinstance(e, TranslationError) and e.message == "naga engine failure: exit code 7"
        for e in errors
    )
    assert "cannot start" in errors[0].diagnostic


# -- the output folder: only what wgslgen transpile wrote is replaced or removed ---------


def test_out_folder_is_written_only_where_the_ledger_allows(
    capsys, tmp_path: Path, monkeypatch
) -> None:
    kernels = tmp_path / "kernels"
    kernels.mkdir()
    shutil.copy(SEED, kernels / "seed.wgsl")
    args = ["--templates", str(kernels), "--to", "spv"]
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "notes.txt").write_text("mine")
    code = main(["transpile", *args, "--out", str(theirs)])
    assert code == 2 and "holds no wgslgen-transpiled.json" in capsys.readouterr().err
    assert [p.name for p in theirs.iterdir()] == ["notes.txt"]
    monkeypatch.chdir(tmp_path)  # the current folder, and one that holds it, are refused
    for out in (".", ".."):
        assert main(["transpile", *args, "--out", out]) == 2
        assert "refusing to transpile into the current folder" in capsys.readouterr().err

    out = tmp_path / "out"
    code, report = _transpile(capsys, *args, "--out", str(out))
    assert code == 0 and (out / "seed" / "seed.spv").is_file()
    assert report["results"][0]["targets"]["spv"]["path"] == str(out / "seed" / "seed.spv")
    ledger = json.loads((out / "wgslgen-transpiled.json").read_text())
    assert ledger["files"] == ["seed/seed.spv"]
    (out / "notes.txt").write_text("mine")  # a user's file beside ours
    # the kernel now fails to compile: its old SPIR-V (ours, listed) goes, the notes stay
    shutil.copy(WGSL / "type_error.wgsl", kernels / "seed.wgsl")
    code, _ = _transpile(capsys, *args, "--out", str(out))
    assert code == 1 and not (out / "seed" / "seed.spv").exists()
    assert (out / "notes.txt").read_text() == "mine"
    assert json.loads((out / "wgslgen-transpiled.json").read_text())["files"] == []
    # a user's file exactly where a translation would go is not overwritten
    shutil.copy(SEED, kernels / "seed.wgsl")
    (out / "seed" / "seed.spv").write_bytes(b"their own")
    assert main(["transpile", *args, "--out", str(out)]) == 2
    assert "seed.spv: exists and was not written by wgslgen transpile" in capsys.readouterr().err
    assert (out / "seed" / "seed.spv").read_bytes() == b"their own"
    (out / "wgslgen-transpiled.json").write_text("{")
    assert main(["transpile", *args, "--out", str(out)]) == 2
    assert "wgslgen-transpiled.json: not readable" in capsys.readouterr().err
