"""tuning/selection.json as shipped: every variant it names is one of the bundled templates',
with the code its timing was measured on.

`wgslgen vendor` drops a choice whose code changed since it was timed (its record is stale)
and ships the fallback instead. An edit that touches the rendered text of a chosen variant
(a comment in a template included) does that without a word, until the next tune on the
device the choice came from.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from wgslgen.render.renderer import render_families
from wgslgen.spec.loader import discover
from wgslgen.tune.selection import result_sha256

from .conftest import TEMPLATES

SELECTION = TEMPLATES.parent / "tuning" / "selection.json"
ROLES = ("winner", "default", "baseline")


def _stale_choices(templates: Path, selection: Path) -> list[str]:
    """'<role> <variant>: <why>' for each choice whose variant or code is not as timed."""
    specs = {spec.name: spec for spec in discover([templates])}
    found = []
    for entry in json.loads(selection.read_text(encoding="utf-8"))["entries"]:
        variants = {v.name: v for v in specs[entry["kernel"]].variants}
        for role in ROLES:
            choice = entry.get(role) or {}
            if not choice.get("sha256"):
                continue
            variant = variants.get(choice["variant"])
            if variant is None:
                found.append(f"{role} {choice['variant']}: not a variant of the templates")
                continue
            naga = next(r for r in render_families(variant) if r.family in ("any", "naga"))
            if result_sha256(naga) != choice["sha256"]:
                found.append(f"{role} {choice['variant']}: code changed since it was timed")
    return found


def test_every_shipped_choice_is_the_code_that_was_timed() -> None:
    entries = json.loads(SELECTION.read_text(encoding="utf-8"))["entries"]
    assert len(entries) >= 10
    assert _stale_choices(TEMPLATES, SELECTION) == []


def test_a_comment_in_a_chosen_variants_text_makes_its_choice_stale(tmp_path: Path) -> None:
    # The check has teeth: one comment line more in the subgroup pass's template (rendered
    # into the text of the variant the H100's head_dim-128 tune chose) and exactly the
    # choices of subgroup_sums variants are stale.
    templates = tmp_path / "templates"
    shutil.copytree(TEMPLATES, templates)
    body = templates / "_lib" / "attention_bwd_dq_split_out.sg.wgsl.j2"
    text = body.read_text(encoding="utf-8")
    anchor = "const ROWS: u32 = {{ ROWS }}u;\n"
    assert anchor in text
    body.write_text(text.replace(anchor, anchor + "// one more comment\n"), encoding="utf-8")
    stale = _stale_choices(templates, SELECTION)
    assert stale, "the selection names no subgroup_sums variant any more: pick another template"
    assert all(re.search(r"_sg[12]: code changed since it was timed$", s) for s in stale), stale
