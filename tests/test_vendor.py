"""`wgslgen vendor`: manifest + schema, determinism, fallbacks, bad input, the Python client."""

from __future__ import annotations

import json
import struct

import jsonschema
import pytest

from tests import vendor_helpers as vh
from tests.conftest import ROOT, TEMPLATES
from wgslgen.check.limits import WEBGPU_LIMITS
from wgslgen.errors import WgslgenError
from wgslgen.vendor import candidates, conformance, folder, models
from wgslgen.vendor import plan as vplan
from wgslgen.vendor.expr import evaluate, to_tree, to_value
from wgslgen.vendor.runtime import wgslgen_gpu as gpu_rt
from wgslgen.vendor.runtime import wgslgen_runtime as rt


@pytest.fixture(scope="module")
def vendored(tmp_path_factory):
    return vh.shared(tmp_path_factory)


def test_manifest_validates_against_shipped_schema(vendored):
    out, _plan, _ = vendored
    shipped = json.loads((ROOT / "wgslgen/vendor/manifest.schema.json").read_text())
    assert shipped == models.schema(), "regenerate wgslgen/vendor/manifest.schema.json"
    assert (out / "manifest.schema.json").read_text() == models.schema_text()
    manifest = json.loads((out / "manifest.json").read_text())
    jsonschema.Draft202012Validator(shipped).validate(manifest)
    assert manifest["schema_version"] == 1 and manifest["generator"].startswith("wgslgen ")
    for rel, sha in manifest["files"].items():  # every file hashed, and nothing unlisted
        import hashlib

        assert hashlib.sha256((out / rel).read_bytes()).hexdigest() == sha, rel
    on_disk = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    assert on_disk == set(manifest["files"]) | {"manifest.json"}


def test_second_run_is_byte_identical(vendored, tmp_path):
    _out, plan, _ = vendored
    again = vh.vendor(tmp_path / "wgk")
    assert again.files == plan.files


def test_shaders_start_with_provenance(vendored):
    out, plan, _ = vendored
    for name, v in plan.manifest["variants"].items():
        for path in v["files"].values():
            first = (out / path).read_text().split("\n", 1)[0]
            assert first.startswith("// wgslgen ") and f"variant={name}" in first
            assert "template_sha256=" in first and "do not edit" in first


def test_portable_fallback_per_kernel(vendored):
    _, plan, _ = vendored
    for kernel, k in plan.manifest["kernels"].items():
        v = plan.manifest["variants"][k["selection"]["portable_fallback"]]
        assert v["kernel"] == kernel and v["features"] == [] and v["portable"]
        webgpu = conformance.camel_limits(WEBGPU_LIMITS)
        assert all(n <= webgpu[name] for name, n in v["limits"].items()), v["limits"]


SEED_BINDINGS = [
    (0, "params", "uniform", None, "read"),
    (1, "k_hist", "storage", "f32", "read"),
    (2, "v_hist", "storage", "f32", "read"),
    (3, "probs", "storage", "f32", "read"),
    (4, "d_out", "storage", "f32", "read"),
    (5, "d_scores", "storage", "f32", "read_write"),
    (6, "d_q", "storage", "f32", "read_write"),
]


def test_seed_swap_variant_has_the_seeds_bindings(vendored):
    _, plan, _ = vendored
    facts = conformance.facts
    seed_shape = {"head_dim": 256, "n_heads": 8, "n_kv_heads": 4, "history_len": 4096}
    picks = []
    for adapter in ("h200-native", "browser-nvidia", "swiftshader"):
        try:
            picks.append(rt.select(plan.manifest, "attention_bwd_dq", facts(adapter), seed_shape))
        except rt.NoViable:  # allowed without shader-f16 only when no portable variant fits
            assert adapter == "swiftshader"
    chosen = picks[0]
    fallback = plan.manifest["kernels"]["attention_bwd_dq"]["selection"]["portable_fallback"]
    for name in sorted({*(p.variant for p in picks), fallback}):
        v = plan.manifest["variants"][name]
        got = [
            (b["binding"], b["name"], b["kind"], b["element"], b["access"]) for b in v["bindings"]
        ]
        assert got == SEED_BINDINGS, name
        fields = [f["name"] for f in v["uniform"]["fields"]]
        assert v["uniform"]["size"] == 32 and fields[-3:] == ["_pad0", "_pad1", "_pad2"]
    # the seed's uniform bytes (head_dim, n_heads, n_kv_heads, heads_per_kv, history_len)
    assert chosen.uniform[:20] == struct.pack("<5I", 256, 8, 4, 2, 4096)
    assert chosen.dispatch[0][0] == "main" and chosen.dispatch[0][1][0] == 8  # one per head


def test_expressions_become_trees_without_eval():
    dkv = "[1, workgroup_size // ([1, out_cols] | max)] | max"
    tree = to_tree(dkv, {"workgroup_size": 256}, "k")
    assert evaluate(tree, {"out_cols": 64}) == 4 and evaluate(tree, {"out_cols": 512}) == 1
    ceil = to_tree("(history_len + chunk - 1) // chunk", {"chunk": 64}, "k")
    assert ceil["op"] == "ceil_div" and evaluate(ceil, {"history_len": 65}) == 2
    assert to_value("storage != 'pf16' or head_dim % 2 == 0", {"storage": "f32"}, "k") is True
    sel = to_tree("head_dim // 2 if storage == 'pf16' else head_dim", {"storage": "pf16"}, "k")
    assert evaluate(sel, {"head_dim": 10}) == 5
    with pytest.raises(WgslgenError, match="cannot be vendored"):
        to_tree("x.__class__", {}, "k")
    with pytest.raises(WgslgenError, match="cannot be vendored"):
        to_tree("history_len ** 2", {}, "k")


def test_out_inside_templates_or_generated_is_refused():
    for bad in (TEMPLATES / "attention" / "vendored", ROOT / "generated"):
        with pytest.raises(WgslgenError, match=r"inside .* which wgslgen owns"):
            folder.refuse_inside(bad, [TEMPLATES, ROOT / "generated"])


def test_check_on_a_never_vendored_folder(tmp_path):
    (tmp_path / "x.txt").write_text("mine")
    with pytest.raises(WgslgenError, match="not a vendored folder"):
        folder.read_manifest(tmp_path)


def test_vendoring_into_a_users_folder_is_refused(tmp_path, vendored):
    _, plan, _ = vendored
    (tmp_path / "main.rs").write_text("fn main() {}")
    with pytest.raises(WgslgenError, match=r"has files and no manifest.json"):
        folder.write(plan, tmp_path)
    assert (tmp_path / "main.rs").read_text() == "fn main() {}"


def test_selection_naming_unknown_variant(tmp_path):
    doc = json.loads(vh.SELECTION.read_text())
    doc["entries"][0]["winner"]["variant"] = "attention__wg999_nope"
    bad = tmp_path / "selection.json"
    bad.write_text(json.dumps(doc))
    ks = [k for k in vh.specs() if k.name == doc["entries"][0]["kernel"]]
    with pytest.raises(WgslgenError, match=r"names unknown winner variant 'attention__wg999_nope'"):
        vplan.plan_vendor(ks, bad, [], strict=True)
    doc["generator"] = "wgslgen 0.0.1"
    bad.write_text(json.dumps(doc))
    with pytest.raises(WgslgenError, match=r"written by wgslgen 0\.0\.1"):
        vplan.plan_vendor(ks, bad, [])


def test_a_variant_failing_validation_is_not_vendored(monkeypatch):
    real = candidates._validate
    ks = [k for k in vh.specs() if k.name == "attention_bwd_dkv"]
    first = vplan.plan_vendor(ks, None, [])
    victim = first.manifest["kernels"]["attention_bwd_dkv"]["selection"]["portable_fallback"]

    def failing(renderings, engines):  # inject a compiler rejection of that fallback
        out = real(renderings, engines)
        if victim in out:
            out[victim] = (False, "naga: injected failure", set())
        return out

    monkeypatch.setattr(candidates, "_validate", failing)
    plan = vplan.plan_vendor(ks, None, [])
    assert (victim, "naga: injected failure") in plan.excluded
    assert victim not in plan.manifest["variants"]
    assert {"variant": victim, "reason": "naga: injected failure"} in plan.manifest["excluded"]
    fallback = plan.manifest["kernels"]["attention_bwd_dkv"]["selection"]["portable_fallback"]
    assert fallback != victim and plan.manifest["variants"][fallback]["portable"]


def test_compat_device_gets_a_variant_or_a_clear_no_viable(vendored):
    _, plan, _ = vendored
    compat = conformance.facts("compat")
    for spec in vh.specs():
        shape = conformance.small_shape(spec)
        try:
            p = rt.select(plan.manifest, spec.name, compat, shape)
        except rt.NoViable as exc:
            assert exc.rejected, spec.name
            for variant, why in exc.rejected:  # every candidate named with the limit at fault
                assert variant in str(exc) and ("needs max" in why or "needs feature" in why)
        else:
            v = plan.manifest["variants"][p.variant]
            assert not v["features"] and not rt.why_not(v, compat, shape)


def test_swiftshader_like_adapter_falls_back_from_f16(vendored):
    _, plan, cases = vendored
    for case in cases["selector"]:
        if case["adapter"] == "swiftshader" and case["expect"]:
            v = plan.manifest["variants"][case["expect"]]
            assert "shader-f16" not in v["features"]
            assert v["params"].get("storage") in ("f32", "pf16", None)


def test_a_shape_no_variant_can_run_is_refused_with_reasons_not_a_crash(vendored):
    """Every runtime must say why (the Node client compares these reasons word for word)."""
    _, _plan, cases = vendored
    zero = [c for c in cases["selector"] if set(c["shape"].values()) == {0}]
    assert zero and all(c["expect"] is None for c in zero)
    assert any(
        "derived value heads_per_kv divides by zero" in r for c in zero for r in c["reasons"]
    )
    past_u32 = [c for c in cases["selector"] if 2**32 + 4 in c["shape"].values()]
    assert all(c["expect"] is None for c in past_u32)
    reasons = [r for c in past_u32 for r in c["reasons"]]
    assert any("uniform field history_len = 4294967300 does not fit u32" in r for r in reasons)


def test_required_limits_cover_the_buffers_of_a_large_shape(vendored):
    """A default device refuses a binding over 128 MiB: the plan must say to ask for more."""
    _, plan, _cases = vendored
    name = next(n for n, v in plan.manifest["variants"].items() if "k_hist" in
                {b["name"] for b in v["bindings"]})  # fmt: skip
    v = plan.manifest["variants"][name]
    shape = {s: 4 for s in v["sizes"]} | {"head_dim": 64, "history_len": 2**20, "pos": 2**20 - 1}
    p = rt.plan_for(plan.manifest, name, {s: shape[s] for s in v["sizes"]})
    need = rt.required_limits(v, p)
    assert need["maxStorageBufferBindingSize"] == p.buffer_sizes["k_hist"] > 2**27, need
    small = rt.plan_for(plan.manifest, name, {s: 4 for s in v["sizes"]} | {"head_dim": 64})
    assert "maxStorageBufferBindingSize" not in rt.required_limits(v, small)


def test_python_client_in_a_fresh_interpreter(vendored, tmp_path):
    out, plan, _cases = vendored
    lines = vh.run_python_client(out, tmp_path)
    results, footer = lines[:-1], lines[-1]
    assert not footer["wgslgen_imported"]
    for variant, got, want in footer["requirements"]:  # features and limits, wgpu-py's names
        assert got == want, variant
    assert any(
        "max-storage-buffer-binding-size" in want[1] for _, _, want in footer["requirements"]
    )
    assert {r["variant"] for r in results} == set(plan.manifest["variants"])
    assert [r for r in results if not r["ok"]] == []
    # a buffer smaller than the binding needs is refused, naming it and its encoding
    for r in results:
        assert "holds" in r["short_buffer"] and "the binding needs" in r["short_buffer"], r
        assert "encode(plan, " in r["short_buffer"], r


def test_plan_encodings_and_encode_match_wgslgens_own(vendored):
    """A caller's numpy values become the bytes wgslgen's harness uploads: f16 for an f16
    variant (float32 bytes there are read as garbage, with no error), f32 for an f32 one."""
    import numpy as np

    from wgslgen.spec.interface import ENCODINGS

    _, plan, _cases = vendored
    manifest = plan.manifest
    seen = set()
    for name, v in manifest["variants"].items():
        shape = {s: 8 for s in manifest["kernels"][v["kernel"]]["sizes"]}
        p = rt.plan_for(manifest, name, shape)
        wanted = {b["name"]: b["encoding"] for b in v["bindings"]
                  if b["kind"] != "uniform" and not b["scratch"]}  # fmt: skip
        assert p.encodings == wanted, name
        for binding, enc in p.encodings.items():
            values = np.linspace(-2.0, 3.0, 7) if enc not in ("u32",) else np.arange(7)
            assert gpu_rt.encode(p, binding, values) == ENCODINGS[enc].encode(values), (name, enc)
            back = gpu_rt.decode(p, binding, gpu_rt.encode(p, binding, values), 7)
            assert np.allclose(back, values, rtol=1e-3), (name, binding)
            seen.add(enc)
    assert {"f32", "f16"} <= seen
    with pytest.raises(ValueError, match="no caller binding 'nope'"):
        gpu_rt.encode(p, "nope", [1.0])
