"""`harness export RESULTS... --otlp FILE|URL`: send stored runs to OpenTelemetry, one trace per run.

Exit status: 0 exported; 2 the results cannot be read or the target refused the spans (one line
says which and why).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, TextIO

from ..results import RunResult
from .report import read_results_files


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "export",
        help="send stored runs to OpenTelemetry (OTLP/HTTP or an OTLP/JSON file)",
        description=(
            "Export each run of RESULTS as one OpenTelemetry trace in the GenAI semantic conventions: a root span "
            "per run, a span per model call and per tool, each finding as a span event. Needs the otel extra "
            "(pip install 'agent-harness[otel]')."
        ),
    )
    parser.add_argument("results", nargs="+", metavar="RESULTS",
                        help="results files (JSON Lines) written by `harness run`")
    parser.add_argument(
        "--otlp", required=True, metavar="FILE|URL",
        help="an OTLP/HTTP endpoint (http://host:4318, /v1/traces is added) or a file to write OTLP/JSON lines to",
    )
    parser.add_argument(
        "--content", action="store_true",
        help="include messages, tool inputs and outputs (redacted like every output); off by default",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    return export_or_say(read_results_files(args.results), args.otlp, content=args.content, out=sys.stdout,
                         err=sys.stderr)


def export_or_say(results: list[RunResult], target: str, *, content: bool, out: TextIO, err: TextIO) -> int:
    """Export and print one line: what was sent, or why not (0 or 2). Shared with `harness run --otlp-endpoint`."""
    from ..results._otlp import ExportError, export_results

    try:
        print(export_results(results, target, content=content), file=out)
    except ExportError as exc:
        print(f"harness: {exc}", file=err)
        return 2
    return 0
