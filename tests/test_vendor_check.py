"""`wgslgen vendor --check`: clean after vendoring, hand-edited after an edit, stale after a
template change; the pre-commit hook definition."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from tests import vendor_helpers as vh
from tests.conftest import GOOD_KERNELS, ROOT, TEMPLATES
from wgslgen.vendor import folder


def _kernel_copy(tmp_path: Path) -> Path:
    dest = tmp_path / "templates"
    shutil.copytree(TEMPLATES / "_lib", dest / "_lib")
    shutil.copytree(TEMPLATES / "attention_bwd_dkv", dest / "attention_bwd_dkv")
    return dest


def test_check_clean_then_hand_edited_then_stale(tmp_path):
    templates = _kernel_copy(tmp_path)
    out = tmp_path / "vendored"
    plan = vh.vendor(out, langs=["py"], selection=None, templates=[templates])
    assert folder.check_folder(out) == []

    shader = next(p for p in plan.manifest["files"] if p.startswith("shaders/"))
    text = (out / shader).read_text()
    (out / shader).write_text(text.replace("do not edit", "do not edi7", 1))
    findings = folder.check_folder(out)
    assert [(f.path, f.kind) for f in findings] == [(shader, "hand-edited")]

    (out / shader).write_text(text)  # undo, then change the template
    j2 = templates / "attention_bwd_dkv" / "attention_bwd_dkv.wgsl.j2"
    j2.write_text(j2.read_text() + "// a template edit\n")
    findings = folder.check_folder(out)
    kinds = {f.path: f.kind for f in findings}
    assert kinds[shader] == "stale" and kinds["manifest.json"] == "stale"
    assert set(kinds.values()) == {"stale"}
    # which entries of the manifest: a reader should not have to diff it by hand
    [manifest] = [f.detail for f in findings if f.path == "manifest.json"]
    assert manifest.startswith("differs in ") and "variants.attention_bwd_dkv__" in manifest


def test_pre_commit_hook_runs_vendor_check():
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    hook = next(h for h in hooks if h["id"] == "wgslgen-vendor-check")
    assert hook["entry"] == "wgslgen vendor --check" and hook["pass_filenames"] is False


def test_cli_vendor_and_check_exit_codes(tmp_path, capsys):
    from wgslgen.cli import main

    templates = _kernel_copy(tmp_path)
    out = tmp_path / "gpu_kernels"
    none = str(tmp_path / "no_selection.json")
    args = ["vendor", "--templates", str(templates), "--lang", "py,rust"]
    assert main([*args, "--out", str(out), "--selection", none]) == 2  # no such file: named
    assert "no_selection.json: no such file" in capsys.readouterr().err
    assert main([*args, "--out", str(out)]) == 0
    assert main(["vendor", "--check", str(out)]) == 0
    (out / "rust" / "wgslgen_kernels.rs").write_text("// edited\n")
    assert main(["vendor", "--check", str(out)]) == 1
    out_text = capsys.readouterr().out.replace("\n", "")
    assert "wgslgen_kernels.rs: hand-edited" in out_text
    assert "to update it" not in out_text  # vendoring again would drop the edit: not offered
    (out / "rust" / "wgslgen_kernels.rs").unlink()
    assert main(["vendor", "--check", str(out)]) == 1
    assert f"to update it: cd {out} && wgslgen vendor --out ." in capsys.readouterr().out
    assert main(["vendor", "--out", str(ROOT / "generated" / "x")]) == 2
    assert main(["vendor", "--check", str(tmp_path)]) == 2  # never vendored
    assert "not a vendored folder" in capsys.readouterr().err


def test_check_works_from_the_consuming_project_and_a_moved_checkout(tmp_path, capsys, monkeypatch):
    from wgslgen.cli import main

    producer = tmp_path / "a" / "producer"
    _kernel_copy(producer)
    (producer / "tuning").mkdir()
    shutil.copy(ROOT / "tuning" / "selection.json", producer / "tuning" / "selection.json")
    monkeypatch.chdir(producer)  # relative paths, as a user types them
    args = ["vendor", "--templates", "templates", "--selection", "tuning/selection.json"]
    assert main([*args, "--lang", "py", "--out", "../app/src/gpu_kernels"]) == 0
    out = tmp_path / "a" / "app" / "src" / "gpu_kernels"
    inputs = vh.json.loads((out / "manifest.json").read_text())["inputs"]
    assert inputs["templates"] == ["../../../producer/templates"]  # from the vendored folder
    assert inputs["selection"] == "../../../producer/tuning/selection.json"
    capsys.readouterr()
    for cwd, folder_arg in ((out.parents[1], "src/gpu_kernels"), (out, ".")):
        monkeypatch.chdir(cwd)  # the consuming project's pre-commit hook, the folder itself
        assert main(["vendor", "--check", folder_arg]) == 0, capsys.readouterr()
    # both checkouts moved together (another machine): still clean, the old place gone
    shutil.move(tmp_path / "a", tmp_path / "b")
    monkeypatch.chdir(tmp_path)
    assert main(["vendor", "--check", "b/app/src/gpu_kernels"]) == 0, capsys.readouterr()
    shutil.rmtree(tmp_path / "b" / "producer" / "templates")
    assert main(["vendor", "--check", "b/app/src/gpu_kernels"]) == 2
    err = capsys.readouterr().err
    assert "producer/templates: not found: the templates that b/app/src/gpu_kernels was" in err


def test_a_manifest_listing_files_outside_its_folder_is_refused(tmp_path, capsys):
    import json

    from wgslgen.cli import main

    templates = _kernel_copy(tmp_path)
    out = tmp_path / "gpu_kernels"
    args = ["vendor", "--templates", str(templates), "--lang", "py", "--out", str(out)]
    assert main(args) == 0
    keep = tmp_path / "keep.txt"
    keep.write_text("mine")
    manifest = json.loads((out / "manifest.json").read_text())
    for outside in (str(keep), "../keep.txt", "shaders/../../keep.txt"):
        edited = {**manifest, "files": {**manifest["files"], outside: "0" * 64}}
        (out / "manifest.json").write_text(json.dumps(edited))
        capsys.readouterr()
        assert main(args) == 2  # a re-vendor would have removed it as no longer vendored
        assert f"lists {outside!r}, which is not a file inside" in capsys.readouterr().err
        assert main(["vendor", "--check", str(out)]) == 2
        assert keep.read_text() == "mine"


def test_vendor_one_kernel_of_a_selection_naming_several(tmp_path, capsys, monkeypatch):
    from wgslgen.cli import main

    templates = _kernel_copy(tmp_path)
    shutil.copytree(GOOD_KERNELS / "scale", templates / "scale")  # a project's own kernel
    bundled = vh.json.loads((ROOT / "tuning" / "selection.json").read_text())
    own = {**bundled["entries"][0], "kernel": "scale", "shape": "n=1000"}
    for role in ("baseline", "default", "winner"):
        own[role] = {**own[role], "variant": "scale__wg64_sf32"}
    selection = tmp_path / "selection.json"
    selection.write_text(vh.json.dumps({**bundled, "entries": [*bundled["entries"], own]}))
    args = ["vendor", "--templates", str(templates), "--selection", str(selection)]
    out = tmp_path / "gpu_kernels"
    assert main([*args, "--kernel", "attention_bwd_dkv", "--out", str(out)]) == 0, (
        capsys.readouterr().err
    )
    manifest = vh.json.loads((out / "manifest.json").read_text())
    assert set(manifest["kernels"]) == {"attention_bwd_dkv"}
    bad = tmp_path / "bad.json"
    bad.write_bytes(b"\xff\xfe{}")
    assert main([*args[:-1], str(bad), "--out", str(tmp_path / "o2")]) == 2
    assert "not UTF-8 text" in capsys.readouterr().err
