"""generated/manifest.json has a declared schema, generated from the models and shipped."""

from __future__ import annotations

import json

import jsonschema
import pytest

from wgslgen.render.manifest_schema import SCHEMA_PATH, schema_text

from .conftest import ROOT


def test_the_shipped_schema_is_generated_from_the_models() -> None:
    assert SCHEMA_PATH.read_text(encoding="utf-8") == schema_text()


def test_the_committed_manifest_validates_against_the_schema() -> None:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    manifest = json.loads((ROOT / "generated" / "manifest.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(schema).validate(manifest)
    broken = {**manifest, "variants": [{**manifest["variants"][0], "workgroup_size": "64"}]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(schema).validate(broken)
