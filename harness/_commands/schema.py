"""`harness schema KIND`: the JSON schema of a file the harness reads, for editors.

The schema ships inside the package, so a project that installed the harness can point its editor
at a copy it writes (`-o`) or at the installed file (`--path`), without a checkout of this repository.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .._output import write_text


def _scenario() -> tuple[str, Path]:
    from ..scenario._schema import SCHEMA_PATH, schema_text

    return schema_text(), SCHEMA_PATH


def _script() -> tuple[str, Path]:
    from ..transport.scripted._format import SCHEMA_PATH, schema_text

    return schema_text(), SCHEMA_PATH


SCHEMAS: dict[str, Callable[[], tuple[str, Path]]] = {"scenario": _scenario, "script": _script}
"""Kind -> (the schema's text, the path of the copy installed with the package)."""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "schema",
        help="print or write the JSON schema of a scenario or script file, for editors",
        description=(
            "Print the JSON schema of a file kind, write it with -o, or print where the installed copy is with "
            "--path. Point yaml-language-server at it from the file's first line, e.g. "
            "`harness schema scenario -o .harness/scenario.schema.json` and "
            "`# yaml-language-server: $schema=../.harness/scenario.schema.json` in scenarios/*.yaml. "
            "`harness schema script` does the same for the scripted model's script files."
        ),
    )
    parser.add_argument("kind", choices=sorted(SCHEMAS), help="which file's schema")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("-o", "--output", metavar="PATH", help="write the schema to PATH (folders are created)")
    where.add_argument("--path", action="store_true", help="print the path of the schema installed with the harness")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    text, installed = SCHEMAS[args.kind]()
    if args.path:
        print(installed)
        return 0
    if args.output:
        target = Path(args.output)
        write_text(target, text)
        print(f"wrote {target}", file=sys.stderr)
        return 0
    sys.stdout.write(text)
    return 0
