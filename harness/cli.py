"""The `harness` command: a thin front that parses options and calls the pipeline's functions.

Each subcommand lives in its own module under `harness/_commands/` with `register(subparsers)`
which adds its parser and sets `func` to a function taking the parsed args and returning the
exit status.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from .errors import HarnessError

COMMANDS: tuple[str, ...] = ("merge", "check", "serve", "run", "report", "diff")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="harness",
        description="Test and evaluate agent loops built on the Anthropic Messages API, from their traces.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        importlib.import_module(f"harness._commands.{name}").register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except HarnessError as exc:
        print(f"harness: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("harness: interrupted", file=sys.stderr)
        return 130
