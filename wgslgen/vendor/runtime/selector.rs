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

/// A tuning rule: adapter match (None: any), shape buckets [min, max), candidate chain.
pub struct Rule {
    pub vendor: Option<&'static str>,
    pub architecture: Option<&'static str>,
    pub device: Option<&'static str>,
    pub backend: Option<&'static str>,
    pub shape: &'static [(&'static str, Option<i64>, Option<i64>)],
    pub chain: &'static [&'static str],
}

/// Everything about one variant at one shape (what `parts` computes).
pub struct Parts {
    pub name: &'static str,
    pub kernel: &'static str,
    pub wgsl: &'static str,
    pub features: &'static [&'static str],
    pub limits: &'static [(&'static str, i64)],
    pub preconditions: Vec<&'static str>,
    pub dispatch: Vec<(&'static str, [i64; 3])>,
    pub buffer_sizes: Vec<(&'static str, i64, bool)>,
    pub scratch_sizes: Vec<(&'static str, i64)>,
    pub uniform: Vec<u8>,
    pub constants: &'static [(&'static str, f64)],
    pub encodings: &'static [(&'static str, &'static str)],
}

/// What to run: the variant, its WGSL, every pass's workgroup counts, sizes, uniform bytes.
#[derive(Clone, Debug)]
pub struct Plan {
    pub kernel: &'static str,
    pub variant: &'static str,
    pub wgsl: &'static str,
    pub dispatch: Vec<(&'static str, [u32; 3])>,
    pub buffer_sizes: Vec<(&'static str, u64)>,
    pub scratch_sizes: Vec<(&'static str, u64)>,
    pub uniform: Vec<u8>,
    pub rejected: Vec<(&'static str, String)>,
    /// Values of the shader's `override`s: every pass's pipeline is created with them.
    pub constants: &'static [(&'static str, f64)],
    /// How each caller buffer holds its values ("f32", "f16", "pf16": f16 pairs, "u32",
    /// "i32"): the selector may choose an f16 variant, whose buffers hold 2-byte values.
    pub encodings: &'static [(&'static str, &'static str)],
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
    for text in &p.preconditions {
        out.push(format!("precondition `{}` fails", text));
    }
    if !out.is_empty() {
        return out;
    }
    if let Some(most) = f.limit("maxComputeWorkgroupsPerDimension") {
        for (entry, xyz) in &p.dispatch {
            for (axis, n) in ["x", "y", "z"].iter().zip(xyz.iter()) {
                if *n > most {
                    out.push(format!("{} dispatch {} {} > maxComputeWorkgroupsPerDimension {}", entry, axis, n, most));
                }
            }
        }
    }
    for (name, size, storage) in &p.buffer_sizes {
        for limit in ["maxStorageBufferBindingSize", "maxBufferSize"] {
            if let Some(have) = f.limit(limit) {
                if *storage && *size > have {
                    out.push(format!("{} needs {} B > {} {}", name, size, limit, have));
                }
            }
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

fn to_plan(p: Parts, rejected: Vec<(&'static str, String)>) -> Plan {
    Plan {
        kernel: p.kernel,
        variant: p.name,
        wgsl: p.wgsl,
        dispatch: p.dispatch.iter().map(|(e, d)| (*e, [d[0] as u32, d[1] as u32, d[2] as u32])).collect(),
        buffer_sizes: p.buffer_sizes.iter().map(|(n, s, _)| (*n, *s as u64)).collect(),
        scratch_sizes: p.scratch_sizes.iter().map(|(n, s)| (*n, *s as u64)).collect(),
        uniform: p.uniform,
        rejected,
        constants: p.constants,
        encodings: p.encodings,
    }
}

/// The first viable candidate's plan, or NoViable naming why each candidate was dropped.
pub fn select(f: &AdapterFacts, shape: &Shape) -> Result<Plan, NoViable> {
    let mut rejected: Vec<(&'static str, String)> = Vec::new();
    for name in candidates(f, shape) {
        let p = parts(name, shape).expect("a candidate is a vendored variant of this kernel");
        let why = why_not(&p, f);
        if why.is_empty() {
            return Ok(to_plan(p, rejected));
        }
        rejected.push((name, why.join("; ")));
    }
    Err(NoViable { kernel: shape.kernel(), rejected })
}

/// The plan of one named variant (no selection; preconditions not checked).
pub fn plan_for(variant: &str, shape: &Shape) -> Option<Plan> {
    parts(variant, shape).map(|p| to_plan(p, Vec::new()))
}

// ---- generated data ----
