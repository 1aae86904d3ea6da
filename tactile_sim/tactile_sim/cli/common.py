"""What the ``demo``, ``replay`` and ``plot`` commands share: logging to stderr, the device check, error exits and
the list of written files."""

from __future__ import annotations

import argparse
import math
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from ..config.schema import DEVICE_ALLOWED, DEVICE_PATTERN

USAGE_ERROR = 2
"""Exit status for bad arguments, configurations or inputs (as argparse)."""
RUN_ERROR = 1
"""Exit status for a run that started but could not finish (a bag that stops being readable)."""


def stderr_log(verbose: bool) -> Callable[[str, str], None]:
    """A node-core log sink printing warnings and errors (and info when verbose) to stderr."""

    def sink(level: str, text: str) -> None:
        if verbose or level in ("warn", "error"):
            print(f"[{level}] {text}", file=sys.stderr)

    return sink


def fail(command: str, message: str, status: int = USAGE_ERROR) -> int:
    """Print ``tactile-sim <command>: error: <message>`` to stderr; returns ``status``."""
    print(f"tactile-sim {command}: error: {message}", file=sys.stderr)
    return status


def number_arg(low: float, high: float, unit: str, *, low_inclusive: bool = False,
               kind: type = float) -> Callable[[str], float]:
    """An argparse ``type`` for a finite number in (low, high] (``[low, high]`` with ``low_inclusive``), in ``unit``
    (``kind`` int: an integer): anything else is a usage error (exit 2) that argparse prefixes with the option's
    name."""
    bound = ">=" if low_inclusive else ">"
    allowed = f"{'an integer' if kind is int else 'a finite number'} {bound} {low:g} and <= {high:g} ({unit})"

    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number; got {text!r}; allowed: {allowed}") from None
        inside = (value >= low if low_inclusive else value > low) and value <= high
        if not (math.isfinite(value) and inside):
            raise argparse.ArgumentTypeError(f"out of range; got {text!r}; allowed: {allowed}")
        return value

    return parse


def check_device(device: str, where: str = "") -> str | None:
    """None when ``device`` ("" = the configuration's, cpu, auto, cuda[:i]) can be used here, else why not;
    ``where``: the YAML option that names it (``<file>:suite.device``; default: the ``--device`` option)."""
    if device and not re.fullmatch(DEVICE_PATTERN, device):
        return f"{where or '--device'}: unknown device; got {device!r}; allowed: {DEVICE_ALLOWED}"
    if device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            if where:
                return f"{where}: CUDA is not available on this machine; got {device!r}; allowed here: cpu or auto"
            return f"--device {device}: CUDA is not available on this machine; allowed here: cpu or auto"
    return None


def describe_files(paths: Sequence[Path]) -> str:
    """One indented line per written file."""
    return "\n".join(f"  {p}" for p in paths)
