"""wgslgen as an installed package: a wheel built by `python -m build`, installed into a fresh
venv outside the repository, works there (bundled kernels, naga-wasm from the user cache,
a test on lavapipe, a user kernel that imports the _lib macros)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from wgslgen.check.engines import naga_wasm
from wgslgen.check.engines.naga import NagaEngine
from wgslgen.cli import main

from .conftest import GOOD_KERNELS, ROOT

# tests/ too: the sdist must leave it out (setuptools would ship its test*.py alone)
SOURCES = (
    "pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "LICENSE",
    "wgslgen", "templates", "docs", "tests",
)  # fmt: skip


def _run(
    cmd: list[str], cwd: Path, env: dict[str, str], timeout: float = 180, log: Path | None = None
) -> str:
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{cmd}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    if log is not None:
        log.write_text(done.stdout + done.stderr)
    return done.stdout


def _clean_env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["WGSLGEN_CACHE_DIR"] = str(tmp / "cache")  # naga-wasm installed here, on first use
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if ".venv" not in p)
    return env


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str], Path]:
    """A venv (no system site-packages) with the wheel built from this tree installed."""
    tmp = tmp_path_factory.mktemp("pkg")
    src = tmp / "src"
    src.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    for name in SOURCES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=ignore)
        else:
            shutil.copy2(path, src / name)
    env = _clean_env(tmp)
    # sdist first, then the wheel from the sdist: a file missing from either fails here.
    build = [sys.executable, "-m", "build", "--outdir", str(tmp / "dist"), str(src)]
    _run(build, tmp, env, log=tmp / "build.log")
    [wheel] = (tmp / "dist").glob("wgslgen-*.whl")
    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], tmp, env)
    _run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)], tmp, env, 300)
    work = tmp / "elsewhere"
    work.mkdir()
    return venv / "bin" / "wgslgen", env, wheel


def test_wheel_holds_the_bundled_library_schema_and_adapter(installed) -> None:
    wgslgen, _, wheel = installed
    site = next(wgslgen.parents[1].glob("lib/python*/site-packages"))
    bundled = site / "wgslgen" / "_bundled"
    assert (bundled / "attention_bwd_dq" / "kernel.toml").is_file()
    assert (bundled / "attention_bwd_dq" / "reference.py").is_file()
    assert sorted(p.name for p in (bundled / "_lib").glob("*.j2")) == sorted(
        p.name for p in (ROOT / "templates" / "_lib").glob("*.j2")
    )
    assert (site / "wgslgen" / "spec" / "kernel.schema.json").is_file()
    assert (site / "wgslgen" / "check" / "engines" / "naga_cli.mjs").is_file()
    with zipfile.ZipFile(wheel) as zf:
        assert not [n for n in zf.namelist() if "__pycache__" in n or n.endswith(".pyc")]
    assert (site / "wgslgen-0.1.0.dist-info" / "licenses" / "LICENSE").is_file()


def test_sdist_holds_the_docs_and_no_half_test_suite(installed) -> None:
    import tarfile

    _, _, wheel = installed
    [sdist] = wheel.parent.glob("wgslgen-*.tar.gz")
    with tarfile.open(sdist) as tf:
        names = {n.split("/", 1)[1] for n in tf.getnames() if "/" in n}
    assert "docs/kernel-format.md" in names and "templates/attention/kernel.toml" in names
    assert not [n for n in names if n.startswith("tests/")]  # test modules without conftest


def test_build_leaves_no_folder_out_and_ships_every_runtime_file(installed) -> None:
    # setuptools warns (a block of 30 lines each) for every folder the packages leave out.
    _, _, wheel = installed
    log = (wheel.parents[1] / "build.log").read_text()
    assert "absent from the `packages` configuration" not in log
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
    for name in ("runtime.ts", "runtime.js", "runtime.d.ts", "tsconfig.json"):
        assert f"wgslgen/vendor/runtime/ts/{name}" in names
    kernels = [p.name for p in (ROOT / "templates").iterdir() if (p / "kernel.toml").is_file()]
    for kernel in kernels:
        assert f"wgslgen/_bundled/{kernel}/kernel.toml" in names


def test_installed_wgslgen_lists_validates_with_naga_and_tests_on_lavapipe(installed) -> None:
    wgslgen, env, _ = installed
    work = wgslgen.parents[2] / "elsewhere"
    listing = json.loads(_run([str(wgslgen), "list", "--json"], work, env))
    assert listing["schema_version"] == 1 and listing["project"] is None
    by_name = {k["kernel"]: k for k in listing["kernels"]}
    assert by_name["attention_bwd_dq"]["source"] == "bundled"
    assert "site-packages" in by_name["attention_bwd_dq"]["folder"]
    # naga asked for by name: naga-wasm comes from the user cache (installed now, pinned).
    out = _run(
        [str(wgslgen), "validate", "--kernel", "attention_bwd_dq", "--engines", "naga", "--json"],
        work,
        env,
    )
    report = json.loads(out)
    assert report["engines"]["naga"].startswith(f"naga-wasm {naga_wasm.VERSION}")
    assert len(report["results"]) >= by_name["attention_bwd_dq"]["variants"] >= 96
    assert all(r["engines"]["naga"]["ok"] for r in report["results"])
    assert (work.parent / "cache" / f"naga-wasm-{naga_wasm.VERSION}" / "naga_cli.mjs").is_file()
    small = ["--set", "wg=64", "--set", "mh=1024", "--set", "s=f32", "--set", "w=f32"]
    cmd = [str(wgslgen), "test", "--kernel", "attention_bwd_dq", *small, "--adapter", "cpu"]
    out = _run([*cmd, "--json"], work, env)
    results = json.loads(out)["results"]
    assert {r["variant"] for r in results} == {"attention_bwd_dq__wg64_mh1024_sf32_wf32"}
    assert {r["status"] for r in results} == {"pass"}
    assert "lavapipe" in out or "llvmpipe" in out


def test_installed_wgslgen_prints_the_reference_documents(installed) -> None:
    # The starter and hints name `wgslgen docs TOPIC`: a pip user has no docs/ folder.
    wgslgen, env, _ = installed
    work = wgslgen.parents[2] / "elsewhere"
    listing = json.loads(_run([str(wgslgen), "docs", "--json"], work, env))
    assert set(listing["topics"]) == {p.stem for p in (ROOT / "docs").glob("*.md")}
    text = _run([str(wgslgen), "docs", "kernel-format"], work, env)
    assert text == (ROOT / "docs" / "kernel-format.md").read_text()


def test_installed_wgslgen_user_project_imports_lib_macros(installed) -> None:
    wgslgen, env, _ = installed
    project = wgslgen.parents[2] / "userproj"
    _run([str(wgslgen), "init", str(project)], wgslgen.parents[2], env)
    _run([str(wgslgen), "build", "--no-validate"], project, env)
    rendered = project / "generated" / "rmsnorm" / "rmsnorm__wg64_sf32.wgsl"
    assert "fn row_sum(" in rendered.read_text()  # from _lib/reduce.wgsl.j2, package data
    assert set(json.loads((project / "generated" / "manifest.json").read_text())["kernels"]) == {
        "rmsnorm"
    }


def test_naga_wasm_pin_matches_the_checkout_lock() -> None:
    lock = json.loads((ROOT / "package-lock.json").read_text())
    entry = lock["packages"]["node_modules/naga-wasm"]
    assert (entry["version"], entry["integrity"]) == (naga_wasm.VERSION, naga_wasm.INTEGRITY)


def test_validate_asking_for_naga_that_cannot_be_had_fails_clearly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    monkeypatch.setattr(naga_wasm, "checkout_modules", lambda: None)  # as if installed
    monkeypatch.setenv("WGSLGEN_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("WGSLGEN_NO_INSTALL", "1")  # fault injection: no install allowed
    monkeypatch.delenv("WGSLGEN_NAGA", raising=False)
    monkeypatch.setenv(
        "PATH",
        os.pathsep.join(
            p for p in os.environ["PATH"].split(os.pathsep) if not (Path(p) / "naga").exists()
        ),
    )
    why = NagaEngine().availability() or ""
    assert f"naga-wasm {naga_wasm.VERSION} is not installed in {tmp_path}" in why
    code = main(["validate", "--templates", str(GOOD_KERNELS / "seed.wgsl"), "--engines", "naga"])
    err = re.sub(r"\s+", " ", capsys.readouterr().err)
    assert code == 2
    assert "naga: not available: naga not found: naga-wasm" in err and "Traceback" not in err


def test_dawn_hint_keeps_its_extra_in_brackets(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    import wgslgen.check.engines.dawn as dawn_module

    monkeypatch.setattr(dawn_module.importlib.util, "find_spec", lambda name: None)
    assert main(["validate", "--templates", str(GOOD_KERNELS / "seed.wgsl")]) == 0
    out = re.sub(r"\s+", " ", capsys.readouterr().out)
    assert "pip install 'wgslgen[dawn]'" in out


def test_license_file_matches_pyproject() -> None:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert meta["license"] == "MIT" and meta["license-files"] == ["LICENSE"]
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")


def test_lowest_supported_wgpu_validates_and_tests(tmp_path: Path) -> None:
    """The lower bound of pyproject's wgpu range, shadowing the installed wgpu-py."""
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    [spec] = [d for d in deps if d.startswith("wgpu")]
    lowest = re.search(r">=\s*([\d.]+)", spec).group(1)  # type: ignore[union-attr]
    target = tmp_path / "wgpu"
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target)]
    env = {**os.environ, "PYTHONPATH": str(target)}
    _run([*pip, f"wgpu=={lowest}"], tmp_path, env)
    scale = ["--templates", str(GOOD_KERNELS / "scale"), "--set", "wg=64", "--set", "s=f32"]
    cli = [sys.executable, "-m", "wgslgen"]
    report = json.loads(_run([*cli, "validate", *scale, "--engines", "wgpu", "--json"], ROOT, env))
    assert re.match(rf"wgpu-py {re.escape(lowest)}(\.0)* ", report["engines"]["wgpu"])
    assert all(r["engines"]["wgpu"]["ok"] for r in report["results"])
    report = json.loads(_run([*cli, "test", *scale, "--adapter", "cpu", "--json"], ROOT, env))
    assert report["ok"] and {r["status"] for r in report["results"]} == {"pass"}
