// Node client of a vendored folder: npm `webgpu` (Dawn) on SwiftShader, under `node --test`.
// Env: WGSLGEN_VENDORED_JS (the vendored ts/wgslgen_kernels.js), WGSLGEN_CASES (cases.json),
// WGSLGEN_REPORT (where to write what ran).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { create, globals } from "webgpu";

Object.assign(globalThis, globals);
const k = await import(process.env.WGSLGEN_VENDORED_JS);
const cases = JSON.parse(readFileSync(process.env.WGSLGEN_CASES, "utf8"));
const gpu = create([]);
const adapter = await gpu.requestAdapter();
const report = { adapter: adapter.info.vendor + "/" + adapter.info.architecture, ran: [], skipped: [], selected: {}, derived: {} };

function decode(bytes, encoding, n) {
  if (encoding === "f32") return Array.from(new Float32Array(bytes.buffer, bytes.byteOffset, n));
  const h = new Uint16Array(bytes.buffer, bytes.byteOffset, n);
  return Array.from(h, k.f16ToNumber);
}

async function runCase(c) {
  const plan = k.planVariant(c.variant, c.shape);
  for (const [name, want] of Object.entries(c.derived ?? {})) {  // wgslgen's own derived values
    assert.equal(plan.scope[name], want, `${c.variant}: derived ${name}`);
  }
  report.derived[c.variant] = Object.fromEntries(Object.keys(c.derived ?? {}).map((n) => [n, plan.scope[n]]));
  const need = k.deviceRequirements(plan);
  const device = await (await gpu.requestAdapter()).requestDevice(need);  // an adapter makes one device
  const buffers = {};
  for (const [name, size] of Object.entries(plan.bufferSizes)) {
    if (c.inputs[name] !== undefined) {
      const data = Buffer.from(c.inputs[name], "base64");
      buffers[name] = device.createBuffer({ size, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
      device.queue.writeBuffer(buffers[name], 0, data);
    } else if (c.outputs[name] !== undefined) {
      buffers[name] = device.createBuffer({ size, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
    }
  }
  const short = Object.keys(plan.encodings).find((n) => buffers[n]);
  const tooSmall = device.createBuffer({ size: 4, usage: GPUBufferUsage.STORAGE });
  assert.throws(() => k.run(device, plan, { ...buffers, [short]: tooSmall }),
    new RegExp(`buffer ${short} holds 4 bytes; the binding needs`), `${c.variant}: a short buffer`);
  device.pushErrorScope("validation");
  k.run(device, plan, buffers);
  const errors = [];
  for (const [name, want] of Object.entries(c.outputs)) {
    assert.equal(plan.encodings[name], want.encoding, `${c.variant}: ${name}'s encoding`);
    const read = device.createBuffer({ size: plan.bufferSizes[name], usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    const enc = device.createCommandEncoder();
    enc.copyBufferToBuffer(buffers[name], 0, read, 0, plan.bufferSizes[name]);
    device.queue.submit([enc.finish()]);
    await read.mapAsync(GPUMapMode.READ);
    const got = decode(new Uint8Array(read.getMappedRange().slice(0)), want.encoding, want.values.length);
    const bad = want.values.filter((w, i) => !(Math.abs(got[i] - w) <= want.atol + want.rtol * Math.abs(w))).length;
    if (bad) errors.push(`${name}: ${bad}/${want.values.length} off`);
  }
  const gpuError = await device.popErrorScope();
  device.destroy();
  return gpuError ? [String(gpuError.message)] : errors;
}

test("every vendored variant the adapter supports matches the numpy reference", async () => {
  for (const c of cases.runs) {
    const v = k.MANIFEST.variants[c.variant];
    const missing = v.features.filter((f) => !adapter.features.has(f));
    if (missing.length) { report.skipped.push([c.variant, `needs ${missing.join(", ")}`]); continue; }
    assert.deepEqual(await runCase(c), [], c.variant);
    report.ran.push(c.variant);
  }
  assert.ok(report.ran.length > 0);
});

test("selector agrees with the Python reference on every shared case", () => {
  for (const c of cases.selector) {
    const a = cases.adapters[c.adapter];
    const facts = { ...a, features: new Set(a.features) };
    let got = null, rejected;
    try { const p = k.selectVariant(facts, c.kernel, c.shape); got = p.variant; rejected = p.rejected; }
    catch (e) { if (!(e instanceof k.NoViableError)) throw e; rejected = e.rejected; }
    assert.equal(got, c.expect, `${c.adapter} ${c.kernel} ${JSON.stringify(c.shape)}`);
    assert.deepEqual(rejected.map((r) => r[0]), c.rejected);
    assert.deepEqual(rejected.map((r) => r[1]), c.reasons);
  }
});

test("device requirements agree with the Python reference, buffer-size limits included", () => {
  for (const c of cases.requirements) {
    const need = k.deviceRequirements(k.planVariant(c.variant, c.shape));
    assert.deepEqual(need, { requiredFeatures: c.features, requiredLimits: c.limits }, `${c.variant} ${JSON.stringify(c.shape)}`);
  }
});

test("a pipeline is compiled once per device and variant", async () => {
  const c = cases.runs[0];
  const plan = k.planVariant(c.variant, c.shape);
  const device = await (await gpu.requestAdapter()).requestDevice(k.deviceRequirements(plan));
  let made = 0;
  const create = device.createComputePipeline.bind(device);
  device.createComputePipeline = (d) => { made += 1; return create(d); };
  const buffers = {};
  for (const [name, size] of Object.entries(plan.bufferSizes)) {
    if (c.inputs[name] !== undefined || c.outputs[name] !== undefined) buffers[name] = device.createBuffer({ size, usage: GPUBufferUsage.STORAGE });
  }
  for (let i = 0; i < 3; i++) k.run(device, plan, buffers);
  assert.equal(made, plan.dispatch.length);
  // the same variant name with other code (another vendored folder) is compiled anew
  const other = { [plan.variant]: k.WGSL[plan.variant] + "\n// another folder's text\n" };
  k.encodePlan(device, device.createCommandEncoder(), k.MANIFEST, other, plan, buffers);
  assert.equal(made, 2 * plan.dispatch.length);
  device.destroy();
});

test("on SwiftShader (no shader-f16) the selector falls back", () => {
  assert.ok(!adapter.features.has("shader-f16"), "this adapter has shader-f16: the test proves nothing");
  for (const c of cases.runs) {
    const plan = k.selectVariant(adapter, c.kernel, c.shape);
    const v = k.MANIFEST.variants[plan.variant];
    assert.ok(!v.features.includes("shader-f16"), plan.variant);
    for (const [name, why] of plan.rejected) {
      if (k.MANIFEST.variants[name].features.includes("shader-f16")) assert.match(why, /needs feature shader-f16/);
    }
    report.selected[c.kernel] = [plan.variant, plan.rejected.map((r) => r[0])];
  }
  writeFileSync(process.env.WGSLGEN_REPORT, JSON.stringify(report, null, 1));
});
