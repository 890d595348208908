"""Compiler diagnostics as validate prints them: a quoted source line cut around its caret
(a minified one-line shader is kilobytes wide), and a plain file's frame naming the file's
own line in every engine's wording (naga's path, wgpu-native's `wgsl`, Tint's bare `:L:C`)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from wgslgen.cli import main
from wgslgen.cli.output import FRAME_WIDTH, clipped_frame


def test_clipped_frame_keeps_the_caret_under_its_text() -> None:
    source = "x" * 5000 + "bad_name" + "y" * 5000
    frame = f"1 │ {source}\n  │ {' ' * 5000}^^^^^^^^ unknown\nshort line"
    shown = clipped_frame(frame).splitlines()
    assert all(len(line) <= FRAME_WIDTH + 12 for line in shown), shown
    text, carets = shown[0], shown[1]
    assert text.startswith("      1 │ …") and text.endswith("…")
    assert text[carets.index("^") : carets.index("^") + 8] == "bad_name"
    assert shown[2] == "      short line"
    assert clipped_frame("a\nb\n" * 20).count("\n") == 11  # at most 12 lines


def test_a_one_line_file_error_is_shown_around_the_caret_by_every_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    body = "".join(f"var a{i}: f32 = 1.0; " for i in range(300))
    body += "var b: f32 = undefined_thing; " + "".join(f"var c{i}: f32 = 2.0; " for i in range(300))
    Path("min.wgsl").write_text(f"@compute @workgroup_size(1) fn main() {{ {body}}}")
    column = Path("min.wgsl").read_text().index("undefined_thing") + 1
    assert main(["validate", "--templates", "min.wgsl", "--engines", "naga,wgpu,dawn"]) == 1
    out = capsys.readouterr().out
    diagnostics = out[out.index("error (naga)") :]
    assert max(len(line) for line in diagnostics.splitlines()) < 2 * FRAME_WIDTH
    for engine in ("naga", "wgpu", "dawn"):
        frame = diagnostics.split(f"error ({engine})")[1].split("error (")[0]
        assert f"min.wgsl:1:{column}" in frame, (engine, frame)  # not the rendering's line 5
        assert not re.search(r"(^|[\s:])(wgsl)?:5:\d", frame), (engine, frame)
        lines = frame.splitlines()
        [text] = [i for i, line in enumerate(lines) if "undefined_thing;" in line]
        at = lines[text + 1].index("^")
        assert lines[text][at : at + len("undefined_thing")] == "undefined_thing", frame
