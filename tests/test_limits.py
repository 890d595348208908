"""Limit profiles and the static check of WGSL facts against them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wgslgen.check.limits import (
    BUILTIN_PROFILES,
    LimitProfile,
    check,
    check_directives,
    load_profile,
)
from wgslgen.check.wgsl import analyze
from wgslgen.errors import WgslgenError

from .conftest import SEED

FIXTURES = Path(__file__).parent / "fixtures" / "wgsl"
STORAGE = "max-compute-workgroup-storage-size"


@pytest.fixture(scope="module")
def seed_facts():
    return analyze(SEED.read_text(encoding="utf-8"))


def kernel(wg: str, storage: int = 0, extra: str = "") -> str:
    bindings = "".join(
        f"@group(0) @binding({i}) var<storage, read_write> b{i}: array<f32>;\n"
        for i in range(storage)
    )
    return f"{extra}{bindings}@compute @workgroup_size({wg}) fn main() {{}}\n"


def test_builtin_numbers() -> None:
    web = load_profile("webgpu").limits
    assert web[STORAGE] == 16384
    assert web["max-compute-invocations-per-workgroup"] == 256
    assert (
        web["max-compute-workgroup-size-x"],
        web["max-compute-workgroup-size-y"],
        web["max-compute-workgroup-size-z"],
    ) == (256, 256, 64)
    assert web["max-storage-buffers-per-shader-stage"] == 8
    assert web["max-uniform-buffer-binding-size"] == 65536
    assert web["max-storage-buffer-binding-size"] == 134217728
    assert web["max-compute-workgroups-per-dimension"] == 65535
    compat = load_profile("compat").limits
    assert compat["max-storage-buffers-per-shader-stage"] == 4
    assert compat["max-compute-invocations-per-workgroup"] == 128
    assert compat["max-compute-workgroup-size-x"] == compat["max-compute-workgroup-size-y"] == 128
    assert compat[STORAGE] == 16384
    assert compat["max-uniform-buffer-binding-size"] == 16384
    down = load_profile("wgpu-downlevel").limits
    assert down[STORAGE] == 16352
    assert down["max-storage-buffers-per-shader-stage"] == 4
    assert down["max-uniform-buffer-binding-size"] == 16384
    assert load_profile("webgpu").features is None
    assert set(BUILTIN_PROFILES) == {"webgpu", "compat", "wgpu-downlevel"}


def test_webgpu_rejects_seed(seed_facts) -> None:
    assert check(seed_facts, load_profile("webgpu"), frozenset()) == [
        "workgroup memory 16,640 B > 16,384 B (max-compute-workgroup-storage-size)"
    ]


def test_compat_and_downlevel_reject_seed_twice(seed_facts) -> None:
    for name, cap in (("compat", "16,384"), ("wgpu-downlevel", "16,352")):
        assert check(seed_facts, load_profile(name), frozenset()) == [
            f"workgroup memory 16,640 B > {cap} B (max-compute-workgroup-storage-size)",
            "storage buffers 6 > 4 (max-storage-buffers-per-shader-stage)",
        ]


def test_adapter_profile_accepts_seed(seed_facts) -> None:
    pytest.importorskip("wgpu")
    try:
        profile = load_profile("adapter")
    except WgslgenError as e:
        pytest.skip(f"no adapter: {e}")
    assert profile.name == "adapter" and profile.features is not None
    if profile.limits[STORAGE] < 16640:
        pytest.skip(f"this adapter offers only {profile.limits[STORAGE]} B of workgroup memory")
    assert check(seed_facts, profile, frozenset()) == []  # lavapipe: 32,768 B


def test_workgroup_size_messages() -> None:
    facts = analyze(kernel("512"))
    assert check(facts, load_profile("webgpu"), frozenset()) == [
        "invocations per workgroup 512 > 256 (max-compute-invocations-per-workgroup)",
        "workgroup size x 512 > 256 (max-compute-workgroup-size-x)",
    ]
    facts = analyze(kernel("2, 2, 128"))
    assert check(facts, load_profile("webgpu"), frozenset()) == [
        "invocations per workgroup 512 > 256 (max-compute-invocations-per-workgroup)",
        "workgroup size z 128 > 64 (max-compute-workgroup-size-z)",
    ]


def test_storage_and_uniform_messages() -> None:
    facts = analyze(kernel("64", storage=6))
    assert check(facts, load_profile("webgpu"), frozenset()) == []
    assert check(facts, load_profile("compat"), frozenset()) == [
        "storage buffers 6 > 4 (max-storage-buffers-per-shader-stage)"
    ]
    big = "@group(1) @binding(0) var<uniform> u: array<vec4<f32>, 2048>;\n"
    facts = analyze(kernel("64", extra=big))
    assert check(facts, load_profile("compat"), frozenset()) == [
        "uniform buffer u 32,768 B > 16,384 B (max-uniform-buffer-binding-size)"
    ]


def test_feature_messages() -> None:
    f16 = analyze((FIXTURES / "f16.wgsl").read_text(encoding="utf-8"))
    assert check(f16, load_profile("webgpu"), frozenset()) == []  # any feature may be asked
    assert check(f16, load_profile("compat"), frozenset({"timestamp-query"})) == [
        "needs feature shader-f16, not in profile compat",
        "needs feature timestamp-query, not in profile compat",
    ]
    has = LimitProfile("mine", {}, frozenset({"shader-f16"}))
    assert check(f16, has, frozenset({"shader-f16"})) == []


def write_profile(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "device.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_json_profile(tmp_path: Path, seed_facts) -> None:
    path = write_profile(
        tmp_path,
        {
            "name": "phone",
            "base": "webgpu",
            "limits": {
                "maxComputeWorkgroupStorageSize": 32768,
                "max_storage_buffers_per_shader_stage": 4,
            },
            "features": ["shader-f16"],
        },
    )
    profile = load_profile(str(path))
    assert profile.name == "phone"
    assert profile.limits[STORAGE] == 32768
    assert profile.limits["max-compute-invocations-per-workgroup"] == 256  # from the base
    assert profile.features == frozenset({"shader-f16"})
    assert check(seed_facts, profile, frozenset()) == [
        "storage buffers 6 > 4 (max-storage-buffers-per-shader-stage)"
    ]


def test_json_unknown_keys_are_named(tmp_path: Path) -> None:
    path = write_profile(
        tmp_path,
        {
            "name": "typo",
            "limits": {"max-compute-workgroup-storage": 1, "maxBogus": 2, STORAGE: 3},
        },
    )
    with pytest.raises(WgslgenError) as err:
        load_profile(path)
    text = str(err.value)
    assert str(path) in text
    assert "'max-compute-workgroup-storage'" in text and "'maxBogus'" in text
    assert STORAGE + "'" not in text.split("hint")[0]


@pytest.mark.parametrize(
    ("data", "why"),
    [
        ({"limits": {STORAGE: "big"}}, "must be a non-negative integer"),
        ({"limits": {STORAGE: -1}}, "must be a non-negative integer"),
        ({"limits": [1]}, "'limits' must be an object"),
        ({"limits": {}, "features": "shader-f16"}, "'features' must be a list"),
        ({"limits": {}, "colour": 1}, "unknown key"),
        ({"limits": {}, "base": "nope"}, "unknown base profile"),
        ([1, 2], "is a JSON object"),
    ],
)
def test_json_profile_errors(tmp_path: Path, data: object, why: str) -> None:
    with pytest.raises(WgslgenError, match=why):
        load_profile(write_profile(tmp_path, data))


def test_unknown_profile_name() -> None:
    with pytest.raises(WgslgenError, match="unknown limit profile 'mobile'"):
        load_profile("mobile")


def test_directives_per_family() -> None:
    naga_text = analyze((FIXTURES / "subgroups_naga.wgsl").read_text(encoding="utf-8"))
    tint_text = analyze((FIXTURES / "subgroups_tint.wgsl").read_text(encoding="utf-8"))
    assert check_directives(naga_text, "naga") == []
    assert check_directives(tint_text, "tint") == []
    assert check_directives(naga_text, "tint") == [
        "subgroup built-ins need `enable subgroups;` for Tint/Dawn"
    ]
    [message] = check_directives(tint_text, "naga")
    assert "reject `enable subgroups;`" in message
    assert "one rendering per compiler family" in check_directives(naga_text, "any")[0]
    no_enable = analyze("@compute @workgroup_size(1) fn main() { var x: f16; }")
    for family in ("any", "naga", "tint"):
        assert check_directives(no_enable, family) == ["f16 types need `enable f16;`"]
    with pytest.raises(WgslgenError, match="unknown compiler family"):
        check_directives(no_enable, "glsl")


def test_profile_schema_is_current_and_accepts_the_fixtures() -> None:
    import jsonschema

    from wgslgen.check.profile_model import SCHEMA_PATH, json_schema, schema_text

    # Generated from the pydantic model: `python -m wgslgen.check.profile_model` rewrites it.
    assert SCHEMA_PATH.read_text(encoding="utf-8") == schema_text()
    validator = jsonschema.Draft202012Validator(json_schema())
    good = json.loads((FIXTURES.parent / "validate" / "big_workgroups.json").read_text())
    validator.validate(good)
    typo = json.loads((FIXTURES.parent / "validate" / "unknown_key.json").read_text())
    assert [e.validator for e in validator.iter_errors(typo)] == ["additionalProperties"]
    assert list(validator.iter_errors({"limits": {"max-bind-groups": -1}}))


def test_static_texture_sampler_and_immediate_limits() -> None:
    corpus = FIXTURES.parent / "corpus"
    expected = {
        "limit_storage_textures.wgsl": "storage textures 5 > 4 "
        "(max-storage-textures-per-shader-stage)",
        "limit_sampled_textures.wgsl": "sampled textures 17 > 16 "
        "(max-sampled-textures-per-shader-stage)",
        "limit_samplers.wgsl": "samplers 17 > 16 (max-samplers-per-shader-stage)",
        "limit_immediate_size.wgsl": "immediate data 80 B > 64 B (max-immediate-size)",
    }
    for name, reason in expected.items():
        facts = analyze((corpus / name).read_text(encoding="utf-8"))
        for profile in ("webgpu", "compat"):
            assert check(facts, load_profile(profile), frozenset()) == [reason], name
    small = analyze((corpus / "immediate_var.wgsl").read_text(encoding="utf-8"))
    assert small.immediate_bytes == 8
    assert check(small, load_profile("webgpu"), frozenset()) == []
    # wgpu offers immediates only as a native feature: none in its downlevel profile.
    assert check(small, load_profile("wgpu-downlevel"), frozenset()) == [
        "immediate data 8 B > 0 B (max-immediate-size)"
    ]


def test_adapter_profile_comes_from_a_child_process() -> None:
    import subprocess
    import sys

    # A fresh interpreter: asking for the adapter profile must not load wgpu-native here.
    code = (
        "import sys; from wgslgen.check.limits import load_profile; "
        "p = load_profile('adapter'); "
        "assert p.limits['max-compute-workgroup-storage-size'] > 0, p; "
        "assert not any(m.startswith('wgpu') for m in sys.modules), sorted(sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
