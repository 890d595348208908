"""Bounded work on a large space: `list` counts a 960,000-variant space without enumerating it,
and a sampled `tune` renders only what it proposes (on lavapipe, a real device).

An exhaustive tune of a small kernel still measures every variant: test_tune.py's `tuned`
fixture (5 variants x 2 shapes, 10 records) covers it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from wgslgen.cli import main
from wgslgen.render import renderer
from wgslgen.spec.loader import discover
from wgslgen.spec.space import COUNT_EVALUATIONS, VariantSpace, overridden
from wgslgen.tune import runner, search

from .conftest import ROOT

# Six axes of ten values; the constraint removes 4 of every 100 (a, b) pairs.
BIG = 960_000
FAST = ["--l2-bytes", "1M", "--rounds", "3", "--adapter", "cpu"]
_TEMPLATE = """// y = alpha * x  ({{ a }} {{ b }} {{ c }} {{ d }} {{ e }})
{{ interface }}

@compute @workgroup_size({{ workgroup_size }})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= params.n) { return; }
    y[i] = params.alpha * x[i];
}
"""
_REFERENCE = """import numpy as np


def make_inputs(shape, rng):
    return {"x": rng.normal(size=shape["n"]).astype(np.float32)}


def reference(inputs, shape):
    return {"y": 2.0 * inputs["x"].astype(np.float64)}
"""


def write_kernel(
    root: Path, constraints: list[str], values: int = 10, sizes: list[int] | None = None,
    baseline: int = 64,
) -> Path:  # fmt: skip
    """A kernel `big` of six axes of ``values`` values (workgroup_size: ``sizes``, default
    16, 32, ...; a..e: 0, 1, ...) under ``root``."""
    folder = root / "big"
    folder.mkdir(parents=True)
    sizes = sizes or [16 * (i + 1) for i in range(values)]
    axes = [("workgroup_size", "wg", sizes, f"baseline = {baseline}")]
    axes += [(n, n, list(range(values)), "") for n in "abcde"]
    text = f'constraints = {json.dumps(constraints)}\n\n[kernel]\nname = "big"\n'
    for name, key, vals, extra in axes:
        text += f'\n[[axis]]\nname = "{name}"\nkey = "{key}"\nvalues = {vals}\n{extra}\n'
    text += """
[uniform]
fields = [["n", "u32"], ["alpha", "f32"]]
pad_to = 16

[[binding]]
name = "x"
type = "f32"
count = "n"

[[binding]]
name = "y"
access = "read_write"
type = "f32"
count = "n"

[problem]
sizes = ["n"]
derived = { alpha = "2.0" }
preconditions = ["n >= 1"]
dispatch = ["(n + workgroup_size - 1) // workgroup_size"]

[test]
shapes = [{ n = 1000 }]
tolerance = [{ rtol = 1e-6, atol = 0.0 }]

[tune]
shapes = [{ n = 1000 }]
"""
    (folder / "kernel.toml").write_text(text)
    (folder / "big.wgsl.j2").write_text(_TEMPLATE)
    (folder / "reference.py").write_text(_REFERENCE)
    return root


@pytest.fixture
def big(tmp_path: Path) -> Path:
    """A templates folder holding the 960,000-variant kernel `big`."""
    return write_kernel(tmp_path / "kern", ["not (a == 9 and b > 5)"])


def _no_enumeration(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: VariantSpace):
        raise AssertionError("the whole space was enumerated")

    monkeypatch.setattr(VariantSpace, "__iter__", refuse)


def test_list_counts_a_million_combinations_in_seconds(big: Path) -> None:
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "wgslgen", "list", "--templates", str(big), "--json"],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )  # fmt: skip
    wall = time.perf_counter() - started
    assert proc.returncode == 0, proc.stderr
    (kernel,) = json.loads(proc.stdout)["kernels"]
    assert kernel["variants"] == BIG and kernel["variants_exact"] is True
    assert kernel["uncounted_constraints"] == []
    assert kernel["baseline"] == "big__wg64_a0_b0_c0_d0_e0"
    # Enumerating took 7 to 45 s (one constraint evaluation per combination); counting the
    # constraint over its own two axes takes a hundred evaluations.
    assert wall < 10, f"list took {wall:.1f} s"


def test_list_never_enumerates_and_says_when_a_count_is_an_upper_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _no_enumeration(monkeypatch)
    every_axis = "workgroup_size + a + b + c + d + e != 7"  # 10**6 > COUNT_EVALUATIONS
    root = write_kernel(tmp_path / "kern", [every_axis, "a != 1"])
    assert main(["list", "--templates", str(root), "--json"]) == 0
    (kernel,) = json.loads(capsys.readouterr().out)["kernels"]
    assert kernel["variants"] == 900_000 and kernel["variants_exact"] is False
    assert kernel["uncounted_constraints"] == [every_axis]
    assert main(["list", "--templates", str(root)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "<= 900,000 (before constraint(s) 'workgroup_size + a + b + c + d + e != 7')" in out
    assert "at most 900000 variants in 1 kernel(s)" in out


@pytest.mark.parametrize(
    "constraints",
    [
        [],
        ["not (a == 2 and b > 0)"],
        ["a < b", "b != c", "d + e != 3"],  # two groups sharing no axis, one chained group
        ["workgroup_size * a <= 64", "false"],  # a constraint naming no axis
        ["a != b", "b != a", "c == 0 or workgroup_size == 32"],
    ],
)
def test_count_index_and_draw_agree_with_enumeration(tmp_path: Path, constraints) -> None:
    (spec,) = discover([str(write_kernel(tmp_path / "kern", constraints, values=4))])
    space = spec.space
    listed = list(space)
    assert space.count.exact and space.count.n == len(listed)
    assert space.size == 4**6 and space.size < COUNT_EVALUATIONS
    kept = {space.index_of(v.params) for v in listed}
    assert kept == {i for i in range(space.size) if space.at(i) is not None}
    assert all(space.at(space.index_of(v.params)) == v for v in listed[:50])
    narrowed = overridden(spec, {"a": ["1", "2"], "wg": "32"})
    assert narrowed.count.n == sum(
        1 for v in listed if v.params["a"] in (1, 2) and v.params["workgroup_size"] == 32
    )
    point = {"workgroup_size": 32, "a": 2, "b": 0, "c": 0, "d": 0, "e": 0}
    assert narrowed.index_of(point) is not None
    assert narrowed.index_of({**point, "a": 3}) is None


def test_random_order_is_lazy_complete_and_reproducible() -> None:
    a, b = search.RandomSearch(BIG, seed=5), search.RandomSearch(BIG, seed=5)
    first = [a.ask() for _ in range(10)]
    assert first == [b.ask() for _ in range(10)] and len(set(first)) == 10
    assert len(a._swapped) <= 10  # a swap per draw, not a million-item list
    small = search.RandomSearch(50, seed=1)
    order = list(iter(small.ask, None))
    assert sorted(order) == list(range(50)) and small.ask() is None


def _tune(big: Path, tmp_path: Path, capsys, *args: str) -> dict:
    files = ["--db", str(tmp_path / "r.jsonl"), "--selection", str(tmp_path / "s.json")]
    code = main(["tune", "--templates", str(big), "--kernel", "big", *FAST, *files,
                 "--json", *args])  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)


@pytest.fixture
def renders(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the variants rendered, as the real renderer renders them."""
    seen: list[str] = []
    real = renderer.render

    def counting(variant, *args, **kwargs):
        seen.append(variant.name)
        return real(variant, *args, **kwargs)

    monkeypatch.setattr(renderer, "render", counting)
    monkeypatch.setattr(runner, "render", counting)  # the name tuning calls it by
    return seen


def test_tune_with_a_budget_renders_only_what_it_proposes(
    big, tmp_path, capsys, renders, monkeypatch
) -> None:
    started = time.perf_counter()
    doc = _tune(big, tmp_path, capsys, "--budget", "3")
    wall = time.perf_counter() - started
    (shape,) = doc["shapes"]
    assert shape["space"] == {"variants": BIG, "exact": True, "lazy": True, "drawn": 4}
    assert shape["strategy"] == ("tpe" if search.have_optuna() else "random")
    # Three proposals and the baseline, each rendered once: not 960,000 renderings.
    assert doc["totals"]["measured"] == 4 and len(renders) == len(set(renders)) <= 5
    assert "big__wg64_a0_b0_c0_d0_e0" in renders and shape["baseline_ran"]
    assert shape["winner"] and shape["default"]
    assert wall < 120, f"tune --budget 3 took {wall:.0f} s"

    # db prune renders only the variants the database is about, and keeps their records.
    renders.clear()
    _no_enumeration(monkeypatch)
    code = main(["db", "prune", "--templates", str(big), "--db", str(tmp_path / "r.jsonl"),
                 "--json"])  # fmt: skip
    pruned = json.loads(capsys.readouterr().out)
    assert code == 0 and pruned["dropped"] == 0 and pruned["kept"] == 4, pruned
    assert sorted(renders) == sorted(set(renders)) and len(renders) == 4


def test_sampled_tune_of_a_narrowed_space_draws_lazily_too(
    big, tmp_path, capsys, renders, monkeypatch
) -> None:
    _no_enumeration(monkeypatch)
    doc = _tune(big, tmp_path, capsys, "--strategy", "random", "--budget", "2",
                "--set", "wg=16", "--set", "b=9", "--search-seed", "4")  # fmt: skip
    (shape,) = doc["shapes"]
    # 10,000 combinations with wg=16 and b=9, of which a=9 is excluded: 9,000.
    assert shape["space"]["variants"] == 9_000 and shape["space"]["lazy"]
    assert shape["strategy"] == "random" and doc["totals"]["measured"] == 3
    assert len(renders) <= 4  # the baseline (outside --set, measured only) and two drawn
    assert any("outside --set" in n for n in shape["notes"])
    ran = {r["variant"] for r in shape["leaderboard"]} - {"big__wg64_a0_b0_c0_d0_e0"}
    assert len(ran) == 2 and all("_wg16_" in n and "_b9_" in n for n in ran)


def test_a_time_limit_draws_lazily(big, tmp_path, capsys, renders, monkeypatch) -> None:
    _no_enumeration(monkeypatch)
    doc = _tune(big, tmp_path, capsys, "--time", "2s")
    (shape,) = doc["shapes"]
    assert shape["space"]["lazy"] and shape["budget"] == {"variants": None, "seconds": 2.0}
    assert 2 <= doc["totals"]["measured"] == len(renders) < 50


def test_a_portable_default_is_drawn_when_the_sample_has_none(
    tmp_path, capsys, renders, monkeypatch
) -> None:
    """Only workgroup_size 64 fits `webgpu` (256 invocations at most); the baseline does not."""
    _no_enumeration(monkeypatch)
    sizes = [64, 320, 384, 448, 512, 576, 640, 704, 768, 832]
    root = write_kernel(tmp_path / "kern", ["not (a == 9 and b > 5)"], sizes=sizes, baseline=512)
    doc = _tune(root, tmp_path, capsys, "--strategy", "random", "--budget", "1",
                "--search-seed", "2")  # fmt: skip
    (shape,) = doc["shapes"]
    assert shape["space"]["lazy"] and shape["default"] and "_wg64_" in shape["default"]
    portable = [r for r in shape["leaderboard"] if r["portable"]]
    assert len(portable) == 1 and portable[0]["status"] == "ok"
    assert len(renders) <= shape["space"]["drawn"] < 200  # drawn until a portable one came up


def test_test_refuses_a_space_too_large_to_run_before_rendering_any(
    big: Path, capsys, renders
) -> None:
    started = time.monotonic()
    code = main(["test", "--templates", str(big), "--adapter", "cpu"])
    err = capsys.readouterr().err
    assert code == 2
    assert time.monotonic() - started < 10
    assert "960,000 variants to test" in err and "--max-variants" in err, err
    assert renders == []
