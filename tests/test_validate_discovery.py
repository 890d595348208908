"""Plain files whose names collide never stop discovery: each is judged under its own name."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from wgslgen.cli import main
from wgslgen.errors import WgslgenError
from wgslgen.spec.loader import discover

from .conftest import GOOD_KERNELS

OK = """
@group(0) @binding(0) var<storage, read_write> out: array<f32>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3u) {
    out[g.x] = 1.0;
}
"""
BAD = OK.replace("out[g.x] = 1.0;", "out[g.x] = g.x;")  # u32 into f32: every engine refuses


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    (one / "a.wgsl").write_text(OK, encoding="utf-8")
    (one / "a.comp.wgsl").write_text(OK, encoding="utf-8")
    (one / "my shader.wgsl").write_text(OK, encoding="utf-8")
    (one / "my_shader.wgsl").write_text(BAD, encoding="utf-8")
    (two / "a.wgsl").write_text(BAD, encoding="utf-8")
    (two / "scale.wgsl").write_text(OK, encoding="utf-8")
    shutil.copytree(GOOD_KERNELS / "scale", two / "scale")  # a kernel folder named scale
    return one, two


def test_colliding_plain_names_get_distinct_ones(folders: tuple[Path, Path]) -> None:
    one, two = folders
    specs = {s.name: s for s in discover([one, two])}
    files = {name: s.template_path for name, s in specs.items() if s.plain}
    assert files == {
        "a": one / "a.wgsl",
        "a.comp": one / "a.comp.wgsl",
        "my_shader": one / "my shader.wgsl",
        "one.my_shader": one / "my_shader.wgsl",
        "two.a": two / "a.wgsl",
        "two.scale": two / "scale.wgsl",  # the kernel folder keeps its own name
    }
    assert not specs["scale"].plain


def test_two_kernel_folders_with_one_name_are_still_an_error(tmp_path: Path) -> None:
    for sub in ("x", "y"):
        shutil.copytree(GOOD_KERNELS / "scale", tmp_path / sub / "scale")
    with pytest.raises(WgslgenError, match="two kernels are named 'scale'"):
        discover([tmp_path / "x", tmp_path / "y"])


def test_validate_judges_every_colliding_file(capsys, folders: tuple[Path, Path]) -> None:
    one, two = folders
    names = ["a", "a.comp", "my_shader", "one.my_shader", "two.a", "two.scale"]
    args = ["--templates", str(one), "--templates", str(two)]
    args += [arg for name in names for arg in ("--kernel", name)]
    code = main(["validate", "--json", "--engines", "naga", *args])
    report = json.loads(capsys.readouterr().out)
    assert code == 1  # the two bad files fail; every file is reported
    verdicts = {r["file"]: r["engines"]["naga"]["ok"] for r in report["results"]}
    assert verdicts == {
        str(one / "a.wgsl"): True,
        str(one / "a.comp.wgsl"): True,
        str(one / "my shader.wgsl"): True,
        str(one / "my_shader.wgsl"): False,
        str(two / "a.wgsl"): False,
        str(two / "scale.wgsl"): True,
    }
