"""The generated Rust module compiles with `rustc --test` and passes the shared cases."""

from __future__ import annotations

import json
import shutil

import pytest

from tests import vendor_helpers as vh

RUSTC = shutil.which("rustc")


@pytest.fixture(scope="module")
def vendored(tmp_path_factory):
    return vh.shared(tmp_path_factory)


@pytest.mark.skipif(RUSTC is None, reason="rustc is not installed (no Rust toolchain on PATH)")
def test_rust_module_conformance(tmp_path, vendored):
    out, _, cases = vendored
    manifest = json.loads((out / "manifest.json").read_text())
    vh.rust_conformance_passes(out, cases, manifest, tmp_path)
