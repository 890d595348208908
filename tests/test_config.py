"""Project config ([tool.wgslgen] / wgslgen.toml), `wgslgen init`, and the CLI's shared rules:
repeated --set values, --debug after the command, examples in --help, list --json, completion."""

from __future__ import annotations

import hashlib
import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from wgslgen.cli import build_parser, main
from wgslgen.cli.examples import EXAMPLES
from wgslgen.config import find_config, load_project
from wgslgen.errors import WgslgenError
from wgslgen.render.build import apply_overrides, parse_overrides
from wgslgen.spec.loader import DEFAULT_TEMPLATES, discover

from .conftest import GOOD_KERNELS, ROOT


def _digest(folder: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            h.update(p.relative_to(folder).as_posix().encode() + p.read_bytes())
    return h.hexdigest()


def test_config_is_found_walking_up_and_paths_are_relative_to_it(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.wgslgen]\ntemplates = ["k"]\noutput = "out/gen"\n'
        'adapter = "cpu"\n'
    )
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    assert find_config(deep) == tmp_path / "pyproject.toml"
    project = load_project(deep)
    assert project.templates == ((tmp_path / "k").resolve(),)
    assert project.output == tmp_path / "out" / "gen"
    assert project.db == tmp_path / "tuning" / "results.jsonl"
    assert project.adapter == "cpu" and project.profile is None
    # A nearer wgslgen.toml wins; a pyproject.toml without [tool.wgslgen] is not a project.
    (deep / "wgslgen.toml").write_text('templates = ["mine"]\nbundled = true\n')
    assert load_project(deep).templates == ((deep / "mine").resolve(), DEFAULT_TEMPLATES.resolve())
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    assert find_config(tmp_path / "a") is None


def test_config_typo_names_the_file_and_the_valid_keys(tmp_path: Path) -> None:
    text = '[project]\nname = "x"\n\n[tool.wgslgen]\noutptu = "gen"\n'  # the typo: line 5
    (tmp_path / "pyproject.toml").write_text(text)
    with pytest.raises(WgslgenError) as info:
        load_project(tmp_path)
    text = str(info.value)
    assert text.startswith(f"{tmp_path / 'pyproject.toml'}:5: unknown key(s) outptu in ")
    assert "[tool.wgslgen]; valid: adapter, bundled, db, output," in text


def test_the_checkout_is_a_project_whose_kernels_are_the_bundled_library() -> None:
    project = load_project(ROOT / "wgslgen")
    assert project.file == ROOT / "pyproject.toml"
    assert project.templates == (DEFAULT_TEMPLATES.resolve(),)
    assert project.output == ROOT / "generated"


def test_user_project_needs_no_path_options_and_touches_no_other_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """init, then build/test/tune from a subfolder: everything lands in the project."""
    generated_before = _digest(ROOT / "generated")
    project = tmp_path / "proj"
    assert main(["init", str(project)]) == 0
    (project / "src").mkdir()
    monkeypatch.chdir(project / "src")
    assert main(["build", "--no-validate"]) == 0
    manifest = json.loads((project / "generated" / "manifest.json").read_text())
    assert set(manifest["kernels"]) == {"rmsnorm"}  # not the bundled kernels
    assert not (project / "src" / "generated").exists()
    capsys.readouterr()
    # Repeated values of one axis select each (by name or by key); eps is a float parameter
    # packed into the uniform, and the reference reads eps and the derived inv_dim.
    args = ["test", "--adapter", "cpu", "--json", "--set", "wg=32", "--set", "workgroup_size=64"]
    assert main([*args, "--set", "s=f32"]) == 0
    report = json.loads(capsys.readouterr().out)
    variants = {c["variant"] for c in report["results"]}
    assert variants == {"rmsnorm__wg32_sf32", "rmsnorm__wg64_sf32"}
    assert {c["status"] for c in report["results"]} == {"pass"}
    assert {c["shape"]["eps"] for c in report["results"]} == {1e-5, 0.5}
    tune = ["tune", "--adapter", "cpu", "--budget", "2", "--rounds", "3", "--set", "s=f32"]
    assert main(tune) == 0
    assert (project / "tuning" / "results.jsonl").stat().st_size > 0
    assert "rmsnorm" in (project / "tuning" / "selection.json").read_text()
    assert _digest(ROOT / "generated") == generated_before
    # What the build wrote does not depend on the folder it ran in (the headers name the
    # template inside its templates folder): checked from the root and a kernel folder.
    for folder in (project, project / "kernels" / "rmsnorm"):  # a fresh process each
        check = subprocess.run(
            [sys.executable, "-m", "wgslgen", "build", "--check"],
            cwd=folder, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert check.returncode == 0, check.stdout + check.stderr


def test_the_profile_setting_is_the_default_limit_profile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    assert main(["init", str(tmp_path)]) == 0
    config = tmp_path / "wgslgen.toml"
    config.write_text(config.read_text().replace('# profile = "webgpu"', 'profile = "compat"'))
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main(["validate", "--json", "--engines", "naga"]) == 0
    assert json.loads(capsys.readouterr().out)["profiles"] == ["compat"]
    args = ["test", "--json", "--adapter", "cpu", "--set", "wg=32", "--set", "s=f32"]
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out)["profile"] == "compat"
    assert main(["validate", "--json", "--engines", "naga", "--profile", "webgpu"]) == 0
    assert json.loads(capsys.readouterr().out)["profiles"] == ["webgpu"]  # the option wins


def test_init_never_overwrites(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "mine"\n')
    assert main(["init", str(tmp_path)]) == 0
    text = (tmp_path / "pyproject.toml").read_text()
    assert text.startswith('[project]\nname = "mine"\n') and "[tool.wgslgen]" in text
    assert load_project(tmp_path).templates == ((tmp_path / "kernels").resolve(),)
    before = (tmp_path / "kernels" / "rmsnorm" / "reference.py").read_bytes()
    assert main(["init", str(tmp_path)]) == 2
    assert "already exists; init overwrites nothing" in capsys.readouterr().err
    assert (tmp_path / "kernels" / "rmsnorm" / "reference.py").read_bytes() == before


def test_init_into_an_empty_kernel_folder(tmp_path: Path) -> None:
    (tmp_path / "kernels" / "rmsnorm").mkdir(parents=True)  # made by hand, still empty
    assert main(["init", str(tmp_path)]) == 0
    assert (tmp_path / "wgslgen.toml").is_file()
    assert (tmp_path / "kernels" / "rmsnorm" / "kernel.toml").is_file()
    other = tmp_path / "other"
    (other / "kernels").mkdir(parents=True)
    (other / "kernels" / "rmsnorm").write_text("")  # a file where the kernel folder goes
    assert main(["init", str(other)]) == 2
    assert not (other / "wgslgen.toml").exists()  # refused before anything was written


def test_repeated_set_values_of_one_axis_select_each() -> None:
    spec = discover([GOOD_KERNELS / "scale"])[0]
    chosen = apply_overrides(spec, parse_overrides(["wg=32", "wg=64", "storage=f32"]))
    assert [v.name for v in chosen] == ["scale__wg32_sf32", "scale__wg64_sf32"]


def test_debug_adds_the_traceback_and_keeps_the_exit_code_and_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = str(tmp_path / "nowhere")
    assert main(["list", "--templates", missing]) == 2
    assert "Traceback" not in capsys.readouterr().err
    for argv in (["list", "--templates", missing, "--debug", "--json"],
                 ["--debug", "list", "--templates", missing, "--json"]):  # fmt: skip
        assert main(argv) == 2  # an input error stays exit 2 under --debug
        out, err = capsys.readouterr()
        assert "Traceback" in err and "no such templates folder" in err
        assert json.loads(out)["exit_code"] == 2


def test_every_command_has_examples_that_parse() -> None:
    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    for name in commands:
        assert "examples:" in commands[name].format_help(), f"wgslgen {name} --help"
    for text in EXAMPLES.values():
        for line in text.splitlines():
            command = line.split("#")[0].split("|")[0].split(">")[0].strip()
            argv = shlex.split(command.removeprefix("eval "))
            if argv and argv[0].startswith("$("):
                continue
            assert argv[0] == "wgslgen", line
            parser.parse_args(argv[1:])  # an unknown option exits (SystemExit fails the test)


def test_list_json_is_an_object_with_schema_version_and_sources(
    capsys: pytest.CaptureFixture,
) -> None:
    assert main(["list", "--json", "--templates", str(GOOD_KERNELS / "scale")]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["schema_version"] == 1
    [kernel] = out["kernels"]
    assert kernel["kernel"] == "scale" and kernel["variants"] == 5
    assert kernel["source"].endswith("tests/fixtures/kernels/good/scale")
    assert main(["list", "--json"]) == 0  # the checkout: the bundled library
    sources = {k["source"] for k in json.loads(capsys.readouterr().out)["kernels"]}
    assert sources == {"bundled"}


def test_completion_offers_kernel_names_and_axis_values(capsys: pytest.CaptureFixture) -> None:
    from argparse import Namespace

    from wgslgen.cli.completion import axis_values, kernel_names

    assert "attention_bwd_dq" in kernel_names("att", Namespace(templates=None))
    scale = Namespace(templates=[str(GOOD_KERNELS / "scale")], kernel=None)
    assert axis_values("wg=", scale) == ["wg=128", "wg=32", "wg=64"]
    assert main(["completion", "bash"]) == 0
    assert "wgslgen" in capsys.readouterr().out


def _documented_json_keys() -> dict[str, set[str]]:
    import re

    rows = {}
    for line in (ROOT / "docs" / "json-output.md").read_text().splitlines():
        if m := re.match(r"\| `([\w -]+)` \| (.*) \|$", line):
            rows[m.group(1)] = set(re.findall(r"`(\w+)`", m.group(2)))
    return rows


def _touched(path: Path) -> Path:
    path.touch()
    return path


def test_json_outputs_carry_schema_version_and_documented_keys(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    documented = _documented_json_keys()
    scale = str(GOOD_KERNELS / "scale")
    gen = tmp_path / "gen"
    runs = {
        "list": ["list", "--json", "--templates", scale],
        "build": ["build", "--json", "--no-validate", "--templates", scale, "--out", str(gen)],
        "build --check": [
            "build",
            "--json",
            "--check",
            "--no-validate",
            "--templates",
            scale,
            "--out",
            str(gen),
        ],
        "validate": ["validate", "--json", "--templates", str(GOOD_KERNELS / "seed.wgsl")],
        "db show": ["db", "show", "--json", "--db", str(_touched(tmp_path / "empty.jsonl"))],
    }
    for name, argv in runs.items():
        main(argv)
        out = json.loads(capsys.readouterr().out)
        assert out.pop("schema_version") == 1, name
        assert set(out) == documented[name], name


def _complete(line: str) -> list[str]:
    """What the shell gets from argcomplete for ``line`` (the real hook, fd 8 as in bash)."""
    import os
    import subprocess
    import sys

    read, write = os.pipe()
    env = {**os.environ, "_ARGCOMPLETE": "1", "_ARGCOMPLETE_IFS": "\n"}
    env |= {"COMP_LINE": line, "COMP_POINT": str(len(line))}
    code = (
        "import os, sys; os.dup2(int(sys.argv[1]), 8); "
        "from wgslgen.cli import main; sys.exit(main())"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(write)],
        env=env,
        cwd=ROOT,
        pass_fds=(write,),
        capture_output=True,
        timeout=60,
    )
    os.close(write)
    with os.fdopen(read) as f:
        out = f.read()
    assert done.returncode == 0, done.stderr
    return [item.rstrip() for item in out.split("\n")]


def test_shell_completion_completes_commands_options_kernels_and_axis_values() -> None:
    assert _complete("wgslgen ini") == ["init"]
    assert _complete("wgslgen test --ada") == ["--adapter"]
    assert "attention_bwd_dq" in _complete("wgslgen list --kernel attention_bwd")
    assert _complete("wgslgen build --kernel attention_bwd_dq --set s=") == [
        "s=f16",
        "s=f32",
        "s=pf16",
    ]


def test_init_inside_a_project_warns_that_the_new_one_hides_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["init"]) == 0
    assert "inside the project" not in capsys.readouterr().err
    monkeypatch.chdir(tmp_path / "kernels")  # a newcomer's natural mistake
    assert main(["init"]) == 0
    err = capsys.readouterr().err
    assert f"inside the project of {tmp_path / 'wgslgen.toml'}" in err, err
    assert "no longer see that one's kernels" in err
