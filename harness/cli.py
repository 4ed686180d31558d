"""The `harness` command: a thin front that parses options and calls the pipeline's functions.

Each subcommand lives in its own module under `harness/_commands/` with `register(subparsers)`
which adds its parser and sets `func` to a function taking the parsed args and returning the
exit status.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from ._console import guarded_console
from .errors import HarnessError
from ._secrets import SECRET_NAMES_VARIABLE, add_secret_variable

COMMANDS: tuple[str, ...] = ("run", "check", "report", "diff", "merge", "serve", "rules")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The full parser; with `only`, just that subcommand's module is imported.

    Command modules import what they run (the SDK, pandas...), which costs seconds; `harness check`
    should not pay for `harness report`.
    """
    parser = argparse.ArgumentParser(
        prog="harness",
        description="Test and evaluate agent loops built on the Anthropic Messages API, from their traces.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        if only is None or name == only:
            importlib.import_module(f"harness._commands.{name}").register(subparsers)
    for command in subparsers.choices.values():
        command.add_argument(
            "--secret", action="append", default=[], metavar="NAME",
            help="an environment variable whose value must never be printed or written, besides "
            f"ANTHROPIC_API_KEY (repeatable; {SECRET_NAMES_VARIABLE}=NAME,... says the same for every command)",
        )
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(only=argv[0] if argv and argv[0] in COMMANDS else None)
    args = parser.parse_args(argv)
    for name in args.secret:
        add_secret_variable(name)
    # Every line printed from here on is redacted and has its control characters escaped.
    with guarded_console():
        try:
            return int(args.func(args))
        except HarnessError as exc:
            print(f"harness: {exc}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            print("harness: interrupted", file=sys.stderr)
            return 130
