"""Finding kernels in template folders and turning each kernel.toml into a KernelSpec."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from wgslgen.errors import WgslgenError
from wgslgen.spec import schema
from wgslgen.spec.expressions import compile_expression
from wgslgen.spec.interface import ENCODINGS, UniformLayout, layout_uniform
from wgslgen.spec.kernel import (
    Axis,
    BindingDecl,
    KernelSpec,
    Pass,
    ProblemSpec,
    Tolerance,
    read_toml,
    shape_mismatch,
)
from wgslgen.spec.schema import SAFE_NAME
from wgslgen.spec.schema_errors import parse
from wgslgen.spec.schema_errors import where as schema_where
from wgslgen.spec.toml_lines import located


def bundled_templates() -> Path:
    """The bundled kernel library: package data when installed, templates/ in a checkout."""
    packaged = resources.files("wgslgen") / "_bundled"  # mapped to templates/ by pyproject
    if packaged.is_dir():
        return Path(str(packaged))
    return Path(__file__).resolve().parents[2] / "templates"


# A plain file's name may also hold dots (model_load.comp.wgsl); never "..".
_PLAIN_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
DEFAULT_TEMPLATES = bundled_templates()


def discover(
    template_dirs: Sequence[Path | str] | None = None,
    skip_unreadable: bool = False,
    broken: list[WgslgenError] | None = None,
) -> list[KernelSpec]:
    """Every kernel in the given folders (kernel folders and plain .wgsl files), by name.
    A folder in them that cannot be read is an error naming it, or with ``skip_unreadable``
    passed over (validate reports it: folder_entries.unreadable_wgsl_entries). Given a
    ``broken`` list, a kernel folder whose kernel.toml is in error is left out and its
    error added there, instead of raised (one broken kernel need not stop work on another).

    Two kernel folders with one name are an error; a plain file whose name is taken (by a
    kernel, or by another file: `my shader.wgsl` and `my_shader.wgsl`, or `a.wgsl` in two
    folders) gets a distinct one, its folder's name first (`y.a`), so that it is still judged.
    No folders (None) means the bundled library; one folder may be given alone.
    """
    if isinstance(template_dirs, str | Path):  # a str is a Sequence too: of letters
        template_dirs = [template_dirs]
    dirs = [Path(d) for d in (template_dirs or [DEFAULT_TEMPLATES])]
    specs = [spec for d in dirs for spec in _kernels_in(d, skip_unreadable, broken)]
    found: dict[str, KernelSpec] = {}
    for spec in (s for s in specs if not s.plain):
        if spec.name in found:
            raise WgslgenError(
                f"two kernels are named {spec.name!r}: "
                f"{found[spec.name].spec_path} and {spec.spec_path}"
            )
        found[spec.name] = spec
    for spec in (s for s in specs if s.plain):
        name = _free_name(spec, found)
        found[name] = spec if name == spec.name else dataclasses.replace(spec, name=name)
    return [found[n] for n in sorted(found)]


def _free_name(spec: KernelSpec, taken: Mapping[str, KernelSpec]) -> str:
    """``spec.name`` when free, else the folder's name and the file's, then a number."""
    if spec.name not in taken:
        return spec.name
    folder = re.sub(r"[^A-Za-z0-9_-]", "_", spec.template_path.parent.name) or "_"
    base = f"{folder}.{spec.name}"
    name, k = base, 2
    while name in taken:
        name, k = f"{base}-{k}", k + 1
    return name


def select(kernels: Iterable[KernelSpec], names: Sequence[str] | None) -> list[KernelSpec]:
    """The kernels named (all when ``names`` is empty); an unknown name lists the known."""
    kernels = list(kernels)
    if not names:
        return kernels
    by_name = {k.name: k for k in kernels}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise UnknownKernelError(
            f"unknown kernel(s) {', '.join(unknown)}; known: {', '.join(by_name) or '(none)'}"
        )
    return [by_name[n] for n in names]


class UnknownKernelError(WgslgenError):
    """A kernel name that none of the templates folders holds."""


def plain_name(path: Path) -> str:
    """The kernel name of the plain file ``path``, from its name alone (nothing opened)."""
    # "model_load.comp.wgsl" -> "model_load.comp": dots are fine in a path; any other
    # character a path must not hold becomes "_" ("my shader.wgsl" -> "my_shader"), so that
    # one oddly named file never stops a run over a folder of someone else's shaders.
    return re.sub(r"[^A-Za-z0-9_.-]|^[.-]|\.(?=\.)", "_", path.stem)


def _is_kernel_folder(child: Path, skip_unreadable: bool) -> bool:
    try:
        return child.is_dir() and (child / "kernel.toml").is_file()
    except OSError as e:  # a folder that cannot be searched (no permission)
        if skip_unreadable:
            return False
        raise WgslgenError(f"{child}: cannot be read: {e.strerror or e}") from e


def _kernels_in(
    path: Path, skip_unreadable: bool = False, broken: list[WgslgenError] | None = None
) -> list[KernelSpec]:
    if not path.exists():
        raise WgslgenError(f"{path}: no such templates folder or file")
    if path.is_file():
        if path.suffix.lower() != ".wgsl":  # named on its own: any case (UPPER.WGSL)
            raise WgslgenError(f"{path}: a kernel file must end in .wgsl")
        return [load_plain(path)]
    if (path / "kernel.toml").is_file():
        return [load_kernel(path)]
    out = []
    for child in sorted(path.iterdir()):
        if child.name.startswith((".", "_")):
            continue  # _lib holds shared macros, not kernels
        if _is_kernel_folder(child, skip_unreadable):
            try:
                out.append(load_kernel(child))
            except WgslgenError as e:
                if broken is None:
                    raise
                broken.append(e)
        elif child.is_file() and child.suffix == ".wgsl":
            out.append(load_plain(child))
    return out


def load_plain(path: Path) -> KernelSpec:
    """A plain WGSL file as a kernel with no axes, no interface and no problem."""
    name = plain_name(path)
    if not _PLAIN_NAME.match(name):
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
    """The first @compute function, by a real parse (comments stripped); "main" when the file
    cannot be read or parsed: validation then reports that file's problem on its own line."""
    from wgslgen.check.wgsl import compute_entry_points

    try:
        return (compute_entry_points(path.read_text(encoding="utf-8")) or ("main",))[0]
    except (OSError, UnicodeDecodeError, WgslgenError):
        return "main"


def _check_safe_name(name: Any, where: str) -> None:
    if not isinstance(name, str) or not SAFE_NAME.match(name):
        raise WgslgenError(
            f"{where} {name!r} is refused: use letters, digits, '_' and '-' only "
            "(it becomes a path under generated/)"
        )


def load_kernel(folder: Path) -> KernelSpec:
    """Parse ``folder/kernel.toml`` into a KernelSpec, naming the key at fault on error."""
    path = folder / "kernel.toml"
    raw = read_toml(path)
    doc = parse(raw, path)
    kernel = doc.kernel
    name = kernel.name or folder.name
    _check_safe_name(name, f"{path}: [kernel].name")
    template = folder / (kernel.template or f"{name}.wgsl.j2")
    if not template.is_file():
        raise WgslgenError(f"{path}: [kernel].template {template.name!r} not found in {folder}")
    reference = folder / (kernel.reference or "reference.py")
    axes = tuple(
        Axis(a.name, a.key, tuple(a.values), _baseline(a), a.omit_baseline_from_name)
        for a in doc.axis
    )
    axis_names = [a.name for a in axes]
    constraints = tuple(
        compile_expression(c, _at(path, "constraints", i), axis_names)
        for i, c in enumerate(doc.constraints)
    )
    uniform = _parse_uniform(doc.uniform, path)
    bindings = _parse_bindings(doc.binding, uniform, axis_names, path)
    entry = doc.passes[0].entry_point if doc.passes else (kernel.entry_point or "main")
    problem = _parse_problem(doc, uniform, bindings, axis_names, path)
    return KernelSpec(
        name=name,
        folder=folder,
        spec_path=path,
        template_path=template,
        entry_point=entry,
        description=kernel.description,
        axes=axes,
        constraints=constraints,
        uniform=uniform,
        bindings=bindings,
        problem=problem,
        test_shapes=tuple(_parse_shapes(doc.test.shapes, problem, uniform, path, "test")),
        tune_shapes=tuple(_parse_shapes(doc.tune.shapes, problem, uniform, path, "tune")),
        tolerances=tuple(_parse_tolerances(doc.test.tolerance, axis_names, path)),
        reference_path=reference if reference.is_file() else None,
        raw=raw,
        overrides=tuple(
            (name, compile_expression(text, _at(path, "overrides", name), axis_names))
            for name, text in doc.overrides.items()
        ),
    )


def _baseline(axis: schema.AxisTable) -> Any:
    return axis.values[0] if axis.baseline is None else axis.baseline


def _parse_uniform(table: schema.UniformTable | None, path: Path) -> UniformLayout | None:
    if table is None:
        return None
    return layout_uniform(
        table.struct,
        table.var,
        table.group,
        table.binding,
        list(table.fields),
        table.pad_to,
        f"{path}: [uniform]",
    )


def _parse_bindings(
    tables: list[schema.BindingTable],
    uniform: UniformLayout | None,
    axis_names: list[str],
    path: Path,
) -> tuple[BindingDecl, ...]:
    taken = {(uniform.group, uniform.binding): uniform.var_name} if uniform else {}
    next_binding = (uniform.binding + 1) if uniform else 0
    out = []
    for i, b in enumerate(tables):
        where = f"{path}: binding[{i}]"
        number = next_binding if b.binding is None else b.binding
        if (b.group, number) in taken:
            raise WgslgenError(
                f"{where} ({b.name}): @group({b.group}) @binding({number}) is already "
                f"{taken[(b.group, number)]!r}"
            )
        names = set(taken.values())
        if b.name in names:
            raise WgslgenError(f"{_at(path, 'binding', i, 'name')} {b.name!r} names two bindings")
        taken[(b.group, number)] = b.name
        next_binding = number + 1
        if b.type not in ENCODINGS and b.type.isidentifier() and b.type not in axis_names:
            raise WgslgenError(
                f"{_at(path, 'binding', i, 'type')} {b.type!r} is not "
                f"a type: use {', '.join(ENCODINGS)} or an expression over the axes "
                f"({', '.join(axis_names) or 'none'})"
            )
        encoding = (
            b.type
            if b.type in ENCODINGS
            else compile_expression(b.type, f"{where}.type", axis_names)
        )
        out.append(BindingDecl(b.name, b.group, number, b.access, encoding, b.count, b.scratch))
    return tuple(out)


def _parse_problem(
    doc: schema.KernelFile,
    uniform: UniformLayout | None,
    bindings: tuple[BindingDecl, ...],
    axis_names: list[str],
    path: Path,
) -> ProblemSpec | None:
    table = doc.problem
    if table is None:
        return None
    sizes = tuple(table.sizes)
    scope = [*axis_names, *sizes]
    derived = []
    for name, text in table.derived.items():
        where = _at(path, "problem", "derived", name)
        if name in sizes:  # it would replace the value the caller's shape gives
            raise WgslgenError(f"{where}: {name!r} is already a problem size; name it otherwise")
        derived.append((name, compile_expression(text, where, scope)))
        scope.append(name)
    declared = [name for name, _ in doc.uniform.fields] if doc.uniform else []
    for f in uniform.fields if uniform is not None else ():
        if not f.padding and f.name not in scope:
            where = _at(path, "uniform", "fields", declared.index(f.name))
            raise WgslgenError(
                f"{where}: uniform field {f.name!r} is neither a problem size nor derived; "
                f"sizes: {', '.join(sizes)}"
            )
    preconditions = tuple(
        compile_expression(p, _at(path, "problem", "preconditions", i), scope)
        for i, p in enumerate(table.preconditions)
    )
    if doc.passes:
        passes = [(("pass", i), p.entry_point, p.dispatch) for i, p in enumerate(doc.passes)]
    elif table.dispatch is None:
        raise WgslgenError(f"{path}: [problem].dispatch needs 1 to 3 expressions")
    else:
        passes = [(("problem",), doc.kernel.entry_point or "main", table.dispatch)]
    parsed = tuple(
        Pass(entry, tuple(_expressions(dispatch, path, (*where, "dispatch"), scope)))
        for where, entry, dispatch in passes
    )
    counts = tuple(
        (b.name, compile_expression(b.count, _at(path, "binding", i, "count"), scope))
        for i, b in enumerate(bindings)
    )
    return ProblemSpec(sizes, tuple(derived), preconditions, parsed, counts)


def _at(path: Path, *loc: str | int) -> str:
    """``file:line: key`` for messages about the key at ``loc`` (``problem.derived.alpha``)."""
    return f"{located(path, loc)}: {schema_where(loc)}"


def _expressions(texts: list[str], path: Path, loc: tuple[str | int, ...], scope: list[str]):
    for i, text in enumerate(texts):
        yield compile_expression(text, _at(path, *loc, i), scope)


def _parse_shapes(shapes: list[dict[str, Any]], problem, uniform, path: Path, section: str):
    for i, shape in enumerate(shapes):
        where = _at(path, section, "shapes", i)
        if problem is not None and (why := shape_mismatch(problem.sizes, shape)):
            raise WgslgenError(f"{where} {why}")
        if uniform and (why := uniform.refusal(shape)):
            raise WgslgenError(f"{where}: {why}")
        yield dict(shape)  # integers stay int; a float parameter (e.g. eps) stays float


def _parse_tolerances(tables: list[schema.ToleranceTable], axis_names: list[str], path: Path):
    for i, t in enumerate(tables):
        where = _at(path, "test", "tolerance", i)
        when = None if t.when is None else compile_expression(t.when, f"{where}.when", axis_names)
        yield Tolerance(when, float(t.rtol), float(t.atol))
