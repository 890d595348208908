"""The declared model of a limit profile file, and its JSON Schema.

``python -m wgslgen.check.profile_model`` rewrites limit-profile.schema.json next to this
module (a test fails when it is stale); editors can point ``$schema`` at it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

SCHEMA_PATH = Path(__file__).with_name("limit-profile.schema.json")
SCHEMA_ID = "https://wgslgen.invalid/limit-profile.schema.json"  # an id, not a location
BASES = ("webgpu", "compat", "wgpu-downlevel")
KEYS = ("name", "base", "limits", "features")

Limit = Annotated[int, Field(strict=True, ge=0)]


class LimitProfileFile(BaseModel):
    """A limit profile: named device limits and the optional features a device offers."""

    model_config = ConfigDict(extra="forbid", strict=True)

    name: str | None = Field(None, description="shown in reports (default: the file's stem)")
    base: Literal["webgpu", "compat", "wgpu-downlevel"] | None = Field(
        None, description="a builtin profile whose limits the others override"
    )
    limits: dict[str, Limit] = Field(
        default_factory=dict,
        description="WebGPU limit names (kebab-case, camelCase or snake_case) to values",
    )
    features: list[str] | None = Field(
        None, description="optional features on offer; absent: any feature may be requested"
    )


def problem(exc: ValidationError, data: Any) -> str:
    """The first validation error in the words of the profile's own keys."""
    err = exc.errors()[0]
    loc, kind = err["loc"], err["type"]
    if kind == "model_type":
        return "a limit profile is a JSON object"
    if kind == "extra_forbidden":
        extra = sorted(set(data) - set(KEYS))
        return f"unknown key(s) {', '.join(extra)}; expected {', '.join(sorted(KEYS))}"
    if loc[0] == "base":
        return f"unknown base profile {data.get('base')!r}"
    if loc[0] == "limits" and len(loc) > 1:
        return f"limit {loc[1]!r} must be a non-negative integer"
    if loc[0] == "limits":
        return "'limits' must be an object of name: integer"
    if loc[0] == "features":
        return "'features' must be a list of feature names"
    return f"{'.'.join(map(str, loc))}: {err['msg']}"


def json_schema() -> dict[str, Any]:
    """The JSON Schema (2020-12) of a limit profile file."""
    schema = LimitProfileFile.model_json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID, **schema}


def schema_text() -> str:
    """The text of the shipped limit-profile.schema.json."""
    return json.dumps(json_schema(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    SCHEMA_PATH.write_text(schema_text(), encoding="utf-8")
    print(f"wrote {SCHEMA_PATH}")
