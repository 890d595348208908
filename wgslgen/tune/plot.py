"""`wgslgen tune --plot`: time per variant, one panel per shape (matplotlib, optional)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from wgslgen.errors import WgslgenError

# No square brackets: error messages are printed as rich markup, which would eat "[tune]".
_HINT = "pip install matplotlib (it comes with wgslgen's optional 'tune' extra)"


def require_matplotlib() -> Any:
    """matplotlib.pyplot on a file-only backend, or a WgslgenError saying how to install it."""
    try:
        import matplotlib
    except ImportError:
        raise WgslgenError(
            "plotting needs matplotlib, which is not installed", hint=_HINT, option="plot"
        ) from None
    matplotlib.use("Agg")  # headless: never open a window
    import matplotlib.pyplot as plt

    return plt


def check_plot_path(out: Path) -> Path:
    """The file the plot will be written to (``.png`` added when it has no suffix), refused
    up front when matplotlib cannot write its format (not after the whole tune)."""
    plt = require_matplotlib()
    if not out.suffix:
        return out.with_suffix(".png")  # matplotlib's default: say the name it writes
    formats = plt.figure().canvas.get_supported_filetypes()
    plt.close("all")
    if out.suffix[1:].lower() not in formats:
        raise WgslgenError(
            f"{out}: matplotlib writes no {out.suffix} files; use one of "
            f"{', '.join('.' + f for f in sorted(formats))}",
            option="plot",
        )
    return out


def plot_reports(reports: Sequence[Any], out: Path | str, device_label: str) -> None:
    """Horizontal bars of median time (IQR as error bars) per passing variant, per shape."""
    plt = require_matplotlib()
    panels = [r for r in reports if any(row["status"] == "ok" for row in r.rows())]
    if not panels:
        raise WgslgenError("no variant passed, nothing to plot", option="plot")
    heights = [max(2.0, 0.28 * sum(row["status"] == "ok" for row in r.rows()) + 1) for r in panels]
    fig, axes = plt.subplots(len(panels), 1, figsize=(9, sum(heights)), squeeze=False,
                             gridspec_kw={"height_ratios": heights})  # fmt: skip
    for ax, report in zip(axes[:, 0], panels, strict=True):
        rows = [row for row in report.rows() if row["status"] == "ok"][::-1]
        prefix = f"{report.plan.spec.name}__"
        names = [row["variant"].removeprefix(prefix) for row in rows]
        us = [row["median_ns"] / 1e3 for row in rows]
        err = [
            [(row["median_ns"] - row["q1_ns"]) / 1e3 for row in rows],
            [(row["q3_ns"] - row["median_ns"]) / 1e3 for row in rows],
        ]
        colors = [_color(row["tags"]) for row in rows]
        ax.barh(range(len(rows)), us, xerr=err, color=colors)
        # The decision rests on the head-to-head round: show where it put each finalist.
        h2h = report.decision.head_to_head if report.decision else {}
        marks = [(i, h2h[row["variant"]].median_ns / 1e3) for i, row in enumerate(rows)
                 if row["variant"] in h2h]  # fmt: skip
        if marks:
            ax.plot([x for _, x in marks], [i for i, _ in marks], "kD", markersize=4,
                    label="head-to-head median")  # fmt: skip
            ax.legend(fontsize=7, loc="best")
        ax.set_yticks(range(len(rows)), names, fontsize=7)
        ax.set_xlabel(
            "median time per dispatch (µs), whiskers: IQR; "
            "green winner, blue portable default, red baseline"
        )
        shape = ",".join(f"{k}={v}" for k, v in sorted(report.plan.shape.items()))
        ax.set_title(f"{report.plan.spec.name} @ {shape}", fontsize=9)
    fig.suptitle(f"wgslgen tune on {device_label}", fontsize=10)
    fig.tight_layout()
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)


def _color(tags: list[str]) -> str:
    if "winner" in tags:
        return "tab:green"
    if "baseline" in tags:
        return "tab:red"
    if "default" in tags:
        return "tab:blue"
    return "tab:gray"
