"""Every command, every option, a bad value: a one-line error (or argparse's usage error),
never a traceback. The table is read from the parser, so a new option is covered at once."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path

import pytest

from wgslgen.cli import build_parser, main
from wgslgen.run import harness
from wgslgen.tune import ray_session

from .conftest import GOOD_KERNELS


class Reached(BaseException):
    """The command got past its option checks to the device: the values were accepted."""


def _options() -> Iterator[tuple[tuple[str, ...], argparse.Action]]:
    def walk(parser: argparse.ArgumentParser, prefix: tuple[str, ...]):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    yield from walk(sub, (*prefix, name))
            elif action.nargs != 0 and action.dest != "help":
                yield prefix, action

    yield from walk(build_parser(), ())


# What each kind of value is fed: typed options get what their type must refuse, paths get
# a file where a folder belongs and the other way round, plain strings get malformed text.
_TYPED = ["foo", "-1", "0", "1e999", "nan"]
_PATH = ["<file>", "<dir>", "<file>/below", "nul\x00byte"]
_TEXT = ["foo", "=", "a=b=c", "", ",", "n=0", "n=-1", "n=foo"]


def _values(action: argparse.Action) -> list[str]:
    if action.choices:
        return ["foo"]
    if action.type is Path:
        return _PATH
    if action.type is not None:
        return _TYPED
    return _TEXT


# Enough to reach each option's check quickly: the tiny fixture kernels, no validation.
_BASE = {
    "build": ["--templates", str(GOOD_KERNELS), "--no-validate"],
    "validate": ["--templates", str(GOOD_KERNELS), "--kernel", "scale"],
    "transpile": ["--templates", str(GOOD_KERNELS), "--kernel", "scale"],
    "list": ["--templates", str(GOOD_KERNELS)],
    "test": ["--templates", str(GOOD_KERNELS), "--kernel", "scale"],
    "tune": ["--templates", str(GOOD_KERNELS), "--kernel", "scale"],
    "prune": ["--templates", str(GOOD_KERNELS)],
    "vendor": ["--templates", str(GOOD_KERNELS), "--kernel", "scale"],
}
_SLOW = {("validate",), ("transpile",), ("vendor",), ("build",)}

CASES = [
    pytest.param(prefix, action.option_strings[-1] if action.option_strings else None, value,
                 id=f"{' '.join(prefix)} {(action.option_strings or [action.dest])[-1]}={value!r}")
    for prefix, action in _options()
    for value in _values(action)
    if prefix and not (prefix in _SLOW and value not in ("foo", "<file>", "nul\x00byte"))
]  # fmt: skip


@pytest.mark.parametrize(("prefix", "option", "value"), CASES)
def test_a_bad_value_never_prints_a_traceback(
    prefix: tuple[str, ...],
    option: str | None,
    value: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a_file").write_text("user data")
    (tmp_path / "a_dir").mkdir()
    value = value.replace("<file>", str(tmp_path / "a_file")).replace(
        "<dir>", str(tmp_path / "a_dir")
    )

    def reached(*args: object, **kwargs: object) -> None:
        raise Reached

    monkeypatch.setattr(harness.Harness, "__init__", reached)
    monkeypatch.setattr(ray_session, "connect", reached)  # a valid --ray: no cluster is started
    argv = [*prefix, *_BASE.get(prefix[-1], [])]
    argv += [option, value] if option else [value]
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse: usage and one error line
        code = exc.code
    except Reached:
        code = None
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    if code not in (0, None):
        lines = [line for line in err.splitlines() if line.strip()]
        assert lines and ("error" in lines[-1] or "error:" in err), err
    assert (tmp_path / "a_file").read_text() == "user data"


def test_db_show_with_a_malformed_shape_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "r.jsonl").touch()  # a database that is there: the shape is what is wrong
    code = main(["db", "show", "--db", str(tmp_path / "r.jsonl"), "--shape", "foo"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert err.startswith("error: ") and "'foo'" in err and len(err.strip().splitlines()) == 1


def test_a_file_where_a_kernel_folder_belongs_is_named_and_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "gen"
    args = ["build", "--no-validate", "--templates", str(GOOD_KERNELS), "--out", str(out)]
    assert main(args) == 0
    for f in (out / "scale").iterdir():
        f.unlink()
    (out / "scale").rmdir()
    (out / "scale").write_text("not a folder")
    capsys.readouterr()
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "scale" in err and f"{out} is unchanged" in err
    assert (out / "scale").read_text() == "not a folder"


def test_a_text_file_as_database_is_never_rewritten(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    for argv in (["prune", "--templates", str(GOOD_KERNELS)], ["merge", str(notes)]):
        code = main(["db", *argv[:1], "--db", str(notes), *argv[1:]])
        assert code == 2 and "not a results database" in capsys.readouterr().err
        assert notes.read_text() == "my notes\n"
        assert not (tmp_path / "notes.txt.rejected").exists()
