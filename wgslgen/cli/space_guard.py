"""Count a command's variants before rendering any: refuse a space too large to work through.

`build` and `test` render or run every variant they select; a kernel.toml with a few axes of
many values can name a million of them, which would take hours and gigabytes before the user
saw anything. The count comes from the space itself (tune samples such spaces lazily instead).
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from wgslgen.cli.output import warn
from wgslgen.errors import WgslgenError
from wgslgen.render import build as builder
from wgslgen.spec.space import overridden

MAX_VARIANTS = 20_000  # the bundled library has a few hundred; a million would take hours
WARN_VARIANTS = 2_000


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return value


def add_max_variants_option(parser: Any, verb: str) -> None:
    """Add ``--max-variants N`` (what ``verb``, e.g. 'render', may work through at most)."""
    parser.add_argument(
        "--max-variants",
        type=_positive_int,
        default=MAX_VARIANTS,
        metavar="N",
        help=f"refuse to {verb} more than N variants (default {MAX_VARIANTS:,}; "
        "narrow with --kernel/--set)",
    )


def check_space(kernels: list, overrides: dict[str, str], limit: int, verb: str) -> int:
    """The number of variants ``kernels`` select; refuse above ``limit``, warn above a few
    thousand (the raw product is checked first, so a huge space is not even counted)."""
    total = 0
    for k in kernels:
        raw = math.prod(len(a.values) for a in k.axes)
        if raw > 50 * limit:
            raise WgslgenError(
                f"kernel {k.name}: {raw:,} axis combinations, more than {limit:,} variants could "
                f"be {verb}ed; narrow the space (constraints, --set, --kernel) or raise "
                "--max-variants"
            )
        space = overridden(k, overrides) if overrides else k.space  # counted, not enumerated
        exact = space.count.exact
        total += space.count.n if exact else len(builder.apply_overrides(k, overrides))
    if total > limit:
        raise WgslgenError(
            f"{total:,} variants to {verb}, more than --max-variants {limit:,}; narrow the "
            "space (constraints, --set, --kernel) or raise --max-variants"
        )
    if total > WARN_VARIANTS:
        warn(f"{total:,} variants to {verb}; this takes a while")
    return total
