"""Vendoring once per test session: the repo's kernels + selection, every binding, the cases."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import ROOT
from wgslgen.spec.loader import discover
from wgslgen.vendor import conformance, folder
from wgslgen.vendor.plan import VendorPlan, plan_vendor

SELECTION = ROOT / "tuning" / "selection.json"
LANGS = ["py", "rust", "ts"]


def inputs(langs=LANGS, selection: Path | None = SELECTION, templates=()) -> dict:
    """What the CLI records in the manifest for `--check`."""
    return {
        "kernels": [],
        "selection": str(selection) if selection else None,
        "langs": sorted(langs),
        "templates": [str(t) for t in templates],
        "strict": False,
    }


def specs(templates=()):
    """The runnable kernels."""
    return [k for k in discover(list(templates) or None) if k.problem is not None]


def vendor(out: Path, langs=LANGS, selection: Path | None = SELECTION, templates=()) -> VendorPlan:
    """Vendor into ``out`` (and write conformance cases next to it as cases.json)."""
    ks = specs(templates)
    plan = plan_vendor(ks, selection, langs, inputs=inputs(langs, selection, templates))
    folder.write(plan, out)
    return plan


def write_cases(plan: VendorPlan, path: Path) -> dict:
    """The shared conformance cases of a vendored manifest, as JSON at ``path``."""
    cases = conformance.build(plan.manifest, specs())
    path.write_text(json.dumps(cases, sort_keys=True))
    return cases


_SHARED: list[tuple[Path, VendorPlan, dict]] = []


def shared(tmp_path_factory) -> tuple[Path, VendorPlan, dict]:
    """The repo's kernels vendored once per test session with every binding, and the shared
    cases (site/wgk/ and site/cases.json, laid out as the browser page expects)."""
    if not _SHARED:
        site = tmp_path_factory.mktemp("site")
        plan = vendor(site / "wgk")
        _SHARED.append((site / "wgk", plan, write_cases(plan, site / "cases.json")))
    return _SHARED[0]
