// ---- selector (the same algorithm as the Python runtime; the conformance cases check it) ----

/// What the selector knows of an adapter: identity, optional features, limits (camelCase).
#[derive(Clone, Copy, Debug)]
pub struct AdapterFacts<'a> {
    pub vendor: &'a str,
    pub architecture: &'a str,
    pub device: &'a str,
    pub backend: &'a str,
    pub features: &'a [&'a str],
    pub limits: &'a [(&'a str, i64)],
}

impl<'a> AdapterFacts<'a> {
    pub fn limit(&self, name: &str) -> Option<i64> {
        self.limits.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
    }
}

/// WebGPU's default limits that a vendored variant may need more of (camelCase).
pub const WEBGPU_DEFAULTS: &[(&str, u64)] = &[
    ("maxComputeWorkgroupStorageSize", 16384), ("maxComputeInvocationsPerWorkgroup", 256),
    ("maxComputeWorkgroupSizeX", 256), ("maxComputeWorkgroupSizeY", 256),
    ("maxComputeWorkgroupSizeZ", 64), ("maxStorageBuffersPerShaderStage", 8),
    ("maxUniformBuffersPerShaderStage", 12), ("maxUniformBufferBindingSize", 65536),
    ("maxBindGroups", 4), ("maxStorageBufferBindingSize", 134217728),
    ("maxBufferSize", 268435456), ("maxComputeWorkgroupsPerDimension", 65535),
];

// ---- size arithmetic: Python's integers, where Rust's would panic or wrap ----

/// Why a size expression has no value. Python raises ZeroDivisionError on the first; its
/// integers never overflow, so the second is Rust's own (a shape no device could hold).
pub const DIVIDES_BY_ZERO: &str = "divides by zero";
pub const OVERFLOWS: &str = "overflows i64";
/// The value of a size expression, or why it has none.
pub type Ev<T> = Result<T, &'static str>;

/// Runs one generated expression: its `?`s (a failed division or overflow) return here.
pub fn ev<T>(f: impl FnOnce() -> Ev<T>) -> Ev<T> {
    f()
}
pub fn int_add(a: i64, b: i64) -> Ev<i64> {
    a.checked_add(b).ok_or(OVERFLOWS)
}
pub fn int_sub(a: i64, b: i64) -> Ev<i64> {
    a.checked_sub(b).ok_or(OVERFLOWS)
}
pub fn int_mul(a: i64, b: i64) -> Ev<i64> {
    a.checked_mul(b).ok_or(OVERFLOWS)
}
pub fn int_abs(a: i64) -> Ev<i64> {
    a.checked_abs().ok_or(OVERFLOWS)
}
/// Python's `a // b`: it floors, where Rust's `/` truncates toward zero.
pub fn int_div(a: i64, b: i64) -> Ev<i64> {
    if b == 0 {
        return Err(DIVIDES_BY_ZERO);
    }
    let q = a.checked_div(b).ok_or(OVERFLOWS)?;
    Ok(if a % b != 0 && (a < 0) != (b < 0) { q - 1 } else { q })
}
/// Python's `a % b`: the remainder takes the divisor's sign.
pub fn int_mod(a: i64, b: i64) -> Ev<i64> {
    if b == 0 {
        return Err(DIVIDES_BY_ZERO);
    }
    let r = a.wrapping_rem(b); // i64::MIN % -1 is 0, as in Python
    Ok(if r != 0 && (r < 0) != (b < 0) { r + b } else { r })
}
/// Python's `-(-a // b)`, the ceiling (not negated here: -i64::MIN overflows, the result may not).
pub fn int_ceil_div(a: i64, b: i64) -> Ev<i64> {
    if b == 0 {
        return Err(DIVIDES_BY_ZERO);
    }
    let q = a.checked_div(b).ok_or(OVERFLOWS)?;
    Ok(if a % b != 0 && (a < 0) == (b < 0) { q + 1 } else { q })
}
/// A float divisor: f64 division by zero gives inf or NaN, where Python raises.
pub fn nonzero(b: f64) -> Ev<f64> {
    if b == 0.0 { Err(DIVIDES_BY_ZERO) } else { Ok(b) }
}
/// Python's `int(x)` (toward zero); `as i64` would saturate inf and make NaN 0.
pub fn float_to_int(x: f64) -> Ev<i64> {
    let t = x.trunc();
    if t >= -9223372036854775808.0 && t < 9223372036854775808.0 { Ok(t as i64) } else { Err(OVERFLOWS) }
}

/// One uniform field's reason to refuse the variant, if its value does not fit its type (u32,
/// i32; an f32 takes any value) or it has none.
pub fn misfit(out: &mut Vec<String>, name: &str, ty: &str, value: Ev<i64>) {
    let fits = |x: i64| match ty {
        "u32" => u32::try_from(x).is_ok(),
        "i32" => i32::try_from(x).is_ok(),
        _ => true,
    };
    match value {
        Ok(x) if !fits(x) => out.push(format!("uniform field {} = {} does not fit {}", name, x, ty)),
        Ok(_) => {}
        Err(e) => out.push(format!("uniform field {} {}", name, e)),
    }
}

/// A tuning rule: adapter match (None: any), shape buckets [min, max), candidate chain.
pub struct Rule {
    pub vendor: Option<&'static str>,
    pub architecture: Option<&'static str>,
    pub device: Option<&'static str>,
    pub backend: Option<&'static str>,
    pub shape: &'static [(&'static str, Option<i64>, Option<i64>)],
    pub chain: &'static [&'static str],
}

/// One binding of a variant, as the manifest declares it (the passes share one layout).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Binding {
    pub group: u32,
    pub binding: u32,
    pub name: &'static str,
    /// "uniform" or "storage".
    pub kind: &'static str,
    /// "read" or "read_write".
    pub access: &'static str,
    /// The kernel's own working memory, not the caller's data: the caller creates it (a
    /// storage buffer of `plan.scratch_sizes`' bytes; its contents need no initialising).
    pub scratch: bool,
}

/// Everything about one variant at one shape (what `parts` computes).
pub struct Parts {
    pub name: &'static str,
    pub kernel: &'static str,
    pub wgsl: &'static str,
    pub features: &'static [&'static str],
    pub limits: &'static [(&'static str, i64)],
    pub bindings: &'static [Binding],
    pub constants: &'static [(&'static str, f64)],
    pub encodings: &'static [(&'static str, &'static str)],
    /// The values at the shape, or why the variant cannot run at all there (a derived value
    /// divides by zero: the one reason the reference gives).
    pub at: Result<At, String>,
}

/// The values of one variant at one shape; each may have failed (see `Ev`).
pub struct At {
    pub preconditions: Vec<&'static str>,
    pub misfits: Vec<String>,
    pub dispatch: Vec<(&'static str, [Ev<i64>; 3])>,
    pub buffer_sizes: Vec<(&'static str, Ev<i64>, bool)>,
    pub scratch_sizes: Vec<(&'static str, Ev<i64>)>,
    pub uniform: Option<Vec<u8>>,
}

/// A generated variant module's `parts`: everything about it at a shape (its items in scope).
macro_rules! variant_parts {
    ($shape:ty, $kernel:literal) => {
        pub fn parts(s: &$shape) -> super::Parts {
            super::Parts {
                name: NAME, kernel: $kernel, wgsl: WGSL, features: FEATURES, limits: LIMITS,
                bindings: BINDINGS, constants: CONSTANTS, encodings: ENCODINGS,
                at: vars(s).map(|v| super::At {
                    preconditions: failed_preconditions(&v), misfits: uniform_misfits(&v),
                    dispatch: dispatch(&v), buffer_sizes: buffer_sizes(&v),
                    scratch_sizes: scratch_sizes(&v), uniform: uniform_bytes(&v),
                }),
            }
        }
    };
}

/// What to run: the variant, its WGSL, every pass's workgroup counts, sizes, uniform bytes.
#[derive(Clone, Debug)]
pub struct Plan {
    pub kernel: &'static str,
    pub variant: &'static str,
    pub wgsl: &'static str,
    pub dispatch: Vec<(&'static str, [u32; 3])>,
    /// Bytes per binding name, uniform and scratch included.
    pub buffer_sizes: Vec<(&'static str, u64)>,
    pub scratch_sizes: Vec<(&'static str, u64)>,
    pub uniform: Vec<u8>,
    pub rejected: Vec<(&'static str, String)>,
    /// Values of the shader's `override`s: every pass's pipeline is created with them.
    pub constants: &'static [(&'static str, f64)],
    /// How each caller buffer holds its values ("f32", "f16", "pf16": f16 pairs, "u32",
    /// "i32"): the selector may choose an f16 variant, whose buffers hold 2-byte values.
    pub encodings: &'static [(&'static str, &'static str)],
    /// The optional features (WebGPU names) the device must be created with.
    pub features: &'static [&'static str],
    /// The limits above WebGPU's defaults (camelCase, sorted) the device must be created
    /// with: the variant's own, and those its buffers' sizes need.
    pub required_limits: Vec<(&'static str, u64)>,
    /// The variant's bindings: layout entries, and which buffers are scratch.
    pub bindings: &'static [Binding],
}

/// No vendored variant can run: each candidate with why it was dropped.
#[derive(Clone, Debug)]
pub struct NoViable {
    pub kernel: &'static str,
    pub rejected: Vec<(&'static str, String)>,
}

impl core::fmt::Display for NoViable {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "no viable variant of {}:", self.kernel)?;
        for (v, why) in &self.rejected {
            write!(f, " {}: {};", v, why)?;
        }
        Ok(())
    }
}

fn why_not(p: &Parts, f: &AdapterFacts) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for feat in p.features {
        if !f.features.contains(feat) {
            out.push(format!("needs feature {}", feat));
        }
    }
    for (name, need) in p.limits {
        if let Some(have) = f.limit(name) {
            if *need > have {
                out.push(format!("needs {} {} > {}", name, need, have));
            }
        }
    }
    if !out.is_empty() {
        return out;
    }
    let at = match &p.at {
        Ok(at) => at,
        Err(why) => return vec![why.clone()],
    };
    for text in &at.preconditions {
        out.push(format!("precondition `{}` fails", text));
    }
    if !out.is_empty() {
        return out;
    }
    out.extend(at.misfits.iter().cloned());
    let most = f.limit("maxComputeWorkgroupsPerDimension");
    for (entry, xyz) in &at.dispatch {
        for (axis, n) in ["x", "y", "z"].iter().zip(xyz.iter()) {
            match n {
                Ok(n) if most.map_or(false, |m| *n > m) => out.push(format!(
                    "{} dispatch {} {} > maxComputeWorkgroupsPerDimension {}", entry, axis, n, most.unwrap_or(0))),
                // Rust's own: the reference would plan it (a device would refuse it).
                Ok(n) if u32::try_from(*n).is_err() => out.push(format!("{} dispatch {} {} does not fit u32", entry, axis, n)),
                Ok(_) => {}
                Err(e) => out.push(format!("{} dispatch {} {}", entry, axis, e)),
            }
        }
    }
    for (name, size, storage) in &at.buffer_sizes {
        match size {
            Ok(size) => {
                for limit in ["maxStorageBufferBindingSize", "maxBufferSize"] {
                    if let Some(have) = f.limit(limit) {
                        if *storage && *size > have {
                            out.push(format!("{} needs {} B > {} {}", name, size, limit, have));
                        }
                    }
                }
                if *size < 0 {
                    out.push(format!("{} needs {} B", name, size));
                }
            }
            Err(e) => out.push(format!("{} size {}", name, e)),
        }
    }
    for (name, size) in &at.scratch_sizes {
        if let Err(e) = size.and_then(|s| u64::try_from(s).map_err(|_| OVERFLOWS)) {
            out.push(format!("scratch {} size {}", name, e));
        }
    }
    out
}

fn same(want: Option<&str>, have: &str) -> bool {
    want.map_or(true, |w| w.eq_ignore_ascii_case(have))
}

/// The chain to try: the first matching rule's, the default chain, the portable fallback.
pub fn candidates(f: &AdapterFacts, shape: &Shape) -> Vec<&'static str> {
    let (rules, default, fallback) = selection(shape.kernel());
    let mut chain: Vec<&'static str> = Vec::new();
    for r in rules {
        let adapter = same(r.vendor, f.vendor) && same(r.architecture, f.architecture)
            && same(r.device, f.device) && same(r.backend, f.backend);
        let in_bucket = r.shape.iter().all(|(size, lo, hi)| {
            let v = shape.get(size).unwrap_or(0);
            lo.map_or(true, |m| v >= m) && hi.map_or(true, |m| v < m)
        });
        if adapter && in_bucket {
            chain.extend_from_slice(r.chain);
            break;
        }
    }
    chain.extend_from_slice(default);
    chain.push(fallback);
    let mut seen: Vec<&'static str> = Vec::new();
    for c in chain {
        if !seen.contains(&c) {
            seen.push(c);
        }
    }
    seen
}

/// The limits above WebGPU's defaults a device needs: the variant's, and per binding
/// maxUniformBufferBindingSize or maxStorageBufferBindingSize, and maxBufferSize.
fn required_limits(limits: &[(&'static str, i64)], sizes: &[(&'static str, u64, bool)]) -> Vec<(&'static str, u64)> {
    let mut need: Vec<(&'static str, u64)> = Vec::new();
    let mut raise = |name: &'static str, n: u64| match need.iter_mut().find(|(k, _)| *k == name) {
        Some(have) => have.1 = have.1.max(n),
        None => need.push((name, n)),
    };
    for (name, n) in limits {
        raise(*name, u64::try_from(*n).unwrap_or(0));
    }
    for (_, size, storage) in sizes {
        raise(if *storage { "maxStorageBufferBindingSize" } else { "maxUniformBufferBindingSize" }, *size);
        raise("maxBufferSize", *size);
    }
    need.retain(|(k, n)| WEBGPU_DEFAULTS.iter().any(|(d, default)| d == k && n > default));
    need.sort();
    need
}

fn to_u32(n: &Ev<i64>) -> Option<u32> {
    n.ok().and_then(|n| u32::try_from(n).ok())
}

fn to_u64(n: &Ev<i64>) -> Option<u64> {
    n.ok().and_then(|n| u64::try_from(n).ok())
}

/// The plan of `p`, or None where a value does not fit the plan's types (why_not says why).
fn to_plan(p: &Parts) -> Option<Plan> {
    let at = p.at.as_ref().ok()?;
    let mut dispatch = Vec::new();
    for (entry, d) in &at.dispatch {
        dispatch.push((*entry, [to_u32(&d[0])?, to_u32(&d[1])?, to_u32(&d[2])?]));
    }
    let mut sized = Vec::new();
    for (name, size, storage) in &at.buffer_sizes {
        sized.push((*name, to_u64(size)?, *storage));
    }
    let mut scratch_sizes = Vec::new();
    for (name, size) in &at.scratch_sizes {
        scratch_sizes.push((*name, to_u64(size)?));
    }
    Some(Plan {
        kernel: p.kernel,
        variant: p.name,
        wgsl: p.wgsl,
        dispatch,
        buffer_sizes: sized.iter().map(|(n, s, _)| (*n, *s)).collect(),
        scratch_sizes,
        uniform: at.uniform.clone()?,
        rejected: Vec::new(),
        constants: p.constants,
        encodings: p.encodings,
        features: p.features,
        required_limits: required_limits(p.limits, &sized),
        bindings: p.bindings,
    })
}

/// The first viable candidate's plan, or NoViable naming why each candidate was dropped.
pub fn select(f: &AdapterFacts, shape: &Shape) -> Result<Plan, NoViable> {
    let mut rejected: Vec<(&'static str, String)> = Vec::new();
    for name in candidates(f, shape) {
        let mut why = match parts(name, shape) {
            Some(p) => {
                let why = why_not(&p, f);
                match to_plan(&p) {
                    Some(mut plan) if why.is_empty() => {
                        plan.rejected = rejected;
                        return Ok(plan);
                    }
                    _ => why,
                }
            }
            None => vec![format!("not a vendored variant of {}", shape.kernel())],
        };
        if why.is_empty() {
            why.push("a value does not fit the plan's types".to_string()); // why_not says which
        }
        rejected.push((name, why.join("; ")));
    }
    Err(NoViable { kernel: shape.kernel(), rejected })
}

/// The plan of one named variant (no selection; preconditions not checked). None where
/// `variant` is not a vendored variant of the shape's kernel, or it cannot be planned at
/// `shape`: a derived value divides by zero, or a value does not fit (a uniform field its
/// u32 or i32, a workgroup count u32); `select` gives the reasons.
pub fn plan_for(variant: &str, shape: &Shape) -> Option<Plan> {
    parts(variant, shape).and_then(|p| to_plan(&p))
}

// ---- buffer bytes: encode and decode in the plan's encoding, check buffer sizes ----

fn encoding_of(plan: &Plan, name: &str) -> Result<&'static str, String> {
    plan.encodings.iter().find(|(n, _)| *n == name).map(|(_, e)| *e).ok_or_else(|| {
        let mut known: Vec<&str> = plan.encodings.iter().map(|(n, _)| *n).collect();
        known.sort();
        format!("{}: no caller binding '{}'; bindings: {}", plan.variant, name, known.join(", "))
    })
}

/// IEEE binary16 bits of `x`, rounded to nearest even as numpy's float32 -> float16 cast
/// (subnormals; overflow to inf; NaN stays NaN; the sign of zero kept).
pub fn f16_bits(x: f32) -> u16 {
    let f = x.to_bits();
    let sign = ((f >> 16) & 0x8000) as u16;
    let (exp, sig) = (f & 0x7f80_0000, f & 0x007f_ffff);
    if exp == 0x7f80_0000 {
        // inf, or NaN with its top payload bits (at least one set, so it stays NaN)
        return sign | 0x7c00 | if sig == 0 { 0 } else { ((sig >> 13) as u16).max(1) };
    }
    if exp >= 0x4780_0000 {
        return sign | 0x7c00; // |x| >= 65536 rounds past the largest half, 65504
    }
    if exp <= 0x3800_0000 {
        if exp < 0x3300_0000 {
            return sign; // below half the smallest subnormal: zero
        }
        let e = exp >> 23;
        let mut s = (0x0080_0000 | sig) >> (113 - e);
        // the shift drops up to 11 bits: a tie only when all of them were zero too
        if (s & 0x3fff) != 0x1000 || (f & 0x7ff) != 0 {
            s += 0x1000;
        }
        return sign | (s >> 13) as u16;
    }
    let mut s = sig;
    if (s & 0x3fff) != 0x1000 {
        s += 0x1000;
    }
    // a carry out of the significand moves to the exponent, up to inf: still correct
    sign | (((exp - 0x3800_0000) >> 13) + (s >> 13)) as u16
}

/// The f32 value of IEEE binary16 bits (exact).
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = ((h & 0x8000) as u32) << 16;
    let (exp, sig) = (((h >> 10) & 0x1f) as u32, (h & 0x3ff) as u32);
    match exp {
        0 => {
            let x = sig as f32 * (1.0 / 16777216.0);
            if sign != 0 { -x } else { x }
        }
        31 => f32::from_bits(sign | 0x7f80_0000 | (sig << 13)),
        _ => f32::from_bits(sign | ((exp + 112) << 23) | (sig << 13)),
    }
}

/// The bytes of caller binding `name` holding `values` in the plan's encoding: "f32"
/// little-endian f32; "f16" binary16 (an f16 variant reads float32 bytes as garbage);
/// "pf16" the same halves, two per u32 word, element 0 in the low half, an odd count padded
/// with one zero half. Integer bindings ("u32", "i32") hold the caller's own bytes: an error.
pub fn encode(plan: &Plan, name: &str, values: &[f32]) -> Result<Vec<u8>, String> {
    let enc = encoding_of(plan, name)?;
    let mut out: Vec<u8> = match enc {
        "f32" => values.iter().flat_map(|x| x.to_le_bytes()).collect(),
        "f16" | "pf16" => values.iter().flat_map(|x| f16_bits(*x).to_le_bytes()).collect(),
        _ => return Err(format!("{}: binding {} holds {} values, not floats: write its bytes yourself", plan.variant, name, enc)),
    };
    if enc == "pf16" && values.len() % 2 == 1 {
        out.extend_from_slice(&[0, 0]);
    }
    Ok(out)
}

/// Every value the bytes of caller binding `name` hold, as f32 ("f32", "f16", "pf16";
/// pf16's padding half too: keep the count you need).
pub fn decode_f32(plan: &Plan, name: &str, bytes: &[u8]) -> Result<Vec<f32>, String> {
    let enc = encoding_of(plan, name)?;
    let width = match enc {
        "f32" => 4,
        "f16" | "pf16" => 2,
        _ => return Err(format!("{}: binding {} holds {} values, not floats", plan.variant, name, enc)),
    };
    if bytes.len() % width != 0 {
        return Err(format!("{}: {} bytes are no whole number of {} values", plan.variant, bytes.len(), enc));
    }
    Ok(if width == 4 {
        bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
    } else {
        bytes.chunks_exact(2).map(|c| f16_to_f32(u16::from_le_bytes([c[0], c[1]]))).collect()
    })
}

/// Refuses a buffer smaller than its binding needs (wgpu would clamp the reads past its
/// end: wrong results, no error) or one named after no binding; `sizes`: (name, bytes).
pub fn check_buffers(plan: &Plan, sizes: &[(&str, u64)]) -> Result<(), String> {
    if let Some((name, _)) = sizes.iter().find(|(n, _)| !plan.bindings.iter().any(|b| b.name == *n)) {
        let names: Vec<&str> = plan.bindings.iter().map(|b| b.name).collect();
        return Err(format!("{}: no binding '{}'; bindings: {}", plan.variant, name, names.join(", ")));
    }
    for b in plan.bindings {
        let need = plan.buffer_sizes.iter().find(|(n, _)| *n == b.name).map_or(0, |(_, s)| *s);
        if let Some((_, have)) = sizes.iter().find(|(n, have)| *n == b.name && *have < need) {
            let how = plan.encodings.iter().find(|(n, _)| *n == b.name).map_or(b.kind, |(_, e)| *e);
            return Err(format!("{}: buffer {} holds {} bytes; the binding needs {} ({} values)", plan.variant, b.name, have, need, how));
        }
    }
    Ok(())
}

// ---- generated data ----
