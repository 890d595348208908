"""Kernels of several passes: one module, entry points dispatched in order, scratch buffers."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from wgslgen.cli import main
from wgslgen.errors import WgslgenError
from wgslgen.spec.loader import discover
from wgslgen.testing import check_kernel

from .conftest import GOOD_KERNELS

TWOPASS = GOOD_KERNELS / "twopass"


def _copy(tmp_path: Path) -> Path:
    dest = tmp_path / "kernels" / "twopass"
    shutil.copytree(TWOPASS, dest, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def test_passes_are_parsed_in_order_with_their_dispatch() -> None:
    spec = discover([TWOPASS])[0]
    assert spec.entry_points == ("double", "reverse_add_one")
    variant = spec.variants[0]
    case = variant.case({"n": 1000})
    assert case.passes == (("double", (32, 1, 1)), ("reverse_add_one", (32, 1, 1)))
    scratch = [b.name for b in variant.interface.bindings if b.scratch]
    assert scratch == ["tmp"]
    assert [b.name for b in variant.interface.bindings if b.is_output] == ["y"]


def test_second_pass_sees_what_other_workgroups_wrote_in_the_first() -> None:
    report = check_kernel("twopass", templates=[GOOD_KERNELS])
    assert report.ok, report
    assert {r.status for r in report.results} == {"pass"}


def test_passes_in_the_wrong_order_are_caught(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    toml = folder / "kernel.toml"
    text = toml.read_text()
    first, second = 'entry_point = "double"', 'entry_point = "reverse_add_one"'
    toml.write_text(text.replace(first, "@@").replace(second, first).replace("@@", second))
    report = check_kernel("twopass", templates=[folder.parent])
    assert not report.ok
    assert any(r.status == "fail" for r in report.results)


def test_manifest_lists_every_pass(tmp_path: Path) -> None:
    out = tmp_path / "gen"
    args = ["build", "--no-validate", "--templates", str(GOOD_KERNELS), "--kernel", "twopass"]
    assert main([*args, "--out", str(out)]) == 0
    entry = json.loads((out / "manifest.json").read_text())["variants"][0]
    assert [p["entry_point"] for p in entry["passes"]] == ["double", "reverse_add_one"]
    assert [b["name"] for b in entry["interface"]["bindings"] if b["scratch"]] == ["tmp"]


def test_dispatch_in_problem_and_passes_together_is_refused(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    toml = folder / "kernel.toml"
    toml.write_text(toml.read_text().replace('sizes = ["n"]', 'sizes = ["n"]\ndispatch = ["n"]'))
    with pytest.raises(WgslgenError, match=r"either in \[problem\]\.dispatch or per \[\[pass\]\]"):
        discover([folder])


def test_a_scratch_binding_must_be_writable(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    toml = folder / "kernel.toml"
    toml.write_text(toml.read_text().replace('access = "read_write"\nscratch', "scratch"))
    with pytest.raises(WgslgenError, match=r"binding\[1\] \(tmp\): scratch = true needs access"):
        discover([folder])


@pytest.mark.parametrize(
    ("kernel", "only", "shape"),
    [
        ("attention_split", {"early": 3}, "pos=32767,window=0"),
        ("attention_bwd_dq_split", {"early": 4}, ""),
        ("attention_bwd_dq_split_out", {}, ""),
    ],
)
def test_the_fixed_head_dim_split_kernels_are_right_at_history_32768(kernel, only, shape) -> None:
    """The issue's largest shape, on lavapipe: a split kernel's invocation loops over its own
    keys and share of the chunks only (and the fixed_head_dim partials pass not at all), so
    lavapipe's 65,535-iteration cap does not cut it short; 1,024 chunks of 32 keys a head."""
    sizes = "head_dim=256,n_heads=2,n_kv_heads=1,history_len=32768" + (f",{shape}" if shape else "")
    schedule = {"fixed_head_dim": 256, "chunk": 32, "group": 2, "mlp": 4, "storage": "f16"}
    report = check_kernel(kernel, shapes=[sizes], adapter="cpu", only=schedule | only)
    assert report.counts() == {"pass": 1}, report.results
