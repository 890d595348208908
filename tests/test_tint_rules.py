"""Tint's rules without Dawn, on a corpus of small per-rule shaders and realistic kernels.

Every file's Dawn verdict is asserted (Dawn is installed in CI), and wgslgen's static verdict
(engines naga,wgpu, no Dawn) is asserted equal to it, file by file, with Tint's message and
line for the rules wgslgen implements itself.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wgslgen.check.engines.base import ShaderInput
from wgslgen.check.engines.dawn import DawnEngine
from wgslgen.check.limits import load_profile
from wgslgen.check.validate import VariantResult, validate
from wgslgen.cli import main
from wgslgen.render.renderer import render_families
from wgslgen.spec.loader import discover

CORPUS = Path(__file__).parent / "fixtures" / "corpus"
OVERRIDES = {"wg_size": 64, "block_size": 128}

# Dawn's verdict on each file: None when it accepts it, else a part of its message.
DAWN = {
    "behaviour_for_no_exit": "for-loop does not exit",
    "behaviour_loop_no_exit": "loop does not exit",
    "behaviour_loop_ok": None,
    "behaviour_missing_return": "missing return at end of function",
    "fluid_advect": None,
    "fluid_jacobi_shared": "'workgroupBarrier' must only be called from uniform control flow",
    "fluid_render": "var with 'storage' address space and 'read_write' access mode cannot be "
    "used by vertex pipeline stage",
    "immediate_var": None,
    "limit_immediate_size": "Immediate data size (80) exceeds the maximum allowed size (64)",
    "limit_sampled_textures": "The number of sampled textures (17) in the Compute stage",
    "limit_samplers": "The number of samplers (17) in the Compute stage",
    "limit_storage_textures": "The number of storage textures (5) in the Compute stage",
    "llm_gelu_override": "There are uninitialized pipeline overridable constants",
    "llm_matmul_tiled": None,
    "llm_rmsnorm_subgroups": None,
    "llm_softmax_rows": None,
    "override_no_default": "There are uninitialized pipeline overridable constants",
    "pointer_param_storage": None,
    "stage_compute_derivative": "built-in cannot be used by compute pipeline stage",
    "stage_fragment_workgroup": "var with 'workgroup' address space cannot be used by fragment",
    "stage_vertex_storage_texture": "storage texture with 'write' access mode cannot be used "
    "by vertex pipeline stage",
    "spec_break_if_nonuniform": None,
    "spec_continue_in_switch": "'workgroupBarrier' must only be called from uniform control",
    "spec_discard_then_derivative": None,
    "spec_private": "'workgroupBarrier' must only be called from uniform control flow",
    "spec_struct_builtins": None,
    "spec_struct_builtins_bad": "'workgroupBarrier' must only be called from uniform control",
    "spec_texture_sample_level_ok": None,
    "spec_uniform_call_chain": "'workgroupBarrier' must only be called from uniform control",
    "subgroups_enable": None,
    "tutorial_blur_big_tile": "The total use of workgroup storage (73728 bytes)",
    "tutorial_histogram": None,
    "tutorial_prefix_sum": None,
    "u64": "unresolved type 'u64'",
    "uniformity_atomic": "'workgroupBarrier' must only be called from uniform control flow",
    "uniformity_barrier_after_return": "'storageBarrier' must only be called from uniform",
    "uniformity_barrier_in_helper": "'workgroupBarrier' must only be called from uniform",
    "uniformity_barrier_uniform_ok": None,
    "uniformity_derivative_attr_filter": None,
    "uniformity_derivative_filtered": None,
    "uniformity_derivative_fn_attr": None,
    "uniformity_derivative_fragment": "'textureSample' must only be called from uniform",
    "uniformity_derivative_warning": None,
    "uniformity_fn_param": "'workgroupBarrier' must only be called from uniform control flow",
    "uniformity_fn_param_uniform": None,
    "uniformity_for_nonuni_then_barrier": None,
    "uniformity_if_nonuni_break_in_loop": "'workgroupBarrier' must only be called from uniform",
    "uniformity_let_in_branch": "'workgroupBarrier' must only be called from uniform",
    "uniformity_ptr": "'workgroupBarrier' must only be called from uniform control flow",
    "uniformity_return_nonuni_in_loop_then_barrier": "'workgroupBarrier' must only be called",
    "uniformity_subgroup_in_branch": "'subgroupAdd' must only be called from subgroup uniform",
    "uniformity_var_nonuni_cond": "'workgroupBarrier' must only be called from uniform",
    "uniformity_while_nonuni_then_barrier": None,
    "uniformity_workgroup_uniform_load": "'workgroupUniformLoad' must only be called from",
    "uniformity_wul": None,
    "vertex_read_write_storage": "var with 'storage' address space and 'read_write' access",
    "workgroup_size_mixed_types": "'@workgroup_size' arguments must be of the same type",
    "workgroup_size_ok_abstract": None,
}


@pytest.fixture(scope="module")
def rendered():
    out = [r for k in discover([CORPUS]) for v in k.variants for r in render_families(v)]
    assert sorted(r.kernel for r in out) == sorted(DAWN)  # every file has its expectation
    return out


@pytest.fixture(scope="module")
def dawn():
    engine = DawnEngine()
    assert engine.availability() is None  # CI installs Dawn: a missing one fails, not skips
    yield engine
    engine.close()


def _dawn_verdicts(dawn: DawnEngine, results: list[VariantResult], constants: dict) -> dict:
    """Dawn's own verdict per file: a pipeline per @compute entry point, first refusal wins."""
    shaders = [
        ShaderInput(
            id=f"{r.kernel}:{entry}",
            source=r.rendered.source,
            features=r.rendered.features,
            limits=load_profile("webgpu").limits,
            entry_point=entry,
            constants={k: v for k, v in constants.items() if k in f.overrides},
        )
        for r in results
        for entry, f in (r.facts or {None: None}).items()
    ]
    out: dict = {}
    for v in dawn.validate(shaders):
        name = v.id.split(":")[0]
        if out.get(name) is None:
            out[name] = None if v.ok else v
    return out


def _static_ok(r: VariantResult) -> bool:
    return not r.problems and r.tint_static.ok and r.fits("webgpu")


def test_static_verdict_equals_dawns_on_every_file(rendered, dawn) -> None:
    report = validate(rendered, [load_profile("webgpu")], ["naga", "wgpu"])
    assert report.engines_missing == {}
    got = _dawn_verdicts(dawn, report.results, {})
    for r in report.results:
        expected, verdict = DAWN[r.kernel], got[r.kernel]
        assert (verdict is None) == (expected is None), (r.kernel, verdict)
        if verdict is not None:
            assert expected in verdict.diagnostic, (r.kernel, verdict.diagnostic)
        assert _static_ok(r) == (verdict is None), (r.kernel, r.problems, r.tint_static)
        static = r.tint_static.findings
        if static and r.kernel != "fluid_render":  # wgslgen's own rules: Tint's text and line
            assert (static[0].message, static[0].line) == (verdict.message, verdict.line)


def test_override_values_make_both_accept(rendered, dawn) -> None:
    needing = [r for r in rendered if r.kernel in ("llm_gelu_override", "override_no_default")]
    report = validate(needing, [load_profile("webgpu")], ["naga", "wgpu"], overrides=OVERRIDES)
    got = _dawn_verdicts(dawn, report.results, OVERRIDES)
    for r in report.results:
        assert got[r.kernel] is None and _static_ok(r), (r.kernel, r.problems)
        assert r.engines["wgpu"].ok  # the constants reached wgpu's pipeline too
    [gelu] = [r for r in report.results if r.kernel == "llm_gelu_override"]
    assert gelu.facts["gelu"].workgroup_size == (128, 1, 1) and gelu.constants == {
        "block_size": 128
    }


def test_known_gaps_are_marked_not_counted_against_webgpu(rendered) -> None:
    gaps = ("subgroups_enable", "pointer_param_storage", "immediate_var")
    chosen = [r for r in rendered if r.kernel in gaps]
    report = validate(chosen, [load_profile("webgpu")], ["naga", "wgpu"])
    for r in report.results:
        naga = r.implementations["naga"]
        assert naga.ok is False and naga.gap, (r.kernel, naga)
        assert r.implementations["tint"].ok and r.fits("webgpu"), r.kernel
        assert not r.compile_errors() and r.profiles["webgpu"] == []
    assert "naga 30 does not implement `enable subgroups;`" in str(report.to_dict())


def test_cli_whole_corpus_never_aborts(capsys) -> None:
    code = main(["validate", "--templates", str(CORPUS), "--engines", "naga,wgpu", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1
    assert len(report["results"]) == len(DAWN)
    by_kernel = {r["kernel"]: r for r in report["results"]}
    finding = by_kernel["uniformity_barrier_after_return"]["tint_static"]["findings"][0]
    assert finding["template"].endswith("uniformity_barrier_after_return.wgsl:11")
    assert finding["column"] == 5
    # --require tint narrows --require webgpu to Chrome: the subgroups file passes it.
    one = ["validate", "--templates", str(CORPUS / "subgroups_enable.wgsl"), "--engines"]
    assert main([*one, "naga,wgpu", "--require", "tint"]) == 0
    assert main([*one, "naga,wgpu", "--require", "webgpu"]) == 1  # Firefox's naga refuses
    assert main([*one, "naga,wgpu", "--require", "naga"]) == 1
