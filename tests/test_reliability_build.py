"""`wgslgen build --out`: a user's files survive every misuse of the output folder."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from wgslgen.cli import main

from .conftest import GOOD_KERNELS, ROOT


def _build(*args: str) -> int:
    return main(["build", "--no-validate", *args])


def _snapshot(root: Path) -> dict[str, bytes | str]:
    """Every entry under root (dotfiles and links included) with its content or link target."""
    out: dict[str, bytes | str] = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_symlink():
            out[rel] = "->" + os.readlink(p)
        elif p.is_file():
            out[rel] = p.read_bytes()
        else:
            out[rel] = "<dir>"
    return out


def _user_files(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "thesis.txt").write_text("four years of work")
    (folder / "sub").mkdir()
    (folder / "sub" / "notes.md").write_text("notes")
    (folder / ".env").write_text("SECRET=1")


@pytest.fixture
def sets(tmp_path: Path) -> tuple[Path, Path]:
    """Two template sets: A holds `scale` and `seed`, B holds `twopass`."""
    a, b = tmp_path / "set_a", tmp_path / "set_b"
    a.mkdir()
    b.mkdir()
    shutil.copytree(GOOD_KERNELS / "scale", a / "scale")
    shutil.copy(GOOD_KERNELS / "seed.wgsl", a / "seed.wgsl")
    shutil.copytree(GOOD_KERNELS / "twopass", b / "twopass")
    return a, b


def test_a_non_empty_folder_without_manifest_is_refused_and_untouched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "mine"
    _user_files(out)
    before = _snapshot(out)
    assert _build("--templates", str(GOOD_KERNELS), "--out", str(out)) == 2
    assert "holds no wgslgen manifest.json" in capsys.readouterr().err
    assert _snapshot(out) == before


@pytest.mark.parametrize("target", [".", "..", "<absolute>"])
def test_the_current_folder_and_its_parents_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], target
) -> None:
    project = tmp_path / "project"
    _user_files(project)
    (project / ".git").mkdir()
    (project / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    monkeypatch.chdir(project)
    before = _snapshot(tmp_path)
    target = str(project) if target == "<absolute>" else target
    assert _build("--templates", str(GOOD_KERNELS), "--out", target) == 2
    assert "refusing to build into the current folder" in capsys.readouterr().err
    assert _snapshot(tmp_path) == before


def test_a_file_as_out_is_refused_and_untouched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "report.pdf"
    target.write_bytes(b"%PDF precious")
    assert _build("--templates", str(GOOD_KERNELS), "--out", str(target)) == 2
    assert "exists and is not a directory" in capsys.readouterr().err
    assert target.read_bytes() == b"%PDF precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.pdf"]


def test_unlisted_files_survive_full_kernel_and_set_builds(tmp_path: Path) -> None:
    out = tmp_path / "gen"
    assert _build("--templates", str(GOOD_KERNELS), "--out", str(out)) == 0
    (out / ".env").write_text("SECRET=1")
    (out / "README.md").write_text("mine")
    (out / "scale" / ".keep").write_text("")
    (out / "empty_dir").mkdir()
    (out / "link").symlink_to("README.md")
    mine = {".env", "README.md", "scale/.keep", "empty_dir", "link"}
    before = {k: v for k, v in _snapshot(out).items() if k in mine}
    assert len(before) == len(mine)
    partial = (
        ["--kernel", "scale"],
        ["--kernel", "scale", "--set", "wg=64"],
        ["--kernel", "twopass", "--set", "wg=32"],
    )
    for extra in ([], *partial):
        assert _build("--templates", str(GOOD_KERNELS), "--out", str(out), *extra) == 0
        after = _snapshot(out)
        assert {k: after.get(k) for k in before} == before, extra
    assert (out / "manifest.json").is_file()


def test_only_manifest_listed_files_are_removed_and_never_outside(tmp_path: Path) -> None:
    out = tmp_path / "gen"
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    assert _build("--templates", str(GOOD_KERNELS), "--out", str(out)) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    hostile = {**manifest["variants"][0], "name": "x", "file": "../victim.txt"}
    manifest["variants"].append(hostile)
    (out / "manifest.json").write_text(json.dumps(manifest))
    assert _build("--templates", str(GOOD_KERNELS), "--out", str(out)) == 0
    assert victim.read_text() == "keep me"


def test_template_sets_do_not_delete_each_others_kernels(
    sets: tuple[Path, Path], tmp_path: Path
) -> None:
    a, b = sets
    out = tmp_path / "gen"
    assert _build("--templates", str(a), "--out", str(out)) == 0
    assert _build("--templates", str(b), "--out", str(out)) == 0
    assert _build("--templates", str(a), "--out", str(out)) == 0
    kernels = json.loads((out / "manifest.json").read_text())["kernels"]
    assert set(kernels) == {"scale", "seed", "twopass"}
    assert list((out / "twopass").glob("*.wgsl"))
    # A kernel removed from its own template set goes; the other set's kernel stays.
    shutil.rmtree(a / "scale")
    assert _build("--templates", str(a), "--out", str(out)) == 0
    kernels = json.loads((out / "manifest.json").read_text())["kernels"]
    assert set(kernels) == {"seed", "twopass"}
    assert not (out / "scale").exists()
    assert list((out / "twopass").glob("*.wgsl"))


def test_an_empty_templates_folder_is_no_kernel_found(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    out = tmp_path / "gen"
    assert _build("--templates", str(empty), "--out", str(out)) == 2
    assert "no kernel found" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize("umask", [0o022, 0o002])
def test_folders_respect_the_umask(tmp_path: Path, umask: int) -> None:
    old = os.umask(umask)
    try:
        assert _build("--templates", str(GOOD_KERNELS), "--out", str(tmp_path / "gen")) == 0
    finally:
        os.umask(old)
    assert (tmp_path / "gen").stat().st_mode & 0o777 == 0o777 & ~umask
    assert (tmp_path / "gen" / "scale").stat().st_mode & 0o777 == 0o777 & ~umask


def test_a_full_disk_is_named_and_the_previous_tree_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "gen"
    assert _build("--templates", str(GOOD_KERNELS), "--out", str(out)) == 0
    (out / "notes.txt").write_text("mine")
    before = _snapshot(out)
    shutil.rmtree(out / "scale")  # so the next build has something to write
    before = _snapshot(out)

    def full(self: Path, data: bytes) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self))

    monkeypatch.setattr(Path, "write_bytes", full)
    assert _build("--templates", str(GOOD_KERNELS), "--out", str(out)) == 2
    err = capsys.readouterr().err
    assert "No space left on device" in err and "unchanged" in err
    monkeypatch.undo()
    assert _snapshot(out) == before
    assert not list(tmp_path.glob(".gen.*"))


def test_two_builds_at_once_both_land(sets: tuple[Path, Path], tmp_path: Path) -> None:
    a, b = sets
    out = tmp_path / "gen"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "wgslgen", "build", "--no-validate", "--out", str(out)]
    procs = [
        subprocess.Popen(
            [*command, "--templates", str(s)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for s in (a, b)
    ]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    kernels = json.loads((out / "manifest.json").read_text())["kernels"]
    assert set(kernels) == {"scale", "seed", "twopass"}
    listed = {e["file"] for e in json.loads((out / "manifest.json").read_text())["variants"]}
    assert all((out / f).is_file() for f in listed)


def _catches(pid: int, signum: int) -> bool:
    """Whether process `pid` has a handler for `signum` (Linux: SigCgt in /proc/PID/status)."""
    status = Path(f"/proc/{pid}/status").read_text()
    caught = next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(int(caught, 16) >> (signum - 1) & 1)


def test_sigterm_ends_a_build_like_ctrl_c(tmp_path: Path) -> None:
    """A `timeout`, a CI runner or `kill` sends SIGTERM: one line, exit 143, no half-written
    output folder and the previous tree intact (it used to die on the spot, leaving
    .generated.new-* beside the output)."""
    import signal
    import time

    kernel = tmp_path / "kernels" / "scale"
    shutil.copytree(GOOD_KERNELS / "scale", kernel)
    out = tmp_path / "generated"
    cmd = [sys.executable, "-m", "wgslgen", "build", "--templates", str(kernel.parent),
           "--out", str(out)]  # fmt: skip
    assert subprocess.run(cmd, cwd=tmp_path, capture_output=True, timeout=300).returncode == 0
    (out / "mine.txt").write_text("kept")
    toml = kernel / "kernel.toml"
    pad = f'[[axis]]\nname = "pad"\nkey = "p"\nvalues = {list(range(400))}\n\n[[axis]]'
    toml.write_text(toml.read_text().replace("[[axis]]", pad, 1))  # ~2,000 renderings
    proc = subprocess.Popen(cmd, cwd=tmp_path, stderr=subprocess.PIPE, text=True)
    # Once wgslgen catches SIGTERM (under load its imports alone took over 1.5 s, and a signal
    # before the handler kills it outright), and before rendering ~2,000 variants is done.
    deadline = time.monotonic() + 60
    while not _catches(proc.pid, signal.SIGTERM):
        assert proc.poll() is None and time.monotonic() < deadline, "no SIGTERM handler"
        time.sleep(0.01)
    time.sleep(0.3)
    assert proc.poll() is None, "the build ended before SIGTERM: nothing tested"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err
    assert "terminated; everything already written is kept" in err and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["generated", "kernels"]
    assert (out / "mine.txt").read_text() == "kept"
    manifest = json.loads((out / "manifest.json").read_text())  # the old tree or the new one,
    assert all((out / v["file"]).is_file() for v in manifest["variants"])  # never half of one
