# ruff: noqa: E501  (templates of generated Rust lines; splitting them hurts reading)
"""The Rust module's buffer bytes: `encode` writes what wgslgen's own encodings write (numpy's
float32 → float16 cast, byte for byte), `decode_f32` reads them back as numpy does, and
`check_buffers` refuses a short buffer as the TypeScript runtime does."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests import vendor_helpers as vh
from tests.vendor_clients.rust_conformance import _shape
from wgslgen.spec.interface import ENCODINGS

RUSTC = shutil.which("rustc")
pytestmark = pytest.mark.skipif(RUSTC is None, reason="rustc is not installed")

# f32 bit patterns at f16's edges: ties to even (1 + 2**-11 stays 1, 1 + 3 * 2**-11 goes up),
# just past a tie, the largest half (65504) and what rounds to it or past it to inf, the
# subnormals (2**-24, the 2**-25 tie to zero, 3 * 2**-25 tying to 2 units), the smallest
# normal and the largest subnormal, signed zeros, inf, NaNs (quiet, signalling, negative).
EDGES = [
    0.0, -0.0, 1.0, -1.0, 1 + 2**-11, 1 + 3 * 2**-11, 1 + 2**-11 + 2**-23, 65504.0, 65519.0,
    65520.0, -65520.0, 1e6, -1e6, 2.0**-24, 2.0**-25, -(2.0**-25), 1.5 * 2**-25, 3 * 2.0**-25,
    2.0**-14, 2.0**-14 - 2.0**-24, 2.0**-14 - 2.0**-25, 1e-8, -1e-8, 1e-45, 0.1, -3.14159,
    1 / 3, 2048.5, 4097.0, float("inf"), float("-inf"), float("nan"),
]  # fmt: skip
NANS = [0x7FC00000, 0xFFC00001, 0x7F800001, 0x7FA00000]
# Just past a subnormal tie, in a bit the conversion's shift drops: 2**-25 and 5 * 2**-25 (a
# tie to even, 2 units), each with its last f32 bit set, must round up.
PAST_TIES = [0x33000001, 0x34200001, 0xB4200001]


def _values() -> np.ndarray:
    """The edges, then random bit patterns: across all of f32, and where f16 has values."""
    rng = np.random.default_rng(7)
    edges = np.array(EDGES, dtype=np.float32).view(np.uint32)
    anywhere = rng.integers(0, 2**32, 3000, dtype=np.uint64).astype(np.uint32)
    near = rng.integers(0, 2**23, 6000, dtype=np.uint32)  # significands, exponents 2**-27..2**17
    near |= (rng.integers(100, 145, 6000, dtype=np.uint32) << 23) | (
        rng.integers(0, 2, 6000, dtype=np.uint32) << 31
    )
    bits = np.concatenate([edges, np.array(NANS + PAST_TIES, dtype=np.uint32), anywhere, near])
    return bits[: len(bits) - 1 + len(bits) % 2].view(np.float32)  # an odd count: pf16 pads


@pytest.fixture(scope="module")
def vendored(tmp_path_factory):
    return vh.shared(tmp_path_factory)


def _run_with(cases: dict, manifest: dict, encoding: str) -> tuple[dict, str]:
    """A run case whose variant has a caller binding of ``encoding``, and that binding."""
    for c in cases["runs"]:
        for b in manifest["variants"][c["variant"]]["bindings"]:
            if b["encoding"] == encoding and b["kind"] == "storage" and not b["scratch"]:
                return c, b["name"]
    raise AssertionError(f"no vendored variant has a {encoding} binding")


def _plan(name: str, c: dict) -> str:
    return f"let {name} = k::plan_for({json.dumps(c['variant'])}, &{_shape(c['kernel'], c['shape'])}).unwrap();"


def _golden(tmp: Path, values: np.ndarray) -> dict[str, Path]:
    """The values and what wgslgen's encodings make of them, as files for include_bytes!."""
    halves = np.arange(2**16, dtype=np.uint16).view(np.float16)
    with np.errstate(over="ignore"):
        f16, pf16, pf16_even = (
            ENCODINGS[e].encode(x)
            for e, x in [("f16", values), ("pf16", values), ("pf16", values[:-1])]
        )
    files = {
        "values": values.tobytes(),
        "f32": ENCODINGS["f32"].encode(values),
        "f16": f16,
        "pf16": pf16,
        "pf16_even": pf16_even,
        "halves": halves.tobytes(),  # every f16 bit pattern
        "halves_f32": halves.astype(np.float32).tobytes(),  # numpy's decode of each
    }
    out = {}
    for name, data in files.items():
        out[name] = tmp / f"{name}.bin"
        out[name].write_bytes(data)
    return out


RUST_HELPERS = r"""
fn words(b: &[u8]) -> Vec<u32> { b.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect() }
fn halves(b: &[u8]) -> Vec<u16> { b.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect() }
fn nan16(h: u16) -> bool { h & 0x7c00 == 0x7c00 && h & 0x3ff != 0 }
/// Equal halves, a NaN matching any NaN (numpy may keep a NaN's payload or quiet it).
fn same_halves(got: &[u8], want: &[u8], what: &str) {
    assert_eq!(got.len(), want.len(), "{}: length", what);
    for (i, (g, w)) in halves(got).into_iter().zip(halves(want)).enumerate() {
        assert!(g == w || (nan16(g) && nan16(w)), "{}: value {}: {:#06x}, numpy {:#06x}", what, i, g, w);
    }
}
fn same_f32(got: &[f32], want: &[u8], what: &str) {
    let want = words(want);
    assert_eq!(got.len(), want.len(), "{}: length", what);
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let w = f32::from_bits(w);
        assert!(g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()), "{}: value {}: {} numpy {}", what, i, g, w);
    }
}
"""


def _source(vendored_out: Path, files: dict[str, Path], cases: dict, manifest: dict) -> str:
    """conformance-style tests of encode, decode_f32 and check_buffers."""
    f32, f32_name = _run_with(cases, manifest, "f32")
    f16, f16_name = _run_with(cases, manifest, "f16")
    pf16, pf16_name = _run_with(cases, manifest, "pf16")
    inc = {k: f"include_bytes!({json.dumps(p.as_posix())})" for k, p in files.items()}
    need = pf16["buffer_sizes"][pf16_name]
    short = f"{pf16['variant']}: buffer {pf16_name} holds 4 bytes; the binding needs {need} (pf16 values)"
    callers = ", ".join(sorted(
        b["name"] for b in manifest["variants"][f16["variant"]]["bindings"]
        if b["kind"] == "storage" and not b["scratch"] and b["encoding"]
    ))  # fmt: skip
    module = (vendored_out / "rust" / "wgslgen_kernels.rs").as_posix()
    return f"""#[path = {json.dumps(module)}]
mod k;
{RUST_HELPERS}
fn values() -> Vec<f32> {{ words({inc["values"]}).into_iter().map(f32::from_bits).collect() }}

#[test]
fn encode_writes_what_wgslgen_writes() {{
    {_plan("f32", f32)}
    {_plan("f16", f16)}
    {_plan("pf16", pf16)}
    let v = values();
    assert_eq!(k::encode(&f32, {json.dumps(f32_name)}, &v).unwrap(), {inc["f32"]}.to_vec());
    same_halves(&k::encode(&f16, {json.dumps(f16_name)}, &v).unwrap(), {inc["f16"]}, "f16");
    same_halves(&k::encode(&pf16, {json.dumps(pf16_name)}, &v).unwrap(), {inc["pf16"]}, "pf16, odd count");
    same_halves(&k::encode(&pf16, {json.dumps(pf16_name)}, &v[..v.len() - 1]).unwrap(), {inc["pf16_even"]}, "pf16, even count");
}}

#[test]
fn decode_reads_what_numpy_reads() {{
    {_plan("f16", f16)}
    {_plan("f32", f32)}
    let all = k::decode_f32(&f16, {json.dumps(f16_name)}, {inc["halves"]}).unwrap();
    same_f32(&all, {inc["halves_f32"]}, "every f16");
    // every half survives the round trip (a NaN stays a NaN)
    same_halves(&k::encode(&f16, {json.dumps(f16_name)}, &all).unwrap(), {inc["halves"]}, "f16 -> f32 -> f16");
    let v = values();
    let bytes = k::encode(&f32, {json.dumps(f32_name)}, &v).unwrap();
    same_f32(&k::decode_f32(&f32, {json.dumps(f32_name)}, &bytes).unwrap(), &bytes, "f32");
    assert!(k::decode_f32(&f16, {json.dumps(f16_name)}, &[0, 0, 0]).is_err());
}}

#[test]
fn bad_bindings_and_short_buffers_are_errors() {{
    {_plan("f16", f16)}
    {_plan("pf16", pf16)}
    let e = k::encode(&f16, "nope", &[1.0]).unwrap_err();
    assert_eq!(e, format!("{{}}: no caller binding 'nope'; bindings: {callers}", f16.variant));
    let mut ints = f16.clone();
    ints.encodings = &[("idx", "u32"), ("ofs", "i32")];
    for name in ["idx", "ofs"] {{
        let e = k::encode(&ints, name, &[1.0]).unwrap_err();
        assert!(e.contains(&format!("binding {{}} holds", name)), "{{}}", e);
        assert!(k::decode_f32(&ints, name, &[0; 4]).is_err());
    }}
    let sizes: Vec<(&str, u64)> = pf16.buffer_sizes.clone();
    assert_eq!(k::check_buffers(&pf16, &sizes), Ok(()));
    assert_eq!(k::check_buffers(&pf16, &[({json.dumps(pf16_name)}, 4)]), Err({json.dumps(short)}.to_string()));
    assert!(k::check_buffers(&pf16, &[("nope", 4)]).unwrap_err().contains("no binding 'nope'; bindings: "));
}}
"""


def test_encode_decode_and_check_buffers_match_wgslgen(vendored, tmp_path):
    out, _, cases = vendored
    manifest = json.loads((out / "manifest.json").read_text())
    files = _golden(tmp_path, _values())
    src = tmp_path / "encode_test.rs"
    src.write_text(_source(out, files, cases, manifest))
    vh.rust_tests_pass(src, 3)


def test_the_values_reach_every_kind_of_half():
    """The golden values are not all easy ones: ties, subnormals, overflow and NaN occur."""
    values = _values()
    with np.errstate(over="ignore"):
        h = values.astype(np.float16)
    assert len(values) % 2 == 1
    assert np.isnan(h).sum() >= len(NANS) and np.isinf(h[np.isfinite(values)]).any()
    sub = np.abs(h.astype(np.float32))
    assert ((sub > 0) & (sub < 2.0**-14)).sum() > 100  # subnormal halves
    normal = (sub >= 2.0**-14) & np.isfinite(sub)
    assert normal.sum() > 1000 and (h.astype(np.float32) != values)[normal].any()  # rounded
