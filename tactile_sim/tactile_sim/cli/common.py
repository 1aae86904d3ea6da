"""What the ``demo``, ``replay`` and ``plot`` commands share: logging to stderr, the device check, error exits and
the list of written files."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path

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


def check_device(device: str) -> str | None:
    """None when ``device`` ("" = the configuration's, cpu, auto, cuda[:i]) can be used here, else why not."""
    if device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            return f"--device {device}: CUDA is not available on this machine; allowed here: cpu or auto"
    return None


def describe_files(paths: Sequence[Path]) -> str:
    """One indented line per written file."""
    return "\n".join(f"  {p}" for p in paths)
