"""Option groups shared by the commands: one spelling, one meaning and one default each.

Every list option is repeatable and each value may also be a comma list (``--engines naga
--engines wgpu`` is ``--engines naga,wgpu``); every duration takes a unit (``30s``, ``2m``);
every size takes K/M/G. A bad value is an argparse error: one line, exit 2, no traceback.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from typing import Any

from wgslgen.errors import WgslgenError
from wgslgen.spec.kernel import parse_shape

DEFAULT_TIMEOUT = "60s"  # per variant and shape (test) or per check and timing job (tune)
PROFILE_CHOICES = "adapter, webgpu, compat, wgpu-downlevel or a JSON file"
# `validate` judges portability (a statement about the WGSL), so its default is the WebGPU
# core limits; `test` and `tune` run on a device, so theirs is what that adapter reports.
DEFAULT_PROFILE = {"validate": "webgpu", "build": "webgpu", "test": "adapter", "tune": "adapter"}

_SECONDS = {"": 1.0, "ms": 1e-3, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}
_BYTES = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def duration(text: str) -> float:
    """'60', '60s', '500ms', '2m', '1h' → seconds (> 0)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|min|h)?\s*", text.lower())
    if not m or float(m.group(1)) <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive duration such as 30s or 2m")
    return float(m.group(1)) * _SECONDS[m.group(2) or ""]


def size_in_bytes(text: str) -> int:
    """'1048576', '32M', '32MiB', '1G' → bytes (K/M/G powers of two, as cache sizes are)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmg]?)(?:i?b)?\s*", text.lower())
    if not m:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size such as 32M or 1048576")
    return int(float(m.group(1)) * _BYTES[m.group(2)])


def integer(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argparse type: an integer in [low, high]."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < low or (high is not None and value > high):
            bound = f"between {low} and {high}" if high is not None else f"at least {low}"
            raise argparse.ArgumentTypeError(f"{value} is out of range: must be {bound}")
        return value

    parse.__name__ = "integer"
    return parse


def fraction(text: str) -> float:
    """A number in [0, 1]."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{value:g} is out of range: must be between 0 and 1")
    return value


def shape(text: str) -> dict[str, int | float]:
    """A problem shape ``k=v,k=v``."""
    try:
        return parse_shape(text)
    except WgslgenError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def ray_address(text: str) -> str:
    """'' (a local Ray instance), 'auto' (the cluster this machine joined) or [ray://]HOST:PORT."""
    text = text.strip()
    if text in ("", "auto") or re.fullmatch(r"(ray://)?[A-Za-z0-9_.\-\[\]:]+:\d{1,5}", text):
        return text
    raise argparse.ArgumentTypeError(f"{text!r} is not a Ray address: auto or HOST:PORT")


class ListAction(argparse.Action):
    """Repeatable, and each value may be a comma list; values keep their first order."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option: Any = None) -> None:
        items = list(getattr(namespace, self.dest, None) or [])
        for item in str(values).split(","):
            if item.strip() and item.strip() not in items:
                items.append(item.strip())
        setattr(namespace, self.dest, items)


def add_shape_option(p: argparse.ArgumentParser, help: str) -> None:
    """--shape K=V,... (repeatable)."""
    p.add_argument("--shape", action="append", type=shape, metavar="K=V,...", help=help)


def add_device_options(p: argparse.ArgumentParser, timeout_help: str) -> None:
    """--adapter and --timeout: which device, and how long a job may take on it."""
    p.add_argument(
        "--adapter",
        metavar="A",
        help="adapter: cpu, gpu or a name substring (default: a GPU if any)",
    )
    p.add_argument(
        "--timeout",
        type=duration,
        default=duration(DEFAULT_TIMEOUT),
        metavar="DURATION",
        help=f"{timeout_help}, e.g. 30s or 2m ({DEFAULT_TIMEOUT})",
    )


def add_profile_option(p: argparse.ArgumentParser, command: str, what: str) -> None:
    """--profile NAME (repeatable): the limit profiles a variant must fit."""
    default = DEFAULT_PROFILE[command]
    p.add_argument(
        "--profile",
        action=ListAction,
        metavar="NAME",
        help=f"limit profile {what}: {PROFILE_CHOICES} (repeatable; default {default})",
    )
    p.set_defaults(profile_default=default)


def profiles_of(args: argparse.Namespace) -> list[str]:
    """The profiles asked for, or the command's default."""
    return list(getattr(args, "profile", None) or [args.profile_default])


def one_profile(args: argparse.Namespace) -> str:
    """The one profile of a command that runs on one device (its limits are requested)."""
    names = profiles_of(args)
    if len(names) > 1:
        raise WgslgenError(f"one limit profile per device run, not {len(names)}: {names}")
    return names[0]


def add_input_seed_option(p: argparse.ArgumentParser) -> None:
    """--input-seed N: the seed of the random test inputs (the same for every variant)."""
    p.add_argument(
        "--input-seed",
        type=integer(0),
        default=0,
        metavar="N",
        help="seed of the random inputs given to every variant and the reference (0)",
    )
