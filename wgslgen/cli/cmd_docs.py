"""`wgslgen docs [TOPIC]`: the reference documents, shipped inside the package.

A pip install has no checkout and so no docs/ folder; hints and starter files name a topic
(`wgslgen docs kernel-format`) that works from an install and from a checkout alike.
"""

from __future__ import annotations

import argparse
from importlib import resources
from pathlib import Path

from wgslgen.cli.output import console, emit_json, print_table
from wgslgen.errors import WgslgenError


def docs_folder() -> Path:
    """The reference documents: package data when installed, docs/ in a checkout."""
    packaged = resources.files("wgslgen") / "_docs"  # mapped to docs/ by pyproject
    if packaged.is_dir():
        return Path(str(packaged))
    return Path(__file__).resolve().parents[2] / "docs"


def topics() -> dict[str, Path]:
    """Each shipped document by topic name (its file name without `.md`)."""
    return {path.stem: path for path in sorted(docs_folder().glob("*.md"))}


def _title(text: str) -> str:
    """The document's first Markdown heading."""
    for line in text.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return ""


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``docs`` command."""
    p = sub.add_parser(
        "docs", help="print a reference document (kernel format, --json output, fleet tuning)"
    )
    p.add_argument("topic", nargs="?", help="the document to print; without it, list them")
    p.add_argument("--json", action="store_true", help="the topics (or the text) as JSON")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """List the topics, or print one document's Markdown."""
    found = topics()
    if args.topic is None:
        titles = {name: _title(doc.read_text(encoding="utf-8")) for name, doc in found.items()}
        if args.json:
            emit_json({"schema_version": 1, "topics": titles})
        else:
            print_table("documents", ["topic", "title"], list(titles.items()))
            console.print("print one with: wgslgen docs TOPIC", markup=False)
        return 0
    by_lower = {name.lower(): name for name in found}
    name = by_lower.get(args.topic.removesuffix(".md").lower(), "")
    if name not in found:
        raise WgslgenError(
            f"no document {args.topic!r}", hint=f"the documents are: {', '.join(found)}"
        )
    text = found[name].read_text(encoding="utf-8")
    if args.json:
        emit_json({"schema_version": 1, "topic": name, "markdown": text})
    else:
        console.print(text, markup=False, highlight=False, soft_wrap=True, end="")
    return 0
