"""`harness report`: build the HTML page and the CI outputs from stored results files.

Reads results only (never re-runs anything); `--prices FILE` re-prices every call with a user's
table merged over the shipped one.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import gc
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import UsageError
from ..report._processes import StartedWorker, start_early

if TYPE_CHECKING:
    from ..results import RunResult


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "report",
        help="build a self-contained HTML report (and JUnit/Markdown/JSON) from results files",
        description="Build one self-contained HTML page (index.html) from stored results, plus optional CI outputs.",
    )
    parser.add_argument("results", nargs="+", metavar="RESULTS",
                        help="results files (JSON Lines) written by `harness run`")
    parser.add_argument("-o", "--output", default="reports/latest", metavar="DIR",
                        help="directory for index.html (default: reports/latest)")
    parser.add_argument("--prices", metavar="FILE", help="YAML prices merged over the shipped table")
    parser.add_argument("--junit", metavar="FILE", help="also write JUnit XML: one testcase per run (- for stdout)")
    parser.add_argument("--markdown", metavar="FILE",
                        help="also write a Markdown summary (e.g. $GITHUB_STEP_SUMMARY, appended to; - for stdout)")
    parser.add_argument("--json", metavar="FILE", help="also write a JSON summary (- for stdout)")
    parser.add_argument("--title", default="Agent harness report", help="page title")
    parser.set_defaults(func=run)


def read_results_files(paths: list[str]) -> list[RunResult]:
    """Every result of the files, in order; a torn last line is skipped with a warning on stderr."""
    from ..results import read_results

    results: list[RunResult] = []
    warnings: list[str] = []
    for path in paths:
        results.extend(read_results(path, warnings=warnings))
    for warning in warnings:
        print(f"harness: warning: {warning}", file=sys.stderr)
    return results


# Reading a results file makes a few hundred containers per exchange, nearly all alive while the
# collector looks (the run being read, the report's rows): at Python's 700 allocations a young
# collection ran every few exchanges, over objects still in use. A first generation of 100,000 is 5-7%
# of the build on 10,000 runs for 2 MB more at peak; the older ones are collected rarer still.
_YOUNG_COLLECTION = (100_000, 50, 100)


def run(args: argparse.Namespace) -> int:
    # The worker of a two-process build first, before this module imports what builds the page: it
    # imports the same (about 0.3 s of CPU) meanwhile, on the other core, then waits for its task.
    started = start_early(args.results)
    # The interpreter's last collections, as the process ends, walk every object still alive (the
    # harness's modules, numpy's, Jinja's) for cycles the end frees anyway: a twentieth of a second of a
    # report's serial tail. Frozen at exit, they are not walked. Not sooner: in a process that goes on
    # (a test calling `main`), the cycles among frozen objects would never be freed. Registered once.
    atexit.unregister(gc.freeze)
    atexit.register(gc.freeze)
    before = gc.get_threshold()
    gc.set_threshold(*_YOUNG_COLLECTION)
    try:
        return _report(args, started)
    finally:
        gc.set_threshold(*before)
        if started is not None:
            started.close()  # unless the build took it: a report that failed before it, a bad prices file


def _report(args: argparse.Namespace, started: StartedWorker | None) -> int:
    from .._output import JSON_START, JUNIT_START, MARKDOWN_START, PAGE_START, refuse_foreign, write_text
    from .._secrets import default_secrets
    from ..cost import load_prices
    from ..report import json_text, junit_xml, markdown_summary, write_page
    from ..report._files import prepare_files

    # Before the page: a wrong CI path is said with nothing written yet.
    outputs = [(option, path) for option, path in (("--junit", args.junit), ("--markdown", args.markdown),
                                                   ("--json", args.json)) if path]
    to_stdout = [option for option, path in outputs if path in STDOUT]
    if len(to_stdout) > 1:
        raise UsageError(f"{' and '.join(to_stdout)} both name stdout: only one output can go there; "
                         "name a file for the other")
    if to_stdout and sys.__stdout__ is None:  # closed (`>&-`): said now, not after the page, nor lost
        option, path = next((option, path) for option, path in outputs if path in STDOUT)
        raise UsageError(f"{option} {path}: stdout is closed: nothing can be written there")
    _refuse_inputs_as_outputs(args)
    kinds = {"--junit": ("a JUnit file", JUNIT_START), "--markdown": ("a Markdown summary", MARKDOWN_START),
             "--json": ("a JSON summary", JSON_START)}
    for option, path in outputs:
        # The job summary is appended to (the job's other steps write it too), never replaced.
        if path not in STDOUT and path != os.environ.get("GITHUB_STEP_SUMMARY"):
            refuse_foreign(path, *kinds[option])
    # `-o .` in a site's folder must not replace the site's own index.html with the report.
    refuse_foreign(Path(args.output) / "index.html", "a harness report page", PAGE_START)
    # With an output on stdout, it holds that output alone: what the command says goes to stderr.
    said = sys.stderr if to_stdout else sys.stdout
    prices = load_prices(args.prices) if args.prices else None  # None: each run as it was priced
    warnings: list[str] = []
    # Streamed: each run is rendered as it is read and its trace let go, so memory does not grow with traces.
    page = prepare_files(args.results, prices, warnings=warnings, started=started)
    for warning in warnings:
        print(f"harness: warning: {warning}", file=sys.stderr)
    if page.data.tables_differ is not None:
        print(f"harness: the runs were priced with different tables ({page.data.tables_differ}), each "
              "as it was run: their costs compare prices as well as runs; give --prices FILE to price them all with "
              "one", file=sys.stderr)
    written = write_page(page, args.output, title=args.title)
    print(f"report: {written} ({len(page.data.runs)} runs)", file=said)
    if not page.data.runs:
        print(f"harness: warning: no run in {', '.join(map(str, args.results))}: the report shows nothing tested",
              file=sys.stderr)
    if args.junit or args.markdown or args.json:
        data = page.data
        # A results file may hold a secret its run was not told of (the report job is: --secret,
        # HARNESS_SECRETS), and a run's error reaches JUnit and JSON as it was kept: each output is
        # redacted as a whole by the function that makes it, JSON so that it stays JSON.
        secrets = default_secrets()
        for path, text in ((args.junit, junit_xml), (args.markdown, markdown_summary), (args.json, json_text)):
            if path:
                content = text(data, secrets)
                if path in STDOUT:
                    _write_stdout(content)
                    continue
                target = Path(path)
                if os.environ.get("GITHUB_STEP_SUMMARY") == path:
                    # The CI job summary is shared with the job's other steps: appended to, never replaced.
                    with target.open("a", encoding="utf-8") as out:
                        out.write(content)
                else:
                    write_text(target, content)
                print(f"wrote {target}", file=said)
    return 0


STDOUT = ("-", "/dev/stdout")
"""The CI outputs' names for stdout. /dev/stdout is a symlink out of its folder, which `write_text` refuses
(and a terminal or a pipe cannot be replaced atomically): it is written as `-` is, straight to stdout."""


def _write_stdout(content: str) -> None:
    """`content` on stdout as UTF-8 whatever the console's encoding (the Markdown's icons are not ASCII)."""
    sys.stdout.flush()
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:
        sys.stdout.write(content)
    else:
        buffer.write(content.encode("utf-8"))
        buffer.flush()


def _refuse_inputs_as_outputs(args: argparse.Namespace) -> None:
    """A CI output naming one of the results files read: writing it would replace the runs. Said as such,
    before `refuse_foreign` (which refuses it too, a results file being no summary) says less."""
    for option, path in (("--junit", args.junit), ("--markdown", args.markdown), ("--json", args.json)):
        if not path or path in STDOUT:
            continue
        for results in args.results:
            with contextlib.suppress(OSError):  # either missing: nothing to lose (the reading says a missing input)
                if os.path.samefile(path, results):
                    raise UsageError(f"{option} {path} is the results file {results} this report reads: writing it "
                                     "would replace the runs. Name another path")
