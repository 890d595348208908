"""Reading benchmark JSON outputs back: a bad file is one line naming it, not a traceback."""

from __future__ import annotations

import json
from pathlib import Path


def load_results(path: str | Path, script: str) -> dict:
    """A benchmark's JSON output with its ``results`` list, or a one-line exit naming the file."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise SystemExit(f"{script}: {path}: not readable as JSON: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise SystemExit(f"{script}: {path}: no 'results' list: not an output of a benchmark")
    return data


def best_ours(rows: list[dict], mode: str) -> dict | None:
    """The fastest of some ``ours.json`` rows, warm or cold (None: none was timed so)."""
    return min((r for r in rows if mode in r), key=lambda r: r[mode]["median_us"], default=None)


def best_torch_us(torch_row: dict, mode: str) -> float | None:
    """The faster of PyTorch's eager and compiled graphs in one ``torch.json`` row, warm or cold."""
    found = [torch_row.get(f, {}).get(mode, {}).get("median_us") for f in ("eager", "compile")]
    return min((x for x in found if x), default=None)
