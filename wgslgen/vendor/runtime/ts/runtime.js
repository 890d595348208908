// ---- runtime of a folder vendored by `wgslgen vendor` (generated: do not edit) ----
// The selector is the same algorithm as the Python runtime's; the shared conformance cases
// check that. No dependency: WebGPU types come from the platform (@webgpu/types in TS).
export class NoViableError extends Error {
    kernel;
    shape;
    rejected;
    constructor(kernel, shape, rejected) {
        super(`no viable variant of ${kernel} for ${JSON.stringify(shape)}: ` + rejected.map(([v, r]) => `${v}: ${r}`).join("; "));
        this.kernel = kernel;
        this.shape = shape;
        this.rejected = rejected;
    }
}
/** A shape at which a variant cannot run at all (whyNot gives it as the one reason). */
export class UnrunnableError extends Error {
}
class DivisionByZero extends Error {
}
const floorDiv = (a, b) => Math.floor(a / b);
/** Python's divmod of two floats (CPython's float_divmod): // floors, % takes the divisor's sign. */
function pyDivmod(a, b) {
    let m = a % b;
    let div = (a - m) / b;
    if (m) {
        if ((b < 0) !== (m < 0)) {
            m += b;
            div -= 1;
        }
    }
    else
        m = b < 0 ? -0 : 0;
    let floor;
    if (div) {
        floor = Math.floor(div);
        if (div - floor > 0.5)
            floor += 1;
    }
    else
        floor = a / b < 0 ? -0 : 0;
    return [floor, m];
}
const isInt = (a, b) => Number.isInteger(a) && Number.isInteger(b);
const DIVIDING = new Set(["fdiv", "div", "mod", "ceil_div"]);
const BIN = {
    add: (a, b) => a + b, sub: (a, b) => a - b, mul: (a, b) => a * b, fdiv: (a, b) => a / b,
    div: (a, b) => isInt(a, b) ? floorDiv(a, b) : pyDivmod(a, b)[0],
    mod: (a, b) => isInt(a, b) ? a - b * floorDiv(a, b) : pyDivmod(a, b)[1],
    ceil_div: (a, b) => -floorDiv(-a, b),
    lt: (a, b) => +(a < b), le: (a, b) => +(a <= b), gt: (a, b) => +(a > b),
    ge: (a, b) => +(a >= b), eq: (a, b) => +(a === b), ne: (a, b) => +(a !== b),
};
/** The value of an expression tree: integers and floats as Python computes them (`fdiv` is `/`,
 * `div` and `mod` floor as Python's `//` and `%`, `int` truncates toward zero). */
export function evaluate(t, scope) {
    const a = t.args ?? [];
    switch (t.op) {
        case "const":
        case "fconst": return t.value;
        case "var": return scope[t.name];
        case "select": return evaluate(evaluate(a[0], scope) ? a[1] : a[2], scope);
        case "and": return +(!!evaluate(a[0], scope) && !!evaluate(a[1], scope));
        case "or": return +(!!evaluate(a[0], scope) || !!evaluate(a[1], scope));
        case "not": return +!evaluate(a[0], scope);
        case "int": return Math.trunc(evaluate(a[0], scope));
        case "float": return evaluate(a[0], scope);
        case "abs": return Math.abs(evaluate(a[0], scope));
        case "min": return Math.min(...a.map((x) => evaluate(x, scope)));
        case "max": return Math.max(...a.map((x) => evaluate(x, scope)));
        default: {
            const [x, y] = [evaluate(a[0], scope), evaluate(a[1], scope)];
            if (y === 0 && DIVIDING.has(t.op))
                throw new DivisionByZero(); // as Python raises
            return BIN[t.op](x, y);
        }
    }
}
/** Sizes (integers; float parameters such as eps may be any number) and derived values, in order. */
export function problemScope(v, shape) {
    const scope = {};
    const floats = v.float_sizes ?? [];
    for (const s of v.sizes) {
        if (!(s in shape))
            throw new Error(`${v.name}: shape lacks ${s}`);
        const x = shape[s];
        if (typeof x !== "number" || !(floats.includes(s) ? Number.isFinite(x) : Number.isInteger(x))) {
            throw new Error(`${v.name}: ${s}=${String(x)} is not ${floats.includes(s) ? "a number" : "an integer"}`);
        }
        scope[s] = x;
    }
    for (const d of v.derived) {
        try {
            scope[d.name] = evaluate(d.expr, scope);
        }
        catch (e) {
            if (e instanceof DivisionByZero)
                throw new UnrunnableError(`derived value ${d.name} divides by zero`);
            throw e;
        }
    }
    return scope;
}
const RANGES = { u32: [0, 2 ** 32 - 1], i32: [-(2 ** 31), 2 ** 31 - 1] };
function uniformMisfits(v, scope) {
    const out = [];
    for (const f of v.uniform?.fields ?? []) {
        if (f.padding || !f.value || !(f.type in RANGES))
            continue;
        const x = evaluate(f.value, scope), [low, high] = RANGES[f.type];
        if (!(low <= x && x <= high))
            out.push(`uniform field ${f.name} = ${x} does not fit ${f.type}`);
    }
    return out;
}
/** The uniform's bytes, little-endian on a DataView (padding zero). */
export function packUniform(v, scope) {
    if (!v.uniform)
        return new Uint8Array(0);
    const out = new Uint8Array(v.uniform.size);
    const view = new DataView(out.buffer);
    for (const f of v.uniform.fields) {
        if (f.padding || !f.value)
            continue;
        const x = evaluate(f.value, scope);
        if (f.type === "u32")
            view.setUint32(f.offset, x, true);
        else if (f.type === "i32")
            view.setInt32(f.offset, x, true);
        else
            view.setFloat32(f.offset, x, true);
    }
    return out;
}
/** f16 bits → number, by bit conversion (no Float16Array needed). */
export function f16ToNumber(h) {
    const s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 0x1f, m = h & 0x3ff;
    if (e === 0)
        return s * m * 2 ** -24;
    if (e === 31)
        return m ? NaN : s * Infinity;
    return s * (1 + m / 1024) * 2 ** (e - 15);
}
const has = (set, x) => Array.isArray(set) ? set.includes(x) : set.has(x);
/** Every reason `v` cannot run on `facts` at `shape` (empty: it can). */
export function whyNot(v, facts, shape) {
    const out = v.features.filter((f) => !has(facts.features, f)).map((f) => `needs feature ${f}`);
    for (const name of Object.keys(v.limits).sort()) {
        const have = facts.limits[name];
        if (have !== undefined && v.limits[name] > have)
            out.push(`needs ${name} ${v.limits[name]} > ${have}`);
    }
    if (out.length)
        return out;
    let scope;
    try {
        scope = problemScope(v, shape);
    }
    catch (e) {
        if (e instanceof UnrunnableError)
            return [e.message];
        throw e;
    }
    for (const p of v.preconditions)
        if (!evaluate(p.expr, scope))
            out.push(`precondition \`${p.text}\` fails`);
    if (out.length)
        return out;
    out.push(...uniformMisfits(v, scope));
    const most = facts.limits["maxComputeWorkgroupsPerDimension"];
    for (const p of v.passes) {
        p.dispatch.forEach((d, i) => {
            const n = evaluate(d, scope);
            if (most !== undefined && n > most)
                out.push(`${p.entry_point} dispatch ${"xyz"[i]} ${n} > maxComputeWorkgroupsPerDimension ${most}`);
        });
    }
    for (const b of v.bindings) {
        const size = evaluate(b.min_binding_size, scope);
        for (const limit of ["maxStorageBufferBindingSize", "maxBufferSize"]) {
            const have = facts.limits[limit];
            if (b.kind === "storage" && have !== undefined && size > have)
                out.push(`${b.name} needs ${size} B > ${limit} ${have}`);
        }
    }
    return out;
}
function ruleApplies(r, facts, shape) {
    for (const [key, want] of Object.entries(r.match)) {
        const have = String(facts[key] ?? "");
        if (want !== null && have.toLowerCase() !== want.toLowerCase())
            return false;
    }
    return Object.entries(r.shape).every(([s, b]) => (b.min === null || shape[s] >= b.min) && (b.max === null || shape[s] < b.max));
}
/** The chain to try: the first matching rule's, the default chain, the portable fallback. */
export function candidates(m, kernel, facts, shape) {
    const sel = m.kernels[kernel].selection;
    const chain = [];
    const rule = sel.rules.find((r) => ruleApplies(r, facts, shape));
    if (rule)
        chain.push(...rule.chain.map((c) => c.variant));
    chain.push(...sel.default_chain, sel.portable_fallback);
    return [...new Set(chain)];
}
/** The plan of one named variant at `shape` (no selection). */
export function planFor(m, name, shape, rejected = []) {
    const v = m.variants[name];
    const scope = problemScope(v, shape);
    const bufferSizes = {};
    for (const b of v.bindings)
        bufferSizes[b.name] = evaluate(b.min_binding_size, scope);
    const scratchSizes = {};
    for (const s of v.scratch)
        scratchSizes[s.binding] = evaluate(s.size, scope);
    const dispatch = v.passes.map((p) => [p.entry_point, p.dispatch.map((d) => evaluate(d, scope))]);
    const constants = { ...(v.constants ?? {}) };
    const encodings = {};
    for (const b of v.bindings)
        if (b.kind !== "uniform" && !b.scratch && b.encoding)
            encodings[b.name] = b.encoding;
    return { kernel: v.kernel, variant: name, scope, dispatch, bufferSizes, scratchSizes, uniform: packUniform(v, scope), rejected, constants, encodings };
}
/** The first viable candidate's plan; NoViableError names why each candidate was dropped. */
export function selectWithFacts(m, kernel, facts, shape) {
    if (!(kernel in m.kernels))
        throw new Error(`no vendored kernel ${kernel}`);
    const rejected = [];
    for (const name of candidates(m, kernel, facts, shape)) {
        const why = whyNot(m.variants[name], facts, shape);
        if (!why.length)
            return planFor(m, name, shape, rejected);
        rejected.push([name, why.join("; ")]);
    }
    throw new NoViableError(kernel, shape, rejected);
}
/** AdapterFacts of a WebGPU adapter (adapter.info, adapter.features, adapter.limits). */
export function adapterFacts(adapter, limitNames) {
    const info = adapter.info;
    const limits = {};
    const all = adapter.limits;
    for (const n of limitNames)
        if (typeof all[n] === "number")
            limits[n] = all[n];
    return {
        vendor: info?.vendor ?? "", architecture: info?.architecture ?? "", device: info?.device ?? "",
        backend: "", features: new Set([...adapter.features]), limits,
    };
}
/** The explicit bind group layout of a variant's group (its passes share it). */
export function bindGroupLayoutDescriptor(v, group = 0) {
    return {
        label: `${v.name} group ${group}`,
        entries: v.bindings.filter((b) => b.group === group).map((b) => ({
            binding: b.binding,
            visibility: GPUShaderStage.COMPUTE,
            buffer: { type: b.kind === "uniform" ? "uniform" : b.access === "read" ? "read-only-storage" : "storage" },
        })),
    };
}
/** Features and limits (above WebGPU's defaults) a device needs for `plan`: the variant's
 * own, and those its buffers' sizes need (a default device refuses a larger binding). */
export function requirements(m, plan, defaults) {
    const v = m.variants[plan.variant];
    const need = { ...v.limits };
    for (const b of v.bindings) {
        const size = plan.bufferSizes[b.name];
        for (const k of [b.kind === "uniform" ? "maxUniformBufferBindingSize" : "maxStorageBufferBindingSize", "maxBufferSize"])
            need[k] = Math.max(need[k] ?? 0, size);
    }
    const requiredLimits = {};
    for (const k of Object.keys(need).sort())
        if (defaults[k] !== undefined && need[k] > defaults[k])
            requiredLimits[k] = need[k];
    return { requiredFeatures: [...v.features], requiredLimits };
}
// A decode loop runs the same variant on one device every step: compile its module, layouts
// and pipelines once per device (dropped with the device), not on every call. Keyed by the
// WGSL text, not the name: two vendored folders may hold one variant name with other code.
const COMPILED = new WeakMap();
function compiled(device, v, groups, source) {
    let mine = COMPILED.get(device);
    if (!mine)
        COMPILED.set(device, (mine = new Map()));
    const hit = mine.get(source);
    if (hit)
        return hit;
    const layouts = groups.map((g) => device.createBindGroupLayout(bindGroupLayoutDescriptor(v, g)));
    const layout = device.createPipelineLayout({ bindGroupLayouts: layouts });
    const module = device.createShaderModule({ code: source });
    // Only a variant with overrides passes constants: the others' pipelines stay as they were.
    const stage = v.constants && Object.keys(v.constants).length ? { module, constants: v.constants } : { module };
    const pipelines = new Map(v.passes.map((p) => [p.entry_point, device.createComputePipeline({ layout, compute: { ...stage, entryPoint: p.entry_point } })]));
    const out = { layouts, pipelines };
    mine.set(source, out);
    return out;
}
/** Bind the buffers (uniform/scratch made when absent) and encode every pass; the pipelines
 * are compiled on a device's first call for the variant and reused after. */
export function encodePlan(device, encoder, m, wgsl, plan, buffers) {
    const v = m.variants[plan.variant];
    const bufs = { ...buffers };
    for (const b of v.bindings) {
        // A short buffer would have its reads past the end clamped: wrong results, no error.
        if (bufs[b.name] && bufs[b.name].size < plan.bufferSizes[b.name]) {
            throw new Error(`${plan.variant}: buffer ${b.name} holds ${bufs[b.name].size} bytes; the binding needs ${plan.bufferSizes[b.name]} (${plan.encodings[b.name] ?? b.kind} values)`);
        }
        if (bufs[b.name])
            continue;
        if (b.kind === "uniform") {
            bufs[b.name] = device.createBuffer({ size: plan.uniform.byteLength, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
            device.queue.writeBuffer(bufs[b.name], 0, plan.uniform);
        }
        else if (b.scratch) {
            bufs[b.name] = device.createBuffer({ size: plan.bufferSizes[b.name], usage: GPUBufferUsage.STORAGE });
        }
        else
            throw new Error(`${plan.variant}: no buffer for binding ${b.name}`);
    }
    const groups = [...new Set(v.bindings.map((b) => b.group))].sort();
    const { layouts, pipelines } = compiled(device, v, groups, wgsl[plan.variant]);
    const bindGroups = groups.map((g, i) => device.createBindGroup({
        layout: layouts[i],
        entries: v.bindings.filter((b) => b.group === g).map((b) => ({ binding: b.binding, resource: { buffer: bufs[b.name] } })),
    }));
    const pass = encoder.beginComputePass();
    for (const [entry, [x, y, z]] of plan.dispatch) {
        pass.setPipeline(pipelines.get(entry));
        groups.forEach((g, i) => pass.setBindGroup(g, bindGroups[i]));
        pass.dispatchWorkgroups(x, y, z);
    }
    pass.end();
}
