"""benchmarks/vendored_large_shape.py on lavapipe, at a history that fits its 128 MiB binding
cap: the script's own check (a vendored package against numpy) passes, and a wrong result
would fail it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from wgslgen.cli import main

from .conftest import ROOT

SCRIPT = ROOT / "benchmarks" / "vendored_large_shape.py"


def _run(package: Path) -> tuple[int, dict]:
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), str(package), "--history", "3000"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    return proc.returncode, json.loads(proc.stdout)


def test_the_vendored_package_matches_numpy_and_a_broken_one_does_not(tmp_path: Path) -> None:
    package = tmp_path / "vk"
    assert main(["vendor", "--out", str(package), "--lang", "py",
                 "--kernel", "attention_bwd_dkv"]) == 0  # fmt: skip
    code, doc = _run(package)
    assert code == 0 and doc["ok"], doc
    assert doc["history_len"] == 3000 and doc["variant"].startswith("attention_bwd_dkv__")
    assert set(doc["max_error_over_max"]) == {"d_k", "d_v"}
    for shader in (package / "shaders").glob("*.wgsl"):  # d_v = probs · d_out, now twice that
        shader.write_text(shader.read_text().replace("probs[", "2.0 * probs["))
    code, doc = _run(package)
    assert code == 1 and not doc["ok"] and doc["max_error_over_max"]["d_v"] > 0.1, doc
