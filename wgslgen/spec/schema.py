"""kernel.toml declared as pydantic models: one source for validation, error texts, the JSON
Schema (wgslgen/spec/kernel.schema.json) and the key reference in docs/kernel-format.md
(both written by schema_export.py).

The models check structure (keys, types, required keys, file-name safety, value lists);
loader.py then checks what needs several tables at once (expressions against the names in
scope, binding numbers, shapes against the sizes).
"""

from __future__ import annotations

import re
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
    WithJsonSchema,
    model_validator,
)
from pydantic_core import PydanticCustomError

# Names and keys end up in file names under generated/: nothing that could leave it.
SAFE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_-]*$")
SAFE_VALUE = re.compile(r"^[A-Za-z0-9_.]+$")


def _refuse(message: str, key: str | None = None) -> PydanticCustomError:
    # The message is final text: to_error() prefixes the file and the key's location; ``key``
    # (a table's check about one of its keys) points the line at that key.
    return PydanticCustomError("wgslgen", "{message}", {"message": message, "key": key})


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


def _is_number_text(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


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
            raise _refuse(f"({self.name}): values repeat", "values")
        quoted = [v for v in self.values if isinstance(v, str) and _is_number_text(v)]
        if quoted and any(not isinstance(v, str) for v in self.values):
            raise _refuse(
                f"({self.name}): values mix numbers and quoted numbers ({quoted[0]!r}): "
                f"write {quoted[0]} without quotes",
                "values",
            )
        if self.baseline is not None and self.baseline not in self.values:
            if str(self.baseline) in {str(v) for v in self.values}:
                raise _refuse(
                    f"({self.name}): baseline {self.baseline!r} is not in values: write it as "
                    "values do (a number without quotes, a string with them)",
                    "baseline",
                )
            raise _refuse(f"({self.name}): baseline {self.baseline!r} is not in values", "baseline")
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
            raise _refuse(f"({self.name}): scratch = true needs access = read_write", "scratch")
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


def field_names(model: type[BaseModel]) -> list[str]:
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
