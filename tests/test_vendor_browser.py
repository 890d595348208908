"""Chromium (Debian's, headless, WebGPU on SwiftShader) driven by playwright-core loads a local
page that imports the vendored JS module and runs every vendored variant its adapter supports."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from tests import vendor_helpers as vh
from tests.conftest import ROOT

CHROMIUM = shutil.which("chromium")
PLAYWRIGHT = ROOT / "node_modules" / "playwright-core"


@pytest.fixture(scope="module")
def vendored(tmp_path_factory):
    return vh.shared(tmp_path_factory)


@pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium not installed: run scripts/setup.sh")
@pytest.mark.skipif(not PLAYWRIGHT.exists(), reason="npm playwright-core not installed")
def test_chromium_runs_every_supported_vendored_variant(tmp_path, vendored):
    out, plan, _ = vendored
    site = tmp_path / "site"
    shutil.copytree(out.parent, site)  # the vendored folder and cases.json, beside the page
    shutil.copy(ROOT / "tests" / "vendor_clients" / "browser_page.html", site / "index.html")
    report = tmp_path / "report.json"
    driver = ROOT / "tests" / "vendor_clients" / "browser_driver.mjs"
    proc = subprocess.run(
        ["node", str(driver), CHROMIUM, str(site), str(report)],
        cwd=ROOT, capture_output=True, text=True, timeout=400,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    got = json.loads(report.read_text())
    assert "error" not in got, got.get("error")
    assert got["adapter"].startswith("google/swiftshader")
    variants = plan.manifest["variants"]
    f16 = {n for n, v in variants.items() if "shader-f16" in v["features"]}
    assert got["failed"] == []
    assert set(got["ran"]) == set(variants) - f16  # every variant the adapter supports
    assert {v for v, _ in got["skipped"]} == f16
    for kernel, (chosen, _) in got["selected"].items():  # no shader-f16 on SwiftShader
        assert "shader-f16" not in variants[chosen]["features"], (kernel, chosen)
