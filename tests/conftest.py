"""Shared fixtures: paths of the bundled templates, the seed and the test kernels."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from wgslgen.run.harness import Harness

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = ROOT / "templates"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
GOOD_KERNELS = FIXTURES / "kernels" / "good"
BROKEN_KERNELS = FIXTURES / "kernels" / "broken"
SEED = GOOD_KERNELS / "seed.wgsl"

# Every test runs the real compilers: a verdict remembered from an earlier run (the user-level
# cache of wgslgen/check/verdict_cache.py) would hide a regression. The cache's own tests
# turn it back on in a private folder.
os.environ.setdefault("WGSLGEN_NO_CACHE", "1")


@pytest.fixture
def templates_copy(tmp_path: Path) -> Path:
    """A private copy of the bundled templates that a test may edit."""
    dest = tmp_path / "templates"
    shutil.copytree(TEMPLATES, dest, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def scale_project(root: Path, monkeypatch: pytest.MonkeyPatch, config: str) -> Path:
    """A project at ``root`` (made the current folder) whose one kernel is a copy of the
    `scale` fixture, with ``config`` as its wgslgen.toml."""
    monkeypatch.chdir(root)
    shutil.copytree(GOOD_KERNELS / "scale", root / "kernels" / "scale")
    (root / "wgslgen.toml").write_text(config)
    return root


@contextmanager
def cpu_harness(timeout: float) -> Iterator[Harness]:
    """A harness on lavapipe. scripts/setup.sh installs it, so its absence fails the test."""
    harness = Harness("cpu", timeout=timeout)
    try:
        harness.worker.start()
        yield harness
    finally:
        harness.close()
