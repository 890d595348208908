# ruff: noqa: E501  (templates of generated Rust lines; splitting them hurts reading)
"""The Rust binding: one module with no crate dependency (+ a wgpu glue file behind a feature).

Every expression tree becomes Rust arithmetic on i64, or on f64 where a float enters (``expr.
is_float`` types every node as Python's values would be typed), checked where Rust would part
from Python: a division by zero (Python raises) or an i64 overflow (Python's integers have
none) is an error the selector gives as a reason, never a panic or a wrapped value. Every
uniform is a ``#[repr(C)]`` struct with ``const`` asserts of its layout, and the selector is the
Python runtime's algorithm (the conformance cases check it).
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

from wgslgen.vendor.expr import is_float
from wgslgen.vendor.names import kernel_type_name

_BIN = {"add": "+", "sub": "-", "mul": "*"}
_CMP = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}
# Integer ops that can fail in Rust: checked, each is selector.rs's int_<op>, returning Ev.
_FALLIBLE = {"add", "sub", "mul", "div", "mod", "ceil_div", "abs"}


# Python's float // and % (CPython's float_divmod), emitted only when a tree needs them.
FLOAT_HELPERS = """
/// Python's divmod of two floats (CPython's float_divmod): // floors, % takes the divisor's sign.
pub fn py_divmod(a: f64, b: f64) -> (f64, f64) {
    let mut m = a % b;
    let mut div = (a - m) / b;
    if m == 0.0 {
        m = 0.0f64.copysign(b);
    } else if (b < 0.0) != (m < 0.0) {
        m += b;
        div -= 1.0;
    }
    let f = div.floor();
    let floor = if div == 0.0 { 0.0f64.copysign(a / b) } else if div - f > 0.5 { f + 1.0 } else { f };
    (floor, m)
}
"""


def _f64(value: float) -> str:
    """A Rust f64 literal: ``64`` must be written ``64.0``."""
    return repr(float(value))


def _as_f64(code: str, floating: bool) -> str:
    return code if floating else f"({code} as f64)"


def _zero(floating: bool) -> str:
    return "0.0" if floating else "0"


def _ty(floating: bool) -> str:
    return "f64" if floating else "i64"


def _divisor(code: str, checked: bool) -> str:
    """An f64 divisor: checked, zero is an error (Python raises) instead of inf or NaN."""
    return f"super::nonzero({code})?" if checked else code


def rs_typed(
    tree: dict[str, Any], floats: Collection[str], checked: bool = False
) -> tuple[str, bool]:
    """A tree as a Rust expression over ``v.<name>``, and whether it is f64 (else i64);
    ``floats`` names the variables that are f64. ``checked``: every op that can fail passes
    its error on with ``?`` (code for ``super::ev(|| Ok(...))``), where unchecked is Rust's
    plain arithmetic, which panics on an integer division by zero."""
    op = tree["op"]
    if op == "fconst":
        return f"({_f64(tree['value'])}f64)", True
    if op != "const" and op != "var" and any(is_float(x, floats) for x in tree["args"]):
        return _rs_float(op, [rs_typed(x, floats, checked) for x in tree["args"]], checked)
    if op == "const":
        return f"{tree['value']}i64", False
    if op == "var":
        return f"v.{tree['name']}", tree["name"] in floats
    a = [rs_typed(x, floats, checked)[0] for x in tree["args"]]
    if op == "fdiv":
        return f"(({a[0]} as f64) / {_divisor(f'({a[1]} as f64)', checked)})", True
    if op == "float":
        return f"({a[0]} as f64)", True
    if op == "int":
        return a[0], False
    return _rs_int(op, a, checked), False


def _rs_float(op: str, typed: list[tuple[str, bool]], checked: bool) -> tuple[str, bool]:
    """An op with a float operand: Python's result, as f64 (comparisons and logic: i64)."""
    a = [_as_f64(c, f) for c, f in typed]
    if op in _BIN or op == "fdiv":
        right = _divisor(a[1], checked) if op == "fdiv" else a[1]
        return f"({a[0]} {_BIN.get(op, '/')} {right})", True
    if op in _CMP:
        return f"(({a[0]} {_CMP[op]} {a[1]}) as i64)", False
    if op in ("and", "or", "not", "select"):
        cond = [f"({c}) != {_zero(f)}" for c, f in typed]
        if op == "and":
            return f"(({cond[0]} && {cond[1]}) as i64)", False
        if op == "or":
            return f"(({cond[0]} || {cond[1]}) as i64)", False
        if op == "not":
            return f"((({typed[0][0]}) == {_zero(typed[0][1])}) as i64)", False
        if typed[1][1] or typed[2][1]:
            return f"(if {cond[0]} {{ {a[1]} }} else {{ {a[2]} }})", True
        return f"(if {cond[0]} {{ {typed[1][0]} }} else {{ {typed[2][0]} }})", False
    b = _divisor(a[1], checked) if len(a) > 1 else ""
    simple = {
        "div": lambda: f"super::py_divmod({a[0]}, {b}).0",
        "mod": lambda: f"super::py_divmod({a[0]}, {b}).1",
        "ceil_div": lambda: f"(-super::py_divmod(-{a[0]}, {b}).0)",
        "float": lambda: a[0],
        "abs": lambda: f"({a[0]}).abs()",
        # toward zero, like Python's int(); checked, inf and NaN (Python raises) are errors
        "int": lambda: f"super::float_to_int({a[0]})?" if checked else f"({a[0]} as i64)",
    }
    if op in simple:
        return simple[op](), op != "int"
    return "(" + ".".join([a[0], *(f"{op}({x})" for x in a[1:])]) + ")", True  # min, max


def _rs_int(op: str, a: list[str], checked: bool) -> str:
    """An op on i64 operands."""
    if checked and op in _FALLIBLE:
        return f"super::int_{op}({', '.join(a)})?"
    if op in _BIN:
        return f"({a[0]} {_BIN[op]} {a[1]})"
    if op in _CMP:
        return f"(({a[0]} {_CMP[op]} {a[1]}) as i64)"
    simple = {
        "div": lambda: f"{a[0]}.div_euclid({a[1]})",
        "mod": lambda: f"{a[0]}.rem_euclid({a[1]})",
        "ceil_div": lambda: f"(-(-{a[0]}).div_euclid({a[1]}))",
        "abs": lambda: f"({a[0]}).abs()",
        "and": lambda: f"((({a[0]}) != 0 && ({a[1]}) != 0) as i64)",
        "or": lambda: f"((({a[0]}) != 0 || ({a[1]}) != 0) as i64)",
        "not": lambda: f"((({a[0]}) == 0) as i64)",
        "select": lambda: f"(if {a[0]} != 0 {{ {a[1]} }} else {{ {a[2]} }})",
    }
    if op in simple:
        return simple[op]()
    return "(" + ".".join([a[0], *(f"{op}({x})" for x in a[1:])]) + ")"  # min, max


def _lit(text: str) -> str:
    return json.dumps(text)  # a JSON string is a valid Rust string literal for these texts


def _opt(value: Any) -> str:
    return "None" if value is None else f"Some({_lit(value) if isinstance(value, str) else value})"


def _floats(v: dict[str, Any]) -> set[str]:
    """The f64 variables of a variant: its float sizes and float derived values."""
    floats = set(v.get("float_sizes", ()))
    for d in v["derived"]:
        floats.discard(d["name"])
        if is_float(d["expr"], floats):
            floats.add(d["name"])
    return floats


def _ev(tree: dict[str, Any], floats: Collection[str], whole: bool = True) -> str:
    """A ``super::Ev`` of a tree: ``whole``, an i64 (vendoring wraps a float dispatch or count
    in ``int`` already), else i64 or f64 as Python's value would be typed."""
    code, floating = rs_typed(tree, floats, checked=True)
    return f"super::ev(|| Ok({f'super::float_to_int({code})?' if floating and whole else code}))"


def _fn_vec(head: str, lines: list[str]) -> str:
    """A function that pushes onto ``out`` (no ``mut`` when it pushes nothing: a warning)."""
    inner = ["    let mut out = Vec::new();", *lines, "    out"] if lines else ["    Vec::new()"]
    return "\n".join([f"{head} {{", *inner, "}"])


def _uniform(v: dict[str, Any], floats: Collection[str]) -> list[str]:
    u = v["uniform"]
    misfits = "pub fn uniform_misfits(v: &Vars) -> Vec<String>"
    if u is None:
        return [
            "pub fn uniform_bytes(_v: &Vars) -> Option<Vec<u8>> { Some(Vec::new()) }",
            _fn_vec(misfits, []),
        ]
    fields = "\n".join(f"    pub {f['name']}: {f['type']}," for f in u["fields"])
    # An f32 field takes any value (as Python's struct.pack of a float); u32 and i32 must fit.
    values = ", ".join(
        f"{f['name']}: 0"
        if f["padding"]
        else f"{f['name']}: {_ev(f['value'], floats, whole=False)}.ok()? as f32"
        if f["type"] == "f32"
        else f"{f['name']}: {f['type']}::try_from({_ev(f['value'], floats)}.ok()?).ok()?"
        for f in u["fields"]
    )
    unfit = [  # of an f32 field, only an error (a division by zero) is a misfit
        f"    super::misfit(&mut out, {_lit(f['name'])}, {_lit(f['type'])}, "
        f"{_ev(f['value'], floats, f['type'] != 'f32')}{'.map(|_| 0)' * (f['type'] == 'f32')});"
        for f in u["fields"]
        if not f["padding"]
    ]
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
        "/// None where a field's value does not fit its type (uniform_misfits says which).",
        f"pub fn uniform(v: &Vars) -> Option<{u['struct']}> {{ Some({u['struct']} {{ {values} }}) }}",
        "pub fn uniform_bytes(v: &Vars) -> Option<Vec<u8>> { uniform(v).map(|u| u.to_le_bytes().to_vec()) }",
        _fn_vec(misfits, unfit),
    ]


def _values(v: dict[str, Any], floats: Collection[str]) -> list[str]:
    """The functions of a variant's values at a shape: each value an ``Ev`` (it may fail)."""
    passes = ", ".join(
        f"({_lit(p['entry_point'])}, [{', '.join(_ev(d, floats) for d in p['dispatch'])}])"
        for p in v["passes"]
    )
    sizes = ", ".join(
        f"({_lit(b['name'])}, {_ev(b['min_binding_size'], floats)}, {str(b['kind'] == 'storage').lower()})"
        for b in v["bindings"]
    )
    scratch = ", ".join(f"({_lit(s['binding'])}, {_ev(s['size'], floats)})" for s in v["scratch"])
    # A precondition that cannot be evaluated (Python would raise) fails.
    pre = [
        f"    if {_ev(p['expr'], floats, False)}.map_or(true, |x| x == {_zero(is_float(p['expr'], floats))}) "
        f"{{ out.push({_lit(p['text'])}); }}"
        for p in v["preconditions"]
    ]
    return [
        f"pub fn dispatch(v: &Vars) -> Vec<(&'static str, [super::Ev<i64>; 3])> {{ vec![{passes}] }}",
        f"pub fn buffer_sizes(v: &Vars) -> Vec<(&'static str, super::Ev<i64>, bool)> {{ vec![{sizes}] }}",
        f"pub fn scratch_sizes(v: &Vars) -> Vec<(&'static str, super::Ev<i64>)> {{ vec![{scratch}] }}",
        _fn_vec("pub fn failed_preconditions(v: &Vars) -> Vec<&'static str>", pre),
    ]


def _statics(name: str, v: dict[str, Any]) -> list[str]:
    """A variant's constants: name, WGSL, features, limits, overrides, encodings, bindings."""
    file = v["files"].get("naga") or v["files"]["any"]
    mine = [
        b for b in v["bindings"] if b["kind"] != "uniform" and not b["scratch"] and b["encoding"]
    ]
    encodings = ", ".join(f"({_lit(b['name'])}, {_lit(b['encoding'])})" for b in mine)
    limits = ", ".join(f"({_lit(k)}, {n})" for k, n in sorted(v["limits"].items()))
    constants = ", ".join(f"({_lit(k)}, {_f64(x)})" for k, x in v.get("constants", {}).items())
    bindings = ", ".join(
        f"super::Binding {{ group: {b['group']}, binding: {b['binding']}, name: {_lit(b['name'])}, "
        f"kind: {_lit(b['kind'])}, access: {_lit(b['access'])}, scratch: {str(b['scratch']).lower()} }}"
        for b in v["bindings"]
    )
    return [
        f"pub const NAME: &str = {_lit(name)};",
        f'pub const WGSL: &str = include_str!("../{file}");',
        f"pub const FEATURES: &[&str] = &[{', '.join(_lit(f) for f in v['features'])}];",
        f"pub const LIMITS: &[(&str, i64)] = &[{limits}];",
        f"pub const CONSTANTS: &[(&str, f64)] = &[{constants}];",
        f"pub const ENCODINGS: &[(&str, &str)] = &[{encodings}];",
        f"pub const BINDINGS: &[super::Binding] = &[{bindings}];",
    ]


def _variant_module(name: str, v: dict[str, Any]) -> str:
    kshape = f"super::{kernel_type_name(v['kernel'])}Shape"
    floats = _floats(v)
    names = list(v["sizes"]) + [d["name"] for d in v["derived"]]
    # A derived value that divides by zero is the reference's one reason (Unrunnable).
    lets = "\n".join(
        f"    let v = Vars {{ {d['name']}: {_ev(d['expr'], floats, whole=False)}"
        f'.map_err(|e| format!("derived value {d["name"]} {{}}", e))?, ..v }};'
        for d in v["derived"]
    )
    init = ", ".join(f"{s}: s.{s}" for s in v["sizes"]) + "".join(
        f", {d['name']}: {_zero(d['name'] in floats)}" for d in v["derived"]
    )
    body = [
        *_statics(name, v),
        "#[derive(Clone, Copy, Debug)]",
        f"pub struct Vars {{ {', '.join(f'pub {n}: {_ty(n in floats)}' for n in names)} }}",
        "/// The sizes and derived values; Err: a derived value has none (it divides by zero).",
        f"pub fn vars(s: &{kshape}) -> Result<Vars, String> {{\n    let v = Vars {{ {init} }};\n{lets}\n    Ok(v)\n}}",
        *_uniform(v, floats),
        *_values(v, floats),
        f"variant_parts!({kshape}, {_lit(v['kernel'])});",
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
        cam = kernel_type_name(kernel)
        mine = [v for v in manifest["variants"].values() if v["kernel"] == kernel]
        floats = {s for v in mine for s in v.get("float_sizes", ())}
        fields = " ".join(f"pub {s}: {_ty(s in floats)}," for s in k["sizes"])
        out.append(
            f"#[derive(Clone, Copy, Debug, PartialEq)]\npub struct {cam}Shape {{ {fields} }}"
        )
        # The integer sizes: a float parameter (eps) is in no rule's buckets.
        gets = " ".join(f"{_lit(s)} => Some(s.{s})," for s in k["sizes"] if s not in floats)
        bound = "s" if gets else "_"
        arms_get.append(f"            Shape::{cam}({bound}) => match name {{ {gets} _ => None }},")
        arms_kernel.append(f"            Shape::{cam}(_) => {_lit(kernel)},")
    variants = " ".join(
        f"{kernel_type_name(k)}({kernel_type_name(k)}Shape)," for k in sorted(manifest["kernels"])
    )
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
    arms = [
        f"        ({_lit(name)}, Shape::{kernel_type_name(v['kernel'])}(s)) => Some({name}::parts(s)),"
        for name, v in sorted(manifest["variants"].items())
    ]
    sels = [
        f"        {_lit(k)} => ({k.upper()}_RULES, {k.upper()}_DEFAULT, {k.upper()}_FALLBACK),"
        for k in sorted(manifest["kernels"])
    ]
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
    if any("super::py_divmod(" in p for p in parts):
        parts.insert(3, FLOAT_HELPERS.lstrip("\n"))
    glue = runtime.joinpath("wgpu_glue.rs").read_text(encoding="utf-8")
    return {
        f"rust/{package}.rs": "\n".join(parts).encode(),
        "rust/wgpu_glue.rs": glue.replace("__PACKAGE__", package).encode(),
    }
