"""`wgslgen validate` with the real engines: verdicts, profiles, diagnostics, exit codes."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from wgslgen.check.limits import load_profile
from wgslgen.check.validate import resolve_engines, validate
from wgslgen.check.wgsl import analyze
from wgslgen.cli import main
from wgslgen.render.renderer import render_families
from wgslgen.spec.loader import discover

from .conftest import FIXTURES, SEED, TEMPLATES

PROFILES = FIXTURES / "validate"
WEBGPU_REASON = "workgroup memory 16,640 B > 16,384 B (max-compute-workgroup-storage-size)"
DAWN_REASON = (
    "The total use of workgroup storage (16640 bytes) is larger than the maximum allowed "
    "(16384 bytes)"
)
BASELINE = [
    "--kernel", "attention_bwd_dq",
    "--set", "workgroup_size=64", "--set", "max_history=4096",
    "--set", "storage=f32", "--set", "wmem=f32",
]  # fmt: skip
BAD_LINE = "    let bad: f32 = params.n_heads;"
BAD_MESSAGES = {
    "naga": "the type of `bad` is expected to be `f32`, but got `u32`",
    "wgpu": "parsing error: the type of `bad` is expected to be `f32`, but got `u32`",
    "dawn": "cannot initialize 'let' of type 'f32' with value of type 'u32'",
}


@pytest.fixture(scope="module")
def missing() -> dict[str, str]:
    """Engines that cannot run here, and why."""
    engines, why = resolve_engines(None)
    for engine in engines.values():
        getattr(engine, "close", lambda: None)()
    return why


def _run(capsys, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["validate", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _run_json(capsys, *args: str) -> tuple[int, dict]:
    code, out, _ = _run(capsys, "--json", *args)
    return code, json.loads(out)  # stdout is exactly one JSON document


@pytest.fixture
def seed_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "shaders"
    folder.mkdir()
    shutil.copy(SEED, folder / "seed.wgsl")
    return folder


def _assert_seed_verdicts(result: dict) -> None:
    assert result["profiles"]["webgpu"] == [WEBGPU_REASON]
    assert result["profiles"]["adapter"] == []  # lavapipe offers 32,768 B
    engines = result["engines"]
    assert engines["naga"]["ok"] and engines["wgpu"]["ok"]
    dawn = engines["dawn"]
    assert not dawn["ok"] and dawn["limit"], dawn
    assert dawn["message"].startswith(DAWN_REASON)


def test_seed_fails_webgpu_and_fits_the_adapter(capsys, seed_dir: Path, missing) -> None:
    # CI installs every engine (Dawn through the `dawn` extra): one missing fails the test,
    # never skips it, or the test would pass while checking nothing.
    assert not missing, missing
    args = ["--templates", str(seed_dir), "--require", "webgpu", "--profile", "adapter"]
    code, report = _run_json(capsys, *args)
    assert code == 1
    [result] = report["results"]
    assert (result["kernel"], result["family"]) == ("seed", "any")
    _assert_seed_verdicts(result)
    assert report["summary"] == {
        "renderings": 1,
        "compile_failures": 0,
        "problems": 0,
        "interface_mismatches": 0,
        "not_fitting": {"adapter": 0, "webgpu": 1},
        "not_compiling": {"naga": 0, "tint": 0},
    }
    # The same verdicts for people, and why the exit code is 1.
    code, out, err = _run(capsys, *args)
    assert code == 1
    assert "workgroup memory 16,640 B > 16,384 B" in out
    assert "--require webgpu: 1 variant(s) do not fit" in out + err
    assert "1 fit adapter, 0 fit webgpu" in re.sub(r"\s+", " ", out)


def test_baseline_variant_gets_the_seeds_verdicts(capsys, missing) -> None:
    assert not missing, missing
    code, report = _run_json(capsys, *BASELINE, "--require", "webgpu", "--profile", "adapter")
    assert code == 1
    [result] = report["results"]
    assert result["variant"] == "attention_bwd_dq__wg64_mh4096_sf32_wf32"
    _assert_seed_verdicts(result)


def test_require_exit_codes(capsys, seed_dir: Path) -> None:
    seed = ["--templates", str(seed_dir), "--engines", "naga"]
    assert _run(capsys, *seed)[0] == 0  # not fitting a profile is not an error by itself
    assert _run(capsys, *seed, "--require", "webgpu")[0] == 1
    assert _run(capsys, *seed, "--require", "adapter")[0] == 0
    assert _run(capsys, *seed, "--require", str(PROFILES / "big_workgroups.json"))[0] == 0
    assert _run(capsys, *seed, "--require", "adapter", "--require", "webgpu")[0] == 1
    # A variant that fits: the baseline's neighbour with an f16 staging row.
    fits = [*BASELINE[:-1], "wmem=f16", "--engines", "naga"]
    assert _run(capsys, *fits, "--require", "webgpu")[0] == 0


def test_engines_naga_only(capsys, seed_dir: Path) -> None:
    code, report = _run_json(capsys, "--templates", str(seed_dir), "--engines", "naga")
    assert code == 0
    assert list(report["engines"]) == ["naga"] and report["engines_missing"] == {}
    assert list(report["results"][0]["engines"]) == ["naga"]
    assert report["profiles"] == ["webgpu"]


_STATIC_WMEM = re.compile(r"(?:(\w+): )?workgroup memory ")


def test_static_workgroup_memory_verdict_agrees_with_dawn_on_the_whole_library(
    missing,
) -> None:
    assert not missing, missing
    rendered = [r for k in discover([TEMPLATES]) for v in k.variants for r in render_families(v)]
    report = validate(rendered, [load_profile("webgpu")], ["dawn"])
    assert report.engines_missing == {}
    checked = fits = 0
    for result in report.results:
        verdict = result.engines.get("dawn")
        if result.rendered.family == "naga":
            assert verdict is None  # Dawn reads the Tint rendering of such a variant
            continue
        assert verdict is not None, result.rendered.name
        # a multi-pass variant's reason names its entry point ("partials: workgroup memory …")
        static = [m for r in result.profiles["webgpu"] if (m := _STATIC_WMEM.match(r)) is not None]
        dawn_says = re.search(r"workgroup storage \((\d+) bytes\)", verdict.message)
        assert bool(static) == bool(dawn_says), (result.rendered.name, static, verdict.message)
        if dawn_says:  # and both count the same bytes, of an entry point the static check named
            entries = [m.group(1) or result.rendered.entry_point for m in static]
            counted = {analyze(result.rendered.source, e).workgroup_bytes for e in entries}
            assert int(dawn_says.group(1)) in counted, (result.rendered.name, counted)
        else:
            assert verdict.ok, (result.rendered.name, verdict.message)
            fits += 1
        checked += 1
    assert checked >= 150 and 0 < fits < checked


def _inject(templates: Path, kernel: str, after: str, line: str) -> int:
    """Insert ``line`` into a kernel's template after the line ``after``; its 1-based line."""
    path = templates / kernel / f"{kernel}.wgsl.j2"
    lines = path.read_text(encoding="utf-8").split("\n")
    at = next(i for i, text in enumerate(lines) if text.strip() == after) + 1
    lines.insert(at, line)
    path.write_text("\n".join(lines), encoding="utf-8")
    return at + 1


def test_template_type_error_names_template_line_once(
    capsys, templates_copy: Path, missing
) -> None:
    assert not missing, missing
    line = _inject(templates_copy, "attention_bwd_dq", "let h = wid.x;", BAD_LINE)
    where = f"attention_bwd_dq/attention_bwd_dq.wgsl.j2:{line}"
    n_variants = len(discover([templates_copy / "attention_bwd_dq"])[0].variants)
    args = ["--templates", str(templates_copy), "--kernel", "attention_bwd_dq"]

    code, out, _ = _run(capsys, *args)
    assert code == 1
    for engine, message in BAD_MESSAGES.items():
        # One diagnostic per engine, not one per variant, listing the variants it hit.
        heading = f"error ({engine}): {message}"
        assert out.count(heading) == 1, out
        block = out.split(heading, 1)[1]
        assert re.match(
            rf"\s*--> attention_bwd_dq/\S+\.wgsl:\d+\s*--> template \S*{where}\s", block
        ), block[:300]
        assert f"in {n_variants} variant(s): attention_bwd_dq__" in block
    assert f"{n_variants} renderings, {n_variants} fail to compile" in out
    # After a build, diagnostics name the files in the folder the build wrote.
    out_dir = templates_copy.parent / "gen"
    build = ["build", *args, "--out", str(out_dir), "--engines", "naga"]
    assert main(build) == 1
    assert f"--> {out_dir}/attention_bwd_dq/" in capsys.readouterr().out

    code, report = _run_json(capsys, *args)
    assert code == 1 and report["summary"]["compile_failures"] == n_variants
    for result in report["results"]:  # every diagnostic, for machines
        for engine, verdict in result["engines"].items():
            assert not verdict["ok"] and not verdict["limit"]
            assert verdict["message"] == BAD_MESSAGES[engine]
            assert verdict["template"].endswith(where)
            assert verdict["line"] and verdict["column"] == 9  # `bad`, after 4 spaces and `let`
            assert "bad" in verdict["diagnostic"]


def test_invalid_plain_wgsl_names_file_and_line(capsys, tmp_path: Path, missing) -> None:
    assert not missing, missing
    folder = tmp_path / "shaders"
    folder.mkdir()
    shutil.copy(FIXTURES / "wgsl" / "type_error.wgsl", folder / "broken.wgsl")
    code, out, _ = _run(capsys, "--templates", str(folder), "--engines", "naga,dawn")
    assert code == 1
    assert "error (naga): the type of `x` is expected to be `f32`, but got `u32`" in out
    # the user's own file and line, said once (the rendering with its header is not a file)
    assert re.search(r"--> \S*shaders/broken\.wgsl:5\s", out), out
    assert "--> template" not in out and "broken/broken.wgsl" not in out, out
    assert "error (dawn): cannot initialize 'let' of type 'f32' with value of type 'u32'" in out
    code, report = _run_json(
        capsys, "--templates", str(folder / "broken.wgsl"), "--engines", "naga"
    )
    assert code == 1
    verdict = report["results"][0]["engines"]["naga"]
    assert verdict["template"].endswith("broken.wgsl:5") and verdict["column"] == 7
    assert verdict["line"] == 5 and "broken.wgsl:5:7" in verdict["diagnostic"]


def test_naga_and_node_missing_say_how_to_install_either(
    capsys, seed_dir: Path, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.delenv("WGSLGEN_NAGA", raising=False)
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    # Asked for by name: nothing was validated, which is an error, not a pass.
    code, out, err = _run(capsys, "--templates", str(seed_dir), "--engines", "naga")
    text = re.sub(r"\s+", " ", out + err)
    assert code == 2
    assert "neither `naga` nor `node` is on PATH" in text
    assert "cargo install naga-cli" in text and "npm ci" in text
    code, report = _run_json(capsys, "--templates", str(seed_dir), "--engines", "naga,dawn")
    assert code == 2  # Dawn's verdicts are still reported
    assert "cargo install naga-cli" in report["engines_missing"]["naga"]
    assert list(report["results"][0]["engines"]) == ["dawn"]
    # By default every available engine is used and the missing one is named.
    code, out, _ = _run(capsys, "--templates", str(seed_dir))
    assert code == 0
    text = re.sub(r"\s+", " ", out)
    assert "engine naga not used: naga not found" in text and "npm ci" in text
    assert "wgpu:" in text and "dawn:" in text


@pytest.mark.parametrize(
    ("profile", "named"),
    [
        ("unknown_limit.json", "unknown limit(s) 'max-compute-workgroup-storage-sise'"),
        ("unknown_key.json", "unknown key(s) limit"),
    ],
)
def test_limits_file_with_unknown_key_is_named(
    capsys, seed_dir: Path, profile: str, named: str
) -> None:
    path = PROFILES / profile
    for option in ("--profile", "--require"):
        code, out, err = _run(capsys, "--templates", str(seed_dir), option, str(path))
        assert code == 2
        assert named in err and str(path) in err
        assert "Traceback" not in err and out == ""


def test_folder_of_other_peoples_shaders_never_aborts(capsys, tmp_path: Path) -> None:
    corpus = FIXTURES / "corpus"
    folder = tmp_path / "shaders"
    folder.mkdir()
    (folder / "unreadable.wgsl").write_bytes(b"\xff\xfe@compute garbage\n")
    shutil.copy(corpus / "u64.wgsl", folder / "int64.wgsl")
    shutil.copy(corpus / "override_no_default.wgsl", folder / "wg_override.wgsl")
    shutil.copy(corpus / "llm_matmul_tiled.wgsl", folder / "model_load.comp.wgsl")
    shutil.copy(corpus / "tutorial_prefix_sum.wgsl", folder / "scan.wgsl")
    shutil.copy(corpus / "fluid_advect.wgsl", folder / "fluid advect.wgsl")
    (folder / "broken.wgsl").write_text("@compute @workgroup_size(1)\nfn main( {\n}\n")
    args = ["--templates", str(folder), "--engines", "naga,wgpu"]
    code, report = _run_json(capsys, *args)
    assert code == 1
    by_file = {Path(r["file"]).name: r for r in report["results"]}
    assert set(by_file) == {
        "unreadable.wgsl", "int64.wgsl", "wg_override.wgsl", "model_load.comp.wgsl", "scan.wgsl",
        "fluid advect.wgsl", "broken.wgsl",
    }  # fmt: skip
    assert by_file["fluid advect.wgsl"]["kernel"] == "fluid_advect"  # a path-safe name
    assert by_file["broken.wgsl"]["problems"] == ["cannot analyse: line 2: unbalanced '('"]
    assert (
        by_file["unreadable.wgsl"]["problems"][0]
        == "cannot read: not UTF-8 text (byte 0xff) (at 1:1)"
    )
    assert by_file["int64.wgsl"]["problems"] == ["uses `u64`: not WebGPU"]
    assert by_file["wg_override.wgsl"]["problems"] == ["needs override values: wg_size"]
    assert "wgpu" not in by_file["wg_override.wgsl"]["engines"]  # no pipeline without a value
    good = by_file["model_load.comp.wgsl"]
    assert good["kernel"] == "model_load.comp" and good["problems"] == []
    assert all(i["ok"] for i in good["implementations"].values())
    # Entry points from a real parse: both of scan.wgsl's, not the one in a comment.
    scan = by_file["scan.wgsl"]
    assert scan["entry_points"] == ["scan", "add_block_sums"] and scan["problems"] == []
    assert report["summary"]["problems"] == 4 and report["summary"]["renderings"] == 7
    # For people: each file named with its reason, and what to pass.
    code, out, _ = _run(capsys, *args)
    text = re.sub(r"\s+", " ", out)
    assert code == 1
    assert "wg_override.wgsl: needs override values: wg_size; pass --override wg_size=VALUE" in text
    assert "int64.wgsl: uses `u64`: not WebGPU" in text and "unreadable.wgsl: cannot read" in text
    # The value given: the file is judged in full, its pipeline built with the constant.
    code, report = _run_json(capsys, *args, "--override", "wg_size=64")
    fixed = {Path(r["file"]).name: r for r in report["results"]}["wg_override.wgsl"]
    assert fixed["problems"] == [] and fixed["constants"] == {"wg_size": 64}
    assert fixed["engines"]["wgpu"]["ok"] and fixed["profiles"]["webgpu"] == []


def test_template_uniformity_error_names_template_line(capsys, templates_copy: Path) -> None:
    # A published-tutorial bug in a template: an early return on a per-invocation value,
    # then the kernel's own barriers. naga and wgpu accept it; Tint's rule (read without
    # Dawn) refuses it, with the template line of the barrier it reaches first.
    line = _inject(
        templates_copy, "attention_bwd_dq", "let h = wid.x;", "    if (tid > 7u) { return; }"
    )
    args = [
        "--templates", str(templates_copy), *BASELINE, "--engines", "naga,wgpu"
    ]  # fmt: skip
    code, out, _ = _run(capsys, *args)
    assert code == 1
    heading = (
        "error (tint (static)): 'workgroupBarrier' must only be called from uniform control flow"
    )
    assert out.count(heading) == 1, out
    block = out.split(heading, 1)[1]
    match = re.match(r"\s*--> attention_bwd_dq/\S+\.wgsl:\d+\s*--> template \S*"
                     r"attention_bwd_dq\.wgsl\.j2:(\d+)\s", block)  # fmt: skip
    assert match and int(match.group(1)) > line, block[:300]
    code, report = _run_json(capsys, *args)
    [result] = report["results"]
    assert result["implementations"]["naga"]["ok"] and not result["implementations"]["tint"]["ok"]
    [finding] = result["tint_static"]["findings"]
    assert finding["rule"] == "uniformity" and finding["template"].endswith(f":{match.group(1)}")
