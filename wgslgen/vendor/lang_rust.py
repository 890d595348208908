# ruff: noqa: E501  (templates of generated Rust lines; splitting them hurts reading)
"""The Rust binding: one module with no crate dependency (+ a wgpu glue file behind a feature).

Every expression tree becomes Rust arithmetic on i64, every uniform a ``#[repr(C)]`` struct with
explicit ``_pad`` fields and ``const`` asserts of its size and field offsets, and the selector
is the same algorithm as the Python runtime's (the conformance cases check it).
"""

from __future__ import annotations

import json
from typing import Any

_BIN = {"add": "+", "sub": "-", "mul": "*"}
_CMP = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}
_RTYPE = {"u32": "u32", "i32": "i32", "f32": "f32"}


def rs_expr(tree: dict[str, Any]) -> str:
    """A tree as a Rust i64 expression over ``v.<name>``."""
    op = tree["op"]
    if op == "const":
        return f"{tree['value']}i64"
    if op == "var":
        return f"v.{tree['name']}"
    a = [rs_expr(x) for x in tree["args"]]
    if op in _BIN:
        return f"({a[0]} {_BIN[op]} {a[1]})"
    if op in _CMP:
        return f"(({a[0]} {_CMP[op]} {a[1]}) as i64)"
    simple = {
        "div": lambda: f"{a[0]}.div_euclid({a[1]})",
        "mod": lambda: f"{a[0]}.rem_euclid({a[1]})",
        "ceil_div": lambda: f"(-(-{a[0]}).div_euclid({a[1]}))",
        "and": lambda: f"((({a[0]}) != 0 && ({a[1]}) != 0) as i64)",
        "or": lambda: f"((({a[0]}) != 0 || ({a[1]}) != 0) as i64)",
        "not": lambda: f"((({a[0]}) == 0) as i64)",
        "select": lambda: f"(if {a[0]} != 0 {{ {a[1]} }} else {{ {a[2]} }})",
    }
    if op in simple:
        return simple[op]()
    fn = "min" if op == "min" else "max"
    out = a[0]
    for x in a[1:]:
        out = f"{out}.{fn}({x})"
    return f"({out})"


def _camel(name: str) -> str:
    return "".join(p.capitalize() for p in name.split("_"))


def _lit(text: str) -> str:
    return json.dumps(text)  # a JSON string is a valid Rust string literal for these texts


def _f64(value: float) -> str:
    """A Rust f64 literal: ``64`` must be written ``64.0``."""
    return repr(float(value))


def _opt(value: Any) -> str:
    return "None" if value is None else f"Some({_lit(value) if isinstance(value, str) else value})"


def _uniform(v: dict[str, Any]) -> list[str]:
    u = v["uniform"]
    if u is None:
        return ["pub fn uniform_bytes(_v: &Vars) -> Vec<u8> { Vec::new() }"]
    fields = "\n".join(f"    pub {f['name']}: {_RTYPE[f['type']]}," for f in u["fields"])
    values = ", ".join(
        f"{f['name']}: 0"
        if f["padding"]
        else f"{f['name']}: {rs_expr(f['value'])} as {_RTYPE[f['type']]}"
        for f in u["fields"]
    )
    asserts = "\n".join(
        f"const _: () = assert!(core::mem::offset_of!({u['struct']}, {f['name']}) == {f['offset']});"
        for f in u["fields"]
    )
    put = "\n".join(
        f"        out[{f['offset']}..{f['offset'] + 4}].copy_from_slice(&self.{f['name']}.to_le_bytes());"
        for f in u["fields"]
    )
    return [
        "#[repr(C)]\n#[derive(Clone, Copy, Debug, Default, PartialEq)]",
        f"pub struct {u['struct']} {{\n{fields}\n}}",
        f"const _: () = assert!(core::mem::size_of::<{u['struct']}>() == {u['size']});",
        asserts,
        f"impl {u['struct']} {{\n    pub fn to_le_bytes(&self) -> [u8; {u['size']}] {{\n"
        f"        let mut out = [0u8; {u['size']}];\n{put}\n        out\n    }}\n}}",
        f"pub fn uniform(v: &Vars) -> {u['struct']} {{ {u['struct']} {{ {values} }} }}",
        "pub fn uniform_bytes(v: &Vars) -> Vec<u8> { uniform(v).to_le_bytes().to_vec() }",
    ]


def _variant_module(name: str, v: dict[str, Any]) -> str:
    kshape = f"super::{_camel(v['kernel'])}Shape"
    names = list(v["sizes"]) + [d["name"] for d in v["derived"]]
    lets = "\n".join(
        f"    let v = Vars {{ {d['name']}: {rs_expr(d['expr'])}, ..v }};" for d in v["derived"]
    )
    init = ", ".join(f"{s}: s.{s}" for s in v["sizes"]) + "".join(
        f", {d['name']}: 0" for d in v["derived"]
    )
    file = v["files"].get("naga") or v["files"]["any"]
    passes = ", ".join(
        f"({_lit(p['entry_point'])}, [{', '.join(rs_expr(d) for d in p['dispatch'])}])"
        for p in v["passes"]
    )
    sizes = ", ".join(
        f"({_lit(b['name'])}, {rs_expr(b['min_binding_size'])}, {str(b['kind'] == 'storage').lower()})"
        for b in v["bindings"]
    )
    scratch = ", ".join(f"({_lit(s['binding'])}, {rs_expr(s['size'])})" for s in v["scratch"])
    pre = "\n".join(
        f"    if {rs_expr(p['expr'])} == 0 {{ out.push({_lit(p['text'])}); }}"
        for p in v["preconditions"]
    )
    limits = ", ".join(f"({_lit(k)}, {n})" for k, n in sorted(v["limits"].items()))
    features = ", ".join(_lit(f) for f in v["features"])
    constants = ", ".join(f"({_lit(k)}, {_f64(x)})" for k, x in v.get("constants", {}).items())
    body = [
        f"pub const NAME: &str = {_lit(name)};",
        f'pub const WGSL: &str = include_str!("../{file}");',
        f"pub const FEATURES: &[&str] = &[{features}];",
        f"pub const LIMITS: &[(&str, i64)] = &[{limits}];",
        f"pub const CONSTANTS: &[(&str, f64)] = &[{constants}];",
        "#[derive(Clone, Copy, Debug)]",
        f"pub struct Vars {{ {', '.join(f'pub {n}: i64' for n in names)} }}",
        f"pub fn vars(s: &{kshape}) -> Vars {{\n    let v = Vars {{ {init} }};\n{lets}\n    v\n}}",
        *_uniform(v),
        f"pub fn dispatch(v: &Vars) -> Vec<(&'static str, [i64; 3])> {{ vec![{passes}] }}",
        f"pub fn buffer_sizes(v: &Vars) -> Vec<(&'static str, i64, bool)> {{ vec![{sizes}] }}",
        f"pub fn scratch_sizes(v: &Vars) -> Vec<(&'static str, i64)> {{ vec![{scratch}] }}",
        "pub fn failed_preconditions(v: &Vars) -> Vec<&'static str> {\n"
        + (f"    let mut out = Vec::new();\n{pre}\n    out\n}}" if pre else "    Vec::new()\n}"),
    ]
    indented = "\n".join("    " + line if line else "" for line in "\n".join(body).split("\n"))
    return f"#[allow(unused_variables, clippy::all)]\npub mod {name} {{\n{indented}\n}}\n"


def _rules(kernel: str, sel: dict[str, Any]) -> str:
    rules = []
    for r in sel["rules"]:
        m = r["match"]
        shape = ", ".join(
            f"({_lit(k)}, {_opt(b['min'])}, {_opt(b['max'])})"
            for k, b in sorted(r["shape"].items())
        )
        chain = ", ".join(_lit(c["variant"]) for c in r["chain"])
        rules.append(
            f"    Rule {{ vendor: {_opt(m.get('vendor'))}, architecture: "
            f"{_opt(m.get('architecture'))}, device: {_opt(m.get('device'))}, "
            f"backend: {_opt(m.get('backend'))}, shape: &[{shape}], chain: &[{chain}] }},"
        )
    default = ", ".join(_lit(n) for n in sel["default_chain"])
    return (
        f"pub static {kernel.upper()}_RULES: &[Rule] = &[\n" + "\n".join(rules) + "\n];\n"
        f"pub static {kernel.upper()}_DEFAULT: &[&str] = &[{default}];\n"
        f"pub const {kernel.upper()}_FALLBACK: &str = {_lit(sel['portable_fallback'])};\n"
    )


def _shape_types(manifest: dict[str, Any]) -> str:
    out = []
    arms_get, arms_kernel = [], []
    for kernel, k in sorted(manifest["kernels"].items()):
        cam = _camel(kernel)
        fields = " ".join(f"pub {s}: i64," for s in k["sizes"])
        out.append(
            f"#[derive(Clone, Copy, Debug, PartialEq)]\npub struct {cam}Shape {{ {fields} }}"
        )
        gets = " ".join(f"{_lit(s)} => Some(s.{s})," for s in k["sizes"])
        arms_get.append(f"            Shape::{cam}(s) => match name {{ {gets} _ => None }},")
        arms_kernel.append(f"            Shape::{cam}(_) => {_lit(kernel)},")
    variants = " ".join(f"{_camel(k)}({_camel(k)}Shape)," for k in sorted(manifest["kernels"]))
    out.append(f"#[derive(Clone, Copy, Debug, PartialEq)]\npub enum Shape {{ {variants} }}")
    out.append(
        "impl Shape {\n    pub fn get(&self, name: &str) -> Option<i64> {\n        match self {\n"
        + "\n".join(arms_get)
        + "\n        }\n    }\n    pub fn kernel(&self) -> &'static str {\n        match self {\n"
        + "\n".join(arms_kernel)
        + "\n        }\n    }\n}"
    )
    return "\n".join(out) + "\n"


def _dispatcher(manifest: dict[str, Any]) -> str:
    arms = []
    for name, v in sorted(manifest["variants"].items()):
        cam = _camel(v["kernel"])
        arms.append(
            f"        ({_lit(name)}, Shape::{cam}(s)) => {{ let v = {name}::vars(s); "
            f"Some(Parts {{ name: {name}::NAME, kernel: {_lit(v['kernel'])}, wgsl: {name}::WGSL, "
            f"features: {name}::FEATURES, limits: {name}::LIMITS, "
            f"preconditions: {name}::failed_preconditions(&v), dispatch: {name}::dispatch(&v), "
            f"buffer_sizes: {name}::buffer_sizes(&v), scratch_sizes: {name}::scratch_sizes(&v), "
            f"uniform: {name}::uniform_bytes(&v), constants: {name}::CONSTANTS }}) }}"
        )
    sels = []
    for kernel in sorted(manifest["kernels"]):
        up = kernel.upper()
        sels.append(f"        {_lit(kernel)} => ({up}_RULES, {up}_DEFAULT, {up}_FALLBACK),")
    return (
        "pub fn parts(variant: &str, shape: &Shape) -> Option<Parts> {\n    match (variant, shape) {\n"
        + "\n".join(arms)
        + "\n        _ => None,\n    }\n}\n"
        "fn selection(kernel: &str) -> (&'static [Rule], &'static [&'static str], &'static str) {\n"
        "    match kernel {\n" + "\n".join(sels) + "\n        _ => unreachable!(),\n    }\n}\n"
    )


def rust_files(manifest: dict[str, Any], package: str) -> dict[str, bytes]:
    """``rust/<package>.rs`` (the core, no crate dependency) and ``rust/wgpu_glue.rs``."""
    from importlib import resources

    runtime = resources.files("wgslgen.vendor.runtime")
    parts = [
        f"//! Vendored WGSL kernels: {manifest['generator']}. Generated: do not edit.\n"
        '//! No crate dependency; wgpu glue is in wgpu_glue.rs (feature "wgpu").\n'
        "#![allow(dead_code, unused_parens, non_snake_case, clippy::all)]\n",
        f"pub const ABI_VERSION: &str = {_lit(manifest['abi_version'])};\n",
        runtime.joinpath("selector.rs").read_text(encoding="utf-8"),
        _shape_types(manifest),
        *(_rules(k, kk["selection"]) for k, kk in sorted(manifest["kernels"].items())),
        _dispatcher(manifest),
        *(_variant_module(n, v) for n, v in sorted(manifest["variants"].items())),
    ]
    glue = runtime.joinpath("wgpu_glue.rs").read_text(encoding="utf-8")
    return {
        f"rust/{package}.rs": "\n".join(parts).encode(),
        "rust/wgpu_glue.rs": glue.replace("__PACKAGE__", package).encode(),
    }
