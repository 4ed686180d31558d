"""`harness rules`: the rule catalogue, as a list or as the Markdown page docs/rules.md.

The page is rendered from each rule's `@rule` registration, plugins' rules included.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..checks import rules
from ..checks._docs import rules_markdown
from ._plugins import load_plugins
from .check import print_rules


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "rules",
        help="list the rules, or print their documentation as Markdown",
        description=(
            "List the registered rules (code, what they read, title), or with --markdown print the rules page "
            "(what each checks, why it matters, how to fix it, an example that breaks it). "
            "`harness rules --markdown > docs/rules.md` regenerates the project's page."
        ),
    )
    parser.add_argument("--markdown", action="store_true", help="print the full rules page in Markdown")
    parser.add_argument(
        "--plugin", action="append", default=[], metavar="MODULE",
        help="import a module whose @rule checks join the catalogue; repeatable",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if not load_plugins(args.plugin):
        return 2
    catalogue = rules()
    if args.markdown:
        sys.stdout.write(rules_markdown(catalogue))
        return 0
    print_rules(catalogue, "text", sys.stdout)
    return 0
