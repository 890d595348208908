"""A kernel's interface, declared once: bindings, the uniform struct and its byte layout.

The WGSL declarations a template includes, the buffers the harness allocates and the
layout the manifest publishes are all derived from these objects, so they cannot drift.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from wgslgen.errors import WgslgenError


@dataclass(frozen=True)
class Encoding:
    """How a logical array is stored in a buffer: WGSL element type and host conversion."""

    name: str
    wgsl_element: str
    host_dtype: str
    elements_per_word: int  # 2 for packed f16 pairs in one u32, else 1
    feature: str | None

    def encode(self, values: np.ndarray) -> bytes:
        """Host values → buffer bytes in this encoding."""
        flat = np.ascontiguousarray(values, dtype=self.host_dtype).reshape(-1)
        if self.elements_per_word == 2 and flat.size % 2:
            flat = np.concatenate([flat, np.zeros(1, dtype=flat.dtype)])
        return flat.tobytes()

    def decode(self, data: bytes, count: int) -> np.ndarray:
        """Buffer bytes → ``count`` host values (float64 for floats, for comparison)."""
        values = np.frombuffer(data, dtype=self.host_dtype)[:count]
        return values.astype(np.float64) if values.dtype.kind == "f" else values.copy()


ENCODINGS: dict[str, Encoding] = {
    e.name: e
    for e in (
        Encoding("f32", "f32", "float32", 1, None),
        Encoding("f16", "f16", "float16", 1, "shader-f16"),
        # Two f16 per u32, read with unpack2x16float: needs no shader-f16, runs everywhere.
        Encoding("pf16", "u32", "float16", 2, None),
        Encoding("u32", "u32", "uint32", 1, None),
        Encoding("i32", "i32", "int32", 1, None),
    )
}

# WGSL's size and alignment of the scalar types a uniform struct may hold (WGSL §14.4.1).
_UNIFORM_SCALARS = {"u32": ("<I", 4), "i32": ("<i", 4), "f32": ("<f", 4)}


@dataclass(frozen=True)
class UniformField:
    """One member of the uniform struct, with its place in the buffer."""

    name: str
    type: str
    offset: int
    size: int
    padding: bool


@dataclass(frozen=True)
class UniformLayout:
    """The uniform struct: its WGSL name, variable name, binding and member layout."""

    struct_name: str
    var_name: str
    group: int
    binding: int
    fields: tuple[UniformField, ...]
    size: int

    def refusal(self, values: Mapping[str, Any]) -> str | None:
        """Why ``values`` cannot be packed: a fraction for an integer field, a negative u32."""
        for f in self.fields:
            value = values.get(f.name)
            if f.type not in ("u32", "i32") or value is None:
                continue
            if isinstance(value, float) or (f.type == "u32" and value < 0):
                why = "is not an integer" if isinstance(value, float) else "is negative"
                return f"{f.name} = {value} {why} (the uniform's {f.name} is {f.type})"
        return None

    def pack(self, values: Mapping[str, Any]) -> bytes:
        """Pack ``values`` (by field name; padding is zero) with this layout."""
        out = bytearray(self.size)
        for f in self.fields:
            if f.padding:
                continue
            if f.name not in values:
                raise WgslgenError(f"uniform field {f.name!r} has no value")
            fmt, _ = _UNIFORM_SCALARS[f.type]
            try:
                struct.pack_into(fmt, out, f.offset, values[f.name])
            except struct.error as exc:
                raise WgslgenError(
                    f"uniform field {f.name!r} = {values[f.name]!r}: {exc}"
                ) from None
        return bytes(out)

    def to_dict(self) -> dict[str, Any]:
        """The layout as the manifest publishes it."""
        return {
            "struct": self.struct_name,
            "var": self.var_name,
            "group": self.group,
            "binding": self.binding,
            "size": self.size,
            "fields": [
                {
                    "name": f.name,
                    "type": f.type,
                    "offset": f.offset,
                    "size": f.size,
                    "padding": f.padding,
                }
                for f in self.fields
            ],
        }


def layout_uniform(
    struct_name: str,
    var_name: str,
    group: int,
    binding: int,
    members: list[tuple[str, str]],
    pad_to: int,
    where: str,
) -> UniformLayout:
    """Lay out scalar members in order, then pad with ``_padN: u32`` up to ``pad_to`` bytes."""
    fields: list[UniformField] = []
    offset = 0
    for name, type_ in members:
        if type_ not in _UNIFORM_SCALARS:
            raise WgslgenError(
                f"{where}: uniform field {name!r} has type {type_!r}; "
                f"supported: {', '.join(_UNIFORM_SCALARS)}"
            )
        size = _UNIFORM_SCALARS[type_][1]
        offset = -(-offset // size) * size
        fields.append(UniformField(name, type_, offset, size, False))
        offset += size
    if pad_to % 4:
        raise WgslgenError(f"{where}: uniform pad_to must be a multiple of 4, got {pad_to}")
    target = -(-offset // pad_to) * pad_to if pad_to else offset
    pad = 0
    while offset < target:
        fields.append(UniformField(f"_pad{pad}", "u32", offset, 4, True))
        offset += 4
        pad += 1
    return UniformLayout(struct_name, var_name, group, binding, tuple(fields), offset)


@dataclass(frozen=True)
class Binding:
    """A storage buffer binding, resolved for one variant (its encoding is concrete)."""

    name: str
    group: int
    binding: int
    access: str  # "read" or "read_write"
    encoding: Encoding
    count: str  # element-count expression over the problem sizes
    scratch: bool = False  # an intermediate between passes: allocated, never compared

    @property
    def is_output(self) -> bool:
        """Whether the kernel writes this buffer as a result (the harness reads it back)."""
        return self.access == "read_write" and not self.scratch

    def declaration(self) -> str:
        """The WGSL declaration of this binding."""
        return (
            f"@group({self.group}) @binding({self.binding}) var<storage, {self.access}> "
            f"{self.name}: array<{self.encoding.wgsl_element}>;"
        )

    def to_dict(self) -> dict[str, Any]:
        """The binding as the manifest publishes it."""
        return {
            "name": self.name,
            "group": self.group,
            "binding": self.binding,
            "type": "storage",
            "access": self.access,
            "element": self.encoding.wgsl_element,
            "encoding": self.encoding.name,
            "count": self.count,
            "scratch": self.scratch,
        }


@dataclass(frozen=True)
class Interface:
    """Everything a caller binds: the uniform and the storage buffers, in binding order."""

    uniform: UniformLayout | None
    bindings: tuple[Binding, ...]

    def declarations(self) -> str:
        """The WGSL text declaring the uniform struct and every binding."""
        lines: list[str] = []
        if self.uniform is not None:
            u = self.uniform
            lines.append(f"struct {u.struct_name} {{")
            lines.extend(f"    {f.name}: {f.type}," for f in u.fields)
            lines.append("}")
            lines.append(
                f"@group({u.group}) @binding({u.binding}) var<uniform> {u.var_name}: "
                f"{u.struct_name};"
            )
        lines.extend(b.declaration() for b in self.bindings)
        return "\n".join(lines)

    @property
    def features(self) -> frozenset[str]:
        """Features the bindings' encodings need."""
        return frozenset(b.encoding.feature for b in self.bindings if b.encoding.feature)

    def to_dict(self) -> dict[str, Any]:
        """The interface as the manifest publishes it."""
        return {
            "uniform": self.uniform.to_dict() if self.uniform else None,
            "bindings": [b.to_dict() for b in self.bindings],
        }
