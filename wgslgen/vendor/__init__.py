"""Vendoring: the tuned variants, a manifest with its JSON Schema, selector rules and Rust,
TypeScript and Python bindings, for another project (`wgslgen vendor`)."""

from wgslgen.vendor.folder import Finding, check_folder, regenerate, write
from wgslgen.vendor.models import Manifest, schema
from wgslgen.vendor.plan import VendorPlan, plan_vendor

__all__ = [
    "Finding",
    "Manifest",
    "VendorPlan",
    "check_folder",
    "plan_vendor",
    "regenerate",
    "schema",
    "write",
]
