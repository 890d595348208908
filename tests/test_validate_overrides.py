"""kernel.toml [overrides]: values of a template's WGSL `override` constants, used by
`validate` as `--override NAME=VALUE` is (static facts and pipeline constants); the command
line wins."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wgslgen.cli import main
from wgslgen.errors import WgslgenError
from wgslgen.spec.loader import load_kernel

TOML = """
[kernel]
name = "tiled"

[[axis]]
name = "tile"
key = "t"
values = [32, 64]

[[binding]]
name = "y"
access = "read_write"
type = "f32"
count = "n"

[problem]
sizes = ["n"]
dispatch = ["(n + tile - 1) // tile"]
"""
# Both overrides lack a default: a pipeline cannot be made without their values.
TEMPLATE = """
override wg: u32;
override scale: f32;
{{ interface }}
var<workgroup> tile: array<f32, wg>;

@compute @workgroup_size(wg)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
    tile[li] = f32(gid.x) * scale;
    workgroupBarrier();
    y[gid.x] = tile[(li + 1u) % wg] + {{ tile }}.0;
}
"""
OVERRIDES = '\n[overrides]\nwg = "tile * 4"\nscale = 2.5\n'


def _kernel(tmp_path: Path, extra: str = "") -> Path:
    folder = tmp_path / "kernels" / "tiled"
    folder.mkdir(parents=True)
    (folder / "kernel.toml").write_text(TOML + extra, encoding="utf-8")
    (folder / "tiled.wgsl.j2").write_text(TEMPLATE, encoding="utf-8")
    return folder.parent


def _validate(capsys, templates: Path, *args: str) -> tuple[int, dict[str, dict]]:
    capsys.readouterr()
    code = main(["validate", "--json", "--no-cache", "--templates", str(templates), *args])
    report = json.loads(capsys.readouterr().out)
    return code, {r["variant"]: r for r in report["results"]}


def test_kernel_overrides_give_facts_and_pipeline_constants(capsys, tmp_path: Path) -> None:
    code, results = _validate(capsys, _kernel(tmp_path, OVERRIDES))
    assert code == 0
    assert results["tiled__t32"]["constants"] == {"wg": 128, "scale": 2.5}
    assert results["tiled__t64"]["constants"] == {"wg": 256, "scale": 2.5}
    for r in results.values():
        assert r["problems"] == [] and r["profiles"]["webgpu"] == []
        # Every engine built its pipeline: wgpu and Dawn got both constants.
        assert {name: v["ok"] for name, v in r["engines"].items()} == {
            "naga": True,
            "wgpu": True,
            "dawn": True,
        }


def test_without_values_the_file_needs_them(capsys, tmp_path: Path) -> None:
    code, results = _validate(capsys, _kernel(tmp_path))
    assert code == 1
    for r in results.values():
        # wg sizes the workgroup; scale is read by the entry point: a pipeline needs both.
        assert r["problems"] == ["needs override values: scale, wg"]
        assert set(r["engines"]) == {"naga"}  # no pipeline is made without them


def test_the_command_line_wins(capsys, tmp_path: Path) -> None:
    code, results = _validate(capsys, _kernel(tmp_path, OVERRIDES), "--override", "wg=512")
    assert code == 0  # a limit verdict; --require webgpu would fail it
    for r in results.values():
        assert r["constants"] == {"wg": 512, "scale": 2.5}
        assert "invocations per workgroup 512 > 256" in r["profiles"]["webgpu"][0]
        dawn = r["engines"]["dawn"]
        assert not dawn["ok"] and dawn["limit"], dawn
        assert "workgroup_size(512, 1, 1)" in dawn["message"]


@pytest.mark.parametrize(
    ("table", "error"),
    [
        ('"1wg" = 64', "overrides.1wg must be a WGSL identifier, got '1wg'"),
        ("wg = true", "overrides.wg must be a number or an expression string, got True"),
        ('wg = "tiles * 4"', "overrides.wg"),
    ],
)
def test_bad_overrides_tables_name_the_key(tmp_path: Path, table: str, error: str) -> None:
    folder = _kernel(tmp_path, f"\n[overrides]\n{table}\n") / "tiled"
    with pytest.raises(WgslgenError) as info:
        load_kernel(folder)
    assert str(folder / "kernel.toml") in str(info.value)
    assert error in str(info.value)


def test_an_override_that_is_not_a_number_is_a_spec_error(capsys, tmp_path: Path) -> None:
    templates = _kernel(tmp_path, '\n[overrides]\nwg = "tile > 32"\nscale = 1\n')
    capsys.readouterr()
    code = main(["validate", "--no-cache", "--templates", str(templates), "--engines", "naga"])
    err = capsys.readouterr().err
    assert code == 2
    # the line of `wg = "tile > 32"` in the kernel.toml
    lines = next(templates.rglob("kernel.toml")).read_text().splitlines()
    line = 1 + lines.index('wg = "tile > 32"')
    assert f"kernel.toml:{line}: overrides.wg: must be a number, got False for tiled__t32" in err
    assert "Traceback" not in err


USES = """
override unused_k: f32;
override scale: f32;
override twice = scale * 2.0;
@group(0) @binding(0) var<storage, read_write> out: array<f32>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3u) {
    out[g.x] = twice;
}
"""


def test_an_override_the_entry_point_reads_needs_a_value(capsys, tmp_path: Path) -> None:
    # `scale` is read through `twice`'s initializer; `unused_k` is never read (WebGPU
    # accepts it unset, as wgpu and Dawn do).
    path = tmp_path / "uses.wgsl"
    path.write_text(USES, encoding="utf-8")
    code, results = _validate(capsys, path)
    [r] = results.values()
    assert code == 1 and r["problems"] == ["needs override values: scale"]
    code, results = _validate(capsys, path, "--override", "scale=3")
    [r] = results.values()
    assert code == 0 and r["problems"] == []
    assert {name: v["ok"] for name, v in r["engines"].items()} == {
        "naga": True,
        "wgpu": True,
        "dawn": True,
    }


def test_a_misspelt_overrides_key_is_named_not_sent_to_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    from .conftest import GOOD_KERNELS

    kernel = tmp_path / "kernels" / "scale"
    shutil.copytree(GOOD_KERNELS / "scale", kernel)
    template = kernel / "scale.wgsl.j2"
    text = template.read_text().replace(
        "@workgroup_size({{ workgroup_size }})", "@workgroup_size(WG)"
    )
    template.write_text("override WG: u32;\n" + text)
    toml = kernel / "kernel.toml"
    toml.write_text(toml.read_text() + '\n[overrides]\nWg = "workgroup_size"\n')
    templates = ["--templates", str(kernel.parent), "--set", "wg=64", "--set", "s=f32"]
    assert main(["validate", "--engines", "naga", *templates]) == 1
    out = capsys.readouterr().out
    hint = f"{toml} [overrides] gives Wg, which the template does not declare"
    assert f"needs override values: WG; {hint}" in out
    assert main(["test", *templates, "--adapter", "cpu"]) == 1
    assert "1 variant(s) not run (sizes unknown)" in capsys.readouterr().out
