"""The declared shape of generated/manifest.json; its JSON Schema is generated from these models.

Expressions here are the kernel.toml text (Python-like); the vendored manifest
(wgslgen.vendor) carries them as JSON trees for other languages.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict

SCHEMA_PATH = Path(__file__).with_name("manifest.schema.json")
Scalar = int | float | str | bool


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Axis(_Strict):
    """One tuning axis of a kernel."""

    name: str
    key: str
    values: list[Scalar]
    baseline: Scalar


class KernelPass(_Strict):
    """A pass of the kernel: entry point and dispatch expressions (x, y, z)."""

    entry_point: str
    dispatch: list[str]


class Problem(_Strict):
    """The problem a kernel solves: sizes, derived values, preconditions, dispatch, counts."""

    sizes: list[str]
    derived: dict[str, str]
    preconditions: list[str]
    dispatch: list[str]
    passes: list[KernelPass]
    counts: dict[str, str]


class Kernel(_Strict):
    """A kernel's entry in the manifest."""

    template: str
    template_sha256: str
    plain: bool
    entry_point: str
    description: str
    axes: list[Axis]
    baseline: str
    problem: Problem | None
    source: str | None = None  # the templates folder the kernel came from


class UniformField(_Strict):
    """A field of the uniform struct, padding included."""

    name: str
    type: str
    offset: int
    size: int
    padding: bool


class Uniform(_Strict):
    """The uniform struct and where it binds."""

    struct: str
    var: str
    group: int
    binding: int
    size: int
    fields: list[UniformField]


class Binding(_Strict):
    """A storage buffer of the interface."""

    name: str
    group: int
    binding: int
    type: str
    access: str
    element: str
    encoding: str
    count: str
    scratch: bool


class Interface(_Strict):
    """Bindings and uniform, from kernel.toml."""

    uniform: Uniform | None
    bindings: list[Binding]


class VariantPass(_Strict):
    """A pass of one rendering, with its workgroup size and memory."""

    entry_point: str
    dispatch: list[str]
    workgroup_size: list[int]
    workgroup_bytes: int


class Variant(_Strict):
    """One rendering of one variant."""

    kernel: str
    name: str
    params: dict[str, Scalar]
    family: str
    file: str
    sha256: str
    entry_point: str
    workgroup_size: list[int]
    invocations: int
    workgroup_bytes: int
    features: list[str]
    interface: Interface | None
    dispatch: list[str] | None
    passes: list[VariantPass] | None
    preconditions: list[str] | None
    baseline: bool
    fits: dict[str, list[str]]
    generator: str


class Manifest(_Strict):
    """generated/manifest.json."""

    generator: str
    kernels: dict[str, Kernel]
    variants: list[Variant]


def json_schema() -> dict:
    """The JSON Schema (2020-12) of the manifest."""
    schema = Manifest.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://wgslgen.dev/schemas/generated-manifest.schema.json"
    return schema


def schema_text() -> str:
    """The schema as the text shipped in the package."""
    return json.dumps(json_schema(), indent=2, sort_keys=True) + "\n"
