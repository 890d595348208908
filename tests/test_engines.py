"""The real compilers (naga, wgpu-native, Dawn/Tint) and what happens when one misbehaves."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from wgslgen.check.engines import ENGINES, ShaderInput, get_engine
from wgslgen.check.engines.base import find_location
from wgslgen.check.engines.dawn import DawnEngine
from wgslgen.check.engines.naga import NagaEngine
from wgslgen.check.engines.naga_translate import NagaTranslator
from wgslgen.check.engines.wgpu_native import WgpuEngine, wgpu_message
from wgslgen.check.source_guards import WGPU_MAX_BRACKET_DEPTH, bracket_depth, nul_byte_at
from wgslgen.check.wgsl import analyze
from wgslgen.errors import WgslgenError

from .conftest import SEED

FIXTURES = Path(__file__).parent / "fixtures" / "wgsl"
WORKGROUP_MESSAGE = (
    "The total use of workgroup storage (16640 bytes) is larger than the maximum allowed "
    "(16384 bytes)"
)


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def seed() -> str:
    return SEED.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def naga() -> NagaEngine:
    engine = NagaEngine()
    assert not (why := engine.availability()), why  # scripts/setup.sh installs it
    return engine


@pytest.fixture(scope="module")
def wgpu_engine() -> WgpuEngine:
    engine = WgpuEngine()
    assert not (why := engine.availability()), why  # scripts/setup.sh installs it
    return engine


@pytest.fixture(scope="module")
def dawn():
    engine = DawnEngine()
    assert not (why := engine.availability()), why  # scripts/setup.sh installs it
    yield engine
    engine.close()


# -- naga ----------------------------------------------------------------------------------


def test_naga_accepts_seed_and_reports_type_error(naga: NagaEngine, seed: str) -> None:
    good, bad = naga.validate(
        [
            ShaderInput("seed", seed),
            ShaderInput("bad", fixture("type_error.wgsl"), path="kernels/type_error.wgsl"),
        ]
    )
    assert good.ok and good.engine == "naga" and good.message == ""
    assert not bad.ok
    assert bad.message == "the type of `x` is expected to be `f32`, but got `u32`"
    assert (bad.line, bad.column) == (5, 7)
    assert "┌─ kernels/type_error.wgsl:5:7" in bad.diagnostic  # not the temporary file's name


def test_naga_subgroups_and_f16(naga: NagaEngine) -> None:
    verdicts = naga.validate(
        [
            ShaderInput("tint-text", fixture("subgroups_tint.wgsl")),
            ShaderInput("naga-text", fixture("subgroups_naga.wgsl")),
            ShaderInput("f16", fixture("f16.wgsl")),
        ]
    )
    rejected, accepted, f16 = verdicts
    assert rejected.message == "the `subgroups` enable-extension is not yet supported"
    assert (rejected.line, rejected.column) == (1, 8)
    assert accepted.ok and f16.ok


def test_naga_version(naga: NagaEngine) -> None:
    assert re.match(r"(naga-wasm \S+ \(naga \S+\) via node v\S+|naga-cli \S+)$", naga.version())


def test_naga_many_shaders_many_batches(naga: NagaEngine, seed: str) -> None:
    engine = NagaEngine(batch_size=3, jobs=2)
    shaders = [ShaderInput(f"v{i}", seed.replace("4096u", f"{1000 + i}u")) for i in range(7)]
    shaders.insert(4, ShaderInput("bad", fixture("type_error.wgsl")))
    verdicts = engine.validate(shaders)
    assert [v.id for v in verdicts] == [s.id for s in shaders]
    assert [v.ok for v in verdicts] == [True] * 4 + [False] + [True] * 3


def test_naga_translate(naga: NagaEngine, seed: str, tmp_path: Path) -> None:
    translator = NagaTranslator(naga)
    spv = translator.translate(seed, "spv")
    assert isinstance(spv, bytes) and spv[:4] == bytes.fromhex("03022307")  # SPIR-V magic, LE
    if shutil.which("spirv-val"):
        (tmp_path / "seed.spv").write_bytes(spv)
        done = subprocess.run(
            ["spirv-val", str(tmp_path / "seed.spv")], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
    outputs = translator.translate_all(seed, ["glsl", "msl", "hlsl", "wgsl"])
    assert "#version 310 es" in outputs["glsl"] and "local_size_x = 64" in outputs["glsl"]
    assert "kernel void main_" in outputs["msl"]
    assert "[numthreads(64, 1, 1)]" in outputs["hlsl"]
    assert "@compute @workgroup_size(64, 1, 1)" in outputs["wgsl"]
    with pytest.raises(WgslgenError, match="cannot translate to dxil"):
        translator.translate(seed, "dxil")
    with pytest.raises(WgslgenError, match="expected to be `f32`"):
        translator.translate(fixture("type_error.wgsl"), "spv")


FAKE_NAGA = """
import subprocess, sys, time
REAL = {real!r}
args = sys.argv[1:]
if args == ["--version"]:
    print("0.0.0-fake")
    sys.exit(0)
text = "".join(open(a).read() for a in args if not a.startswith("--"))
if "// HANG" in text:
    print("fake naga: hanging", file=sys.stderr, flush=True)
    subprocess.call(["sleep", "60"])  # a grandchild that holds the pipes open
if "// CRASH" in text:
    print("thread 'main' panicked at fake naga", file=sys.stderr)
    sys.exit(101)
sys.exit(subprocess.call(REAL + args))
"""


def test_naga_crash_and_hang_fail_their_batch_only(naga: NagaEngine, tmp_path: Path) -> None:
    fake = tmp_path / "fake_naga.py"
    fake.write_text(FAKE_NAGA.format(real=naga.command()), encoding="utf-8")
    engine = NagaEngine([sys.executable, str(fake)], timeout=2, batch_size=1, jobs=2)
    ok = "@compute @workgroup_size(1) fn main() {}\n"
    shaders = [
        ShaderInput("ok1", ok),
        ShaderInput("hang", "// HANG\n" + ok),
        ShaderInput("bad", fixture("type_error.wgsl")),
        ShaderInput("crash", "// CRASH\n" + ok),
        ShaderInput("ok2", ok),
    ]
    start = time.monotonic()
    ok1, hang, bad, crash, ok2 = engine.validate(shaders)
    assert time.monotonic() - start < 15
    assert ok1.ok and ok2.ok
    assert bad.message.startswith("the type of `x`") and bad.line == 5
    assert hang.message == "naga engine failure: timed out after 2 s"
    assert "fake naga: hanging" in hang.diagnostic
    assert crash.message == "naga engine failure: exit code 101"
    assert "panicked at fake naga" in crash.diagnostic
    assert engine.version() == "naga-cli 0.0.0-fake"


def test_a_failing_naga_leaves_no_temporary_folder(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    exits_3 = [sys.executable, "-c", "import sys; sys.exit(3)"]
    [verdict] = NagaEngine(exits_3).validate([ShaderInput("x", "fn f() {}")])
    assert verdict.message == "naga engine failure: exit code 3"
    assert not list(tmp_path.glob("wgslgen-naga-*"))


def test_naga_command_from_environment(monkeypatch, tmp_path: Path) -> None:
    fake = tmp_path / "naga"
    fake.write_text("#!/bin/sh\necho 9.9.9\n", encoding="utf-8")
    fake.chmod(0o755)
    monkeypatch.setenv("WGSLGEN_NAGA", str(fake))
    engine = NagaEngine()
    assert engine.command() == [str(fake)]
    assert engine.availability() is None and engine.version() == "naga-cli 9.9.9"


def test_naga_unavailable(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.delenv("WGSLGEN_NAGA", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    engine = NagaEngine()
    why = engine.availability()
    assert why is not None and "cargo install naga-cli" in why and "npm ci" in why
    [verdict] = engine.validate([ShaderInput("x", "fn f() {}")])
    assert not verdict.ok and verdict.message.startswith("naga engine failure: naga not found")


# -- wgpu-native ---------------------------------------------------------------------------


def test_wgpu_f16_needs_the_feature(wgpu_engine: WgpuEngine) -> None:
    source = fixture("f16.wgsl")
    without, with_feature = wgpu_engine.validate(
        [
            ShaderInput("no-feature", source),
            ShaderInput("feature", source, features=frozenset({"shader-f16"})),
        ]
    )
    assert not without.ok and "`f16` extension is not supported" in without.message
    assert (without.line, without.column) == (1, 8)
    assert with_feature.ok


def test_wgpu_bad_shader_does_not_poison_device(wgpu_engine: WgpuEngine, seed: str) -> None:
    verdicts = wgpu_engine.validate(
        [
            ShaderInput("bad", fixture("type_error.wgsl")),
            ShaderInput("seed", seed),
            ShaderInput("no-entry", seed, entry_point="nope"),
            ShaderInput("seed-again", seed),
        ]
    )
    bad, good, no_entry, good_again = verdicts
    assert bad.message == "parsing error: the type of `x` is expected to be `f32`, but got `u32`"
    assert (bad.line, bad.column) == (5, 7)
    assert "Unable to find entry point 'nope'" in no_entry.message
    assert good.ok and good_again.ok


def test_wgpu_limits(wgpu_engine: WgpuEngine, seed: str) -> None:
    tight = {"max-storage-buffers-per-shader-stage": 4}
    [few_buffers] = wgpu_engine.validate([ShaderInput("seed", seed, limits=tight)])
    assert not few_buffers.ok and "limit is 4, count was 6" in few_buffers.message
    # wgpu-native 29 does not enforce the workgroup storage limit (DESIGN.md): only Dawn
    # and wgslgen.check.limits.check catch the seed's 16,640 B. This pins that behaviour down.
    small = {"max-compute-workgroup-storage-size": 16384}
    [accepted] = wgpu_engine.validate([ShaderInput("seed", seed, limits=small)])
    assert accepted.ok


def nested(depth: int) -> str:
    """A valid compute shader whose one expression nests ``depth`` parentheses deep."""
    return (
        "@group(0) @binding(0) var<storage, read_write> buf: array<u32>;\n"
        f"@compute @workgroup_size(1) fn main() {{ buf[0] = {'(' * depth}1u{')' * depth}; }}\n"
    )


def test_wgpu_refuses_brackets_nested_deeper_than_it_survives(wgpu_engine: WgpuEngine) -> None:
    # 5000 deep crashed the whole process on an 8 MiB stack (wgpu-native 29 has no bound)
    deep, fine = wgpu_engine.validate(
        [ShaderInput("deep", nested(5000)), ShaderInput("fine", nested(WGPU_MAX_BRACKET_DEPTH - 1))]
    )
    assert not deep.ok
    assert deep.message.startswith("not compiled by wgpu: brackets nest 5001 deep")
    assert fine.ok  # the bound refuses nothing wgpu-native compiles on its threads


# 5000 nested parentheses crash wgpu-native on an 8 MiB stack; on the engine's own threads
# they compile. In a child process: a regression must not take the test session down.
BIG_STACK_CHILD = """
import sys
from wgslgen.check import source_guards
from wgslgen.check.engines import ShaderInput
from wgslgen.check.engines.wgpu_native import WgpuEngine
source_guards.WGPU_MAX_BRACKET_DEPTH = 10**6  # no refusal: the compile itself is tested
[verdict] = WgpuEngine(threads=1).validate([ShaderInput("deep", sys.stdin.read())])
print(verdict.ok, verdict.message)
"""


def test_wgpu_compiles_on_threads_with_a_stack_of_their_own() -> None:
    done = subprocess.run(
        [sys.executable, "-c", BIG_STACK_CHILD],
        input=nested(5000),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"exit {done.returncode}: {done.stderr[-2000:]}"
    assert done.stdout.strip() == "True"


def test_bracket_depth_and_nul_byte_positions() -> None:
    assert bracket_depth("fn f() { let x = a[(1 + 2)]; }") == 3
    assert bracket_depth("// ((((((\n/* [[[ /* nested ((( */ */ fn f() {}") == 1
    assert bracket_depth("fn f() { /* unterminated (((") == 4  # counts it all: overstates
    assert nul_byte_at("fn f() {}\n") is None
    assert nul_byte_at("// one\n// t\0wo\n") == (2, 5)


def test_wgpu_message_formatting() -> None:
    text = (
        "Validation Error\n\nCaused by:\n  In wgpuDeviceCreateComputePipeline\n"
        "    Error matching shader requirements against the pipeline\n"
        "      Unable to find entry point 'nope'\n"
    )
    expected = (
        "Error matching shader requirements against the pipeline: Unable to find entry point 'nope'"
    )
    assert wgpu_message(text) == expected
    assert find_location("Shader '' parsing error: x\n  ┌─ wgsl:12:34\n  │") == (12, 34)


# -- Dawn / Tint ---------------------------------------------------------------------------


def test_dawn_rejects_seed_workgroup_storage(dawn: DawnEngine, seed: str) -> None:
    [verdict] = dawn.validate([ShaderInput("seed", seed)])
    assert not verdict.ok and verdict.engine == "dawn"
    assert verdict.message.startswith(WORKGROUP_MESSAGE)
    assert "wgpudawn" not in sys.modules  # Dawn ran in its worker, not in this process


def test_dawn_subgroups_need_enable(dawn: DawnEngine) -> None:
    sg = frozenset({"subgroup"})
    without, with_enable = dawn.validate(
        [
            ShaderInput("naga-text", fixture("subgroups_naga.wgsl"), features=sg),
            ShaderInput("tint-text", fixture("subgroups_tint.wgsl"), features=sg),
        ]
    )
    assert without.message == (
        "cannot call built-in function 'subgroupMax' without extension 'subgroups'"
    )
    assert without.line == 5
    assert with_enable.ok


def test_dawn_f16_and_type_error(dawn: DawnEngine) -> None:
    no_feature, feature, bad = dawn.validate(
        [
            ShaderInput("f16", fixture("f16.wgsl")),
            ShaderInput("f16+", fixture("f16.wgsl"), features=frozenset({"shader-f16"})),
            ShaderInput("bad", fixture("type_error.wgsl")),
        ]
    )
    assert not no_feature.ok and "f16" in no_feature.message
    assert feature.ok
    assert (bad.line, bad.column) == (5, 7)


def test_workgroup_bytes_match_dawn(dawn: DawnEngine) -> None:
    # Push layout.wgsl over 16,384 B so Dawn reports its own count of workgroup storage.
    source = fixture("layout.wgsl").replace("hexed[0] = 1u;", "hexed[0] = 1u;\n    big[0] = 1.0;")
    source += "var<workgroup> big: array<f32, 4000>;\n"
    [verdict] = dawn.validate([ShaderInput("layout", source)])
    counted = re.search(r"workgroup storage \((\d+) bytes\)", verdict.message)
    assert counted, verdict.message
    assert int(counted.group(1)) == analyze(source).workgroup_bytes


FAKE_DAWN = """
import json, sys, time
print(json.dumps({"ready": True, "version": "fake-dawn"}), flush=True)
for line in sys.stdin:
    req = json.loads(line)
    if "HANG" in req["source"]:
        time.sleep(60)
    if "CRASH" in req["source"]:
        print("fake dawn: segmentation fault", file=sys.stderr, flush=True)
        sys.exit(3)
    print(json.dumps({"id": req["id"], "ok": True, "message": "", "diagnostic": ""}), flush=True)
"""


def test_dawn_worker_hang_and_crash(tmp_path: Path) -> None:
    fake = tmp_path / "fake_dawn.py"
    fake.write_text(FAKE_DAWN, encoding="utf-8")
    engine = DawnEngine(command=[sys.executable, str(fake)], timeout=1.5)
    try:
        names = ["ok1", "HANG", "ok2", "CRASH", "ok3"]
        start = time.monotonic()
        verdicts = engine.validate([ShaderInput(n, f"// {n}\n") for n in names])
        assert time.monotonic() - start < 15
        assert [v.ok for v in verdicts] == [True, False, True, False, True]
        assert verdicts[1].message == "dawn engine failure: timed out after 1.5 s"
        assert verdicts[3].message == "dawn engine failure: worker exited with code 3"
        assert "segmentation fault" in verdicts[3].diagnostic
        assert engine.version() == "fake-dawn"
    finally:
        engine.close()


def test_dawn_workers_share_the_shaders_and_keep_their_order(tmp_path: Path) -> None:
    # Each worker says which process judged a shader: the shares go to different processes,
    # a hang in one share fails that shader alone, and the verdicts keep the input order.
    fake = tmp_path / "fake_dawn.py"
    fake.write_text(
        FAKE_DAWN.replace(
            '"ok": True, "message": ""', '"ok": False, "message": f"pid {os.getpid()}"'
        ).replace("import json", "import json, os"),
        encoding="utf-8",
    )
    engine = DawnEngine(command=[sys.executable, str(fake)], timeout=1.5, workers=3)
    try:
        names = [f"s{i}" for i in range(200)]
        names[170] = "HANG"
        verdicts = engine.validate([ShaderInput(n, f"// {n}\n") for n in names])
        assert [v.id for v in verdicts] == names
        assert verdicts[170].message == "dawn engine failure: timed out after 1.5 s"
        # the fake fails every other shader with its process id as the message
        pids = [v.message for v in verdicts]
        assert all(p.startswith("pid ") for p in pids[:170] + pids[171:])
        # three shares of 67, 67 and 66 shaders; the third's worker is replaced after the hang
        shares = [set(pids[:67]), set(pids[67:134]), set(pids[134:170]), set(pids[171:])]
        assert all(len(s) == 1 for s in shares), shares
        assert len(set.union(*shares)) == 4, shares
    finally:
        engine.close()
    assert not engine._helpers


def test_dawn_workers_agree_with_one_worker(dawn: DawnEngine, seed: str) -> None:
    shaders = [
        ShaderInput(f"s{i}", fixture("type_error.wgsl") if i % 50 == 7 else seed)
        for i in range(140)
    ]
    many = DawnEngine(workers=2)
    try:
        assert [(v.ok, v.message) for v in many.validate(shaders)] == [
            (v.ok, v.message) for v in dawn.validate(shaders)
        ]
    finally:
        many.close()


def test_dawn_unavailable(monkeypatch) -> None:
    import wgslgen.check.engines.dawn as dawn_module

    monkeypatch.setattr(dawn_module.importlib.util, "find_spec", lambda name: None)
    assert "pip install 'wgslgen[dawn]'" in (DawnEngine().availability() or "")


# -- registry ------------------------------------------------------------------------------


def test_registry() -> None:
    assert set(ENGINES) == {"naga", "wgpu", "dawn"}
    assert get_engine("naga").name == "naga"
    with pytest.raises(WgslgenError, match="unknown engine 'tint'"):
        get_engine("tint")


def test_a_wgslgen_naga_that_is_not_a_file_is_named(monkeypatch) -> None:
    monkeypatch.setenv("WGSLGEN_NAGA", "/nonexistent/naga")
    why = NagaEngine().availability()
    assert why == "WGSLGEN_NAGA: '/nonexistent/naga' is not an executable file"
