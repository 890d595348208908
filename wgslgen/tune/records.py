"""Declared types of a results record and of the selection file (pydantic), and their JSON
Schemas: a record with a wrong type is refused with the field named, never half-read.

``python -m wgslgen.tune.records`` rewrites the shipped results.schema.json and
selection.schema.json next to this module (a test checks they are current).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

STATUSES = ("ok", "compile-error", "wrong", "timeout", "crash", "skipped", "lost")  # lost: fleet
SELECTION_FORMAT = 1
SCHEMA_DIR = Path(__file__).parent
SCHEMA_ID = "https://wgslgen.invalid/tune/{}.schema.json"  # an id, not a download location

Nanoseconds = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class _Strict(BaseModel):
    # Strict: "median_ns": "fast" or "12" is an error, not a coercion. Unknown keys are
    # ignored, so a newer wgslgen's records still merge.
    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)


class MeasurementModel(_Strict):
    """One timing (bench.Measurement): samples per dispatch and how they were taken."""

    samples_ns: list[Nanoseconds]
    median_ns: Nanoseconds
    q1_ns: Nanoseconds
    q3_ns: Nanoseconds
    iqr_ns: Nanoseconds
    reps: int = Field(ge=0)
    dispatches_per_sample: int = Field(ge=1)
    method: Literal["timestamp", "wallclock"]
    warm: bool
    timer_resolution_ns: Nanoseconds
    l2_flush_bytes: int = Field(ge=0)
    spin_up_s: float = Field(default=0.0, ge=0)  # absent in records from before it existed


class KeyModel(_Strict):
    """What a record is about (db.ResultKey)."""

    source_sha256: str = Field(min_length=1)
    device: str = Field(min_length=1)
    shape: str
    judge: str = ""  # judging digest (selection.judge_sha256); "" in records before it
    input_seed: int = 0


class RecordModel(_Strict):
    """One line of results.jsonl."""

    key: KeyModel
    kernel: str = Field(min_length=1)
    variant: str = Field(min_length=1)
    params: dict[str, Any]
    device_info: dict[str, Any]
    status: Literal[STATUSES]  # type: ignore[valid-type]
    measurement: MeasurementModel | None
    error: str | None
    versions: dict[str, str]
    measured_at: str = Field(min_length=1)

    @model_validator(mode="after")
    def _ok_is_timed(self) -> RecordModel:
        if self.status == "ok" and self.measurement is None:
            raise ValueError("a record with status 'ok' needs a measurement")
        return self

    @model_validator(mode="after")
    def _device_info_is_its_key(self) -> RecordModel:
        # An edited device_info would put one device's timings under another's name (and
        # vendor's rules): a full one must be the device its key's digest was made from.
        from wgslgen.run.device import DeviceKey

        fields = DeviceKey.__dataclass_fields__
        if set(fields) <= set(self.device_info):
            made = DeviceKey(**{f: str(self.device_info[f]) for f in fields})
            if made.digest() != self.key.device:
                raise ValueError(
                    f"device_info ({made.label()}) is not the device of key.device "
                    f"{self.key.device}: edited after it was measured?"
                )
        return self


class ChoiceModel(_Strict):
    """A chosen variant and its median time."""

    variant: str = Field(min_length=1)
    median_ns: Nanoseconds
    sha256: str | None = None


class SelectionEntryModel(_Strict):
    """The decision for one kernel, device and shape."""

    kernel: str = Field(min_length=1)
    device: str = Field(min_length=1)
    device_label: str
    shape: str
    winner: ChoiceModel
    default: ChoiceModel | None
    baseline: ChoiceModel | None
    speedup: float | None = Field(gt=0, allow_inf_nan=False)
    reason: str


class SelectionFileModel(_Strict):
    """tuning/selection.json."""

    format: Literal[1]
    entries: list[SelectionEntryModel]


def problem(exc: ValidationError) -> str:
    """A validation error on one line: the first wrong field and why."""
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "record"
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    if first["type"] == "missing":
        return f"missing field {where!r}{more}"
    return f"{where}: {first['msg']}{more}"


def finite(x: float) -> bool:
    """Whether ``x`` is a finite number."""
    return isinstance(x, int | float) and math.isfinite(x)


def schemas() -> dict[str, dict[str, Any]]:
    """The JSON Schemas of a results record and of the selection file, by file name."""
    out = {}
    for name, model in (("results", RecordModel), ("selection", SelectionFileModel)):
        schema = model.model_json_schema()
        schema["$id"] = SCHEMA_ID.format(name)
        schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
        out[f"{name}.schema.json"] = schema
    return out


def schema_text(schema: dict[str, Any]) -> str:
    """The shipped text of a schema (stable key order)."""
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":  # pragma: no cover - a maintainer's regeneration step
    for file_name, doc in schemas().items():
        (SCHEMA_DIR / file_name).write_text(schema_text(doc))
