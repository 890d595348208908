"""Rendering on several processes gives what rendering here gives, in order, failures kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from wgslgen.errors import WgslgenError
from wgslgen.render import parallel
from wgslgen.render.renderer import render_families
from wgslgen.spec.loader import discover

from .conftest import TEMPLATES

_KERNEL = """[kernel]
name = "many"
template = "many.wgsl.j2"

[[axis]]
name = "workgroup_size"
key = "wg"
values = [64]
baseline = 64

[[axis]]
name = "scale"
key = "k"
values = [%s]
baseline = 0

[uniform]
fields = [["n", "u32"]]
pad_to = 16

[[binding]]
name = "y"
access = "read_write"
type = "f32"
count = "n"

[problem]
sizes = ["n"]
dispatch = ["(n + workgroup_size - 1) // workgroup_size"]
"""

# scale 13 divides by zero: that variant's rendering fails, the others do not
_TEMPLATE = """{{ interface }}
const K: f32 = {{ 1.0 / (scale - 13) }};
@compute @workgroup_size({{ workgroup_size }})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x < params.n) { y[gid.x] = K; }
}
"""


def _parts(renderings):
    return [(r.family, r.relpath, r.source, dict(r.facts), r.features) for r in renderings]


def test_processes_render_the_library_as_one_process_does(monkeypatch) -> None:
    variants = [v for k in discover([TEMPLATES]) if k.name == "attention" for v in k.variants]
    monkeypatch.setenv("WGSLGEN_RENDER_JOBS", "3")
    assert parallel.render_jobs(len(variants)) == 3
    here: list[str] = []  # variants rendered in this process (the workers' count is theirs)

    def counted(variant):
        here.append(variant.name)
        return render_families(variant)

    monkeypatch.setattr(parallel, "render_families", counted)
    apart = list(parallel.render_outcomes(variants))
    assert here == [variants[0].name]  # the one that compiled the template before the fork
    assert [_parts(r) for r in apart] == [_parts(render_families(v)) for v in variants]
    # made around this process's own variants
    assert all(r.variant is v for v, rs in zip(variants, apart, strict=True) for r in rs)


def test_a_failing_variant_is_an_outcome_in_its_place(tmp_path: Path, monkeypatch) -> None:
    folder = tmp_path / "many"
    folder.mkdir()
    (folder / "kernel.toml").write_text(_KERNEL % ", ".join(str(i) for i in range(70)))
    (folder / "many.wgsl.j2").write_text(_TEMPLATE)
    [spec] = discover([tmp_path])
    monkeypatch.setenv("WGSLGEN_RENDER_JOBS", "2")
    outcomes = list(parallel.render_outcomes(spec.variants))
    scales = [v.params["scale"] for v in spec.variants]
    failed = [s for s, o in zip(scales, outcomes, strict=True) if isinstance(o, Exception)]
    assert failed == [13]
    error = outcomes[scales.index(13)]
    assert isinstance(error, WgslgenError) and "many.wgsl.j2:2" in str(error)
    good = [o for o in outcomes if not isinstance(o, Exception)]
    assert len(good) == 69 and all("const K: f32 = " in rs[0].source for rs in good)


@pytest.mark.parametrize("count, expected", [(10, 1), (64, 2)])
def test_few_variants_stay_in_this_process(monkeypatch, count: int, expected: int) -> None:
    monkeypatch.setenv("WGSLGEN_RENDER_JOBS", "2")
    assert parallel.render_jobs(count) == expected


def test_a_build_stops_at_the_failing_variant_with_its_error(tmp_path: Path, monkeypatch) -> None:
    from wgslgen.render import build

    folder = tmp_path / "many"
    folder.mkdir()
    (folder / "kernel.toml").write_text(_KERNEL % ", ".join(str(i) for i in range(70)))
    (folder / "many.wgsl.j2").write_text(_TEMPLATE)
    monkeypatch.setenv("WGSLGEN_RENDER_JOBS", "2")
    with pytest.raises(WgslgenError, match=r"many\.wgsl\.j2:2"):
        build.plan(discover([tmp_path]))
