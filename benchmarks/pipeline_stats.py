"""What the Vulkan driver says about our compiled kernels: registers, shared memory, spills...

    python benchmarks/pipeline_stats.py SPV_OR_DIR... [--only RE] [--json F [--ir]] [--device S]
        [--unzeroed]

wgpu does not tell how many registers a kernel takes (which decides how many workgroups an SM
holds); VK_KHR_pipeline_executable_properties does. Each GLCompute entry point of the modules
(from `wgslgen transpile --to spv`; folders are searched for *.spv) is built with
CAPTURE_STATISTICS, and each statistic the driver reports gets a column; --json keeps their
descriptions, --ir the driver's internal representations too (in <json stem>_ir/). The device
gets every feature the driver has: f16, 16-bit storage, robustBufferAccess (as wgpu does).

Limits: this is naga's SPIR-V from `wgslgen transpile`, not what wgpu hands the driver:
wgpu-native's Vulkan backend has naga add `Restrict` index bounds checks on fixed-size arrays,
so counts can differ slightly.
Workgroup memory: naga's SPIR-V here zeroes it the way WGSL requires (one invocation stores
each array, then a barrier), while wgpu-native 29 does not zero it at all (session 41 measured
this on lavapipe and an NVIDIA H100). Binary sizes include that zeroing, which the timed
pipelines do not have, unless --unzeroed drops it first (its null stores and the barrier after
them; `experiments/run.sh` does).
Subgroup variants come as SPIR-V 1.3 (the device must offer Vulkan 1.1).
Only uniform and storage buffers are reflected. lavapipe (Mesa 22) lacks the extension: the
probe stops there with a one-line error. Mesa's RADV has it, also with no AMD GPU: with
RADV_FORCE_FAMILY=gfx1100 (or navi21, vega10, ...) and VK_DRIVER_FILES naming the radeon ICD,
it compiles for that GPU on a null device (`--device RADV`). Exit status: 0 all probed, 1 some
pipeline failed (the error is in its row and the JSON), 2 the probe could not run.
"""

from __future__ import annotations

import argparse
import json
import re
import struct
import sys
from collections import defaultdict
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # wgslgen, run from anywhere

from wgslgen.atomic import atomic_write_text

EXTENSION = "VK_KHR_pipeline_executable_properties"
UNIFORM_BUFFER, STORAGE_BUFFER = 6, 7  # VkDescriptorType values
SPIRV_MAGIC = 0x07230203
_OP_NAME, _OP_ENTRY_POINT, _OP_TYPE_POINTER, _OP_VARIABLE, _OP_DECORATE = 5, 15, 32, 59, 71
_OP_CONSTANT_NULL, _OP_STORE, _OP_CONTROL_BARRIER = 46, 62, 224
_OP_SELECTION_MERGE, _OP_LABEL, _OP_BRANCH, _OP_BRANCH_CONDITIONAL = 247, 248, 249, 250
_GL_COMPUTE, _SC_UNIFORM, _SC_WORKGROUP, _SC_STORAGE_BUFFER = 5, 2, 4, 12
_BLOCK, _BUFFER_BLOCK, _BINDING, _DESCRIPTOR_SET = 2, 3, 33, 34
_WIDE = 28  # statistic names longer than this are cut in the table (the JSON has them whole)
_VALUE_FIELDS = ("b32", "i64", "u64", "f64")  # by VkPipelineExecutableStatisticFormatKHR
_QUERIES = ("Properties", "Statistics", "InternalRepresentations")  # vkGetPipelineExecutable*KHR


class ProbeError(Exception):
    """A reason the probe cannot go on, told in one line."""


@dataclass(frozen=True)
class Binding:
    """One buffer of a module: descriptor set, binding, VkDescriptorType and variable name."""

    set: int
    binding: int
    descriptor_type: int
    name: str


@dataclass(frozen=True)
class Module:
    """A SPIR-V module as the probe needs it: its bytes, compute entry points and buffers."""

    path: Path
    code: bytes = field(repr=False)
    entry_points: tuple[str, ...]
    bindings: tuple[Binding, ...]

    def set_layouts(self) -> list[list[Binding]]:
        """The bindings of each set index from 0 up, empty for the sets the module skips."""
        count = max((b.set for b in self.bindings), default=-1) + 1
        return [[b for b in self.bindings if b.set == index] for index in range(count)]


def _words(code: bytes, path: Path) -> tuple[int, ...]:
    ok = len(code) >= 20 and len(code) % 4 == 0
    words = struct.unpack(f"<{len(code) // 4}I", code) if ok else (0,)
    if ok and words[0] != SPIRV_MAGIC:  # a module may be stored big-endian too
        words = struct.unpack(f">{len(code) // 4}I", code)
    if words[0] != SPIRV_MAGIC:
        raise ProbeError(f"{path}: not a SPIR-V module")
    return words


def _spans(words: tuple[int, ...], path: Path) -> Iterator[tuple[int, int, tuple[int, ...]]]:
    """(first word, opcode, operands) of each instruction after the header."""
    at = 5  # after the header: magic, version, generator, bound, schema
    while at < len(words):
        count, opcode = words[at] >> 16, words[at] & 0xFFFF
        if count == 0 or at + count > len(words):
            raise ProbeError(f"{path}: malformed instruction at word {at}")
        yield at, opcode, words[at + 1 : at + count]
        at += count


def _instructions(code: bytes, path: Path) -> Iterator[tuple[int, tuple[int, ...]]]:
    for _, opcode, operands in _spans(_words(code, path), path):
        yield opcode, operands


def _zeroing(
    spans: list[tuple[int, int, tuple[int, ...]]], i: int, shared: set[int], nulls: set[int]
) -> list[int]:
    """First words of the polyfill's null stores and barrier if ``spans[i]`` opens it, else []."""
    _, op, args = spans[i]
    if op != _OP_SELECTION_MERGE or i + 2 >= len(spans):
        return []
    merge, (_, branch_op, branch), (_, label_op, label) = args[0], spans[i + 1], spans[i + 2]
    if branch_op != _OP_BRANCH_CONDITIONAL or branch[2] != merge:
        return []
    if label_op != _OP_LABEL or label[0] != branch[1]:
        return []
    j = i + 3
    while j < len(spans) and spans[j][1] == _OP_STORE:
        pointer, stored = spans[j][2][:2]
        if pointer not in shared or stored not in nulls:
            break
        j += 1
    if j == i + 3 or j + 2 >= len(spans) or spans[j][1:] != (_OP_BRANCH, (merge,)):
        return []
    if spans[j + 1][1:] != (_OP_LABEL, (merge,)) or spans[j + 2][1] != _OP_CONTROL_BARRIER:
        return []
    return [span[0] for span in spans[i + 3 : j]] + [spans[j + 2][0]]


def without_workgroup_zeroing(code: bytes, path: Path) -> tuple[bytes, int]:
    """``code`` without naga's workgroup-memory zeroing, and how many entry points had it.

    naga's polyfill, once per entry point: `if (local index == 0) { store null to each
    workgroup variable }`, then a control barrier. wgpu-native 29 does not zero workgroup memory
    (measured in session 41), so the stores and that barrier are dropped; the empty `if` stays,
    and the driver folds it away.
    """
    words = _words(code, path)
    spans = list(_spans(words, path))
    nulls = {args[1] for _, op, args in spans if op == _OP_CONSTANT_NULL}
    shared = {args[1] for _, op, args in spans if op == _OP_VARIABLE and args[2] == _SC_WORKGROUP}
    drop: set[int] = set()  # first words of the instructions to leave out
    found = 0
    for i in range(len(spans)):
        zeroing = _zeroing(spans, i, shared, nulls)
        drop.update(zeroing)
        found += bool(zeroing)
    kept = list(words[:5])
    for at, _, args in spans:
        if at not in drop:
            kept.extend(words[at : at + 1 + len(args)])
    return struct.pack(f"<{len(kept)}I", *kept), found


def _string(operands: tuple[int, ...]) -> str:
    # Literal strings are packed little-endian within each word, whatever the file's order.
    raw = struct.pack(f"<{len(operands)}I", *operands)
    return raw[: raw.find(b"\0")].decode("utf-8", "replace")


def reflect(path: Path) -> Module:
    """Read a SPIR-V file: its GLCompute entry points and its uniform and storage buffers."""
    code, names, entries, pointee = path.read_bytes(), {}, [], {}
    decorations: dict[int, dict[int, int | None]] = defaultdict(dict)
    variables = []  # (id, storage class, pointer type)
    for opcode, args in _instructions(code, path):
        if opcode == _OP_ENTRY_POINT and args[0] == _GL_COMPUTE:
            entries.append(_string(args[2:]))
        elif opcode == _OP_NAME:
            names[args[0]] = _string(args[1:])
        elif opcode == _OP_DECORATE:
            decorations[args[0]][args[1]] = args[2] if len(args) > 2 else None
        elif opcode == _OP_TYPE_POINTER:
            pointee[args[0]] = args[2]
        elif opcode == _OP_VARIABLE and args[2] in (_SC_UNIFORM, _SC_STORAGE_BUFFER):
            variables.append((args[1], args[2], args[0]))
    bindings = []
    for var, storage, pointer in variables:
        name, marks = names.get(var, f"%{var}"), decorations[var]
        if _BINDING not in marks or _DESCRIPTOR_SET not in marks:
            raise ProbeError(f"{path}: buffer {name} has no DescriptorSet/Binding decoration")
        block = decorations[pointee[pointer]]
        if storage == _SC_STORAGE_BUFFER or _BUFFER_BLOCK in block:
            kind = STORAGE_BUFFER
        elif _BLOCK in block:
            kind = UNIFORM_BUFFER
        else:  # an array of buffers: its element type, not the array, carries Block
            raise ProbeError(f"{path}: buffer {name} is not a Block (arrays are not supported)")
        bindings.append(Binding(marks[_DESCRIPTOR_SET], marks[_BINDING], kind, name))
    bindings.sort(key=lambda b: (b.set, b.binding))
    return Module(path, code, tuple(entries), tuple(bindings))


def collect(paths: list[Path], only: re.Pattern[str] | None) -> list[Path]:
    """The .spv files named, or found under the folders named, whose stem matches ``only``."""
    found = [f for p in paths for f in (sorted(p.rglob("*.spv")) if p.is_dir() else [p])]
    if missing := [str(p) for p in found if not p.is_file()]:
        raise ProbeError(f"no such file or folder: {', '.join(missing)}")
    return [p for p in dict.fromkeys(found) if only is None or only.search(p.stem)]


@dataclass
class Gpu:
    """An open device with the extension on; ``stack.close()`` destroys it and the instance."""

    vk: Any
    stack: ExitStack
    about: dict[str, str] = field(default_factory=dict)  # device, driver and API versions
    device: Any = None
    fns: dict[str, Any] = field(default_factory=dict)


def _pick(vk: Any, instance: Any, wanted: str | None) -> tuple[Any, Any]:
    devices = vk.vkEnumeratePhysicalDevices(instance)
    found = [(d, vk.vkGetPhysicalDeviceProperties(d)) for d in devices]
    named = [(d, p) for d, p in found if (wanted or "").lower() in p.deviceName.lower()]
    if not named:
        what = f"no Vulkan device named like {wanted!r}" if wanted else "no Vulkan device"
        raise ProbeError(f"{what} (devices: {', '.join(p.deviceName for _, p in found) or 'none'})")
    rank = {2: 0, 1: 1}  # VkPhysicalDeviceType: a discrete GPU first, then an integrated one
    return min(named, key=lambda pair: rank.get(pair[1].deviceType, 2))


def _create_device(gpu: Gpu, physical: Any) -> None:
    vk = gpu.vk
    # What the driver says it supports goes back as it is: every feature on, f16 among them.
    executable = vk.VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR()
    vulkan11 = vk.VkPhysicalDeviceVulkan11Features(pNext=executable)
    vulkan12 = vk.VkPhysicalDeviceVulkan12Features(pNext=vulkan11)
    features = vk.VkPhysicalDeviceFeatures2(pNext=vulkan12)
    vk.vkGetPhysicalDeviceFeatures2(physical, features)
    if not executable.pipelineExecutableInfo:
        raise ProbeError(f"{EXTENSION} listed without its feature pipelineExecutableInfo")
    families = vk.vkGetPhysicalDeviceQueueFamilyProperties(physical)
    family = next(i for i, f in enumerate(families) if f.queueFlags & vk.VK_QUEUE_COMPUTE_BIT)
    queue = vk.VkDeviceQueueCreateInfo(queueFamilyIndex=family, pQueuePriorities=[1.0])
    info = vk.VkDeviceCreateInfo(
        pNext=features, pQueueCreateInfos=[queue], ppEnabledExtensionNames=[EXTENSION]
    )
    gpu.device = vk.vkCreateDevice(physical, info, None)
    gpu.stack.callback(vk.vkDestroyDevice, gpu.device, None)
    for key in _QUERIES:
        # Raw pointers, not the package's wrappers: those hand the driver structs with sType 0,
        # and fetch no internal representation's data (that takes a third call).
        name = f"vkGetPipelineExecutable{key}KHR"
        pointer = vk.lib.vkGetDeviceProcAddr(gpu.device, name.encode())
        gpu.fns[key] = vk.ffi.cast(f"PFN_{name}", pointer)


def open_gpu(wanted: str | None) -> Gpu:
    """Open the device named like ``wanted`` (else a discrete one) with the extension on."""
    try:
        import vulkan as vk
    except (ImportError, OSError) as exc:  # OSError: the package found no libvulkan.so.1
        raise ProbeError(f"cannot load the Python package vulkan: {exc}") from exc
    gpu, version_1_2 = Gpu(vk, ExitStack()), vk.VK_MAKE_VERSION(1, 2, 0)
    try:
        app = vk.VkApplicationInfo(pApplicationName="wgslgen", apiVersion=version_1_2)
        instance = vk.vkCreateInstance(vk.VkInstanceCreateInfo(pApplicationInfo=app), None)
        gpu.stack.callback(vk.vkDestroyInstance, instance, None)
        physical, props = _pick(vk, instance, wanted)
        api, name = props.apiVersion, props.deviceName
        version = f"{api >> 22}.{(api >> 12) & 0x3FF}.{api & 0xFFF}"
        if api < version_1_2:  # the feature structs chained at device creation are Vulkan 1.2's
            raise ProbeError(f"{name} offers Vulkan {version}; the probe needs 1.2")
        driver = vk.VkPhysicalDeviceDriverProperties()  # driverVersion's encoding is the vendor's
        vk.vkGetPhysicalDeviceProperties2(physical, vk.VkPhysicalDeviceProperties2(pNext=driver))
        driver_version = f"{_text(vk, driver.driverName)} {_text(vk, driver.driverInfo)}"
        gpu.about = {"device": name, "driver_version": driver_version, "api_version": version}
        listed = vk.vkEnumerateDeviceExtensionProperties(physical, None)
        if EXTENSION not in {e.extensionName for e in listed}:
            raise ProbeError(f"the Vulkan driver of {name} does not support {EXTENSION}")
        _create_device(gpu, physical)
        return gpu
    except BaseException as exc:
        gpu.stack.close()
        if isinstance(exc, vk.VkError | vk.VkException):
            raise ProbeError(f"Vulkan setup failed: {type(exc).__name__}") from exc
        raise


def _text(vk: Any, chars: Any) -> str:
    return vk.ffi.string(chars).decode("utf-8", "replace")


def _query(gpu: Gpu, key: str, info: Any, buffers: list | None = None) -> Any:
    """The count, then the structs (sType set); with ``buffers``, room for data and its call."""
    vk, struct_name = gpu.vk, f"VkPipelineExecutable{key if key == 'Properties' else key[:-1]}KHR"
    count, items = vk.ffi.new("uint32_t*"), vk.ffi.NULL
    for step in range(2 if buffers is None else 3):
        if step == 1:
            # copies of one the package made: its sType set, as the driver may check
            items = vk.ffi.new(f"{struct_name}[]", [getattr(vk, struct_name)()] * count[0])
        elif step == 2 and buffers is not None:  # the second call gave each one's dataSize
            buffers += [vk.ffi.new("char[]", max(item.dataSize, 1)) for item in items]
            for item, buffer in zip(items, buffers, strict=True):
                item.pData = buffer
        result = gpu.fns[key](gpu.device, vk.ffi.addressof(info), count, items)
        if result < 0:  # VK_INCOMPLETE (5) only means fewer items than there were room for
            raise vk.exception_codes[result]
    return items  # the array owns the structs: keep it while reading them


def _save_ir(gpu: Gpu, info: Any, out: Path, stem: str, first: int) -> list[dict]:
    vk, buffers, saved = gpu.vk, [], []
    reps = _query(gpu, "InternalRepresentations", info, buffers)
    for n, (rep, buffer) in enumerate(zip(reps, buffers, strict=True), start=first):
        data = vk.ffi.buffer(buffer, rep.dataSize)[:]
        path = out / f"{stem}.{n}.{'txt' if rep.isText else 'bin'}"
        out.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data.rstrip(b"\0") if rep.isText else data)
        about = {"name": _text(vk, rep.name), "description": _text(vk, rep.description)}
        saved.append({**about, "file": str(path)})
    return saved


def _value(stat: Any) -> bool | int | float:
    value = getattr(stat.value, _VALUE_FIELDS[stat.format])  # the format names the member
    return bool(value) if stat.format == 0 else value  # 0: VK_..._FORMAT_BOOL32_KHR


def _executables(gpu: Gpu, pipeline: Any, stem: str, ir_dir: Path | None) -> list[dict]:
    vk, executables = gpu.vk, []
    found = _query(gpu, "Properties", vk.VkPipelineInfoKHR(pipeline=pipeline))
    for index, props in enumerate(found):
        info = vk.VkPipelineExecutableInfoKHR(pipeline=pipeline, executableIndex=index)
        stats = _query(gpu, "Statistics", info)
        entry = {
            "name": _text(vk, props.name),
            "description": _text(vk, props.description),
            "subgroup_size": props.subgroupSize,
            "statistics": {_text(vk, s.name): _value(s) for s in stats},
            "statistic_descriptions": {_text(vk, s.name): _text(vk, s.description) for s in stats},
        }
        if ir_dir is not None:
            done = sum(len(e["internal_representations"]) for e in executables)
            entry["internal_representations"] = _save_ir(gpu, info, ir_dir, stem, done)
        executables.append(entry)
    return executables


def _result(m: Module, entry: str, error: str | None = None) -> dict:
    return dict(file=m.path.stem, path=str(m.path), entry=entry, executables=[], error=error)


def _probe_entry(gpu: Gpu, module: Module, made: tuple, entry: str, ir_dir: Path | None) -> dict:
    vk, (shader, layout), result = gpu.vk, made, _result(module, entry)
    ir_bit = vk.VK_PIPELINE_CREATE_CAPTURE_INTERNAL_REPRESENTATIONS_BIT_KHR if ir_dir else 0
    flags = vk.VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR | ir_bit
    compute = vk.VK_SHADER_STAGE_COMPUTE_BIT
    stage = vk.VkPipelineShaderStageCreateInfo(stage=compute, module=shader, pName=entry)
    info = vk.VkComputePipelineCreateInfo(flags=flags, stage=stage, layout=layout)
    try:
        pipeline = vk.vkCreateComputePipelines(gpu.device, vk.VK_NULL_HANDLE, 1, [info], None)[0]
    except (vk.VkError, vk.VkException) as exc:
        result["error"] = f"vkCreateComputePipelines: {type(exc).__name__}"
        return result
    try:
        result["executables"] = _executables(gpu, pipeline, f"{module.path.stem}.{entry}", ir_dir)
    except (vk.VkError, vk.VkException) as exc:
        result["error"] = f"pipeline executable queries: {type(exc).__name__}"
    finally:
        vk.vkDestroyPipeline(gpu.device, pipeline, None)
    return result


def probe(gpu: Gpu, module: Module, ir_dir: Path | None = None) -> list[dict]:
    """Build each compute entry point of ``module``; what the driver reports on each."""
    vk, device, compute = gpu.vk, gpu.device, gpu.vk.VK_SHADER_STAGE_COMPUTE_BIT
    layout_binding = vk.VkDescriptorSetLayoutBinding
    with ExitStack() as stack:
        try:
            info = vk.VkShaderModuleCreateInfo(codeSize=len(module.code), pCode=module.code)
            shader = vk.vkCreateShaderModule(device, info, None)
            stack.callback(vk.vkDestroyShaderModule, device, shader, None)
            set_layouts = []
            for bindings in module.set_layouts():
                made = [layout_binding(b.binding, b.descriptor_type, 1, compute) for b in bindings]
                info = vk.VkDescriptorSetLayoutCreateInfo(pBindings=made)
                set_layouts.append(vk.vkCreateDescriptorSetLayout(device, info, None))
                stack.callback(vk.vkDestroyDescriptorSetLayout, device, set_layouts[-1], None)
            info = vk.VkPipelineLayoutCreateInfo(pSetLayouts=set_layouts)
            layout = vk.vkCreatePipelineLayout(device, info, None)
            stack.callback(vk.vkDestroyPipelineLayout, device, layout, None)
        except (vk.VkError, vk.VkException) as exc:
            error = f"shader module or layout: {type(exc).__name__}"
            return [_result(module, entry, error) for entry in module.entry_points]
        return [_probe_entry(gpu, module, (shader, layout), e, ir_dir) for e in module.entry_points]


def statistics_by_entry(data: Any) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """(SPIR-V file stem, entry point) -> each executable's statistics, from a --json file's data.

    Entry points that failed are left out; data of another shape raises KeyError or TypeError.
    """
    return {
        (row["file"], row["entry"]): [exe["statistics"] for exe in row["executables"]]
        for row in data["results"]
        if not row.get("error")
    }


def format_table(results: list[dict]) -> str:
    """A plain table: a row per file, entry point (and executable), a column per statistic."""
    stats = [n for r in results for e in r["executables"] for n in e["statistics"]]
    names = list(dict.fromkeys(stats))
    cut = [n if len(n) <= _WIDE else n[: _WIDE - 2] + ".." for n in names]
    rows, failed = [["file", "entry", *cut]], []
    for r in results:
        if r["error"] or not r["executables"]:
            failed.append([r["file"], r["entry"], f"error: {r['error'] or 'no executables'}"])
        for e in r["executables"]:  # a compute pipeline has one; more get "entry/executable"
            entry = r["entry"] if len(r["executables"]) == 1 else f"{r['entry']}/{e['name']}"
            values = [e["statistics"].get(n, "-") for n in names]
            values = [f"{v:.4g}" if type(v) is float else str(v) for v in values]
            rows.append([r["file"], entry, *values])
    cells = rows + [f[:2] for f in failed]  # an error runs on over the statistics' columns
    widths = [max(len(row[i]) for row in cells if i < len(row)) for i in range(len(rows[0]))]
    form = "  ".join(f"{{:{'<' if i < 2 else '>'}{w}}}" for i, w in enumerate(widths))
    lines = [form.format(*row).rstrip() for row in rows]
    lines += [f"{f[0]:<{widths[0]}}  {f[1]:<{widths[1]}}  {f[2]}" for f in failed]
    return "\n".join(lines)


def _run(args: argparse.Namespace) -> int:
    modules = [reflect(path) for path in collect(args.paths, args.only)]
    if not modules:
        raise ProbeError("no .spv file to probe")
    if args.unzeroed:
        dropped = 0
        for i, m in enumerate(modules):
            code, found = without_workgroup_zeroing(m.code, m.path)
            modules[i], dropped = replace(m, code=code), dropped + found
        print(f"dropped naga's workgroup-memory zeroing from {dropped} entry point(s)")
    entries = sum(len(m.entry_points) for m in modules)
    print(f"reflected {len(modules)} module(s), {entries} compute entry point(s)", flush=True)
    ir_dir = args.json.with_name(f"{args.json.stem}_ir") if args.ir else None
    gpu = open_gpu(args.device)
    try:
        results = [r for module in modules for r in probe(gpu, module, ir_dir)]
    finally:
        gpu.stack.close()
    print(", ".join(gpu.about.values()))
    print(format_table(results))
    if args.json:
        atomic_write_text(args.json, json.dumps({**gpu.about, "results": results}, indent=2) + "\n")
    return 1 if any(r["error"] for r in results) else 0


def main(argv: list[str] | None = None) -> int:
    """Probe the files and print the table; exit 2 with one line on stderr if it cannot."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("paths", nargs="+", type=Path, help=".spv files and/or folders")
    parser.add_argument("--only", type=re.compile, metavar="REGEX", help="file stems to keep")
    parser.add_argument("--json", type=Path, metavar="FILE", help="write every result to FILE")
    parser.add_argument("--ir", action="store_true", help="also IR, to <json stem>_ir/")
    parser.add_argument("--device", metavar="SUBSTRING", help="the Vulkan device named like this")
    parser.add_argument(
        "--unzeroed",
        action="store_true",
        help="drop naga's workgroup-memory zeroing first, as wgpu-native 29 builds the pipeline",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    args = parser.parse_args(argv)
    if args.ir and not args.json:
        parser.error("--ir needs --json (the representations go beside it)")
    try:
        return _run(args)
    except Exception as exc:  # one line for the user; --debug shows where
        if args.debug:
            raise
        message = str(exc) if isinstance(exc, ProbeError) else f"{type(exc).__name__}: {exc}"
        print(f"pipeline_stats: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
