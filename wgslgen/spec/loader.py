"""Finding kernels in template folders and turning each kernel.toml into a KernelSpec."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from wgslgen.errors import WgslgenError
from wgslgen.spec.expressions import compile_expression
from wgslgen.spec.interface import ENCODINGS, layout_uniform
from wgslgen.spec.kernel import (
    _SAFE_NAME,
    _SAFE_VALUE,
    _TABLE_KEYS,
    Axis,
    BindingDecl,
    KernelSpec,
    Pass,
    ProblemSpec,
    Tolerance,
    read_toml,
)

DEFAULT_TEMPLATES = Path(__file__).resolve().parents[2] / "templates"


def discover(template_dirs: Sequence[Path | str] | None = None) -> list[KernelSpec]:
    """Every kernel in the given folders (kernel folders and plain .wgsl files), by name."""
    dirs = [Path(d) for d in (template_dirs or [DEFAULT_TEMPLATES])]
    found: dict[str, KernelSpec] = {}
    for d in dirs:
        for spec in _kernels_in(d):
            if spec.name in found:
                raise WgslgenError(
                    f"two kernels are named {spec.name!r}: "
                    f"{found[spec.name].spec_path or found[spec.name].template_path} and "
                    f"{spec.spec_path or spec.template_path}"
                )
            found[spec.name] = spec
    return [found[n] for n in sorted(found)]


def select(kernels: Iterable[KernelSpec], names: Sequence[str] | None) -> list[KernelSpec]:
    """The kernels named (all when ``names`` is empty); an unknown name lists the known."""
    kernels = list(kernels)
    if not names:
        return kernels
    by_name = {k.name: k for k in kernels}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise WgslgenError(
            f"unknown kernel(s) {', '.join(unknown)}; known: {', '.join(by_name) or '(none)'}"
        )
    return [by_name[n] for n in names]


def _kernels_in(path: Path) -> list[KernelSpec]:
    if not path.exists():
        raise WgslgenError(f"{path}: no such templates folder or file")
    if path.is_file():
        if path.suffix != ".wgsl":
            raise WgslgenError(f"{path}: a kernel file must end in .wgsl")
        return [load_plain(path)]
    if (path / "kernel.toml").is_file():
        return [load_kernel(path)]
    out = []
    for child in sorted(path.iterdir()):
        if child.name.startswith((".", "_")):
            continue  # _lib holds shared macros, not kernels
        if child.is_dir() and (child / "kernel.toml").is_file():
            out.append(load_kernel(child))
        elif child.is_file() and child.suffix == ".wgsl":
            out.append(load_plain(child))
    return out


def load_plain(path: Path) -> KernelSpec:
    """A plain WGSL file as a kernel with no axes, no interface and no problem."""
    name = path.stem
    _check_safe_name(name, f"{path}: kernel name")
    return KernelSpec(
        name=name,
        folder=path.parent,
        spec_path=None,
        template_path=path,
        entry_point=_guess_entry_point(path),
        description=f"plain WGSL file {path.name}",
        axes=(),
        constraints=(),
        uniform=None,
        bindings=(),
        problem=None,
        plain=True,
    )


def _guess_entry_point(path: Path) -> str:
    import re

    text = path.read_text(encoding="utf-8")
    m = re.search(r"@compute[^;{]*?\bfn\s+([A-Za-z_]\w*)", text, re.S)
    return m.group(1) if m else "main"


def _check_safe_name(name: Any, where: str) -> None:
    if not isinstance(name, str) or not _SAFE_NAME.match(name):
        raise WgslgenError(
            f"{where} {name!r} is refused: use letters, digits, '_' and '-' only "
            "(it becomes a path under generated/)"
        )


def _check_keys(table: Any, section: str, where: Path) -> None:
    if not isinstance(table, dict):
        raise WgslgenError(f"{where}: [{section}] must be a table")
    unknown = sorted(set(table) - _TABLE_KEYS[section])
    if unknown:
        raise WgslgenError(
            f"{where}: unknown key(s) {', '.join(unknown)} in [{section or 'top level'}]; "
            f"valid: {', '.join(sorted(_TABLE_KEYS[section]))}"
        )


def load_kernel(folder: Path) -> KernelSpec:
    """Parse ``folder/kernel.toml`` into a KernelSpec, naming the key at fault on error."""
    path = folder / "kernel.toml"
    raw = read_toml(path)
    _check_keys(raw, "", path)
    kernel = raw.get("kernel", {})
    _check_keys(kernel, "kernel", path)
    name = kernel.get("name", folder.name)
    _check_safe_name(name, f"{path}: [kernel].name")
    template = folder / kernel.get("template", f"{name}.wgsl.j2")
    if not template.is_file():
        raise WgslgenError(f"{path}: [kernel].template {template.name!r} not found in {folder}")
    reference = folder / kernel.get("reference", "reference.py")

    axes = tuple(_parse_axis(i, a, path) for i, a in enumerate(raw.get("axis", [])))
    seen: set[str] = set()
    for a in axes:
        for label in {a.name, a.key}:
            if label in seen:
                raise WgslgenError(f"{path}: axis name or key {label!r} is used twice")
            seen.add(label)
    axis_names = [a.name for a in axes]
    constraints = tuple(
        compile_expression(c, f"{path}: constraints[{i}]", axis_names)
        for i, c in enumerate(raw.get("constraints", []))
    )
    uniform = _parse_uniform(raw.get("uniform"), path)
    bindings = _parse_bindings(raw.get("binding", []), uniform, axis_names, path)
    passes = raw.get("pass", [])
    if "entry_point" in kernel and passes:
        raise WgslgenError(
            f"{path}: with [[pass]] tables, name entry points there, not in [kernel]"
        )
    entry = passes[0].get("entry_point", "main") if passes else kernel.get("entry_point", "main")
    problem = _parse_problem(
        raw.get("problem"),
        uniform,
        bindings,
        axis_names,
        path,
        passes,
        kernel.get("entry_point", "main"),
    )

    test = raw.get("test", {})
    _check_keys(test, "test", path)
    tune = raw.get("tune", {})
    _check_keys(tune, "tune", path)
    return KernelSpec(
        name=name,
        folder=folder,
        spec_path=path,
        template_path=template,
        entry_point=entry,
        description=kernel.get("description", ""),
        axes=axes,
        constraints=constraints,
        uniform=uniform,
        bindings=bindings,
        problem=problem,
        test_shapes=tuple(_parse_shapes(test.get("shapes", []), problem, path, "test")),
        tune_shapes=tuple(_parse_shapes(tune.get("shapes", []), problem, path, "tune")),
        tolerances=tuple(_parse_tolerances(test.get("tolerance", []), axis_names, path)),
        reference_path=reference if reference.is_file() else None,
        raw=raw,
    )


def _parse_axis(index: int, raw: Any, path: Path) -> Axis:
    where = f"{path}: axis[{index}]"
    _check_keys(raw, "axis", path)
    for key in ("name", "key", "values"):
        if key not in raw:
            raise WgslgenError(f"{where} lacks {key!r}")
    _check_safe_name(raw["name"], f"{where}.name")
    _check_safe_name(raw["key"], f"{where}.key")
    values = tuple(raw["values"])
    if not values:
        raise WgslgenError(f"{where} ({raw['name']}): values is empty")
    for v in values:
        if isinstance(v, bool) or not _SAFE_VALUE.match(str(v)):
            raise WgslgenError(f"{where} ({raw['name']}): value {v!r} is not file-name safe")
    if len(set(values)) != len(values):
        raise WgslgenError(f"{where} ({raw['name']}): values repeat")
    baseline = raw.get("baseline", values[0])
    if baseline not in values:
        raise WgslgenError(f"{where} ({raw['name']}): baseline {baseline!r} is not in values")
    return Axis(raw["name"], raw["key"], values, baseline)


def _parse_uniform(raw: Any, path: Path):
    if raw is None:
        return None
    _check_keys(raw, "uniform", path)
    members = []
    for i, f in enumerate(raw.get("fields", [])):
        if not (isinstance(f, list) and len(f) == 2 and all(isinstance(x, str) for x in f)):
            raise WgslgenError(f"{path}: uniform.fields[{i}] must be [name, type], got {f!r}")
        members.append((f[0], f[1]))
    return layout_uniform(
        raw.get("struct", "Params"),
        raw.get("var", "params"),
        int(raw.get("group", 0)),
        int(raw.get("binding", 0)),
        members,
        int(raw.get("pad_to", 16)),
        f"{path}: [uniform]",
    )


def _parse_bindings(raw: Any, uniform, axis_names: list[str], path: Path):
    taken = {(uniform.group, uniform.binding): uniform.var_name} if uniform else {}
    next_binding = (uniform.binding + 1) if uniform else 0
    out = []
    for i, b in enumerate(raw):
        where = f"{path}: binding[{i}]"
        _check_keys(b, "binding", path)
        for key in ("name", "type", "count"):
            if key not in b:
                raise WgslgenError(f"{where} lacks {key!r}")
        group, number = int(b.get("group", 0)), int(b.get("binding", next_binding))
        if (group, number) in taken:
            raise WgslgenError(
                f"{where} ({b['name']}): @group({group}) @binding({number}) is already "
                f"{taken[(group, number)]!r}"
            )
        taken[(group, number)] = b["name"]
        next_binding = number + 1
        access = b.get("access", "read")
        if access not in ("read", "read_write"):
            raise WgslgenError(f"{where} ({b['name']}): access must be read or read_write")
        type_ = b["type"]
        encoding = (
            type_ if type_ in ENCODINGS else compile_expression(type_, f"{where}.type", axis_names)
        )
        scratch = b.get("scratch", False)
        if scratch not in (True, False) or (scratch and access != "read_write"):
            raise WgslgenError(f"{where} ({b['name']}): scratch = true needs access = read_write")
        out.append(
            BindingDecl(b["name"], group, number, access, encoding, str(b["count"]), scratch)
        )
    return tuple(out)


def _parse_problem(
    raw: Any, uniform, bindings, axis_names: list[str], path: Path, passes: Any, entry: str
):
    if raw is None:
        if passes:
            raise WgslgenError(f"{path}: [[pass]] needs a [problem] table (sizes, ...)")
        return None
    _check_keys(raw, "problem", path)
    sizes = tuple(raw.get("sizes", []))
    scope = [*axis_names, *sizes]
    derived = []
    for name, text in raw.get("derived", {}).items():
        derived.append((name, compile_expression(text, f"{path}: problem.derived.{name}", scope)))
        scope.append(name)
    if uniform is not None:
        for f in uniform.fields:
            if not f.padding and f.name not in scope:
                raise WgslgenError(
                    f"{path}: uniform field {f.name!r} is neither a problem size nor derived; "
                    f"sizes: {', '.join(sizes)}"
                )
    preconditions = tuple(
        compile_expression(p, f"{path}: problem.preconditions[{i}]", scope)
        for i, p in enumerate(raw.get("preconditions", []))
    )
    if passes and "dispatch" in raw:
        raise WgslgenError(
            f"{path}: give the dispatch either in [problem].dispatch or per [[pass]], not both"
        )
    if passes:
        parsed = tuple(_parse_pass(p, scope, path, f"pass[{i}]") for i, p in enumerate(passes))
    else:
        single = {"entry_point": entry, "dispatch": raw.get("dispatch", [])}
        parsed = (_parse_pass(single, scope, path, "problem"),)
    counts = tuple(
        (b.name, compile_expression(b.count, f"{path}: binding {b.name!r}.count", scope))
        for b in bindings
    )
    return ProblemSpec(sizes, tuple(derived), preconditions, parsed, counts)


def _parse_pass(raw: Any, scope: list[str], path: Path, table: str) -> Pass:
    _check_keys(raw, "pass", path)
    entry = raw.get("entry_point")
    if not isinstance(entry, str) or not entry.isidentifier():
        raise WgslgenError(
            f"{path}: {table}.entry_point must be a WGSL function name, got {entry!r}"
        )
    dispatch = tuple(
        compile_expression(d, f"{path}: {table}.dispatch[{i}]", scope)
        for i, d in enumerate(raw.get("dispatch", []))
    )
    if not 1 <= len(dispatch) <= 3:
        raise WgslgenError(f"{path}: {table}.dispatch needs 1 to 3 expressions")
    return Pass(entry, dispatch)


def _parse_shapes(raw: Any, problem, path: Path, section: str):
    for i, shape in enumerate(raw):
        if not isinstance(shape, dict):
            raise WgslgenError(f"{path}: {section}.shapes[{i}] must be a table")
        if problem is not None:
            bad = sorted(set(shape) ^ set(problem.sizes))
            if bad:
                raise WgslgenError(
                    f"{path}: {section}.shapes[{i}] must set exactly {', '.join(problem.sizes)}; "
                    f"wrong: {', '.join(bad)}"
                )
        yield {k: int(v) for k, v in shape.items()}


def _parse_tolerances(raw: Any, axis_names: list[str], path: Path):
    for i, t in enumerate(raw):
        where = f"{path}: test.tolerance[{i}]"
        if not isinstance(t, dict) or "rtol" not in t or "atol" not in t:
            raise WgslgenError(f"{where} needs rtol and atol")
        when = compile_expression(t["when"], f"{where}.when", axis_names) if "when" in t else None
        yield Tolerance(when, float(t["rtol"]), float(t["atol"]))
