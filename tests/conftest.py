"""Shared fixtures: paths of the bundled templates, the seed and the test kernels."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = ROOT / "templates"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
GOOD_KERNELS = FIXTURES / "kernels" / "good"
BROKEN_KERNELS = FIXTURES / "kernels" / "broken"
SEED = GOOD_KERNELS / "seed.wgsl"


@pytest.fixture
def templates_copy(tmp_path: Path) -> Path:
    """A private copy of the bundled templates that a test may edit."""
    dest = tmp_path / "templates"
    shutil.copytree(TEMPLATES, dest, ignore=shutil.ignore_patterns("__pycache__"))
    return dest
