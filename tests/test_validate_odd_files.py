"""Odd files in a folder each get a verdict of their own, and never cost the others theirs:
brackets nested deep enough to crash wgpu-native, entries that are not files, NUL bytes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from wgslgen.cli import main

GOOD = """
@group(0) @binding(0) var<storage, read_write> out: array<f32>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3u) {
    out[g.x] = 1.0;
}
"""


def nested(depth: int) -> str:
    """A valid compute shader whose one expression nests ``depth`` parentheses deep."""
    return (
        "@group(0) @binding(0) var<storage, read_write> buf: array<u32>;\n"
        f"@compute @workgroup_size(1) fn main() {{ buf[0] = {'(' * depth}1u{')' * depth}; }}\n"
    )


def validate_json(capsys, folder: Path) -> tuple[int, dict[str, dict]]:
    code = main(["validate", "--json", "--templates", str(folder)])
    report = json.loads(capsys.readouterr().out)
    return code, {Path(r["file"]).name: r for r in report["results"]}


def test_deep_nesting_gets_a_verdict_and_the_good_file_beside_it_passes(tmp_path: Path) -> None:
    (tmp_path / "good.wgsl").write_text(GOOD, encoding="utf-8")
    (tmp_path / "nested.wgsl").write_text(nested(5000), encoding="utf-8")
    # In a child process: the crash this guards against would end the test session.
    done = subprocess.run(
        [sys.executable, "-m", "wgslgen", "validate", "--json", "--templates", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "WGSLGEN_NO_CACHE": "1"},
    )
    assert done.returncode == 1, f"exit {done.returncode}: {done.stderr[-2000:]}"
    results = {Path(r["file"]).name: r for r in json.loads(done.stdout)["results"]}
    assert all(v["ok"] for v in results["good.wgsl"]["engines"].values())
    engines = results["nested.wgsl"]["engines"]
    assert engines["wgpu"]["message"].startswith("not compiled by wgpu: brackets nest 5001 deep")
    assert not engines["wgpu"]["limit"]  # a refusal of the text, not a device limit
    assert "recursion limit exceeded" in engines["naga"]["diagnostic"]
    assert engines["dawn"]["message"] == "maximum parser recursive depth reached"


def test_entries_that_are_not_files_are_each_reported(capsys, tmp_path: Path) -> None:
    (tmp_path / "good.wgsl").write_text(GOOD, encoding="utf-8")
    (tmp_path / "broken.wgsl").symlink_to("nowhere.wgsl")
    (tmp_path / "loop1.wgsl").symlink_to("loop2.wgsl")
    (tmp_path / "loop2.wgsl").symlink_to("loop1.wgsl")
    (tmp_path / "dir.wgsl").mkdir()
    code, results = validate_json(capsys, tmp_path)
    assert code == 1
    problems = {name: r["problems"] for name, r in results.items()}
    assert problems == {
        "good.wgsl": [],
        "broken.wgsl": ["cannot read: a symbolic link to nowhere.wgsl, which does not exist"],
        "loop1.wgsl": ["cannot read: a loop of symbolic links"],
        "loop2.wgsl": ["cannot read: a loop of symbolic links"],
        "dir.wgsl": ["cannot read: a folder, not a file (and no kernel.toml in it)"],
    }
    assert all(v["ok"] for v in results["good.wgsl"]["engines"].values())
    # and for people: one line naming each file
    assert main(["validate", "--engines", "naga", "--templates", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert f"error: {tmp_path / 'broken.wgsl'}: cannot read: a symbolic link" in out


def test_a_folder_of_only_a_dangling_link_fails(capsys, tmp_path: Path) -> None:
    (tmp_path / "broken.wgsl").symlink_to("nowhere.wgsl")
    code, results = validate_json(capsys, tmp_path)
    assert code == 1
    assert list(results) == ["broken.wgsl"]


def test_an_empty_run_is_not_a_pass(capsys, tmp_path: Path) -> None:
    assert main(["validate", "--engines", "naga", "--templates", str(tmp_path)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""  # the error alone: an empty table would read as a pass
    assert f"error: nothing to validate: no kernel folder or .wgsl file in {tmp_path}" in (
        captured.err.replace("\n", "")
    )
    code, results = validate_json(capsys, tmp_path)
    assert code == 1 and results == {}


def test_a_nul_byte_is_a_verdict_of_every_engine(capsys, tmp_path: Path) -> None:
    (tmp_path / "good.wgsl").write_text(GOOD, encoding="utf-8")
    (tmp_path / "nul.wgsl").write_text("// a comment \0 here\n" + GOOD, encoding="utf-8")
    code, results = validate_json(capsys, tmp_path)
    assert code == 1
    assert all(v["ok"] for v in results["good.wgsl"]["engines"].values())
    engines = results["nul.wgsl"]["engines"]
    assert set(engines) == {"naga", "wgpu", "dawn"}
    for verdict in engines.values():
        assert not verdict["ok"]
        assert verdict["message"] == (
            "contains a NUL byte at line 1, column 14: cannot be compiled as given"
        )
        assert verdict["template"].endswith("/nul.wgsl:1")  # the file's own line


def test_files_without_a_compute_entry_point_say_what_they_hold(capsys, tmp_path: Path) -> None:
    (tmp_path / "empty.wgsl").write_text("", encoding="utf-8")
    (tmp_path / "helpers.wgsl").write_text(
        "// shared\nfn twice(x: f32) -> f32 { return 2.0 * x; }\n"
    )
    (tmp_path / "render.wgsl").write_text(
        "@vertex fn vs() -> @builtin(position) vec4f { return vec4f(0.0); }\n"
        "@fragment fn fs() -> @location(0) vec4f { return vec4f(1.0); }\n"
    )
    (tmp_path / "good.wgsl").write_text(GOOD, encoding="utf-8")
    code, results = validate_json(capsys, tmp_path)
    assert code == 1
    none = "cannot analyse: no entry point: the file declares no @compute function"
    assert results["empty.wgsl"]["problems"] == [f"{none} (empty, or helpers only)"]
    assert results["helpers.wgsl"]["problems"] == [f"{none} (empty, or helpers only)"]
    assert results["render.wgsl"]["problems"] == [
        "cannot analyse: no @compute entry point (found @vertex vs, @fragment fs): "
        "only compute pipelines are built"
    ]
    assert results["good.wgsl"]["problems"] == []


def test_a_pipe_and_a_link_to_a_device_are_reported_without_being_opened(tmp_path: Path) -> None:
    # Naming them used to open them: a pipe waited for a writer forever, /dev/zero filled memory.
    (tmp_path / "good.wgsl").write_text(GOOD, encoding="utf-8")
    os.mkfifo(tmp_path / "pipe.wgsl")
    (tmp_path / "zero.wgsl").symlink_to("/dev/zero")
    done = subprocess.run(
        [sys.executable, "-m", "wgslgen", "validate", "--json", "--engines", "naga",
         "--templates", str(tmp_path)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    results = {Path(r["file"]).name: r["problems"] for r in json.loads(done.stdout)["results"]}
    assert results == {
        "good.wgsl": [],
        "pipe.wgsl": ["cannot read: not a regular file"],
        "zero.wgsl": ["cannot read: not a regular file"],
    }
    assert done.returncode == 1


def test_a_folder_that_cannot_be_read_is_one_problem_not_the_end(
    capsys, tmp_path: Path, monkeypatch
) -> None:
    (tmp_path / "good.wgsl").write_text(GOOD, encoding="utf-8")
    (tmp_path / "private").mkdir()
    real_is_file = Path.is_file

    def is_file(self: Path) -> bool:  # a folder without search permission (tests run as root)
        if self.parent.name == "private":
            raise PermissionError(13, "Permission denied", str(self))
        return real_is_file(self)

    monkeypatch.setattr(Path, "is_file", is_file)
    code, results = validate_json(capsys, tmp_path)
    assert code == 1
    assert results["private"]["problems"] == ["cannot read: a folder: Permission denied"]
    assert all(v["ok"] for v in results["good.wgsl"]["engines"].values())
    # every other command names the folder (it used to name a kernel.toml that is not there)
    assert main(["list", "--templates", str(tmp_path)]) == 2
    assert f"{tmp_path / 'private'}: cannot be read: Permission denied" in capsys.readouterr().err


def test_shaders_the_folder_layout_passes_over_are_named(capsys, tmp_path: Path) -> None:
    (tmp_path / "good.wgsl").write_text(GOOD, encoding="utf-8")
    (tmp_path / "sub").mkdir()
    (tmp_path / "_lib").mkdir()
    (tmp_path / "_lib" / "macros.wgsl.j2").write_text("")
    for name in ("sub/a.wgsl", "_util.wgsl", ".hidden.wgsl", "UPPER.WGSL"):
        (tmp_path / name).write_text("fn main( {}\n", encoding="utf-8")
    code = main(["validate", "--json", "--templates", str(tmp_path)])
    out, err = capsys.readouterr()
    assert [Path(r["file"]).name for r in json.loads(out)["results"]] == ["good.wgsl"]
    assert code == 0
    for name, why in [
        ("sub", "a folder of 1 .wgsl file(s), not a kernel folder"),
        ("_util.wgsl", "a name starting with `_` or `.`"),
        (".hidden.wgsl", "a name starting with `_` or `.`"),
        ("UPPER.WGSL", "not named *.wgsl (lower case)"),
    ]:
        assert f"warning: {tmp_path / name}: {why}" in err, err
    assert "_lib" not in err
    # the unjudged ones in the JSON too; the `_`/`.` names are libraries or hidden by choice
    unjudged = {Path(e["path"]).name for e in json.loads(out)["not_validated"]}
    assert unjudged == {"sub", "UPPER.WGSL"}
    # each is judged when named on its own
    code, results = validate_json(capsys, tmp_path / "UPPER.WGSL")
    assert code == 1 and results["UPPER.WGSL"]["problems"]


def test_require_is_not_met_by_shaders_that_were_passed_over(capsys, tmp_path: Path) -> None:
    (tmp_path / "good.wgsl").write_text(GOOD, encoding="utf-8")
    (tmp_path / "_util.wgsl").write_text("fn helper() {}\n", encoding="utf-8")
    args = ["validate", "--engines", "naga", "--templates", str(tmp_path), "--require", "naga"]
    assert main(args) == 0  # a library file by its name: left out on purpose
    capsys.readouterr()
    (tmp_path / "compute").mkdir()
    (tmp_path / "compute" / "a.wgsl").write_text(GOOD, encoding="utf-8")
    assert main(args) == 1  # good.wgsl passes, but nothing judged compute/a.wgsl
    said = "".join(capsys.readouterr())  # with the table (stdout); under --json, on stderr
    assert "--require naga: 1 shader file(s) or folder(s) above were not validated" in said
    assert main(args[:-2]) == 0  # without --require: the warning, and a pass
    assert main([*args, "--templates", str(tmp_path / "compute")]) == 0  # named: judged


@pytest.mark.parametrize("newline", ["\r", "\r\n", "\u2028"])
def test_an_error_is_on_the_same_line_in_every_compiler_whatever_the_line_breaks(
    capsys, tmp_path: Path, newline: str
) -> None:
    text = newline.join(
        ["@compute @workgroup_size(1)", "fn main() {", "    let x: u32 = 1.5;", "}", ""]
    )
    (tmp_path / "bad.wgsl").write_bytes(text.encode("utf-8"))  # no newline translation
    code, results = validate_json(capsys, tmp_path / "bad.wgsl")
    assert code == 1
    lines = {name: e["line"] for name, e in results["bad.wgsl"]["engines"].items() if not e["ok"]}
    assert lines and set(lines.values()) == {3}, lines  # naga alone used to count LF only
