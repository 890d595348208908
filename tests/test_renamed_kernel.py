"""A kernel renamed in its kernel.toml: a full build removes the old name's files (and only
those: wgslgen's manifest lists them), and vendor skips the selection's entries of the old
name with a warning (an error with --strict) instead of refusing everything."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from wgslgen.cli import main

from .conftest import scale_project

FAST = ["--l2-bytes", "1M", "--rounds", "3", "--adapter", "cpu", "--shape", "n=1000"]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project (the current folder) whose one kernel is a copy of `scale`."""
    return scale_project(tmp_path, monkeypatch, 'templates = ["kernels"]\nbundled = false\n')


def test_a_renamed_kernel_leaves_no_stale_files_and_vendor_skips_its_entries(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["build", "--no-validate"]) == 0
    Path("generated/NOTES.txt").write_text("mine")
    tune = ["tune", "--kernel", "scale", "--set", "s=f32", "--set", "wg=32", "--set", "wg=64"]
    assert main([*tune, *FAST]) == 0
    assert "scale" in Path("tuning/selection.json").read_text()
    toml = Path("kernels/scale/kernel.toml")
    renamed = 'name = "scale2"\ntemplate = "scale.wgsl.j2"'
    toml.write_text(toml.read_text().replace('name = "scale"', renamed, 1))
    capsys.readouterr()

    assert main(["build", "--check", "--no-validate"]) == 1
    assert "extra" in capsys.readouterr().out
    assert main(["build", "--no-validate"]) == 0
    assert sorted(p.name for p in Path("generated").iterdir()) == [
        "NOTES.txt", "manifest.json", "scale2"
    ]  # fmt: skip
    assert set(json.loads(Path("generated/manifest.json").read_text())["kernels"]) == {"scale2"}

    capsys.readouterr()
    assert main(["vendor", "--out", "app/k", "--lang", "py", "--strict"]) == 2
    assert "names unknown kernel(s) scale" in capsys.readouterr().err
    assert main(["vendor", "--out", "app/k", "--lang", "py"]) == 0
    assert "names unknown kernel(s) scale; their entries skipped" in capsys.readouterr().out
    manifest = json.loads(Path("app/k/manifest.json").read_text())
    assert set(manifest["kernels"]) == {"scale2"}
    assert str(project) not in json.dumps(manifest["warnings"])


def test_a_plain_file_borrows_a_project_kernels_reference(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `--reference scale` with `--templates my.wgsl` searched the bundled library only.
    assert main(["build", "--no-validate", "--set", "wg=64", "--set", "s=f32"]) == 0
    shutil.copy("generated/scale/scale__wg64_sf32.wgsl", "my_scale.wgsl")
    argv = ["test", "--templates", "my_scale.wgsl", "--reference", "scale", "--adapter", "cpu"]
    capsys.readouterr()
    assert main([*argv, "--json"]) == 0
    [result] = {r["variant"] for r in json.loads(capsys.readouterr().out)["results"]}
    assert result == "my_scale__wg64_sf32"  # its header names the axis values
    assert main([*argv[:3], "--reference", "scal", "--adapter", "cpu"]) == 2
    err = capsys.readouterr().err
    assert "'scal': no such kernel; known: my_scale, scale" in err and "attention" not in err
