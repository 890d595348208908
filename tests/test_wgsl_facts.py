"""Facts read off WGSL text: workgroup size, workgroup memory and layout, enables, bindings;
per entry point, checked against Dawn."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from wgslgen.check.engines.base import ShaderInput
from wgslgen.check.engines.dawn import DawnEngine
from wgslgen.check.limits import WEBGPU_LIMITS
from wgslgen.check.wgsl import analyze, compute_entry_points, required_features, strip_comments
from wgslgen.errors import WgslgenError

from .conftest import SEED

FIXTURES = Path(__file__).parent / "fixtures" / "wgsl"
WORKGROUP_LIMIT = WEBGPU_LIMITS["max-compute-workgroup-storage-size"]  # 16,384 B, Dawn's default


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def seed() -> str:
    return SEED.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def dawn():
    engine = DawnEngine()
    assert not (why := engine.availability()), why  # scripts/setup.sh installs it
    yield engine
    engine.close()


def test_seed_accounting(seed: str) -> None:
    facts = analyze(seed)
    assert facts.entry_point == "main"
    assert facts.workgroup_size == (64, 1, 1)
    assert facts.invocations == 64
    # ds_buf (4096 x 4 B) plus rbuf (64 x 4 B): the seed's own comment counts only ds_buf.
    assert facts.workgroup_vars == {"ds_buf": 16384, "rbuf": 256}
    assert facts.workgroup_bytes == 16640
    assert facts.storage_buffers == 6
    assert facts.uniform_buffers == 1
    assert facts.uniform_vars == {"params": 32}  # 8 x u32
    assert facts.bind_groups == 1
    assert facts.enables == frozenset()
    assert not facts.uses_f16 and not facts.uses_subgroups
    assert required_features(facts) == frozenset()


def test_layout_rules() -> None:
    facts = analyze(fixture("layout.wgsl"))
    assert facts.workgroup_size == (32, 2, 1)  # @workgroup_size(HALF, 2), HALF = WG / 2u
    assert facts.invocations == 64
    assert facts.workgroup_vars == {
        "scalars": 528,  # array<f32, 130>: 520, rounded up to 16
        "v3": 64,  # array<vec3<f32>, 4>: stride 16
        "lone_v3": 16,  # vec3<f32>: size 12, align 16
        "pairs": 96,  # struct {f32, vec3<f32>} is 32 B
        "m": 48,  # mat3x3<f32>: 3 columns of stride 16
        "m2": 16,  # mat2x2<f32>
        "counters": 256,  # array<atomic<u32>, WG>
        "tile": 64,  # alias of array<f32, TILE * TILE>
        "padded": 64,  # @align(16) / @size(12) members: 32 B each
        "nested": 48,  # array<array<vec2<f32>, 3>, 2>
        "hexed": 64,  # array<u32, 0x10>
    }
    assert facts.workgroup_bytes == sum(facts.workgroup_vars.values())


def test_f16_layout_and_detection() -> None:
    facts = analyze(fixture("f16.wgsl"))
    assert facts.workgroup_vars == {"tile": 48}  # vec3<f16>: stride 8, 5 of them, then 16
    assert facts.enables == frozenset({"f16"})
    assert facts.uses_f16
    assert required_features(facts) == frozenset({"shader-f16"})


@pytest.mark.parametrize(
    "body",
    ["var x: f16 = f16(1);", "let v = vec4h(0.0h);", "let m = mat2x2h();", "let y = 2h;"],
)
def test_f16_spellings(body: str) -> None:
    src = f"enable f16;\n@compute @workgroup_size(1) fn main() {{ {body} }}"
    assert analyze(src).uses_f16


def test_subgroup_detection() -> None:
    naga = analyze(fixture("subgroups_naga.wgsl"))
    tint = analyze(fixture("subgroups_tint.wgsl"))
    assert naga.uses_subgroups and tint.uses_subgroups
    assert naga.enables == frozenset() and tint.enables == frozenset({"subgroups"})
    assert required_features(naga) == frozenset({"subgroup"})
    only_builtin = "@compute @workgroup_size(8) fn main(@builtin(subgroup_size) n: u32) {}"
    assert analyze(only_builtin).uses_subgroups
    plain = "@compute @workgroup_size(8) fn main() { let subgroup_size = 3u; }"
    assert not analyze(plain).uses_subgroups


def test_comments_are_ignored() -> None:
    facts = analyze(fixture("comments.wgsl"))
    assert facts.workgroup_vars == {"real": 128}
    assert facts.workgroup_size == (16, 1, 1)
    assert facts.enables == frozenset()
    assert not facts.uses_f16 and not facts.uses_subgroups


def test_strip_comments_keeps_lines() -> None:
    src = "a /* x\n /* y */ z\n*/ b // c\nd"
    stripped = strip_comments(src)
    assert stripped.count("\n") == src.count("\n")
    assert stripped.split() == ["a", "b", "d"]
    with pytest.raises(WgslgenError, match="line 2: unterminated"):
        strip_comments("x\n/* /* */")


def test_error_names_line_after_comments() -> None:
    src = "/* one\ntwo\n*/\nvar<workgroup> a: array<f32, NOPE>;\n"
    src += "@compute @workgroup_size(1) fn main() {}"
    with pytest.raises(WgslgenError, match=r"line 4: .*unknown constant `NOPE`"):
        analyze(src)


@pytest.mark.parametrize(
    ("decl", "why"),
    [
        ("const N = 2.5;", "is not an integer"),
        ("const N = 4u / (2u - 2u);", "division by zero"),
        ("const N = foo(3);", "function `foo` is not supported"),
        ("const N = N + 1;", "defined in terms of itself"),
    ],
)
def test_unevaluable_sizes(decl: str, why: str) -> None:
    src = f"{decl}\nvar<workgroup> a: array<f32, N>;\n@compute @workgroup_size(1) fn main() {{}}"
    with pytest.raises(WgslgenError, match=why):
        analyze(src)


def test_const_expressions() -> None:
    src = """
        const A = 10;
        const B = -7 / 2;                // truncates toward zero: -3
        const C = (1 << 4) >> 1;         // 8
        const D = max(A % 3, min(5u, 2u)) * 3;  // 6
        override WG_X: u32 = 8u;
        @compute @workgroup_size(WG_X * 2, A + B, C - D + 1)
        fn main() {}
    """
    facts = analyze(src)
    assert facts.workgroup_size == (16, 7, 3) and facts.invocations == 336


def test_entry_point_choice() -> None:
    src = "@compute @workgroup_size(4) fn a() {}\n@compute @workgroup_size(8, 2) fn b() {}"
    assert analyze(src, "b").workgroup_size == (8, 2, 1)
    assert analyze(src, "a").entry_points == ("a", "b")
    with pytest.raises(WgslgenError, match="expected one @compute entry point, found a, b"):
        analyze(src)
    with pytest.raises(WgslgenError, match="no @compute entry point `c`"):
        analyze(src, "c")


def test_uniform_and_storage_counts() -> None:
    src = """
        struct U { a: vec3<f32>, b: f32, c: array<vec4<f32>, 4> }
        @group(0) @binding(0) var<uniform> u: U;
        @group(1) @binding(0) var<storage, read> x: array<f32>;
        @group(2) @binding(1) var<storage, read_write> y: array<f32>;
        @compute @workgroup_size(1) fn main() {}
    """
    facts = analyze(src)
    assert facts.uniform_vars == {"u": 80} and facts.uniform_bytes == 80
    assert facts.storage_buffers == 2
    assert facts.bind_groups == 3
    assert facts.workgroup_bytes == 0


def test_trailing_commas_and_opaque_types() -> None:
    src = """
        @group(0) @binding(0) var tex: texture_storage_2d<rgba8unorm, write>;
        @group(0) @binding(1) var samp: sampler;
        var<workgroup> a: array<f32, max(4, 8,),>;
        fn helper(p: ptr<function, array<f32, 4>>) -> vec4<f32> { return vec4<f32>(); }
        const_assert 1 < 2;
        diagnostic(off, derivative_uniformity);
        @compute @workgroup_size(8, 2,) fn main() { a[0] = 1.0; }
    """
    facts = analyze(src)
    assert facts.workgroup_size == (8, 2, 1) and facts.workgroup_vars == {"a": 32}


@pytest.mark.parametrize(
    ("decl", "why"),
    [
        ("var<workgroup> a: array<f32>;", "line 1: a runtime-sized array has no fixed size"),
        ("struct S { a: S }\nvar<workgroup> a: S;", "struct `S` contains itself"),
        ("var<workgroup> a: Foo;", "line 1: type `Foo` is unknown"),
        ("var<workgroup> a: texture_2d<f32>;", "type `texture_2d` has no memory layout"),
        ("const N = 1 << (0 - 1);\nvar<workgroup> a: array<f32, N>;", "`1 << (0 - 1)`: negative"),
    ],
)
def test_layout_errors(decl: str, why: str) -> None:
    with pytest.raises(WgslgenError, match=re.escape(why)):
        analyze(f"{decl}\n@compute @workgroup_size(1) fn main() {{}}")


# -- several entry points: per entry point, only the statically used workgroup variables ----


def test_compute_entry_points() -> None:
    assert compute_entry_points(fixture("multi_entry.wgsl")) == ("partials", "combine", "fused")
    assert compute_entry_points(fixture("comments.wgsl")) == ("main",)  # not the commented one
    assert compute_entry_points("fn helper() {}") == ()


def test_workgroup_memory_per_entry_point() -> None:
    src = fixture("multi_entry.wgsl")
    partials, combine, fused = (analyze(src, ep) for ep in compute_entry_points(src))
    assert partials.workgroup_vars == {"partial_sums": 16000}
    assert partials.workgroup_bytes == 16000
    # combine's own 4,096 B plus the 2,048 B that stage() reaches through touch_scratch().
    assert combine.workgroup_vars == {"block": 4096, "scratch": 2048}
    assert combine.workgroup_bytes == 4096 + 2048
    assert fused.workgroup_bytes == 16000 + 2048
    assert (partials.workgroup_size, combine.workgroup_size) == ((64, 1, 1), (128, 1, 1))
    assert (partials.invocations, combine.invocations) == (64, 128)
    assert partials.used_vars == {"partial_sums", "data", "sums"}
    assert combine.used_vars == {"block", "scratch", "data", "sums"}
    # Binding counts stay module-wide (the harness's pipeline layout holds every binding).
    assert partials.storage_buffers == combine.storage_buffers == 2
    assert partials.entry_points == ("partials", "combine", "fused")
    with pytest.raises(WgslgenError, match="found partials, combine, fused"):
        analyze(src)


def test_shadowing_names_are_not_uses() -> None:
    src = fixture("shadowing.wgsl")
    facts = {ep: analyze(src, ep) for ep in compute_entry_points(src)}
    assert {ep: f.workgroup_vars for ep, f in facts.items()} == {
        "shadowed": {"small": 256},  # member, parameter, locals, a comment: none is `big`
        "after_block": {"big": 16400, "small": 256},
        "own_initializer": {"big": 16400},
        "through_helper": {"big": 16400},
    }
    assert facts["shadowed"].used_vars == {"params", "small", "out"}


def test_call_graph_details() -> None:
    src = """
        var<workgroup> a: array<f32, 4>;   // 16 B
        var<workgroup> b: array<f32, 8>;   // 32 B
        var<workgroup> c: array<f32, 16>;  // 64 B
        var<workgroup> d: array<f32, 32>;  // 128 B
        @compute @workgroup_size(1) fn first() {
            for (var k = 0u; k < bound(); k++) { let v = later(&b); }
        }
        fn bound() -> u32 { return u32(a[0]); }
        fn later(p: ptr<workgroup, array<f32, 8>>) -> f32 { return (*p)[0]; }
        fn unused() { c[0] = 1.0; }
        @compute @workgroup_size(2) fn second() { d[0] = 1.0; }
    """
    assert analyze(src, "first").workgroup_vars == {"a": 16, "b": 32}
    assert analyze(src, "second").workgroup_vars == {"d": 128}
    # A bad variable fails every entry point, used or not: a compiler rejects the module.
    with pytest.raises(WgslgenError, match="runtime-sized"):
        analyze(src + "var<workgroup> e: array<f32>;", "second")


@pytest.mark.parametrize(
    ("name", "fits"),
    [
        ("multi_entry.wgsl", {"partials": True, "combine": True, "fused": False}),
        (
            "shadowing.wgsl",
            {"shadowed": True, "after_block": False, "own_initializer": False,
             "through_helper": False},
        ),
    ],
)  # fmt: skip
def test_per_entry_point_memory_matches_dawn(
    dawn: DawnEngine, name: str, fits: dict[str, bool]
) -> None:
    src = fixture(name)
    entries = compute_entry_points(src)
    assert entries == tuple(fits)
    # Counted module-wide, every entry point would be over the limit.
    declared = {}
    for ep in entries:
        declared.update(analyze(src, ep).workgroup_vars)
    assert sum(declared.values()) > WORKGROUP_LIMIT
    verdicts = dawn.validate([ShaderInput(f"{name}:{ep}", src, entry_point=ep) for ep in entries])
    for ep, verdict in zip(entries, verdicts, strict=True):
        counted = analyze(src, ep).workgroup_bytes
        assert verdict.ok == fits[ep], (ep, verdict.message)
        assert (counted <= WORKGROUP_LIMIT) == fits[ep], (ep, counted)
        if not verdict.ok:  # Dawn's own count is the static one, byte for byte
            dawn_count = re.search(r"workgroup storage \((\d+) bytes\)", verdict.message)
            assert dawn_count and int(dawn_count.group(1)) == counted, verdict.message


def test_overrides_without_value_are_named_not_raised() -> None:
    src = (
        "override wg_size: u32;\noverride rows: u32 = 4u;\n"
        "var<workgroup> tile: array<f32, rows * wg_size>;\n"
        "@compute @workgroup_size(wg_size, rows) fn main() { tile[0] = 1.0; }\n"
    )
    facts = analyze(src)
    assert facts.needs_overrides == ("wg_size",) and facts.overrides == {"wg_size", "rows"}
    given = analyze(src, "main", {"wg_size": 64})
    assert given.needs_overrides == () and given.workgroup_size == (64, 4, 1)
    assert given.workgroup_bytes == 4 * 64 * 4
    # A value given replaces the default, as pipeline constants do.
    assert analyze(src, "main", {"wg_size": 8, "rows": 2}).workgroup_bytes == 64
    with pytest.raises(WgslgenError, match=r"override `wg_size` = 1\.5 is not an integer"):
        analyze(src, "main", {"wg_size": 1.5})


def test_stages_int64_textures_and_immediates() -> None:
    src = fixture("stages.wgsl")
    facts = analyze(src, "main")
    assert dict(facts.stages) == {"vs": "vertex", "fs": "fragment", "main": "compute"}
    assert facts.entry_points == ("main",)
    assert facts.int64 == {"u64"}
    # Only what `main` uses counts, as a layout: "auto" pipeline holds it.
    assert (facts.storage_textures, facts.sampled_textures, facts.samplers) == (1, 2, 1)
    assert facts.immediate_bytes == 80
