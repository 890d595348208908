"""The TypeScript/JS binding: tsc output is current; Node + npm `webgpu` (Dawn) on SwiftShader
runs every vendored variant the adapter supports and agrees with the Python selector."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests import vendor_helpers as vh
from tests.conftest import ROOT

RUNTIME = ROOT / "wgslgen" / "vendor" / "runtime" / "ts"
README = ROOT / "README.md"
TSC = vh.TSC


def swiftshader_icd() -> Path | None:
    """The SwiftShader Vulkan ICD that Debian's chromium ships (None when not installed)."""
    try:
        files = subprocess.run(
            ["dpkg", "-L", "chromium-common", "chromium"], capture_output=True, text=True
        ).stdout.split()
    except OSError:
        return None
    return next((Path(f) for f in files if f.endswith("vk_swiftshader_icd.json")), None)


ICD = swiftshader_icd()


def run_node_client(out: Path, tmp_path: Path) -> dict:
    """Run the vendored JS module of ``out`` on the cases beside it under Node (Dawn on
    SwiftShader), through tests/vendor_clients/node_client.test.mjs; its report."""
    report = tmp_path / "report.json"
    env = {
        **os.environ,
        "VK_ICD_FILENAMES": str(ICD),
        "WGSLGEN_VENDORED_JS": str(out / "ts" / "wgslgen_kernels.js"),
        "WGSLGEN_CASES": str(out.parent / "cases.json"),
        "WGSLGEN_REPORT": str(report),
    }
    test_file = ROOT / "tests" / "vendor_clients" / "node_client.test.mjs"
    proc = subprocess.run(
        ["node", "--test", str(test_file)], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    return json.loads(report.read_text())


@pytest.fixture(scope="module")
def vendored(tmp_path_factory):
    return vh.shared(tmp_path_factory)


@pytest.mark.skipif(not TSC.exists(), reason="typescript not installed: run scripts/setup.sh")
def test_compiled_runtime_is_current(tmp_path):
    shutil.copy(RUNTIME / "runtime.ts", tmp_path / "runtime.ts")
    config = json.loads((RUNTIME / "tsconfig.json").read_text())
    config["compilerOptions"]["typeRoots"] = [str(ROOT / "node_modules")]
    (tmp_path / "tsconfig.json").write_text(json.dumps(config))
    proc = subprocess.run([str(TSC), "-p", str(tmp_path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout
    for ext in ("js", "d.ts"):
        assert (tmp_path / f"runtime.{ext}").read_text() == (
            RUNTIME / f"runtime.{ext}"
        ).read_text(), f"runtime.{ext} is stale: run node_modules/.bin/tsc -p {RUNTIME}"


def test_vendored_ts_module_typechecks(vendored):
    out = vendored[0]
    assert {p.name for p in (out / "ts").iterdir()} == {
        "wgslgen_kernels.ts",
        "wgslgen_kernels.js",
        "wgslgen_kernels.d.ts",
    }
    if not TSC.exists():
        pytest.skip("typescript not installed")
    vh.ts_module_typechecks(out / "ts" / "wgslgen_kernels.ts")


def test_readmes_typescript_example_typechecks(vendored, tmp_path):
    """README's TypeScript block, as written, under tsc --strict with @webgpu/types."""
    if not TSC.exists():
        pytest.skip("typescript not installed")
    block = re.search(r"```js\n(import \{ selectVariant.*?)```", README.read_text(), re.S)
    assert block, "README lost its TypeScript example"
    shutil.copytree(vendored[0] / "ts", tmp_path / "kernels" / "ts")
    declared = "declare const k_hist: GPUBuffer, v_hist: GPUBuffer, q: GPUBuffer, out: GPUBuffer;"
    (tmp_path / "app.ts").write_text(f"{declared}\n{block.group(1)}export {{}};\n")
    vh.ts_module_typechecks(tmp_path / "app.ts")


@pytest.mark.skipif(ICD is None, reason="Debian chromium (SwiftShader ICD) not installed")
@pytest.mark.skipif(
    not (ROOT / "node_modules" / "webgpu").exists(), reason="npm webgpu not installed"
)
def test_node_dawn_swiftshader_runs_the_shared_cases(tmp_path, vendored):
    out, plan, _ = vendored
    got = run_node_client(out, tmp_path)
    # The manifest speaks WebGPU's feature names: Dawn reports "subgroups", wgpu-py "subgroup".
    assert not any("subgroup" in v["features"] for v in plan.manifest["variants"].values())
    f16 = {n for n, v in plan.manifest["variants"].items() if "shader-f16" in v["features"]}
    assert set(got["ran"]) == set(plan.manifest["variants"]) - f16
    assert {v for v, _ in got["skipped"]} == f16
    assert got["adapter"].startswith("google/swiftshader")
