"""Regression tests for user input at the edges: files that are not UTF-8, a plain file's
own line numbers, shapes with fractional sizes, --override names and values, --selection
and --templates that do not exist, partial builds after the variant space shrank, and the
--json failure object."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from wgslgen.cli import cmd_validate, main
from wgslgen.config import load_project
from wgslgen.errors import WgslgenError
from wgslgen.run import harness
from wgslgen.spec.loader import discover
from wgslgen.tune import ray_session
from wgslgen.tune.selection import _tags

from .conftest import GOOD_KERNELS, ROOT

GOOD = """\
@group(0) @binding(0) var<storage, read_write> out: array<f32>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3u) {
    out[g.x] = 1.0;
}
"""

# Parses, but naga refuses it: a compile error, not a file wgslgen cannot analyse.
DOES_NOT_COMPILE = "@compute @workgroup_size(1) fn main() { let x: u32 = 1.5; }\n"

OVERRIDDEN = """\
override wg_size: u32;
@group(0) @binding(0) var<storage, read_write> out: array<f32>;
@compute @workgroup_size(wg_size) fn main(@builtin(global_invocation_id) g: vec3u) {
    out[g.x] = 1.0;
}
"""

# A shape of the bundled split dQ kernel whose u32 history_len is fractional.
DQ_SPLIT = [
    "--kernel", "attention_bwd_dq_split",
    *("--set", "ch=64", "--set", "g=1", "--set", "e=4", "--set", "u=2"),
    *("--set", "s=f16", "--set", "hd=0"),
    "--shape", "head_dim=64,n_heads=4,n_kv_heads=4,history_len=1.5",
]  # fmt: skip


class Reached(BaseException):
    """The command got as far as the device."""


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``wgslgen ARGV`` in this process: exit code, stdout, stderr."""
    capsys.readouterr()
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse's usage error
        code = exc.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text)


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run in tmp_path (outside any project: the bundled kernels, nothing written here)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def project(here: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A `wgslgen init` project in tmp_path, the current folder."""
    assert cli(capsys, "init", str(here))[0] == 0
    return here


@pytest.fixture
def no_device(monkeypatch: pytest.MonkeyPatch) -> None:
    def reached(*args: object, **kwargs: object) -> None:
        raise Reached

    monkeypatch.setattr(harness.Harness, "__init__", reached)
    monkeypatch.setattr(ray_session, "connect", reached)


def binary_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "tpl"
    folder.mkdir()
    (folder / "good.wgsl").write_text(GOOD, encoding="utf-8")
    (folder / "binary.wgsl").write_bytes(b"\xe3\x00\xff")
    return folder


# 1. A plain .wgsl file that is not UTF-8.


def test_build_names_a_non_utf8_wgsl_file_without_a_traceback(here: Path, capsys) -> None:
    folder = binary_folder(here)
    out = here / "out"
    code, stdout, err = cli(
        capsys, "build", "--templates", str(folder), "--out", str(out), "--no-validate"
    )
    assert code == 2, stdout + err
    assert f"{folder / 'binary.wgsl'}:1:1: not UTF-8 text (byte 0xe3)" in err
    assert "Traceback" not in stdout + err


def test_validate_reports_a_non_utf8_file_and_judges_the_rest(here: Path, capsys) -> None:
    folder = binary_folder(here)
    code, out, err = cli(capsys, "validate", "--json", "--templates", str(folder),
                         "--engines", "naga")  # fmt: skip
    results = {Path(r["file"]).name: r for r in json.loads(out)["results"]}
    assert results["binary.wgsl"]["problems"] == [
        "cannot read: not UTF-8 text (byte 0xe3) (at 1:1)"
    ]
    assert results["good.wgsl"]["problems"] == []
    assert results["good.wgsl"]["engines"]["naga"]["ok"]
    code, out, err = cli(capsys, "validate", "--templates", str(folder), "--engines", "naga")
    assert code == 1
    assert "binary.wgsl: cannot read: not UTF-8 text (byte 0xe3) (at 1:1)" in one_line(out + err)
    assert "Traceback" not in out + err


# 2. TOML files that are not UTF-8.


def test_list_names_a_non_utf8_kernel_toml(project: Path, capsys) -> None:
    toml = project / "kernels" / "rmsnorm" / "kernel.toml"
    text = toml.read_text(encoding="utf-8")
    assert text.endswith("\n")
    toml.write_bytes(text.encode() + b"\xff\n")
    code, out, err = cli(capsys, "list")
    assert code == 2, out + err
    line = text.count("\n") + 1
    assert f"kernel.toml:{line}:1: not UTF-8 text (byte 0xff)" in err
    assert "Traceback" not in out + err


def test_a_non_utf8_project_file_is_named(project: Path, capsys) -> None:
    config = project / "wgslgen.toml"
    text = config.read_text(encoding="utf-8")
    config.write_bytes(text.encode() + b"# caf\xe9\n")
    line = text.count("\n") + 1
    with pytest.raises(WgslgenError, match=rf"wgslgen\.toml:{line}:6: not UTF-8 text"):
        load_project(project)
    code, out, err = cli(capsys, "list")
    assert code == 2, out + err
    assert f"{config}:{line}:6: not UTF-8 text (byte 0xe9)" in err
    assert "Traceback" not in out + err


# 3. A plain file's diagnostics point at the user's file and line.


def test_a_plain_files_error_is_located_in_the_users_file(here: Path, capsys) -> None:
    src = here / "bad.wgsl"
    src.write_text(
        "fn f() -> u32 { return 1.5; }\n@compute @workgroup_size(1) fn main() {}\n",
        encoding="utf-8",
    )
    code, out, _err = cli(capsys, "validate", "--templates", str(src), "--engines", "naga")
    assert code == 1
    locations = re.findall(r"-->\s+(\S+)", out)
    assert f"{src}:1" in locations, out  # not the rendered copy's line 5
    assert not any(loc.endswith(":5") for loc in locations), out
    code, out, _err = cli(capsys, "validate", "--json", "--templates", str(src),
                         "--engines", "naga")  # fmt: skip
    (result,) = json.loads(out)["results"]
    assert result["file"] == str(src)
    assert not result["engines"]["naga"]["ok"]
    assert result["engines"]["naga"]["line"] == 1


# 4. Unreadable lines of results.jsonl beside the selection are told, not silently skipped.


def test_vendor_warns_about_unreadable_results_lines(here: Path, capsys) -> None:
    tuning = here / "tuning"
    tuning.mkdir()
    selection = tuning / "selection.json"
    shutil.copy(ROOT / "tuning" / "selection.json", selection)
    (tuning / "results.jsonl").write_text("garbage\n", encoding="utf-8")
    code, out, err = cli(capsys, "vendor", "--kernel", "attention_bwd_dq_split",
                         "--out", str(here / "wgk"), "--selection", str(selection))  # fmt: skip
    text = one_line(out + err)
    assert code == 0, text
    assert re.search(r"results\.jsonl:1: .*; unreadable record skipped", text), text
    assert "has no device facts in results.jsonl" in text
    assert "line(s) of it could not be read" in text
    manifest = (here / "wgk" / "manifest.json").read_text(encoding="utf-8")
    assert "results.jsonl:1:" in manifest and str(here) not in manifest  # no machine's path


# 5. A fractional value for a u32 size.


def test_test_and_tune_refuse_a_fractional_u32_size_before_the_device(
    here: Path, capsys, no_device: None
) -> None:
    code, out, err = cli(capsys, "test", *DQ_SPLIT)  # Reached: it got to the device
    assert code == 2, out + err
    assert "history_len = 1.5 is not an integer" in err
    code, out, err = cli(capsys, "tune", *DQ_SPLIT, "--db", str(here / "r.jsonl"),
                         "--selection", str(here / "s.json"))  # fmt: skip
    assert code == 2, out + err  # Reached: tune started the adapter first
    assert "history_len = 1.5 is not an integer" in err
    assert not (here / "r.jsonl").exists() and not (here / "s.json").exists()


def test_tune_refuses_a_shape_of_other_sizes_before_the_device(
    here: Path, capsys, no_device: None
) -> None:
    wrong = [*DQ_SPLIT[:-1], "head_dim=64,n_heads=4,history=9"]  # Reached: it got to the device
    code, out, err = cli(capsys, "tune", *wrong, "--db", str(here / "r.jsonl"),
                         "--selection", str(here / "s.json"))  # fmt: skip
    assert code == 2, out + err
    assert "missing n_kv_heads, history_len; unknown history" in err
    assert not (here / "r.jsonl").exists() and not (here / "s.json").exists()


def test_check_shape_values_refuses_what_the_uniform_cannot_hold() -> None:
    (spec,) = discover([GOOD_KERNELS / "scale"])  # uniform: n u32, alpha f32
    with pytest.raises(WgslgenError, match=r"n = 2\.5 is not an integer .*u32"):
        spec.check_shape_values({"n": 2.5})
    with pytest.raises(WgslgenError, match=r"n = -3 is negative .*u32"):
        spec.check_shape_values({"n": -3})
    spec.check_shape_values({"n": 1000})
    spec.check_shape_values({"n": 8, "alpha": 0.5})  # a float field takes a float


# 6. A rendering that fails to compile does not count as fitting a profile.


def _fit_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "tpl"
    folder.mkdir()
    (folder / "good.wgsl").write_text(GOOD, encoding="utf-8")
    (folder / "bad.wgsl").write_text(DOES_NOT_COMPILE, encoding="utf-8")
    return folder


def test_validate_footer_counts_only_compiling_renderings_as_fitting(
    here: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    reports = []
    original = cmd_validate.print_report

    def keep(report, *args, **kwargs):
        reports.append(report)
        return original(report, *args, **kwargs)

    monkeypatch.setattr(cmd_validate, "print_report", keep)
    folder = _fit_folder(here)
    code, out, _err = cli(capsys, "validate", "--templates", str(folder), "--engines", "naga")
    assert code == 1
    assert "2 renderings, 1 fail to compile" in one_line(out)
    assert "1 fit webgpu" in one_line(out), out
    (report,) = reports
    (bad,) = report.compile_failures()
    assert bad.name == "bad" and bad.fits("webgpu")  # by its limits alone it would fit
    assert [r.name for r in report.usable_in("webgpu")] == ["good"]


def test_build_summary_counts_only_compiling_renderings_as_fitting(here: Path, capsys) -> None:
    folder = _fit_folder(here)
    code, out, err = cli(capsys, "build", "--templates", str(folder), "--out",
                         str(here / "out"), "--engines", "naga")  # fmt: skip
    assert code == 1, out + err
    rows = {
        cells[0]: cells[1:]
        for line in out.splitlines()
        if (cells := [c.strip() for c in line.split("│")[1:-1]]) and cells[0] in ("good", "bad")
        and len(cells) == 4
    }  # fmt: skip
    assert rows == {"bad": ["1", "1", "0"], "good": ["1", "0", "1"]}, out
    assert "1 fit webgpu" in one_line(out)


# 7. vendor: a --selection or --templates that does not exist.


def test_vendor_names_a_missing_selection(here: Path, capsys) -> None:
    out_dir = here / "wgk"
    code, _out, err = cli(capsys, "vendor", "--out", str(out_dir), "--selection",
                         "/nonexistent.json")  # fmt: skip
    assert code == 2
    assert "--selection: /nonexistent.json: no such file" in err
    assert "vendored with" not in err
    assert not out_dir.exists()


def test_vendor_names_a_missing_templates_folder(here: Path, capsys) -> None:
    code, _out, err = cli(capsys, "vendor", "--out", str(here / "wgk"), "--templates",
                         "/nonexistent_dir")  # fmt: skip
    assert code == 2
    assert "--templates: /nonexistent_dir: no such templates folder or file" in err
    assert "vendored from" not in err


# 8. --override: a value the analysis refuses, and a name nothing declares.


def test_a_bad_override_value_is_reported_not_as_missing(here: Path, capsys) -> None:
    src = here / "ov.wgsl"
    src.write_text(OVERRIDDEN, encoding="utf-8")
    code, out, err = cli(capsys, "validate", "--templates", str(src), "--override",
                         "wg_size=0", "--engines", "naga")  # fmt: skip
    text = one_line(out + err)
    assert code == 1
    assert "bad @workgroup_size [0]" in text
    assert "needs override values" not in text


def test_an_override_no_file_declares_is_warned_about(here: Path, capsys) -> None:
    src = here / "ov.wgsl"
    src.write_text(OVERRIDDEN, encoding="utf-8")
    code, out, err = cli(capsys, "validate", "--templates", str(src), "--override",
                         "wg_size=64", "--override", "nope=3", "--engines", "naga")  # fmt: skip
    assert code == 0, out + err
    assert "--override nope: no file validated declares an override of that name" in err
    assert "--override wg_size" not in err


# 9. Leaderboard tags of an outcome that may not win.


def test_tags_tell_outside_set_from_outside_profile() -> None:
    def outcome(name: str, eligible: bool, misfits: tuple[str, ...]) -> SimpleNamespace:
        return SimpleNamespace(
            name=name, eligible=eligible, candidate=SimpleNamespace(misfits=misfits)
        )

    assert _tags(outcome("a", False, ()), None) == ["outside --set"]
    assert _tags(outcome("a", False, ("16,640 B > 16,384 B",)), None) == ["outside profile"]
    assert _tags(outcome("a", True, ()), None) == []
    decision = SimpleNamespace(winner="w", default="w", baseline="a", finalists=("w",))
    assert _tags(outcome("a", False, ()), decision) == ["baseline", "outside --set"]


# 10. A partial build removes the files of variants the kernel no longer has.


def test_partial_build_removes_variants_the_space_dropped(project: Path, capsys) -> None:
    assert cli(capsys, "build", "--no-validate")[0] == 0
    gen = project / "generated" / "rmsnorm"
    before = {p.name for p in gen.glob("*.wgsl")}
    assert {f"rmsnorm__wg{w}_s{s}.wgsl" for w in (32, 64, 128) for s in ("f16", "f32")} == before
    toml = project / "kernels" / "rmsnorm" / "kernel.toml"
    text = toml.read_text(encoding="utf-8")
    old = "values = [32, 64, 128]\nbaseline = 64"
    assert old in text
    toml.write_text(text.replace(old, "values = [32]\nbaseline = 32"), encoding="utf-8")
    code, out, err = cli(capsys, "build", "--check", "--set", "s=f16")
    assert code == 1, out + err
    extra = {Path(m).name for m in re.findall(r"extra\s+(\S+)", out + err)}
    gone = {f"rmsnorm__wg{w}_s{s}.wgsl" for w in (64, 128) for s in ("f16", "f32")}
    assert extra == gone, out + err
    assert cli(capsys, "build", "--no-validate", "--set", "s=f16")[0] == 0
    assert {p.name for p in gen.glob("*.wgsl")} == {
        "rmsnorm__wg32_sf16.wgsl",
        "rmsnorm__wg32_sf32.wgsl",
    }
    manifest = json.loads((project / "generated" / "manifest.json").read_text())
    assert [v["name"] for v in manifest["variants"]] == ["rmsnorm__wg32_sf16", "rmsnorm__wg32_sf32"]


# 11. --json: a run that fails still prints one JSON object.


def wgslgen(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    # A process of its own: each run starts without having printed JSON before.
    return subprocess.run(
        [sys.executable, "-m", "wgslgen", *argv],
        cwd=cwd, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_json_failure_is_one_object_with_the_error(tmp_path: Path) -> None:
    done = wgslgen("list", "--json", "--kernel", "nope", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    obj = json.loads(done.stdout)  # exactly one document
    assert set(obj) == {"schema_version", "error", "exit_code"}
    assert "unknown kernel" in obj["error"] and obj["exit_code"] == 2
    assert "unknown kernel" in done.stderr


def test_json_usage_error_is_one_object(tmp_path: Path) -> None:
    done = wgslgen("list", "--json", "--bogus", cwd=tmp_path)
    assert done.returncode == 2
    obj = json.loads(done.stdout)
    assert "unrecognized arguments" in obj["error"] and obj["exit_code"] == 2
    assert "usage:" in done.stderr


def test_json_success_has_no_error_key(tmp_path: Path) -> None:
    done = wgslgen("list", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    obj = json.loads(done.stdout)
    assert "error" not in obj and "exit_code" not in obj and obj["kernels"]


# Inputs past f16's range: the input is named, not the reference's NaN/Inf.


def test_inputs_that_f16_storage_cannot_hold_are_named(here: Path, capsys) -> None:
    shutil.copytree(GOOD_KERNELS / "scale", here / "k" / "scale")
    ref = here / "k" / "scale" / "reference.py"
    ref.write_text(ref.read_text().replace('size=shape["n"])', 'size=shape["n"]) * 1e6'))
    code, out, err = cli(capsys, "test", "--templates", str(here / "k"), "--set", "s=f16",
                         "--shape", "n=1000", "--adapter", "cpu")  # fmt: skip
    assert code == 1
    text = one_line(out + err)
    assert "make_inputs(): 'x'[" in text and "does not fit f16 storage" in text, text
    assert "holds NaN or Inf" not in text and "RuntimeWarning" not in err


@pytest.mark.parametrize(
    ("shapes", "message"),
    [
        (
            "[{ n = 1 }, { n = 100.5 }]",
            "[test].shapes[1]: n = 100.5 is not an integer (the uniform's n is u32)",
        ),
        ("[{ n = -4 }]", "[test].shapes[0]: n = -4 is negative (the uniform's n is u32)"),
        ("[{ m = 3 }]", "[test].shapes[0] must set exactly n; missing n; unknown m"),
    ],
)
def test_a_test_shape_the_kernel_cannot_take_names_its_key(
    here: Path, capsys, shapes: str, message: str
) -> None:
    shutil.copytree(GOOD_KERNELS / "scale", here / "k" / "scale")
    toml = here / "k" / "scale" / "kernel.toml"
    toml.write_text(
        re.sub(r"(?m)^shapes = \[\{ n = 1 \}.*$", f"shapes = {shapes}", toml.read_text())
    )
    code, _out, err = cli(capsys, "list", "--templates", str(here / "k"))
    assert code == 2 and message in one_line(err), err


def test_tune_refuses_an_unknown_axis_before_the_device(
    here: Path, capsys, no_device: None
) -> None:
    good = "head_dim=64,n_heads=4,n_kv_heads=4,history_len=8"
    typo = [*DQ_SPLIT[:-1], good, "--set", "chunkk=64"]  # Reached: the device opened
    code, out, err = cli(capsys, "tune", *typo, "--db", str(here / "r.jsonl"),
                         "--selection", str(here / "s.json"))  # fmt: skip
    assert code == 2, out + err
    assert "unknown axis 'chunkk'" in err
