"""Command line: ``tactile-sim <command> …`` (also ``python -m tactile_sim``)."""

from __future__ import annotations

import argparse
import sys

from .. import __version__
from .check import add_check_command
from .demo import add_demo_command
from .plot import add_plot_command
from .precompile import add_compile_command
from .replay import add_replay_command
from .schema import add_schema_command
from .node import add_node_command


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
    return int(args.func(args) or 0)
