"""Command line: ``tactile-sim <command> …`` (also ``python -m tactile_sim``)."""

from __future__ import annotations

import argparse
import os
import sys

from .. import __version__
from .check import add_check_command
from ..errors import os_error_text
from .common import USAGE_ERROR, fail
from .demo import add_demo_command
from .plot import add_plot_command
from .precompile import add_compile_command
from .replay import add_replay_command
from .schema import add_schema_command
from .node import add_node_command


BROKEN_PIPE_STATUS = 141
"""Exit status when stdout's reader closed the pipe early: 128 + SIGPIPE, what a shell reports for a C tool."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tactile-sim", description=__doc__)
    parser.add_argument("--version", action="version", version=f"tactile-sim {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    add_node_command(commands)
    add_demo_command(commands)
    add_replay_command(commands)
    add_plot_command(commands)
    add_schema_command(commands)
    add_check_command(commands)
    add_compile_command(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:
        # the reader went away (`tactile-sim check … | head -1`): end as a C tool ends on SIGPIPE, without a
        # traceback, and keep the interpreter's final flush of stdout from raising again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return BROKEN_PIPE_STATUS
    except OSError as exc:  # a path the file system refuses: a name too long, no permission, a folder in the way...
        return fail(args.command, os_error_text(exc), USAGE_ERROR)
