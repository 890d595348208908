"""benchmarks/pipeline_stats.py: its SPIR-V reflector on a real transpiled kernel, its one-line
failure where the Vulkan driver lacks VK_KHR_pipeline_executable_properties (lavapipe of
Mesa 22), or its statistics where the driver has it, and real statistics from RADV's compiler
on a null device (no AMD GPU needed)."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest

from wgslgen.cli import main

from .conftest import ROOT

SCRIPT = ROOT / "benchmarks" / "pipeline_stats.py"
KERNEL = "attention_bwd_dq_split"
VARIANT = f"{KERNEL}__wg256_ch128_g1_u4_e0_sf16"  # f16: the device needs its features enabled
SELECT = ["--set", "wg=256", "--set", "ch=128", "--set", "g=1", "--set", "u=4", "--set", "e=0"]
WGSL_BINDING = re.compile(r"@group\((\d+)\)\s*@binding\((\d+)\)\s*var<(\w+)")


@pytest.fixture(scope="module")
def stats() -> ModuleType:
    """The script as a module (benchmarks/ is no package)."""
    spec = importlib.util.spec_from_file_location("pipeline_stats", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def spv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One variant of the kernel, transpiled to SPIR-V by naga as `wgslgen transpile` does."""
    out = tmp_path_factory.mktemp("spv")
    args = ["transpile", "--kernel", KERNEL, *SELECT, "--set", "s=f16", "--to", "spv"]
    assert main([*args, "--out", str(out)]) == 0
    assert [p.relative_to(out).as_posix() for p in out.rglob("*.spv")] == [
        f"{KERNEL}/{VARIANT}.spv"
    ]
    return out / KERNEL / f"{VARIANT}.spv"


def test_the_reflector_finds_the_entry_points_and_the_wgsl_bindings(
    stats: ModuleType, spv: Path
) -> None:
    module = stats.reflect(spv)
    assert module.entry_points == ("partials", "finalize")
    wgsl = (ROOT / "generated" / KERNEL / f"{VARIANT}.wgsl").read_text(encoding="utf-8")
    declared = [(int(g), int(b), space) for g, b, space in WGSL_BINDING.findall(wgsl)]
    assert len(declared) == wgsl.count("@binding(") == 8
    assert [space for *_, space in declared] == ["uniform"] + ["storage"] * 7
    kinds = {"uniform": stats.UNIFORM_BUFFER, "storage": stats.STORAGE_BUFFER}
    found = [(b.set, b.binding, b.descriptor_type) for b in module.bindings]
    assert found == [(g, b, kinds[space]) for g, b, space in declared]
    assert module.set_layouts() == [list(module.bindings)]


def test_descriptor_types_are_vulkans_values(stats: ModuleType) -> None:
    import vulkan

    assert stats.UNIFORM_BUFFER == vulkan.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER
    assert stats.STORAGE_BUFFER == vulkan.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER


def test_a_set_the_module_skips_gets_an_empty_layout(stats: ModuleType, spv: Path) -> None:
    first, second = stats.reflect(spv).bindings[:2]
    moved = dataclasses.replace(second, set=2)
    module = dataclasses.replace(stats.reflect(spv), bindings=(first, moved))
    assert module.set_layouts() == [[first], [], [moved]]


def test_what_is_not_spirv_is_refused_in_one_line(
    stats: ModuleType, spv: Path, tmp_path: Path
) -> None:
    with pytest.raises(stats.ProbeError, match=r"\.wgsl: not a SPIR-V module$"):
        stats.reflect(ROOT / "generated" / KERNEL / f"{VARIANT}.wgsl")
    code = spv.read_bytes()
    assert code[:4] == bytes.fromhex("03022307") and len(code) < 0xFFFF * 4  # naga's byte order
    bad = tmp_path / "bad.spv"  # the first instruction after the 5-word header claims 65535 words
    bad.write_bytes(code[:22] + b"\xff\xff" + code[24:])  # the word count: a word's top half
    with pytest.raises(stats.ProbeError, match=r"bad\.spv: malformed instruction at word 5$"):
        stats.reflect(bad)


def _probe(*args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, str(SCRIPT), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=ROOT)


def _lavapipe_has_the_extension() -> bool:
    """Whether this machine's lavapipe offers the extension (Mesa 22's does not; later may)."""
    import vulkan as vk

    info = vk.VkInstanceCreateInfo(pApplicationInfo=vk.VkApplicationInfo(apiVersion=1 << 22))
    instance = vk.vkCreateInstance(info, None)
    try:
        for device in vk.vkEnumeratePhysicalDevices(instance):
            if "llvmpipe" in vk.vkGetPhysicalDeviceProperties(device).deviceName:
                listed = vk.vkEnumerateDeviceExtensionProperties(device, None)
                names = {e.extensionName for e in listed}
                return "VK_KHR_pipeline_executable_properties" in names
        raise AssertionError("no lavapipe: scripts/setup.sh installs it")
    finally:
        vk.vkDestroyInstance(instance, None)


def test_on_lavapipe_it_probes_or_stops_with_one_line_naming_the_device_and_extension(
    spv: Path, tmp_path: Path
) -> None:
    out = tmp_path / "stats.json"
    # The folder above the kernel's (searched for *.spv); --device: lavapipe's verdict whatever
    # other driver this machine has.
    done = _probe(
        str(spv.parent.parent), "--only", "_sf16$", "--device", "llvmpipe", "--json", str(out)
    )
    if _lavapipe_has_the_extension():  # a later Mesa: the real statistics, per entry point
        assert done.returncode == 0, done.stdout + done.stderr
        results = json.loads(out.read_text(encoding="utf-8"))["results"]
        assert [r["entry"] for r in results] == ["partials", "finalize"]
        assert all(r["error"] is None and r["executables"] for r in results)
        return
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == "reflected 1 module(s), 2 compute entry point(s)\n"  # before Vulkan
    assert "Traceback" not in done.stderr
    assert re.fullmatch(
        r"pipeline_stats: error: the Vulkan driver of llvmpipe \(.+\) does not support "
        r"VK_KHR_pipeline_executable_properties\n",
        done.stderr,
    ), done.stderr
    assert not out.exists()
    debug = _probe(str(spv), "--device", "llvmpipe", "--debug")
    assert debug.returncode == 1 and "Traceback" in debug.stderr
    assert "ProbeError: the Vulkan driver of llvmpipe" in debug.stderr


def test_nothing_to_probe_and_ir_without_json_are_refused(spv: Path, tmp_path: Path) -> None:
    done = _probe(str(spv.parent), "--only", "no-such-variant")
    assert (done.returncode, done.stderr) == (2, "pipeline_stats: error: no .spv file to probe\n")
    done = _probe(str(tmp_path / "missing.spv"))
    assert done.returncode == 2 and "no such file or folder" in done.stderr
    done = _probe(str(spv), "--ir")
    assert done.returncode == 2 and "--ir needs --json" in done.stderr


RADEON_ICD = Path("/usr/share/vulkan/icd.d/radeon_icd.x86_64.json")


def test_real_statistics_from_radv_without_an_amd_gpu(spv: Path, tmp_path: Path) -> None:
    # Mesa's RADV compiles for a named AMD GPU on a null device (no hardware needed): a real
    # shader compiler's registers and code size on any machine with mesa-vulkan-drivers.
    assert RADEON_ICD.is_file(), "mesa-vulkan-drivers' RADV is missing: run scripts/setup.sh"
    out = tmp_path / "stats.json"
    env = {**os.environ, "RADV_FORCE_FAMILY": "gfx1100"}
    env["VK_DRIVER_FILES"] = env["VK_ICD_FILENAMES"] = str(RADEON_ICD)
    command = [sys.executable, str(SCRIPT), str(spv), "--device", "RADV", "--json", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=ROOT, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads(out.read_text(encoding="utf-8"))
    assert "GFX1100" in data["device"]
    assert [r["entry"] for r in data["results"]] == ["partials", "finalize"]
    for result in data["results"]:
        assert result["error"] is None
        stats = result["executables"][0]["statistics"]
        assert stats["VGPRs"] > 0 and stats["Code size"] > 0 and stats["Spilled VGPRs"] == 0
    # the partials pass does more than the finalize pass: more code, more registers
    partials, finalize = (r["executables"][0]["statistics"] for r in data["results"])
    assert partials["Code size"] > finalize["Code size"]
    assert partials["VGPRs"] > finalize["VGPRs"]
    assert "VGPRs" in done.stdout  # the table's columns are the driver's statistics


def test_a_subgroup_variant_as_spirv_1_3_builds_on_radv(tmp_path: Path) -> None:
    # `wgslgen transpile` raises a subgroup variant's header to SPIR-V 1.3 (naga writes 1.0
    # here): a real driver builds that module, subgroup operations and all.
    out = tmp_path / "spv"
    args = ["transpile", "--kernel", KERNEL, *SELECT[:-2], "--set", "e=2", "--set", "s=f16"]
    assert main([*args, "--to", "spv", "--out", str(out)]) == 0
    (spv,) = out.rglob("*.spv")
    assert spv.read_bytes()[4:8] == (0x00010300).to_bytes(4, "little")
    assert (
        "subgroupShuffleXor" in (ROOT / "generated" / KERNEL / f"{spv.stem}.naga.wgsl").read_text()
    )
    env = {**os.environ, "RADV_FORCE_FAMILY": "gfx1100"}
    env["VK_DRIVER_FILES"] = env["VK_ICD_FILENAMES"] = str(RADEON_ICD)
    stats = tmp_path / "stats.json"
    command = [sys.executable, str(SCRIPT), str(spv), "--device", "RADV", "--json", str(stats)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=ROOT, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads(stats.read_text(encoding="utf-8"))["results"]
    assert [r["entry"] for r in results] == ["partials", "finalize"]
    for result in results:
        assert result["error"] is None
        assert result["executables"][0]["statistics"]["VGPRs"] > 0


def _disassembly(code: bytes, tmp_path: Path, name: str) -> str:
    module = tmp_path / f"{name}.spv"
    module.write_bytes(code)
    valid = subprocess.run(["spirv-val", "--target-env", "vulkan1.0", str(module)], text=True)
    assert valid.returncode == 0, f"{name}: spirv-val rejects it"
    done = subprocess.run(["spirv-dis", "--raw-id", str(module)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_unzeroed_drops_nagas_workgroup_zeroing_and_nothing_else(
    stats: ModuleType, spv: Path, tmp_path: Path
) -> None:
    # naga zeroes each entry point's workgroup arrays (one invocation stores null to each, then
    # a barrier); wgpu-native 29 does not, so the timed pipelines have neither.
    code = spv.read_bytes()
    unzeroed, found = stats.without_workgroup_zeroing(code, spv)
    assert found == 2  # partials and finalize each use workgroup memory
    before = _disassembly(code, tmp_path, "before").splitlines()
    after = _disassembly(unzeroed, tmp_path, "after").splitlines()
    nulls = {line.split()[0] for line in before if "OpConstantNull" in line}
    null_stores = [line for line in before if "OpStore" in line and line.split()[-1] in nulls]
    assert null_stores  # the polyfill was there to drop
    (barrier,) = {line for line in before if "OpControlBarrier" in line}
    # exactly the null stores and one barrier a pass are gone
    assert Counter(before) - Counter(after) == Counter(null_stores + [barrier] * found)
    assert not Counter(after) - Counter(before)
    # what is left has none of it, and a second pass finds nothing more
    assert stats.without_workgroup_zeroing(unzeroed, spv) == (unzeroed, 0)


def test_unzeroed_statistics_on_radv_are_the_code_without_the_zeroing(
    spv: Path, tmp_path: Path
) -> None:
    env = {**os.environ, "RADV_FORCE_FAMILY": "gfx1100"}
    env["VK_DRIVER_FILES"] = env["VK_ICD_FILENAMES"] = str(RADEON_ICD)
    instructions = {}
    for flags in ([], ["--unzeroed"]):
        out = tmp_path / f"stats{len(flags)}.json"
        command = [sys.executable, str(SCRIPT), str(spv), "--device", "RADV", *flags]
        done = subprocess.run(
            [*command, "--json", str(out)],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=ROOT,
            env=env,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        results = json.loads(out.read_text(encoding="utf-8"))["results"]
        instructions[bool(flags)] = {
            r["entry"]: r["executables"][0]["statistics"]["Instructions"] for r in results
        }
        if flags:
            assert "dropped naga's workgroup-memory zeroing from 2 entry point(s)" in done.stdout
    for entry in ("partials", "finalize"):
        assert 0 < instructions[True][entry] < instructions[False][entry], instructions
