"""The `harness` command: a thin front that parses options and calls the pipeline's functions.

Each subcommand lives in its own module under `harness/_commands/` with `register(subparsers)`
which adds its parser and sets `func` to a function taking the parsed args and returning the
exit status. A module is imported only when its command runs: they import what they run (the SDK,
pydantic, jinja2), which costs seconds, and `harness --help` or `harness check` should not pay for it.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from ._console import guarded_console
from ._secrets import SECRET_NAMES_VARIABLE, add_secret_variable, secret_warnings
from ._version import __version__
from .errors import HarnessError

# One line per command for `harness --help`, so listing them imports none of their modules;
# tests/test_cli_front.py keeps these equal to the help each module registers.
COMMANDS: dict[str, str] = {
    "run": "run scenarios against their cassettes, a scripted model or the live API, and check them",
    "check": "check recorded traffic against the invariants of an agent loop",
    "report": "build a self-contained HTML report (and JUnit/Markdown/JSON) from results files",
    "diff": "compare results against a baseline; exit 1 on regression",
    "merge": "join results files from shards or xdist workers into one",
    "serve": "serve a scripted model, a cassette or the live API as a local Messages API",
    "rules": "list the rules, or print their documentation as Markdown",
    "schema": "print or write the JSON schema of a scenario or script file, for editors",
    "export": "send stored runs to OpenTelemetry (OTLP/HTTP or an OTLP/JSON file)",
}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command; with `only`, that command's module is the only one imported and
    the others are listed by name and help."""
    parser = argparse.ArgumentParser(
        prog="harness",
        description="Test and evaluate agent loops built on the Anthropic Messages API, from their traces.",
    )
    parser.add_argument("--version", action="version", version=f"harness {__version__}",
                        help="print the harness's version and exit")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, help_text in COMMANDS.items():
        if only is None or name == only:
            importlib.import_module(f"harness._commands.{name}").register(subparsers)
        else:
            subparsers.add_parser(name, help=help_text, add_help=False)
    for command in subparsers.choices.values():
        command.add_argument(
            "--secret", action="append", default=[], metavar="NAME",
            help="an environment variable whose value must never be printed or written, besides "
            f"ANTHROPIC_API_KEY (repeatable; {SECRET_NAMES_VARIABLE}=NAME,... says the same for every command)",
        )
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    # The command is the first word: the only options before it (--help, --version) exit while parsing.
    command = argv[0] if argv and argv[0] in COMMANDS else ""
    try:
        # Building the parser imports the command's module, and with it the SDK and pydantic: seconds
        # in which a Ctrl-C is likely, and must end as one anywhere else does, not as a traceback.
        args = build_parser(only=command).parse_args(argv)
    except KeyboardInterrupt:
        print("harness: interrupted", file=sys.stderr)
        return 130
    for name in args.secret:
        add_secret_variable(name)
    for warning in secret_warnings():
        print(f"harness: warning: {warning}", file=sys.stderr)
    from ._commands._signals import sigterm_interrupts  # here: the front imports no command (--help, --version)

    # Every line printed from here on is redacted and has its control characters escaped.
    with guarded_console():
        try:
            # SIGTERM (a CI job's timeout, `kill`) ends every command as Ctrl-C does: exit 130, its
            # finally blocks run (a report's worker process ended, not left reading), not killed mid-way (143).
            with sigterm_interrupts():
                return int(args.func(args))
        except HarnessError as exc:
            print(f"harness: {exc}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            print("harness: interrupted", file=sys.stderr)
            return 130
        except OSError as exc:
            # A file the user named is missing, a folder, or not writable: one line naming it, not a traceback.
            where = f"{exc.filename}: " if exc.filename else ""
            print(f"harness: {where}{exc.strerror or exc}", file=sys.stderr)
            return 2
