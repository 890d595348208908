#!/usr/bin/env node
// naga-cli's command-line contract on top of naga compiled to WebAssembly (npm `naga-wasm`),
// for machines without the `naga` executable. Mirrors naga-cli (wgpu/naga-cli/src/bin/naga.rs):
//
//   naga_cli.mjs INPUT [OUTPUT...]      validate INPUT, write each OUTPUT (format by extension:
//                                       .spv .metal .hlsl .wgsl, GLSL .comp/.vert/.frag or
//                                       x.comp.glsl); no OUTPUT prints "Validation successful"
//   naga_cli.mjs --bulk-validate FILE... validate many files in one process
//   naga_cli.mjs --bulk-translate JOBS  wgslgen extension, not in naga-cli (see bulkTranslate)
//   naga_cli.mjs --version
//   options: --entry-point NAME, --profile es310|core450, --shader-model 50|51|60,
//            --metal-version 2.0, --keep-coordinate-space, -g, --stdin-file-path PATH
//
// Exit codes follow naga-cli: 0 ok; 1 for parse errors, failed outputs, any invalid input in
// --bulk-validate, bad arguments; 255 (exit(-1)) when a lone INPUT parses but fails validation;
// 101 when naga panics (a WebAssembly trap), like a Rust panic.
// Diagnostics are codespan text on stderr, with naga-cli's file names: the full path for parse
// errors, the base name for validation errors, "Error validating PATH:" headers in bulk mode.

import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { basename, dirname, extname, join } from "node:path";
import { pathToFileURL } from "node:url";

function resolveNagaWasm() {
  // The script's own node_modules chain first (and NODE_PATH), then the working directory's.
  for (const base of [import.meta.url, pathToFileURL(join(process.cwd(), "noop.js")).href]) {
    try {
      return createRequire(base).resolve("naga-wasm");
    } catch {
      // try the next base
    }
  }
  return null;
}

const entry = resolveNagaWasm();
if (entry === null) {
  process.stderr.write(
    "naga_cli.mjs: cannot find the npm package naga-wasm; run `npm ci` in the wgslgen " +
      "checkout, or set NODE_PATH to a node_modules folder that has it\n",
  );
  process.exit(1);
}
const naga = await import(pathToFileURL(entry).href);

class CliError extends Error {}

function parseArgs(argv) {
  const opts = {
    files: [], bulk: false, bulkTranslate: false, version: false, keep: false, debug: false,
  };
  const valued = {
    "--entry-point": "entryPoint", "--profile": "profile", "--shader-model": "shaderModel",
    "--metal-version": "metalVersion", "--stdin-file-path": "stdinPath",
  };
  for (let i = 0; i < argv.length; i++) {
    let arg = argv[i];
    let value;
    if (arg.startsWith("--") && arg.includes("=")) [arg, value] = arg.split(/=(.*)/s, 2);
    if (arg === "--bulk-validate") opts.bulk = true;
    else if (arg === "--bulk-translate") opts.bulkTranslate = true;
    else if (arg === "--version") opts.version = true;
    else if (arg === "--keep-coordinate-space") opts.keep = true;
    else if (arg === "-g" || arg === "--generate-debug-symbols") opts.debug = true;
    else if (arg in valued) {
      if (value === undefined) value = argv[++i];
      if (value === undefined) throw new CliError(`Missing value for option ${arg}`);
      opts[valued[arg]] = value;
    } else if (arg.startsWith("-") && arg !== "-") {
      throw new CliError(`Unrecognized argument: ${arg} (not supported by naga_cli.mjs)`);
    } else opts.files.push(arg);
  }
  return opts;
}

function glslVersion(profile) {
  // naga-cli: "core[N]" is desktop GLSL N (default 330), "es[N]" is GLSL ES N (default 310);
  // without --profile naga's glsl::Options default is ES 310.
  if (profile === undefined) return "310 es";
  if (profile.startsWith("core")) return `${Number.parseInt(profile.slice(4)) || 330}`;
  if (profile.startsWith("es")) return `${Number.parseInt(profile.slice(2)) || 310} es`;
  throw new CliError(`Unknown profile: ${profile}`);
}

const GLSL_STAGES = { vert: "vertex", frag: "fragment", comp: "compute" };

function glslStage(path) {
  let ext = extname(path).slice(1);
  if (ext === "glsl") ext = extname(basename(path, ".glsl")).slice(1);
  const stage = GLSL_STAGES[ext];
  if (!stage) throw new CliError(`Cannot tell the GLSL shader stage of ${path}`);
  return stage;
}

// naga-wasm names every source "wgsl" in its codespan reports; naga-cli names the file.
const rename = (text, name) => text.replaceAll("┌─ wgsl:", `┌─ ${name}:`);

function parseInput(path, bytes) {
  const ext = extname(path).slice(1);
  if (ext === "wgsl") return { module: naga.parseWgsl(bytes.toString("utf8")), lang: "WGSL" };
  if (ext === "spv") return { module: naga.parseSpirv(new Uint8Array(bytes)), lang: null };
  if (ext in GLSL_STAGES || ext === "glsl") {
    const stage = glslStage(path);
    return { module: naga.parseGlsl(bytes.toString("utf8"), { stage }), lang: "GLSL" };
  }
  if (ext === "") throw new CliError("Input filename has no extension");
  throw new CliError("Unable to determine --input-kind from filename");
}

// Parse and validate one input; returns { module, info } or { error: text, kind }.
function check(path, bytes) {
  let module;
  try {
    ({ module } = parseInput(path, bytes));
  } catch (e) {
    if (!(e instanceof naga.NagaError)) throw e;
    const lang = extname(path) === ".wgsl" ? "WGSL" : "input";
    return { kind: "parse", error: `Could not parse ${lang}:\n${rename(e.formatted, path)}` };
  }
  try {
    return { module, info: naga.validate(module) };
  } catch (e) {
    module.free();
    if (!(e instanceof naga.NagaError)) throw e;
    return { kind: "validation", error: rename(e.formatted, basename(path)) };
  }
}

function writeOutput(module, info, path, opts) {
  const ext = extname(path).slice(1);
  if (ext === "spv") {
    const flags = { adjustCoordinateSpace: !opts.keep, debug: opts.debug };
    const words = naga.writeSpirv(module, info, { flags });
    writeFileSync(path, Buffer.from(words.buffer, words.byteOffset, words.byteLength));
  } else if (ext === "metal") {
    const langVersion = opts.metalVersion?.split(".").map(Number);
    writeFileSync(path, naga.writeMsl(module, info, langVersion ? { langVersion } : {}));
  } else if (ext === "hlsl") {
    const model = opts.shaderModel ?? "51"; // naga's hlsl::Options default: SM 5.1
    const shaderModel = `${model[0]}_${model.slice(1)}`;
    writeFileSync(path, naga.writeHlsl(module, info, { shaderModel }));
  } else if (ext in GLSL_STAGES || ext === "glsl") {
    const options = {
      version: glslVersion(opts.profile),
      stage: glslStage(path),
      entryPoint: opts.entryPoint ?? "main",
      flags: { adjustCoordinateSpace: !opts.keep },
    };
    writeFileSync(path, naga.writeGlsl(module, info, options));
  } else if (ext === "wgsl") {
    writeFileSync(path, naga.writeWgsl(module, info));
  } else {
    throw new CliError(`Output format .${ext} is not available in naga_cli.mjs`);
  }
}

function bulkValidate(files) {
  const invalid = [];
  for (const path of files) {
    const result = check(path, readFileSync(path));
    if (result.error !== undefined) {
      invalid.push(path);
      process.stderr.write(`Error validating ${path}:\n${result.error}\n`);
    } else {
      result.info.free();
      result.module.free();
    }
  }
  if (invalid.length === 0) return 0;
  process.stderr.write(
    `Validation failed for the following inputs:\n${invalid.map((p) => `  ${p}\n`).join("")}\n`,
  );
  return 1;
}

// wgslgen extension (naga-cli has no such mode): translate many inputs to many outputs in one
// process, because compiling naga's WebAssembly costs far more than translating one kernel.
//
//   naga_cli.mjs --bulk-translate JOBS [options]
//
// JOBS is a JSON file ("-" for stdin): [{"input": PATH, "outputs": [PATH...], "entryPoint"?}],
// outputs named as in single mode, options as in single mode (a job's entryPoint overrides
// --entry-point). One JSON line per (input, output) pair goes to stdout, in job order, as soon
// as it is known:
//   {"input": PATH, "output": PATH, "ok": true}
//   {"input": PATH, "output": PATH, "ok": false, "kind": KIND, "error": TEXT}
// KIND is "parse" or "validation" (every output of that input fails alike), "write" (naga's
// writer refused this output), "io", or "panic". Exit 0 when every output was written, 1 when
// any failed. A panic is reported against the output (or the input) at fault and exits 101 at
// once, since naga's state after a trap is not to be trusted: the caller reruns the pairs that
// were not reported in a new process.
function bulkTranslate(opts) {
  if (opts.files.length !== 1) throw new CliError("--bulk-translate takes one JOBS file (or -)");
  const jobs = JSON.parse(readFileSync(opts.files[0] === "-" ? 0 : opts.files[0], "utf8"));
  if (!Array.isArray(jobs)) throw new CliError("--bulk-translate: JOBS must be a JSON array");
  let failed = 0;
  const report = (input, output, error) => {
    const line = error ? { input, output, ok: false, ...error } : { input, output, ok: true };
    process.stdout.write(`${JSON.stringify(line)}\n`);
    if (error) failed += 1;
  };
  for (const job of jobs) {
    const { input, outputs = [] } = job;
    const jobOpts = { ...opts, entryPoint: job.entryPoint ?? opts.entryPoint };
    let result;
    try {
      result = check(input, readFileSync(input));
    } catch (e) {
      const error = classify(e, "io");
      for (const output of outputs) report(input, output, error);
      if (error.kind === "panic") return 101;
      continue;
    }
    if (result.error !== undefined) {
      for (const output of outputs) report(input, output, result);
      continue;
    }
    for (const output of outputs) {
      try {
        writeOutput(result.module, result.info, output, jobOpts);
        report(input, output, null);
      } catch (e) {
        const error = classify(e, "write");
        report(input, output, error);
        if (error.kind === "panic") return 101; // no free(): the instance trapped
      }
    }
    result.info.free();
    result.module.free();
  }
  return failed === 0 ? 0 : 1;
}

// An exception of bulkTranslate as {kind, error}: expected failures keep `kind`.
function classify(e, kind) {
  if (e instanceof naga.NagaError) {
    return { kind: e.kind === "write" ? "write" : kind, error: e.formatted };
  }
  if (e instanceof CliError) return { kind, error: e.message };
  if (e?.code !== undefined && e?.syscall !== undefined) return { kind: "io", error: e.message };
  return { kind: "panic", error: `naga panicked: ${e?.stack ?? e}` };
}

function single(opts) {
  let inputPath;
  let bytes;
  let outputs = opts.files;
  if (opts.stdinPath !== undefined) {
    inputPath = opts.stdinPath;
    bytes = readFileSync(0);
  } else if (opts.files.length > 0) {
    inputPath = opts.files[0];
    outputs = opts.files.slice(1);
    bytes = readFileSync(inputPath);
  } else {
    throw new CliError("Input file path is not specified");
  }
  const result = check(inputPath, bytes);
  if (result.kind === "parse") throw new CliError(result.error.trimEnd());
  if (result.error !== undefined) {
    process.stderr.write(result.error);
    if (outputs.length === 0) return 255;
    throw new CliError("Generating output requires validation to succeed, and it failed");
  }
  try {
    if (outputs.length === 0) {
      process.stdout.write("Validation successful\n");
      return 0;
    }
    for (const path of outputs) writeOutput(result.module, result.info, path, opts);
    return 0;
  } finally {
    result.info.free();
    result.module.free();
  }
}

function main() {
  try {
    const opts = parseArgs(process.argv.slice(2));
    if (opts.version) {
      const pkg = JSON.parse(readFileSync(join(dirname(entry), "..", "package.json"), "utf8"));
      process.stdout.write(
        `naga-wasm ${pkg.version} (naga ${naga.nagaVersion}) via node ${process.version}\n`,
      );
      return 0;
    }
    if (opts.bulkTranslate) return bulkTranslate(opts);
    return opts.bulk ? bulkValidate(opts.files) : single(opts);
  } catch (e) {
    if (e instanceof CliError || e instanceof naga.NagaError) {
      process.stderr.write(`${e instanceof naga.NagaError ? e.formatted : e.message}\n`);
      return 1;
    }
    if (e?.code !== undefined && e?.syscall !== undefined) {
      process.stderr.write(`${e.message}\n`); // file system errors, as naga-cli's `?` on io
      return 1;
    }
    process.stderr.write(`naga panicked: ${e?.stack ?? e}\n`);
    return 101;
  }
}

// exitCode rather than exit(): lets Node flush stdout/stderr pipes before it ends.
process.exitCode = main();
