"""Without a Vulkan driver wgpu falls back to OpenGL; wgslgen must say so, not run silently."""

from __future__ import annotations

import json

from wgslgen.cli import main

from .conftest import GOOD_KERNELS


def _hide_vulkan(monkeypatch) -> None:
    # The Vulkan loader reads these; a file that does not exist leaves it with no driver.
    for name in ("VK_ICD_FILENAMES", "VK_DRIVER_FILES"):
        monkeypatch.setenv(name, "/nonexistent/icd.json")


def test_a_run_without_vulkan_names_the_backend_and_warns(monkeypatch, capsys):
    _hide_vulkan(monkeypatch)
    code = main(["test", "--templates", str(GOOD_KERNELS), "--kernel", "scale",
                 "--adapter", "cpu", "--set", "wg=32", "--set", "s=f32"])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, out + err
    assert "[OpenGL, CPU]" in out
    assert "warning: running on OpenGL, not Vulkan" in err


def test_the_warning_stays_off_stdout_in_json_mode(monkeypatch, capsys):
    _hide_vulkan(monkeypatch)
    code = main(["test", "--templates", str(GOOD_KERNELS), "--kernel", "scale", "--json",
                 "--adapter", "cpu", "--set", "wg=32", "--set", "s=f32"])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "OpenGL" in json.loads(out)["adapter"]
    assert "running on OpenGL" in err


def test_vulkan_runs_without_the_warning(capsys):
    code = main(["test", "--templates", str(GOOD_KERNELS), "--kernel", "scale",
                 "--adapter", "cpu", "--set", "wg=32", "--set", "s=f32"])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, out + err
    assert "[Vulkan, CPU]" in out and "not Vulkan" not in err


def test_tune_says_it_too(monkeypatch, capsys, tmp_path):
    _hide_vulkan(monkeypatch)
    code = main(["tune", "--templates", str(GOOD_KERNELS), "--kernel", "scale", "--adapter",
                 "cpu", "--set", "wg=32", "--set", "s=f32", "--shape", "n=256", "--rounds", "3",
                 "--l2-bytes", "1M", "--db", str(tmp_path / "r.jsonl"),
                 "--selection", str(tmp_path / "s.json")])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, out + err
    assert "adapter: llvmpipe" in out and "[OpenGL, CPU]" in out
    assert "warning: running on OpenGL, not Vulkan" in err
