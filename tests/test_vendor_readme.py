"""A vendored folder's README.md: what it holds, how to call it, the command that vendors it
again; and `vendor` never replaces a file it did not write."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from tests.conftest import ROOT
from wgslgen.cli import main

SELECTION = ROOT / "tuning" / "selection.json"


@pytest.fixture
def vendored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(ROOT)
    out = tmp_path / "app" / "gpu_kernels"
    args = ["vendor", "--out", str(out), "--lang", "py,rust,ts", "--selection", str(SELECTION)]
    assert main([*args, "--kernel", "attention_bwd_dq", "--kernel", "attention"]) == 0
    return out


def test_readme_lists_the_kernels_and_vendors_again_from_the_folder(
    vendored: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = json.loads((vendored / "manifest.json").read_text())
    readme = (vendored / "README.md").read_text()
    assert "README.md" in manifest["files"]  # hashed: --check sees a hand edit
    for name, k in manifest["kernels"].items():
        assert f"| `{name}` |" in readme
        assert f"`{k['selection']['portable_fallback']}`" in readme
    assert "kernels.AttentionShape(head_dim=..." in readme  # the first kernel's shape class
    assert "wgslgen_kernels::Shape::Attention(" in readme
    # The bundled selection picks f16-storage variants: the README says which bindings.
    encodings = sorted(
        {
            b["encoding"]
            for v in manifest["kernels"]["attention_bwd_dq"]["variants"]
            for b in manifest["variants"][v]["bindings"]
            if b["name"] == "k_hist"
        }
    )
    assert len(encodings) > 1
    assert f"- `attention_bwd_dq`: `k_hist`: {' or '.join(encodings)};" in readme, readme
    lines = readme.splitlines()
    [again] = [ln.split("  #")[0] for ln in lines if ln.startswith("wgslgen vendor --out")]
    capsys.readouterr()
    monkeypatch.chdir(vendored)
    assert main([*shlex.split(again)[1:], "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["changed"] == []
    assert main(["vendor", "--check", "."]) == 0
    (vendored / "README.md").write_text(readme + "my note\n")
    assert main(["vendor", "--check", "."]) == 1
    assert "README.md" in capsys.readouterr().out


def test_vendor_never_replaces_a_file_its_manifest_does_not_list(
    vendored: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A folder vendored before README.md existed, where the user then wrote their own.
    manifest_path = vendored / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    del manifest["files"]["README.md"]
    manifest_path.write_text(json.dumps(manifest))
    (vendored / "README.md").write_text("our notes on these kernels\n")
    args = ["vendor", "--out", str(vendored), "--lang", "py,rust,ts", "--selection", str(SELECTION)]
    assert main([*args, "--kernel", "attention_bwd_dq", "--kernel", "attention"]) == 2
    err = capsys.readouterr().err
    assert "README.md not written by wgslgen" in err
    assert (vendored / "README.md").read_text() == "our notes on these kernels\n"
    assert json.loads(manifest_path.read_text()) == manifest  # nothing written


def test_a_narrower_lang_says_what_it_removed(
    vendored: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["vendor", "--out", str(vendored), "--lang", "py", "--selection", str(SELECTION)]
    capsys.readouterr()
    assert main([*args, "--kernel", "attention_bwd_dq", "--kernel", "attention"]) == 0
    assert "removed (no longer vendored): rust, ts" in capsys.readouterr().out
    assert not (vendored / "rust").exists() and (vendored / "__init__.py").is_file()


def test_the_vendor_again_command_keeps_a_path_with_spaces_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "my tuning").mkdir()
    selection = tmp_path / "my tuning" / "selection.json"
    selection.write_bytes(SELECTION.read_bytes())
    out = tmp_path / "my app" / "gpu kernels"
    monkeypatch.chdir(ROOT)
    args = ["vendor", "--out", str(out), "--lang", "ts", "--selection", str(selection)]
    assert main([*args, "--kernel", "attention"]) == 0
    lines = (out / "README.md").read_text().splitlines()
    [again] = [ln.split("  #")[0] for ln in lines if ln.startswith("wgslgen vendor --out")]
    assert "'../../my tuning/selection.json'" in again, again
    capsys.readouterr()
    monkeypatch.chdir(out)
    assert main([*shlex.split(again)[1:], "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["changed"] == []


def test_fewer_kernels_name_the_files_a_kept_folder_lost(
    vendored: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["vendor", "--out", str(vendored), "--lang", "py,rust,ts", "--selection", str(SELECTION)]
    capsys.readouterr()
    assert main([*args, "--kernel", "attention"]) == 0
    out = capsys.readouterr().out
    assert "removed (no longer vendored): shaders/ (" in out, out  # shaders/ itself stays
    assert (vendored / "shaders").is_dir()


def test_outside_a_project_the_missing_selection_is_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)  # no project, no tuning/selection.json here
    assert main(["vendor", "--out", str(tmp_path / "k"), "--lang", "ts", "--json"]) == 0
    warnings = json.loads(capsys.readouterr().out)["manifest"]["warnings"]
    assert any("no selection file" in w for w in warnings), warnings
    (tmp_path / "sel").mkdir()
    assert (
        main(["vendor", "--out", str(tmp_path / "k2"), "--selection", str(tmp_path / "sel")]) == 2
    )
    assert "a folder, not a file" in capsys.readouterr().err


def test_a_broken_manifest_says_how_out_not_to_vendor_again(
    vendored: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (vendored / "manifest.json").write_text('{"abi_version": 1')
    args = ["vendor", "--out", str(vendored), "--lang", "ts", "--selection", str(SELECTION)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "not valid JSON" in err and "restore it" in err and "re-vendor" not in err
