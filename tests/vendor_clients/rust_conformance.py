# ruff: noqa: E501  (templates of generated Rust lines; splitting them hurts reading)
"""Generate the Rust conformance test of a vendored folder from the shared cases (no crates).

The test includes the generated module and checks: uniform bytes equal the Python-packed golden
bytes, dispatch and buffer/scratch sizes, bindings, the features and limits a device needs,
every selector case (variant, rejected candidates and their reasons), every file's sha256.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

SHA256 = r"""
fn sha256_hex(data: &[u8]) -> String {
    const K: [u32; 64] = [0x428a2f98,0x71374491,0xb5c0fbcf,0xe9b5dba5,0x3956c25b,0x59f111f1,0x923f82a4,0xab1c5ed5,0xd807aa98,0x12835b01,0x243185be,0x550c7dc3,0x72be5d74,0x80deb1fe,0x9bdc06a7,0xc19bf174,0xe49b69c1,0xefbe4786,0x0fc19dc6,0x240ca1cc,0x2de92c6f,0x4a7484aa,0x5cb0a9dc,0x76f988da,0x983e5152,0xa831c66d,0xb00327c8,0xbf597fc7,0xc6e00bf3,0xd5a79147,0x06ca6351,0x14292967,0x27b70a85,0x2e1b2138,0x4d2c6dfc,0x53380d13,0x650a7354,0x766a0abb,0x81c2c92e,0x92722c85,0xa2bfe8a1,0xa81a664b,0xc24b8b70,0xc76c51a3,0xd192e819,0xd6990624,0xf40e3585,0x106aa070,0x19a4c116,0x1e376c08,0x2748774c,0x34b0bcb5,0x391c0cb3,0x4ed8aa4a,0x5b9cca4f,0x682e6ff3,0x748f82ee,0x78a5636f,0x84c87814,0x8cc70208,0x90befffa,0xa4506ceb,0xbef9a3f7,0xc67178f2];
    let mut h: [u32; 8] = [0x6a09e667,0xbb67ae85,0x3c6ef372,0xa54ff53a,0x510e527f,0x9b05688c,0x1f83d9ab,0x5be0cd19];
    let mut msg = data.to_vec();
    let bits = (data.len() as u64) * 8;
    msg.push(0x80);
    while msg.len() % 64 != 56 { msg.push(0); }
    msg.extend_from_slice(&bits.to_be_bytes());
    for chunk in msg.chunks(64) {
        let mut w = [0u32; 64];
        for i in 0..16 { w[i] = u32::from_be_bytes([chunk[4*i], chunk[4*i+1], chunk[4*i+2], chunk[4*i+3]]); }
        for i in 16..64 {
            let s0 = w[i-15].rotate_right(7) ^ w[i-15].rotate_right(18) ^ (w[i-15] >> 3);
            let s1 = w[i-2].rotate_right(17) ^ w[i-2].rotate_right(19) ^ (w[i-2] >> 10);
            w[i] = w[i-16].wrapping_add(s0).wrapping_add(w[i-7]).wrapping_add(s1);
        }
        let mut v = h;
        for i in 0..64 {
            let s1 = v[4].rotate_right(6) ^ v[4].rotate_right(11) ^ v[4].rotate_right(25);
            let ch = (v[4] & v[5]) ^ (!v[4] & v[6]);
            let t1 = v[7].wrapping_add(s1).wrapping_add(ch).wrapping_add(K[i]).wrapping_add(w[i]);
            let s0 = v[0].rotate_right(2) ^ v[0].rotate_right(13) ^ v[0].rotate_right(22);
            let maj = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]);
            let t2 = s0.wrapping_add(maj);
            v = [t1.wrapping_add(t2), v[0], v[1], v[2], v[3].wrapping_add(t1), v[4], v[5], v[6]];
        }
        for i in 0..8 { h[i] = h[i].wrapping_add(v[i]); }
    }
    h.iter().map(|x| format!("{:08x}", x)).collect()
}
"""


def _camel(name: str) -> str:
    return "".join(p.capitalize() for p in name.split("_"))


def _value(v: int | float, floating: bool) -> str:
    return repr(float(v)) if floating else str(v)


def _fields(shape: dict, floats: set[str]) -> str:
    return ", ".join(f"{k}: {_value(v, k in floats)}" for k, v in sorted(shape.items()))


def _shape(kernel: str, shape: dict, floats: set[str] = frozenset()) -> str:
    fields = _fields(shape, floats)
    return f"k::Shape::{_camel(kernel)}(k::{_camel(kernel)}Shape {{ {fields} }})"


def _derived(c: dict, floats: set[str]) -> str:
    """Asserts that the module's derived values are wgslgen's own (a float: bit for bit)."""
    if not c.get("derived"):
        return ""
    shape = f"k::{_camel(c['kernel'])}Shape {{ {_fields(c['shape'], floats)} }}"
    out = [f"\n    let v = k::{c['variant']}::vars(&{shape}).unwrap();"]
    for name, want in sorted(c["derived"].items()):
        if isinstance(want, float):
            bits = struct.unpack("<Q", struct.pack("<d", want))[0]
            out.append(
                f"    assert_eq!((v.{name} as f64).to_bits(), {bits}u64, {json.dumps(c['variant'] + ' ' + name)});"
            )
        else:
            out.append(
                f"    assert_eq!(v.{name} as i64, {want}i64, {json.dumps(c['variant'] + ' ' + name)});"
            )
    return "\n".join(out)


def _facts(name: str, a: dict) -> str:
    feats = ", ".join(json.dumps(f) for f in a["features"])
    limits = ", ".join(f"({json.dumps(n)}, {v})" for n, v in sorted(a["limits"].items()))
    return (
        f"fn facts_{name.replace('-', '_')}() -> k::AdapterFacts<'static> {{ k::AdapterFacts {{ "
        f"vendor: {json.dumps(a['vendor'])}, architecture: {json.dumps(a['architecture'])}, "
        f"device: {json.dumps(a['device'])}, backend: {json.dumps(a['backend'])}, "
        f"features: &[{feats}], limits: &[{limits}] }} }}"
    )


def _str_slice(items: list[str]) -> str:
    return "&[" + ", ".join(json.dumps(x) for x in items) + "]"


def _bindings(variant: dict) -> str:
    """Asserts that a plan's bindings are the manifest's, in order."""
    want = ", ".join(
        f"k::Binding {{ group: {b['group']}, binding: {b['binding']}, name: {json.dumps(b['name'])}, "
        f"kind: {json.dumps(b['kind'])}, access: {json.dumps(b['access'])}, scratch: {str(b['scratch']).lower()} }}"
        for b in variant["bindings"]
    )
    return f"\n    let w: &[k::Binding] = &[{want}]; assert_eq!(p.bindings, w, {json.dumps(variant['name'])});"


def _run(c: dict, manifest: dict, fl: set[str]) -> str:
    """Asserts of one run case: the plan's bytes, counts and sizes are the reference's."""
    v = manifest["variants"][c["variant"]]
    dispatch = ", ".join(f"({json.dumps(e)}, [{x}, {y}, {z}])" for e, (x, y, z) in c["dispatch"])
    sizes = ", ".join(f"({json.dumps(n)}, {s})" for n, s in c["buffer_sizes"].items())
    scratch = ", ".join(f"({json.dumps(n)}, {s})" for n, s in c["scratch_sizes"].items())
    encodings = ", ".join(
        f"({json.dumps(b['name'])}, {json.dumps(b['encoding'])})"
        for b in v["bindings"]
        if b["kind"] != "uniform" and not b["scratch"] and b["encoding"]
    )
    return (
        f"    let p = k::plan_for({json.dumps(c['variant'])}, &{_shape(c['kernel'], c['shape'], fl)}).unwrap();\n"
        f"    assert_eq!(hex(&p.uniform), {json.dumps(c['uniform_hex'])}, {json.dumps(c['variant'])});\n"
        f"    assert_eq!(p.dispatch, vec![{dispatch}]);\n"
        f"    let mut s = p.buffer_sizes.clone(); s.sort(); let mut w: Vec<(&str, u64)> = vec![{sizes}]; w.sort(); assert_eq!(s, w);\n"
        f"    assert_eq!(p.scratch_sizes, vec![{scratch}]);\n"
        f"    let mut e = p.encodings.to_vec(); e.sort(); let mut w: Vec<(&str, &str)> = vec![{encodings}]; w.sort(); assert_eq!(e, w);"
        + _bindings(v)
        + _derived(c, fl)
    )


def _requirement(r: dict, fl: set[str]) -> str:
    """Asserts that a plan asks for the reference's features and limits (required_limits)."""
    limits = ", ".join(f"({json.dumps(n)}, {x})" for n, x in sorted(r["limits"].items()))
    label = json.dumps(f"{r['variant']} {r['shape']}")
    return (
        f"    let p = k::plan_for({json.dumps(r['variant'])}, &{_shape(r['kernel'], r['shape'], fl)}).unwrap();\n"
        f'    let w: &[&str] = {_str_slice(r["features"])}; assert_eq!(p.features, w, "{{}}", {label});\n'
        f'    let w: Vec<(&str, u64)> = vec![{limits}]; assert_eq!(p.required_limits, w, "{{}}", {label});'
    )


def _selection(c: dict, fl: set[str]) -> str:
    """Asserts that select() picks the reference's variant, rejecting the same candidates for
    the same reasons, word for word."""
    want = "None" if c["expect"] is None else f"Some({json.dumps(c['expect'])})"
    rejected = ", ".join(json.dumps(r) for r in c["rejected"])
    reasons = ", ".join(json.dumps(r) for r in c["reasons"])
    label = json.dumps(f"{c['adapter']} {c['kernel']} {c['shape']}")
    return (
        f"    let r = k::select(&facts_{c['adapter'].replace('-', '_')}(), &{_shape(c['kernel'], c['shape'], fl)});\n"
        "    let (got, rej) = match &r { Ok(p) => (Some(p.variant), &p.rejected), Err(e) => (None, &e.rejected) };\n"
        "    let names: Vec<&str> = rej.iter().map(|x| x.0).collect();\n"
        "    let why: Vec<&str> = rej.iter().map(|x| x.1.as_str()).collect();\n"
        f'    assert_eq!((got, names, why), ({want}, vec![{rejected}], vec![{reasons}]), "{{}}", {label});'
    )


def generate(vendored: Path, cases: dict, manifest: dict, module: str) -> str:
    """The text of conformance_test.rs for ``vendored`` (three tests)."""
    lines = [f'#[path = "{(vendored / "rust" / module).as_posix()}"]\nmod k;', SHA256]
    lines += [_facts(n, a) for n, a in sorted(cases["adapters"].items())]
    floats = {v["kernel"]: set(v.get("float_sizes", ())) for v in manifest["variants"].values()}
    runs = [_run(c, manifest, floats.get(c["kernel"], set())) for c in cases["runs"]]
    runs += [_requirement(r, floats.get(r["kernel"], set())) for r in cases.get("requirements", [])]
    lines.append('fn hex(b: &[u8]) -> String { b.iter().map(|x| format!("{:02x}", x)).collect() }')
    lines.append("#[test]\nfn runs_layouts_and_sizes() {\n" + "\n".join(runs) + "\n}")
    sel = [_selection(c, floats.get(c["kernel"], set())) for c in cases["selector"]]
    lines.append("#[test]\nfn selector_cases() {\n" + "\n".join(sel) + "\n}")
    files = [
        f"    assert_eq!(sha256_hex(&std::fs::read({json.dumps((vendored / p).as_posix())}).unwrap()), {json.dumps(h)});"
        for p, h in sorted(manifest["files"].items())
    ]
    lines.append("#[test]\nfn file_hashes() {\n" + "\n".join(files) + "\n}")
    return "\n".join(lines) + "\n"
