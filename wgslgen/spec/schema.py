"""kernel.toml declared as pydantic models: one source for validation, error texts, the JSON
Schema (wgslgen/spec/kernel.schema.json) and the key reference in docs/kernel-format.md
(both written by schema_export.py).

The models check structure (keys, types, required keys, file-name safety, value lists);
loader.py then checks what needs several tables at once (expressions against the names in
scope, binding numbers, shapes against the sizes).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
    WithJsonSchema,
    model_validator,
)
from pydantic_core import PydanticCustomError

from wgslgen.errors import WgslgenError

# Names and keys end up in file names under generated/: nothing that could leave it.
SAFE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_-]*$")
SAFE_VALUE = re.compile(r"^[A-Za-z0-9_.]+$")


def _refuse(message: str) -> PydanticCustomError:
    # The message is final text: to_error() prefixes the file and the key's location.
    return PydanticCustomError("wgslgen", "{message}", {"message": message})


def _safe_name(value: str) -> str:
    if not SAFE_NAME.match(value):
        raise _refuse(
            f"{value!r} is refused: use letters, digits, '_' and '-' only "
            "(it becomes a path under generated/)"
        )
    return value


def _axis_value(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise _refuse(f"{value!r} must be an integer, a number or a string")
    if not SAFE_VALUE.match(str(value)):
        raise _refuse(f"{value!r} is not file-name safe (letters, digits, '_' and '.')")
    return value


def _number(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _refuse(f"{value!r} must be a number")
    return value


def _wgsl_name(value: str) -> str:
    if not value.isidentifier():
        raise _refuse(f"must be a WGSL function name, got {value!r}")
    return value


def _int_to_text(value: Any) -> Any:
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


def _number_to_text(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise _refuse(f"must be a number or an expression string, got {value!r}")
    return value if isinstance(value, str) else repr(value)


def _wgsl_identifier(value: str) -> str:
    if not value.isidentifier():
        raise _refuse(f"must be a WGSL identifier, got {value!r}")
    return value


SafeName = Annotated[StrictStr, AfterValidator(_safe_name)]
AxisValue = Annotated[
    Any,
    AfterValidator(_axis_value),
    WithJsonSchema({"type": ["integer", "number", "string"], "pattern": SAFE_VALUE.pattern}),
]
Number = Annotated[Any, AfterValidator(_number), WithJsonSchema({"type": "number"})]
Expr = Annotated[
    StrictStr,
    Field(description="an expression (see 'Expressions')"),
]
CountExpr = Annotated[
    StrictStr,
    BeforeValidator(_int_to_text),
    WithJsonSchema({"type": ["string", "integer"]}),
]
Shape = dict[StrictStr, Number]
OverrideName = Annotated[StrictStr, AfterValidator(_wgsl_identifier)]
OverrideValue = Annotated[
    StrictStr,
    BeforeValidator(_number_to_text),
    WithJsonSchema({"type": ["string", "number"]}),
]


class _Table(BaseModel):
    """A TOML table: unknown keys are refused (a typo must not be ignored)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class KernelTable(_Table):
    """[kernel]: the kernel's name and files."""

    name: SafeName | None = Field(None, description="kernel name (default: the folder's name)")
    template: StrictStr | None = Field(
        None, description="Jinja template in the folder (default: `<name>.wgsl.j2`)"
    )
    entry_point: Annotated[StrictStr, AfterValidator(_wgsl_name)] | None = Field(
        None, description="compute entry point of a one-pass kernel (default: `main`)"
    )
    description: StrictStr = Field("", description="one line shown by `wgslgen list`")
    reference: StrictStr | None = Field(
        None, description="numpy reference, relative to the folder (default: `reference.py`)"
    )


class AxisTable(_Table):
    """[[axis]]: one tuning axis; a variant is one value of every axis."""

    name: SafeName = Field(description="name seen by the template and expressions")
    key: SafeName = Field(description="short key used in variant names, e.g. `wg`")
    values: list[AxisValue] = Field(min_length=1, description="candidate values, in order")
    baseline: AxisValue | None = Field(
        None, description="the hand-written original's value (default: the first value)"
    )
    doc: StrictStr = Field("", description="what the axis means (for people)")
    omit_baseline_from_name: StrictBool = Field(
        False,
        description="leave `key<baseline>` out of variant names: an axis added to a kernel "
        "keeps its earlier variants' names, tuning records and vendored files",
    )

    @model_validator(mode="after")
    def _values_fit(self) -> AxisTable:
        if len(set(self.values)) != len(self.values):
            raise _refuse(f"({self.name}): values repeat")
        if self.baseline is not None and self.baseline not in self.values:
            raise _refuse(f"({self.name}): baseline {self.baseline!r} is not in values")
        return self


class UniformTable(_Table):
    """[uniform]: one uniform struct filled from the problem's sizes and derived values."""

    struct: StrictStr = Field("Params", description="WGSL struct name")
    var: StrictStr = Field("params", description="WGSL variable name")
    group: StrictInt = Field(0, ge=0, description="@group")
    binding: StrictInt = Field(0, ge=0, description="@binding")
    fields: list[tuple[StrictStr, StrictStr]] = Field(
        [], description="`[name, type]` pairs in order; type u32, i32, f32 or f16"
    )
    pad_to: StrictInt = Field(16, ge=0, description="struct size is a multiple of this (bytes)")


class BindingTable(_Table):
    """[[binding]]: one storage buffer."""

    name: StrictStr = Field(description="WGSL variable name and the reference's dict key")
    group: StrictInt = Field(0, ge=0, description="@group")
    binding: StrictInt | None = Field(
        None, ge=0, description="@binding (default: one after the previous binding)"
    )
    access: Literal["read", "read_write"] = Field(
        "read", description="`read` (an input) or `read_write` (an output or scratch)"
    )
    type: StrictStr = Field(description="f32, f16, pf16, u32, i32, or an expression (an axis)")
    count: CountExpr = Field(description="element count: an expression over the problem scope")
    scratch: StrictBool = Field(
        False, description="written and read by the passes, not compared (needs read_write)"
    )
    doc: StrictStr = Field("", description="what the buffer holds (for people)")

    @model_validator(mode="after")
    def _scratch_writes(self) -> BindingTable:
        if self.scratch and self.access != "read_write":
            raise _refuse(f"({self.name}): scratch = true needs access = read_write")
        return self


class PassTable(_Table):
    """[[pass]]: one dispatch of a multi-pass kernel, run in order in one compute pass."""

    entry_point: Annotated[StrictStr, AfterValidator(_wgsl_name)] = Field(
        description="the pass's compute entry point"
    )
    dispatch: list[Expr] = Field(
        min_length=1, max_length=3, description="workgroup counts x[, y[, z]]"
    )
    doc: StrictStr = Field("", description="what the pass does (for people)")


class ProblemTable(_Table):
    """[problem]: the sizes a caller sets and what follows from them."""

    sizes: list[StrictStr] = Field([], description="names a shape sets (integers or numbers)")
    derived: dict[StrictStr, Expr] = Field(
        {}, description="name = expression over axes, sizes and earlier derived values"
    )
    preconditions: list[Expr] = Field(
        [], description="expressions that must hold; a shape that breaks one is n/a"
    )
    dispatch: list[Expr] | None = Field(
        None,
        min_length=1,
        max_length=3,
        description="workgroup counts x[, y[, z]] of a one-pass kernel",
    )


class ToleranceTable(_Table):
    """[[test.tolerance]]: comparison tolerance; the first whose `when` holds applies."""

    when: Expr | None = Field(None, description="expression over the axes (default: always)")
    rtol: Number = Field(description="relative tolerance")
    atol: Number = Field(description="absolute tolerance")


class TestTable(_Table):
    """[test]: what `wgslgen test` runs."""

    shapes: list[Shape] = Field([], description="shapes, each setting every size")
    tolerance: list[ToleranceTable] = Field(
        [], description="tables of when, rtol, atol (default rtol 1e-5, atol 1e-6)"
    )


class TuneTable(_Table):
    """[tune]: what `wgslgen tune` times."""

    shapes: list[Shape] = Field([], description="shapes, each setting every size")


class KernelFile(_Table):
    """kernel.toml: every table of a kernel folder's kernel.toml file."""

    kernel: KernelTable = Field(KernelTable(), description="the kernel's name and files")
    axis: list[AxisTable] = Field([], description="tuning axes")
    constraints: list[Expr] = Field(
        [], description="expressions over the axes; a combination must satisfy all"
    )
    uniform: UniformTable | None = Field(None, description="the uniform struct")
    binding: list[BindingTable] = Field([], description="storage buffers, in binding order")
    passes: list[PassTable] = Field([], alias="pass", description="passes of a multi-pass kernel")
    problem: ProblemTable | None = Field(None, description="sizes, derived values, dispatch")
    test: TestTable = Field(TestTable(), description="test shapes and tolerances")
    tune: TuneTable = Field(TuneTable(), description="tuning shapes")
    overrides: dict[OverrideName, OverrideValue] = Field(
        {},
        description="values of the template's WGSL `override` constants, per variant: name = "
        "a number or an expression over the axes. Every stage uses them: the static limit "
        "facts, `validate` and `build` (pipeline constants for wgpu and Dawn; "
        "`--override NAME=VALUE` wins), the pipelines `test` and `tune` run (a value is part "
        "of a tuning record's judging key), and `vendor` (the manifest's `constants` of each "
        "variant, which every binding passes at pipeline creation)",
    )

    @model_validator(mode="after")
    def _tables_agree(self) -> KernelFile:
        seen: set[str] = set()
        for a in self.axis:
            for label in dict.fromkeys([a.name, a.key]):
                if label in seen:
                    raise _refuse(f"axis name or key {label!r} is used twice")
                seen.add(label)
        if self.passes and self.kernel.entry_point is not None:
            raise _refuse("with [[pass]] tables, name entry points there, not in [kernel]")
        if self.passes and self.problem is None:
            raise _refuse("[[pass]] needs a [problem] table (sizes, ...)")
        if self.passes and self.problem is not None and self.problem.dispatch is not None:
            raise _refuse(
                "give the dispatch either in [problem].dispatch or per [[pass]], not both"
            )
        return self


def parse(raw: dict[str, Any], path: Path) -> KernelFile:
    """Validate a parsed kernel.toml; the first problem becomes one WgslgenError."""
    try:
        return KernelFile.model_validate(raw)
    except ValidationError as exc:
        raise to_error(exc, path) from None


def to_error(exc: ValidationError, path: Path, root: type[BaseModel] | None = None) -> WgslgenError:
    """One line naming the file, the key and (for unknown keys) the valid ones.

    ``root`` is the model validated (default KernelFile): it lists the valid keys.
    """
    errors = exc.errors(include_url=False)
    extra = [e for e in errors if e["type"] == "extra_forbidden"]
    if extra:
        table = extra[0]["loc"][:-1]
        keys = [e["loc"][-1] for e in extra if e["loc"][:-1] == table]
        section = ".".join(str(p) for p in table if isinstance(p, str))
        model = tables(root).get(section, root or KernelFile)
        valid = sorted(_field_names(model))
        return WgslgenError(
            f"{path}: unknown key(s) {', '.join(map(str, keys))} in [{section or 'top level'}]; "
            f"valid: {', '.join(valid)}"
        )
    first = errors[0]
    loc = tuple(p for p in first["loc"] if not _is_union_tag(p))
    if first["type"] == "missing" and isinstance(loc[-1], int):
        return WgslgenError(f"{path}: {where(loc[:-1])} has too few items")
    if first["type"] == "missing":
        return WgslgenError(f"{path}: {where(loc[:-1])} lacks {loc[-1]!r}")
    if first["type"] == "wgslgen":
        text = first["ctx"]["message"]
        return WgslgenError(f"{path}: {where(loc)} {text}" if loc else f"{path}: {text}")
    what = _TYPE_TEXT.get(first["type"]) or first["msg"][:1].lower() + first["msg"][1:]
    if first["type"] == "too_short":
        what = f"needs at least {first['ctx']['min_length']} item(s)"
    if first["type"] == "too_long":
        what = f"takes at most {first['ctx']['max_length']} item(s)"
    return WgslgenError(f"{path}: {where(loc)}: {what}, got {first.get('input')!r}")


# pydantic's texts name Python types ("a valid dictionary or instance of KernelTable").
_TYPE_TEXT = {
    "dict_type": "must be a table",
    "model_type": "must be a table",
    "model_attributes_type": "must be a table",
    "list_type": "must be an array",
    "tuple_type": "must be an array",
    "string_type": "must be a string",
    "int_type": "must be an integer",
    "bool_type": "must be true or false",
}


def _is_union_tag(part: Any) -> bool:
    # pydantic adds the member type to the location of a union's errors ("int", "list[...]").
    return isinstance(part, str) and ("[" in part or part in {"int", "str", "float", "bool"})


def where(loc: tuple[Any, ...]) -> str:
    """A location as kernel.toml authors read it: [kernel].name, axis[1].key, test.shapes[0]."""
    if not loc:
        return "top level"
    head, *rest = loc
    text = f"[{head}]" if head in {"kernel", "uniform", "problem"} else str(head)
    for part in rest:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text


def _field_names(model: type[BaseModel]) -> list[str]:
    return [f.alias or name for name, f in model.model_fields.items()]


def tables(root: type[BaseModel] | None = None) -> dict[str, type[BaseModel]]:
    """Every table of kernel.toml (or of ``root``) by its dotted path ('' is the top level)."""
    root = root or KernelFile
    out: dict[str, type[BaseModel]] = {"": root}
    todo = [("", root)]
    while todo:
        prefix, model = todo.pop()
        for name, f in model.model_fields.items():
            sub = _model_in(f.annotation)
            if sub is not None:
                path = f"{prefix}.{f.alias or name}".lstrip(".")
                out[path] = sub
                todo.append((path, sub))
    return dict(sorted(out.items()))


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        if (found := _model_in(arg)) is not None:
            return found
    return None
