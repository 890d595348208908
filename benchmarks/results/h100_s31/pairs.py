"""pairs.md of a dq_out folder: each schedule of attention_bwd_dq_split beside its twin of
attention_bwd_dq_split_out (the same name without `_e4`), from one run's ours.json.

    python3 benchmarks/results/h100_s31/pairs.py benchmarks/results/h100_s31/dq_out/ours.json
"""

import json
import sys
from pathlib import Path


def main(path: str) -> None:
    """Print the pair table of the ours.json at path."""
    timed: dict[tuple, dict[bool, tuple[float, float]]] = {}
    for r in json.loads(Path(path).read_text())["results"]:
        if "split" not in r["kernel"]:
            continue
        schedule = r["variant"].split("__")[1].replace("_e4", "")
        key = (tuple(r["shape"]), r["kv"], schedule)
        figures = (r["warm"]["median_us"], r["cold"]["median_us"])
        timed.setdefault(key, {})[r["kernel"].endswith("_out")] = figures
    print(
        "| shape (d, H, KV, N) | K/V | schedule | bwd_dq warm / cold "
        "| bwd_dq_out warm / cold | out ÷ dq warm / cold |"
    )
    print("|---|---|---|---|---|---|")
    for (shape, kv, schedule), sides in sorted(timed.items()):
        if len(sides) < 2:
            continue
        (dw, dc), (ow, oc) = sides[False], sides[True]
        print(
            f"| {shape} | {kv} | {schedule} | {dw:.1f} / {dc:.1f} | {ow:.1f} / {oc:.1f} "
            f"| {ow / dw:.2f} / {oc / dc:.2f} |"
        )


if __name__ == "__main__":
    main(sys.argv[1])
