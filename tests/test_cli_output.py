"""What the commands print for people and machines: one JSON document whose keys the docs
list, no text taken for rich markup, one message per distinct failure, errors before
summaries, help that says what the commands do, and piped output never cut mid-word."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from wgslgen.cli import build_parser, main
from wgslgen.render.renderer import render
from wgslgen.spec.loader import discover
from wgslgen.tune.bench import pick_winner
from wgslgen.tune.db import ResultsDB
from wgslgen.tune.selection import judge_sha256, result_sha256

from .conftest import GOOD_KERNELS, ROOT
from .test_db import rec
from .test_reliability_results import _m

SCALE = GOOD_KERNELS / "scale"


def _cli(args: list[str], cwd: Path, env: dict[str, str] | None = None):
    """``wgslgen ARGS`` in a child process, stdout a pipe (as in a script or CI log)."""
    return subprocess.run(
        [sys.executable, "-m", "wgslgen", *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
    )


def _documented_keys() -> dict[str, set[str]]:
    rows = {}
    for line in (ROOT / "docs" / "json-output.md").read_text().splitlines():
        if m := re.match(r"\| `([\w -]+)` \| (.*) \|$", line):
            rows[m.group(1)] = set(re.findall(r"`(\w+)`", m.group(2)))
    return rows


def _one_document(text: str) -> dict:
    """The one JSON object of ``text`` (json.loads refuses a second one: 'Extra data')."""
    doc = json.loads(text)
    assert next(iter(doc)) == "schema_version" and doc["schema_version"] == 1
    return doc


# --- 1. --json: one document, schema_version first, the keys docs/json-output.md lists ---


def test_build_json_is_one_document_with_the_validation_nested(tmp_path: Path) -> None:
    out = tmp_path / "gen"
    done = _cli(
        ["build", "--json", "--templates", str(SCALE), "--out", str(out), "--engines", "naga"],
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith('{\n  "schema_version": 1,')
    doc = _one_document(done.stdout)
    assert set(doc) - {"schema_version"} == _documented_keys()["build"]
    assert doc["variants"] == 5 and doc["renderings"] == {"scale": 5}
    validation = doc["validation"]
    assert validation["summary"]["renderings"] == 5 and "naga" in validation["engines"]
    assert set(validation) == _documented_keys()["validate"]


def test_every_json_object_has_the_documented_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    documented = _documented_keys()
    db, other = tmp_path / "results.jsonl", tmp_path / "other.jsonl"
    ResultsDB(other).append(rec("c" * 64, variant="k__wg128"))
    scale = ["--templates", str(SCALE)]
    fast = ["--l2-bytes", "1M", "--rounds", "3", "--adapter", "cpu", "--shape", "n=1000"]
    runs = {
        "test": ["test", "--json", *scale, "--adapter", "cpu", "--set", "wg=64"],
        "tune": ["tune", "--json", *scale, *fast, "--set", "s=f32", "--set", "wg=32",
                 "--set", "wg=64", "--db", str(db), "--selection", str(tmp_path / "sel.json")],
        "db show": ["db", "show", "--json", "--db", str(db)],
        "db merge": ["db", "merge", "--json", "--db", str(db), str(other)],
        "db prune": ["db", "prune", "--json", "--dry-run", "--db", str(db), *scale],
        "build --check": ["build", "--json", "--check", *scale, "--out", str(tmp_path / "g")],
        "docs": ["docs", "--json"],
        "docs TOPIC": ["docs", "--json", "fleet"],
    }  # fmt: skip
    for name, argv in runs.items():
        code = main(argv)
        doc = _one_document(capsys.readouterr().out)
        assert code in (0, 1), name
        assert set(doc) - {"schema_version"} == documented[name], name


def _scale_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the `scale` kernel at tmp_path/kernels/scale, tmp_path the current folder."""
    monkeypatch.chdir(tmp_path)
    kernel = tmp_path / "kernels" / "scale"
    shutil.copytree(SCALE, kernel)
    return kernel


# --- 2. test: the same compile error once, with its template line and what it hit ---


def test_test_prints_one_compile_error_once_with_its_template_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    kernel = _scale_in(tmp_path, monkeypatch)
    template = kernel / "scale.wgsl.j2"
    source = template.read_text()
    template.write_text(source.replace("y[i] = params.alpha *", "y[i] = vv *"))
    line = next(i for i, t in enumerate(template.read_text().splitlines(), 1) if "vv" in t)
    code = main(["test", "--templates", str(tmp_path / "kernels"), "--adapter", "cpu"])
    out = capsys.readouterr().out
    assert code == 1
    # 5 variants (f16 ones one line longer: another generated line) x 2 shapes: one group.
    assert out.count("no definition in scope for identifier") == 1, out
    assert f"--> template {template.relative_to(tmp_path)}:{line}" in out, out
    assert "in 10 case(s), 5 variant(s) at 2 shape(s)" in out, out
    # --json keeps every case with its own message.
    code = main(["test", "--json", "--templates", str(tmp_path / "kernels"), "--adapter", "cpu"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1 and len(doc["results"]) == 10
    assert all("no definition in scope" in r["message"] for r in doc["results"])


# --- 3. text from files and users is never rich markup ---


def test_square_brackets_in_reasons_are_printed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    kernel = _scale_in(tmp_path, monkeypatch)
    toml = kernel / "kernel.toml"
    original = toml.read_text()
    toml.write_text(re.sub(r"shapes = \[\{ n = 1 \}, \{ n = 1000 \}\]", "shapes = []", original))
    assert main(["test", "--templates", str(kernel), "--adapter", "cpu"]) == 1
    assert "scale: no [test] shapes" in capsys.readouterr().out
    no_problem = re.sub(r"\[problem\].*?\n\n", "", original, flags=re.S)
    toml.write_text(re.sub(r"\[test\].*", "", no_problem, flags=re.S))
    assert main(["test", "--templates", str(kernel), "--adapter", "cpu"]) == 1
    assert "kernel.toml declares no [problem]" in capsys.readouterr().out


def test_a_closing_tag_in_a_table_cell_neither_crashes_nor_vanishes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "results.jsonl"
    r = rec("d" * 64, variant="k__wg64")
    ResultsDB(db).append(replace(r, key=replace(r.key, shape="n=[/x]")))
    assert main(["db", "show", "--db", str(db)]) == 0
    assert "n=[/x]" in capsys.readouterr().out


def test_a_templates_folder_in_brackets_is_listed_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "[wip]" / "scale"
    shutil.copytree(SCALE, folder)
    assert main(["list", "--templates", str(folder.parent)]) == 0
    assert "│ [wip]/scale │" in capsys.readouterr().out


# --- 4. an engine asked for that is missing: one error, no summary ---


@pytest.mark.parametrize("command", ["validate", "build"])
def test_a_missing_engine_is_one_error_before_any_summary(tmp_path: Path, command: str) -> None:
    env = {"PATH": str(tmp_path / "nonexistent-dir")}  # neither naga nor node
    env |= {"WGSLGEN_NAGA": ""} if os.environ.get("WGSLGEN_NAGA") else {}
    args = [command, "--templates", str(SCALE), "--engines", "naga"]
    args += ["--out", str(tmp_path / "gen")] if command == "build" else []
    done = _cli(args, tmp_path, env)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "renderings," not in done.stdout and "fit webgpu" not in done.stdout, done.stdout
    assert "engine naga not used" not in done.stdout
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith("error: --engines naga: not available")
    # Machines get the object too, naming the missing engine, and the same exit code.
    done = _cli([*args, "--json"], tmp_path, env)
    doc = _one_document(done.stdout)
    missing = (doc["validation"] if command == "build" else doc)["engines_missing"]
    assert done.returncode == 2 and "naga" in missing


# --- 5. help that says what the commands do ---


def test_help_names_the_real_defaults_and_paths() -> None:
    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    for name in ("build", "list", "validate", "test", "tune", "vendor"):
        (templates,) = [a for a in commands[name]._actions if a.dest == "templates"]
        assert "project" in templates.help and "bundled" in templates.help, name
    init = commands["init"].format_help()
    assert "kernels/rmsnorm/" in init and "kernels/example" not in init
    readme = (ROOT / "README.md").read_text()
    for path in re.findall(r"`(wgslgen/[\w/]*naga_cli\.mjs)`", readme):
        assert (ROOT / path).is_file(), path


# --- 6. a kernel name or shape the command cannot use: a clear error, exit 2 ---


def _db_with_a_removed_kernel(path: Path) -> list[str]:
    """Records of the fixture's scale (current) and of 'k', a kernel no longer defined."""
    (spec,) = [k for k in discover([GOOD_KERNELS]) if k.name == "scale"]
    d = ResultsDB(path)
    names = []
    for v in spec.variants[:2]:
        r = rec(result_sha256(render(v, "naga")), variant=v.name)
        key = replace(r.key, judge=judge_sha256(v))
        d.append(replace(r, kernel="scale", params=dict(v.params), key=key))
        names.append(v.name)
    d.append(rec("e" * 64, variant="k__x"))
    return [*names, "k__x"]


def test_db_commands_refuse_an_unknown_kernel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "results.jsonl"
    variants = _db_with_a_removed_kernel(db)
    assert main(["db", "show", "--db", str(db), "--kernel", "sclae"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: unknown kernel(s) sclae; known: ") and ", k" in err
    # A kernel only the database knows (removed since) is still a name it can show.
    assert main(["db", "show", "--db", str(db), "--kernel", "k", "--json"]) == 0
    assert [r["variant"] for r in json.loads(capsys.readouterr().out)["records"]] == ["k__x"]
    prune = ["db", "prune", "--db", str(db), "--templates", str(GOOD_KERNELS)]
    assert main([*prune, "--kernel", "sclae"]) == 2
    assert "unknown kernel(s) sclae; known: " in capsys.readouterr().err
    # Pruning the removed kernel drops its records only, never a defined kernel's.
    assert main([*prune, "--kernel", "k", "--all"]) == 0
    capsys.readouterr()
    assert [r.variant for r in ResultsDB(db).load().records] == variants[:2]


def test_test_refuses_a_shape_that_sets_the_wrong_sizes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    argv = ["test", "--templates", str(SCALE), "--adapter", "cpu", "--shape", "m=2"]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert (
        captured.err.strip()
        == "error: kernel scale: shape m=2 must set exactly n; missing n; unknown m"
    )
    assert "nothing was run" not in captured.out


# --- 7. times in human units; piped output never cut mid-word ---


def test_the_winner_reason_gives_times_in_human_units() -> None:
    _, reason = pick_winner({"a": _m(57646.0, 10000.0), "b": _m(1304110.0)}, lambda n: (n,))
    assert "10 µs" in reason and " ns" not in reason, reason
    _, reason = pick_winner({"a": _m(1304110.0, 30000.0), "b": _m(1310000.0)}, lambda n: (n,))
    assert "noise 30 µs of fastest a (1.3 ms)" in reason and " ns" not in reason, reason


def test_piped_output_keeps_long_paths_whole(tmp_path: Path) -> None:
    out = tmp_path / ("generated_" + "d" * 90) / ("more_" + "e" * 90)
    build = ["build", "--templates", str(SCALE), "--out", str(out), "--no-validate"]
    done = _cli(build, tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"wgslgen build → {out}\n" in done.stdout, done.stdout
    done = _cli([*build[:-1], "--check"], tmp_path)
    assert f"{out} is up to date" in done.stdout, done.stdout


def test_list_shows_each_kernels_description(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # docs/kernel-format.md: `[kernel].description` is "one line shown by `wgslgen list`".
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "kernels" / "scale"
    shutil.copytree(SCALE, folder)
    toml = folder / "kernel.toml"
    text = toml.read_text()
    assert text.count("[kernel]\n") == 1
    toml.write_text(text.replace("[kernel]\n", '[kernel]\ndescription = "y = alpha * x [demo]"\n'))
    assert main(["list", "--templates", str(folder.parent)]) == 0
    assert "\nscale: y = alpha * x [demo]\n" in capsys.readouterr().out


def test_commands_say_which_wgsl_entries_they_could_not_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shaders = tmp_path / "shaders"
    shaders.mkdir()
    shutil.copy(ROOT / "tests" / "fixtures" / "wgsl" / "f16.wgsl", shaders / "good.wgsl")
    (shaders / "gone.wgsl").symlink_to(shaders / "nowhere.wgsl")
    for command in (["list"], ["build", "--no-validate", "--out", str(tmp_path / "gen")]):
        assert main([*command, "--templates", str(shaders)]) == 0
        err = capsys.readouterr().err
        assert f"warning: {shaders / 'gone.wgsl'}: cannot read: a symbolic link to" in err, err
    assert (tmp_path / "gen" / "good" / "good.wgsl").is_file()  # the rest is built


def test_docs_prints_a_document_and_names_the_topics_for_an_unknown_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["docs", "Kernel-Format.md"]) == 0  # any case, with or without .md
    assert capsys.readouterr().out == (ROOT / "docs" / "kernel-format.md").read_text()
    assert main(["docs", "kernel-formats"]) == 2
    err = capsys.readouterr().err
    assert "no document 'kernel-formats'" in err and "json-output, kernel-format" in err


def test_a_nested_document_starts_with_its_own_schema_version(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`vendor --json` nests the vendored manifest, itself a versioned document."""
    from wgslgen.cli.output import emit_json

    emit_json({"warnings": [], "manifest": {"abi_version": "1", "schema_version": 1, "z": 2}})
    doc = _one_document(capsys.readouterr().out)
    assert list(doc) == ["schema_version", "manifest", "warnings"]
    assert list(doc["manifest"]) == ["schema_version", "abi_version", "z"]


def test_a_test_matrix_wider_than_the_terminal_comes_in_blocks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Rich drops the columns that do not fit, without a word: S9-S11 and the error column
    were missing from an 80-column terminal, under a summary that counted them."""
    import io

    from rich.console import Console

    from wgslgen.cli import cmd_test

    screen = io.StringIO()
    monkeypatch.setattr(cmd_test, "console", Console(file=screen, width=80, highlight=False))
    shapes = [f"--shape=n={n}" for n in range(1, 12)]
    argv = ["test", "--templates", str(SCALE), "--adapter", "cpu", "--set", "wg=64", *shapes]
    assert main(argv) == 0
    text = screen.getvalue()
    headers = [line.split() for line in text.splitlines() if line.lstrip().startswith("variant")]
    assert len(headers) >= 2, text  # more than one block
    assert [h for row in headers for h in row if h.startswith("S")] == [
        f"S{i}" for i in range(1, 12)
    ]
    assert all(row[-3:] == ["max", "abs", "err"] for row in headers), text
    assert max(len(line) for line in text.splitlines()) <= 80, text
