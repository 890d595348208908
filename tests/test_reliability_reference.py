"""A user's reference.py: bounded by the variant's deadline, its prints kept off --json, and
its NaN/Inf or non-numeric results reported as the reference's error, not the kernel's."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from wgslgen.cli import main
from wgslgen.render.renderer import render
from wgslgen.run.harness import Harness
from wgslgen.spec.loader import load_kernel

from .conftest import GOOD_KERNELS, cpu_harness


@pytest.fixture(scope="module")
def harness():
    """One worker on the CPU adapter (lavapipe), with a short deadline."""
    with cpu_harness(timeout=2) as h:
        yield h


def _scale(tmp_path: Path, old: str, new: str) -> Path:
    folder = tmp_path / "kern" / "scale"
    shutil.copytree(GOOD_KERNELS / "scale", folder)
    ref = folder / "reference.py"
    assert old in ref.read_text()
    ref.write_text(ref.read_text().replace(old, new, 1))
    return folder


@pytest.mark.parametrize(
    ("old", "new", "named"),
    [
        ('return {"y"', 'while True:\n        pass\n    return {"y"', "deadline of 2 s"),
        ("2.0 * inputs", "np.nan * inputs", "holds NaN or Inf"),
        ("2.0 * inputs", "np.inf * inputs", "holds NaN or Inf"),
        (
            'return {"y": 2.0 * inputs["x"].astype(np.float64)}',
            'return {"y": ["a"] * len(inputs["x"])}',
            "not of numbers",
        ),
        (  # an .astype(int) left in truncated every value: the kernel was blamed
            'return {"y": 2.0 * inputs["x"].astype(np.float64)}',
            'return {"y": (2.0 * inputs["x"]).astype(np.int64)}',
            "is an array of int64 for a f32 binding; return floats",
        ),
        # it would end wgslgen itself, with exit 0 over a run that tested nothing
        ('return {"y"', 'import sys\n    sys.exit(0)\n    return {"y"', "sys.exit(0)"),
        ('return {"x"', 'raise SystemExit("bye")\n    return {"x"', "sys.exit('bye')"),
    ],
)
def test_a_bad_reference_is_a_reference_error_within_the_deadline(
    tmp_path: Path, harness: Harness, old: str, new: str, named: str
) -> None:
    spec = load_kernel(_scale(tmp_path, old, new))
    started = time.monotonic()
    result = harness.check(render(spec.baseline), {"n": 5})
    assert time.monotonic() - started < 10
    assert result.status == "error" and result.stage == "reference", result
    assert named in result.message and "reference.py" in result.message
    # the stage is said once; the function that erred is named as a call
    assert result.message.count("reference: ") == 1, result.message
    assert "reference()" in result.message or "make_inputs()" in result.message, result.message


def test_a_printing_reference_does_not_corrupt_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _scale(
        tmp_path,
        "def reference(inputs, shape):\n",
        "def reference(inputs, shape):\n    print('debugging the reference')\n",
    )
    code = main(["test", "--templates", str(folder.parent), "--adapter", "cpu", "--json",
                 "--set", "wg=64", "--set", "s=f32", "--shape", "n=5"])  # fmt: skip
    out, err = capsys.readouterr()
    doc = json.loads(out)  # nothing but the JSON document on stdout
    assert code == 0, doc
    assert "debugging the reference" in err


def test_a_reference_that_exits_on_import_fails_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _scale(tmp_path, '"""numpy reference', 'import sys\nsys.exit(0)\n"""numpy reference')
    code = main(["test", "--templates", str(folder.parent), "--adapter", "cpu",
                 "--set", "wg=64", "--set", "s=f32", "--shape", "n=5"])  # fmt: skip
    assert code != 0
    assert "importing the reference called sys.exit(0)" in capsys.readouterr().out
