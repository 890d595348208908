"""The vendored manifest as pydantic models; its JSON Schema (2020-12) is generated from them."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = 1
SCHEMA_ID = "https://wgslgen.invalid/vendor/manifest.schema.json"

Op = Literal[
    "const", "var", "add", "sub", "mul", "div", "mod", "ceil_div", "min", "max",
    "lt", "le", "gt", "ge", "eq", "ne", "and", "or", "not", "select",
    "fconst", "fdiv", "abs", "int", "float",
]  # fmt: skip


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Expr(_Model):
    """An expression tree (see wgslgen/vendor/expr.py): const (an integer), fconst (a float),
    var or op(args); integers stay integers unless a float enters, as in Python."""

    op: Op
    value: int | float | None = None
    name: str | None = None
    args: list[Expr] | None = None


class Derived(_Model):
    """A value computed from the sizes (and earlier derived values), in order."""

    name: str
    expr: Expr


class UniformField(_Model):
    """One uniform member: its byte place, and the value to store (None for padding)."""

    name: str
    type: Literal["u32", "i32", "f32"]
    offset: int
    size: int
    padding: bool
    value: Expr | None


class Uniform(_Model):
    """The uniform struct: WGSL names, binding and every member (explicit padding)."""

    struct: str
    var: str
    group: int
    binding: int
    size: int
    fields: list[UniformField]


class Binding(_Model):
    """One bind group entry; the passes of a variant share one bind group layout."""

    group: int
    binding: int
    name: str
    kind: Literal["uniform", "storage"]
    element: str | None  # WGSL element type (storage)
    encoding: str | None  # host encoding: f32, f16, pf16 (two f16 in a u32), u32, i32
    access: Literal["read", "read_write"]
    scratch: bool
    count: Expr | None  # logical element count (storage)
    min_binding_size: Expr  # bytes, a multiple of 4


class Pass(_Model):
    """One dispatch, in order, inside one compute pass."""

    entry_point: str
    workgroup_size: list[int] = Field(min_length=3, max_length=3)
    workgroup_bytes: int
    dispatch: list[Expr] = Field(min_length=3, max_length=3)


class Scratch(_Model):
    """A buffer the caller allocates for the passes to share; never read back."""

    binding: str
    size: Expr  # bytes


class Precondition(_Model):
    """A condition the shape must meet (the kernel's own text, for error messages)."""

    text: str
    expr: Expr


class Variant(_Model):
    """One vendored variant: files per compiler family, interface, passes and needs."""

    kernel: str
    name: str
    params: dict[str, Any]
    files: dict[Literal["any", "naga", "tint"], str]
    provenance_sha256: str  # tuning's result key of the naga rendering (name + body)
    sizes: list[str]
    derived: list[Derived]
    uniform: Uniform | None
    bindings: list[Binding]
    passes: list[Pass]
    scratch: list[Scratch]
    features: list[str]
    limits: dict[str, int]  # WebGPU limit name (camelCase) → the least the variant needs
    preconditions: list[Precondition]
    portable: bool
    validated_by: list[str]
    # Absent when the kernel has no kernel.toml [overrides]: values of the shader's `override`
    # declarations that every pass's pipeline is created with (GPUProgrammableStage.constants).
    constants: dict[str, float] = Field(default_factory=dict)
    # Absent when none: the sizes that are float parameters (a [test]/[tune] shape gives them a
    # float, e.g. eps). The others are integers; the selector buckets integer sizes only.
    float_sizes: list[str] = Field(default_factory=list)


class Candidate(_Model):
    """A variant in a rule's chain and the measurement that put it there."""

    variant: str
    median_ns: float | None
    samples: int | None
    sha256: str | None


class Bucket(_Model):
    """An interval of one size: min <= size < max (None: unbounded)."""

    min: int | None
    max: int | None


class Match(_Model):
    """Adapter facts a rule needs (None: any); compared case-insensitively."""

    vendor: str | None = None
    architecture: str | None = None
    device: str | None = None
    backend: str | None = None


class Rule(_Model):
    """Tuned on ``label``: for adapters matching ``match`` and shapes in ``shape``, ``chain``."""

    label: str
    match: Match
    shape: dict[str, Bucket]
    chain: list[Candidate]


class Selection(_Model):
    """A kernel's selector data: rules (most specific first), default chain, fallback."""

    rules: list[Rule]
    default_chain: list[str]
    portable_fallback: str


class Kernel(_Model):
    """A vendored kernel: its sizes, variants and how to choose among them."""

    sizes: list[str]
    variants: list[str]
    selection: Selection


class Manifest(_Model):
    """manifest.json of a vendored folder."""

    schema_version: Literal[1]
    abi_version: str
    generator: str
    files: dict[str, str]  # path → sha256, every file of the folder but manifest.json
    kernels: dict[str, Kernel]
    variants: dict[str, Variant]
    excluded: list[dict[str, str]]  # {"variant", "reason"}: named by tuning, not vendored
    warnings: list[str]
    inputs: dict[str, Any]  # what `wgslgen vendor` was given: --check regenerates from it


def schema() -> dict[str, Any]:
    """The manifest's JSON Schema (draft 2020-12)."""
    out = Manifest.model_json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID, **out}


def schema_text() -> str:
    """The schema as the deterministic text shipped in the package and every vendored folder."""
    return json.dumps(schema(), indent=2, sort_keys=True) + "\n"
