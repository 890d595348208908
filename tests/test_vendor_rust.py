"""The generated Rust module compiles with `rustc --test` and passes the shared cases."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from tests import vendor_helpers as vh
from tests.vendor_clients import rust_conformance

RUSTC = shutil.which("rustc")


@pytest.fixture(scope="module")
def vendored(tmp_path_factory):
    return vh.shared(tmp_path_factory)


@pytest.mark.skipif(RUSTC is None, reason="rustc is not installed (no Rust toolchain on PATH)")
def test_rust_module_conformance(tmp_path, vendored):
    out, _, cases = vendored
    manifest = json.loads((out / "manifest.json").read_text())
    src = tmp_path / "conformance_test.rs"
    src.write_text(rust_conformance.generate(out, cases, manifest, "wgslgen_kernels.rs"))
    exe = tmp_path / "conformance"
    build = subprocess.run(
        [RUSTC, "--edition", "2021", "--test", "-O", str(src), "-o", str(exe)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert build.returncode == 0, build.stderr[-4000:]
    assert "warning" not in build.stderr, build.stderr[-2000:]
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "3 passed" in run.stdout
