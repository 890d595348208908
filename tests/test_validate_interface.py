"""`validate` compares a shader's bindings and uniform layout with kernel.toml: a generated
or vendored file through the kernel its header names, any plain file with --reference, and a
template that writes its own declarations instead of {{ interface }}."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from wgslgen.check.interface_check import interface_mismatches
from wgslgen.cli import main
from wgslgen.render.renderer import render
from wgslgen.spec.loader import load_kernel

from .conftest import GOOD_KERNELS

SCALE = GOOD_KERNELS / "scale"
UNIFORM = "struct Params {\n    n: u32,\n    alpha: f32,"
SWAPPED = "struct Params {\n    alpha: f32,\n    n: u32,"


def _generated(folder: Path, storage: str = "f16") -> tuple[Path, str]:
    """A file as `wgslgen build` writes it for the scale kernel (its header names the kernel)."""
    spec = load_kernel(SCALE)
    variant = next(
        v for v in spec.variants if v.params == {"workgroup_size": 64, "storage": storage}
    )
    text = render(variant).source
    assert UNIFORM in text and "var<storage, read> x: array<f16>;" in text
    path = folder / f"{variant.name}.wgsl"
    path.write_text(text, encoding="utf-8")
    return path, text


def _validate(capsys, *args: str) -> tuple[int, dict, str]:
    capsys.readouterr()
    code = main(["validate", "--json", "--engines", "naga", "--no-cache", *args])
    out, err = capsys.readouterr()
    return code, json.loads(out), err


@pytest.fixture
def shaders(tmp_path: Path) -> Path:
    folder = tmp_path / "shaders"
    folder.mkdir()
    return folder


def test_a_generated_file_matches_its_kernel(capsys, shaders: Path) -> None:
    path, _ = _generated(shaders)
    code, report, _ = _validate(capsys, "--templates", str(path), "--templates", str(SCALE))
    result = next(r for r in report["results"] if r["file"] == str(path))
    assert result["interface"] == {"kernel": "scale", "mismatches": []}
    assert code == 0


def test_an_edited_generated_file_is_named_binding_by_binding(capsys, shaders: Path) -> None:
    path, text = _generated(shaders)
    edited = (
        text.replace(UNIFORM, SWAPPED)  # members swapped: offsets differ
        .replace("@binding(2) var<storage, read_write> y", "@binding(3) var<storage, read_write> y")
        .replace("var<storage, read> x: array<f16>", "var<storage, read_write> x: array<f16>")
    )  # still a valid shader: only its interface is wrong
    path.write_text(edited, encoding="utf-8")
    code, report, _ = _validate(capsys, "--templates", str(path), "--templates", str(SCALE))
    result = next(r for r in report["results"] if r["file"] == str(path))
    assert code == 1
    assert report["summary"]["interface_mismatches"] == 1
    assert result["interface"]["kernel"] == "scale"
    assert result["interface"]["mismatches"] == [
        "uniform field `n`: u32 at offset 4 (4 B) in the shader, u32 at offset 0 (4 B) in "
        "kernel.toml",
        "uniform field `alpha`: f32 at offset 0 (4 B) in the shader, f32 at offset 4 (4 B) in "
        "kernel.toml",
        "binding `x` (@group(0) @binding(1)) is read_write in the shader, read in kernel.toml",
        "binding `y` (@group(0) @binding(2)) is not declared in the shader",
        "`y` at @group(0) @binding(3) is not in kernel.toml",
    ]
    assert result["engines"]["naga"]["ok"]  # the failure is the interface alone


def test_reference_names_the_kernel_for_any_plain_file(capsys, shaders: Path) -> None:
    # No header: nothing to compare with unless --reference names the kernel (baseline: f32).
    path = shaders / "mine.wgsl"
    path.write_text(
        "struct P { n: u32, alpha: f32, _pad0: u32, _pad1: u32 }\n"
        "@group(0) @binding(0) var<uniform> params: P;\n"
        "@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;\n"
        "@group(0) @binding(3) var<storage, read_write> out: array<f32>;\n"
        "@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3u) {\n"
        "    out[g.x] = params.alpha * x[g.x].x;\n}\n",
        encoding="utf-8",
    )
    code, report, _ = _validate(capsys, "--templates", str(path))
    assert code == 0 and report["results"][0]["interface"] is None
    args = ["--templates", str(path), "--templates", str(SCALE), "--kernel", "mine"]
    code, report, _ = _validate(capsys, *args, "--reference", "scale")
    assert code == 1
    assert report["results"][0]["interface"]["mismatches"] == [
        "binding `y` (@group(0) @binding(2)) is not declared in the shader",
        "`out` at @group(0) @binding(3) is not in kernel.toml",
    ]  # vec4<f32> elements hold f32: the same buffer as kernel.toml's


def test_a_template_with_its_own_declarations_is_compared(capsys, tmp_path: Path) -> None:
    kernel = tmp_path / "kernels" / "scale"
    shutil.copytree(SCALE, kernel)
    template = kernel / "scale.wgsl.j2"
    declarations = (
        "struct Params { n: u32, alpha: f32, _pad0: u32, _pad1: u32 }\n"
        "@group(0) @binding(0) var<uniform> params: Params;\n"
        "@group(0) @binding(1) var<storage, read> x: array<{{ storage }}>;\n"
        "@group(0) @binding(2) var<storage, read> y: array<f32>;\n"  # kernel.toml: read_write
    )
    text = template.read_text(encoding="utf-8").replace("{{ interface }}", declarations)
    template.write_text(text.replace("y[i] = ", "let unused = "), encoding="utf-8")
    code, report, _ = _validate(capsys, "--templates", str(kernel.parent), "--set", "wg=64")
    assert code == 1
    for result in report["results"]:
        assert result["interface"]["mismatches"] == [
            "binding `y` (@group(0) @binding(2)) is read in the shader, read_write in kernel.toml"
        ]


def test_a_binding_beside_interface_is_named_and_never_vendored(capsys, tmp_path: Path) -> None:
    # {{ interface }} declares what kernel.toml says; one more binding written after it is
    # what test and the vendored runtimes cannot bind ("not available in the pipeline layout").
    kernel = tmp_path / "kernels" / "scale"
    shutil.copytree(SCALE, kernel)
    template = kernel / "scale.wgsl.j2"
    extra = "@group(0) @binding(3) var<storage, read> bias: array<f32>;\n"
    text = template.read_text(encoding="utf-8").replace(
        "{{ interface }}\n", "{{ interface }}\n" + extra
    )
    template.write_text(text.replace("y[i] = ", "y[i] = bias[i] + "), encoding="utf-8")
    code, report, _ = _validate(capsys, "--templates", str(kernel.parent), "--set", "wg=64")
    assert code == 1
    assert report["summary"]["interface_mismatches"] == len(report["results"]) > 0
    for result in report["results"]:
        assert result["interface"]["mismatches"] == [
            "`bias` at @group(0) @binding(3) is not in kernel.toml"
        ]
    out = tmp_path / "app" / "k"
    code = main(["vendor", "--out", str(out), "--lang", "py", "--templates", str(kernel.parent)])
    assert code == 2 and not out.exists()
    assert (
        "sf32: differs from kernel.toml: `bias` at @group(0) @binding(3)" in capsys.readouterr().err
    )


def test_every_bundled_rendering_matches_its_kernel() -> None:
    from wgslgen.spec.loader import discover

    for spec in discover():
        variant = spec.baseline
        source = render(variant).source
        assert interface_mismatches(source, variant.interface) == [], spec.name
