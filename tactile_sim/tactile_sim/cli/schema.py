"""``tactile-sim schema``: the JSON Schema of the sensor YAML (for editors), or the option reference page."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

DESCRIPTION = """\
Print the JSON Schema of the sensor configuration (draft 2020-12, with each option's unit and meaning), or with
--markdown the option reference page. Editors that use yaml-language-server (VS Code's YAML extension, for one)
check and complete a sensor file whose first line is
    # yaml-language-server: $schema=<path to the schema file>
The same schema ships in the package as tactile_sim/data/schema/sensors.schema.json."""


def add_schema_command(commands: argparse._SubParsersAction) -> None:
    """Register ``schema`` on the ``tactile-sim`` sub-command parsers."""
    p = commands.add_parser("schema", help="print the JSON Schema of the sensor YAML (or the option reference)",
                            description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-o", "--output", type=Path, metavar="FILE", help="write to FILE instead of standard output")
    p.add_argument("--markdown", action="store_true", help="the option reference page (Markdown) instead")
    p.set_defaults(func=run_schema_command)


def run_schema_command(args: argparse.Namespace) -> int:
    from ..config.reference import json_schema_text, markdown_reference

    text = markdown_reference() if args.markdown else json_schema_text()
    if args.output is None:
        sys.stdout.write(text)
        return 0
    try:
        args.output.write_text(text, encoding="utf-8")
    except OSError as exc:
        from .common import fail

        return fail("schema", f"-o {str(args.output)!r}: cannot write ({exc.strerror})")
    return 0
