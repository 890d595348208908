"""A tuned winner fixed to one shape (like the attention kernels' `fixed_head_dim` variants)
must not leave callers at other shapes with the portable fallback: vendor follows such a
narrow choice with the fastest measured variant that covers as much as the fallback.

The `scale` fixture gains a `fixed_n` axis (n known at render time; that variant serves only
that n), is tuned on lavapipe at n=1000, and its selection entry is pointed at the narrow
variants (tuning on lavapipe may or may not pick them: the situation is set up, the records
are real)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests import vendor_helpers as vh
from tests.conftest import GOOD_KERNELS
from wgslgen.cli import main
from wgslgen.tune.db import ResultsDB, latest
from wgslgen.vendor import conformance
from wgslgen.vendor.plan import plan_vendor
from wgslgen.vendor.runtime import wgslgen_runtime as rt

FIXED_AXIS = """
[[axis]]
name = "fixed_n"
key = "fn"
values = [0, 1000]
baseline = 0
omit_baseline_from_name = true
"""


def _narrowable_scale(root: Path) -> Path:
    """The scale fixture with a `fixed_n` axis whose variants serve n == fixed_n only."""
    kernel = root / "scale"
    shutil.copytree(GOOD_KERNELS / "scale", kernel)
    toml = kernel / "kernel.toml"
    text = toml.read_text().replace("\n\n[uniform]", FIXED_AXIS + "\n[uniform]")
    text = text.replace('preconditions = ["n >= 1"]', 'preconditions = ["n >= 1", '
                        '"fixed_n == 0 or n == fixed_n"]')  # fmt: skip
    text = text.replace("[{ n = 1 }, { n = 1000 }]", "[{ n = 1 }, { n = 1000 }, { n = 3000 }]")
    toml.write_text(text)
    template = kernel / "scale.wgsl.j2"
    bound = "{{ (fixed_n ~ 'u') if fixed_n else 'params.n' }}"
    template.write_text(template.read_text().replace("params.n", bound))
    return root


@pytest.fixture(scope="module")
def narrow_project(tmp_path_factory):
    """(templates, selection path, records at n=1000, wide and narrow f32 variants)."""
    root = tmp_path_factory.mktemp("narrow")
    templates = _narrowable_scale(root / "kernels")
    selection = root / "tuning" / "selection.json"
    db = root / "tuning" / "results.jsonl"
    args = ["tune", "--templates", str(templates), "--adapter", "cpu", "--shape", "n=1000",
            "--rounds", "3", "--l2-bytes", "1M", "--db", str(db),
            "--selection", str(selection)]  # fmt: skip
    assert main(args) == 0
    records = {r.variant: r for r in latest(ResultsDB(db).load().records) if r.status == "ok"}
    assert "scale__wg64_sf32_fn1000" in records and "scale__wg64_sf32" in records
    doc = json.loads(selection.read_text())
    (entry,) = doc["entries"]
    # The narrow situation: the winner and the portable default both fixed to n = 1000.
    for role, name in (
        ("winner", "scale__wg32_sf16_fn1000"),
        ("default", "scale__wg64_sf32_fn1000"),
    ):
        r = records[name]
        entry[role] = {"variant": name, "median_ns": r.measurement.median_ns,
                       "sha256": r.key.source_sha256}  # fmt: skip
    selection.write_text(json.dumps(doc))
    return templates, selection, records


def _plan(templates: Path, selection: Path):
    specs = vh.specs([templates])
    return plan_vendor(specs, selection, ["py"], inputs=vh.inputs(["py"], selection, [templates]))


def test_a_narrow_winner_is_followed_by_the_fastest_wide_variant_measured(narrow_project):
    templates, selection, records = narrow_project
    sel = _plan(templates, selection).manifest["kernels"]["scale"]["selection"]
    wide = sorted(
        (r.measurement.median_ns, n) for n, r in records.items() if not n.endswith("_fn1000")
    )
    fastest_wide = wide[0][1]
    for rule in sel["rules"]:
        chain = [c["variant"] for c in rule["chain"]]
        assert chain == ["scale__wg32_sf16_fn1000", "scale__wg64_sf32_fn1000", fastest_wide]
    # The default chain: the narrow portable default, then the fastest portable wide one.
    portable = [n for _, n in wide if "_sf32" in n]
    assert sel["default_chain"] == ["scale__wg64_sf32_fn1000", portable[0]]


def test_a_caller_at_another_n_gets_the_tuned_wide_variant_not_the_fallback(narrow_project):
    templates, selection, records = narrow_project
    manifest = _plan(templates, selection).manifest
    sel = manifest["kernels"]["scale"]["selection"]
    match = sel["rules"][0]["match"]  # the tuned device (lavapipe), as its rule names it
    facts = rt.AdapterFacts(
        *(match[k] or "" for k in ("vendor", "architecture", "device", "backend")),
        frozenset({"shader-f16"}), conformance.facts("browser-nvidia").limits,
    )  # fmt: skip
    assert rt.select(manifest, "scale", facts, {"n": 1000}).variant == "scale__wg32_sf16_fn1000"
    elsewhere = rt.select(manifest, "scale", facts, {"n": 4096})
    assert elsewhere.variant == sel["rules"][0]["chain"][2]["variant"]
    assert elsewhere.variant in records and not elsewhere.variant.endswith("_fn1000")
