"""`harness check PATH...`: read recordings, rebuild their threads, and report broken invariants.

Exit status: 0 when no finding is an error, 1 when one is, 2 when an input cannot be read or a
folder holds no recording (the other inputs are still checked and the output says which file failed,
where and why).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import stat
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO, cast

from .._yaml import file_kind
from ..checks import Finding, check_trace, rules
from ..checks._registry import unjudged
from ..errors import InputError, NotARecording
from ..trace import Outcome, load_trace
from ..trace._model import OutcomeStatus
from ..trace._normalize import printable
from ..trace._readers import gc_paused
from ..trace.formats import FORMATS, HEAD_BYTES, worth_reading
from ._plugins import load_plugins

_SKIPPED_SHOWN = 20
"""Skipped files named in the text output; the JSON output lists them all."""
_SKIPPED_DIRS = frozenset({".git", ".hg", ".venv", "venv", "node_modules", "__pycache__", ".tox", ".mypy_cache"})


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "check",
        help="check recorded traffic against the invariants of an agent loop",
        description=(
            f"Read recordings ({', '.join(f.name for f in FORMATS)}), rebuild their threads and "
            "report every broken invariant. A folder is searched for recordings; the files in it that are not "
            "recordings are listed as skipped. Exit 0: no error; 1: an error finding; 2: an input cannot be read, "
            "or a folder holds no recording."
        ),
    )
    parser.add_argument("paths", nargs="*", metavar="PATH", help="recording files or folders (searched recursively)")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")
    parser.add_argument(
        "--whole-run",
        action="store_true",
        help="the traces are complete runs: what is missing after a thread's last call is an error, not a warning",
    )
    parser.add_argument(
        "--outcome", choices=("completed", "limit", "refused", "error"),
        help="how the recorded run ended, when you know it (implies --whole-run): e.g. 'limit' for a loop that "
        "stopped on its step cap, 'error' for one that raised on max_tokens; rules about the end of a run are "
        "judged on it instead of guessing from the wire",
    )
    parser.add_argument(
        "--output-tool", action="append", default=[], metavar="NAME", dest="output_tools",
        help="a tool whose input is the run's answer (pydantic-ai's final_result, smolagents' final_answer): a "
        "thread may end on it without a tool_result; repeatable. A tool forced by tool_choice on the last call "
        "is recognised without it",
    )
    parser.add_argument(
        "--disable", action="append", default=[], metavar="CODE",
        help="rule code(s) to skip; repeatable, comma-separated lists accepted",
    )
    parser.add_argument(
        "--plugin", action="append", default=[], metavar="MODULE",
        help="import a module whose @rule checks join the catalogue; repeatable",
    )
    parser.add_argument("--list-rules", action="store_true", help="list the registered rules and exit")
    parser.set_defaults(func=run)


@dataclass
class FileReport:
    """What checking one file gave; `error` is set when it could not be read."""

    path: str
    threads: int = 0
    calls: int = 0
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    error: str | None = None
    not_a_recording: bool = False
    """No recording format claims the file (`error` says what it looks like); a folder scan skips it."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "threads": self.threads,
            "calls": self.calls,
            "findings": [f.to_dict() for f in self.findings],
            "notes": list(self.notes),
            "error": self.error,
        }


def run(args: argparse.Namespace) -> int:
    if not load_plugins(args.plugin):
        return 2
    catalogue = rules()
    if args.list_rules:
        print_rules(catalogue, args.format, sys.stdout)
        return 0
    disabled = sorted({code.strip().upper() for item in args.disable for code in item.split(",") if code.strip()})
    unknown = [code for code in disabled if code not in catalogue]
    if unknown:
        known = ", ".join(catalogue) or "none registered"
        print(f"harness: unknown rule code(s) to --disable: {', '.join(unknown)}; known codes: {known}",
              file=sys.stderr)
        return 2
    if not args.paths:
        print("harness: check needs at least one PATH (a recording or a folder of them)", file=sys.stderr)
        return 2

    reports: list[FileReport] = []
    skipped: list[str] = []
    irregular: list[str] = []
    # A folder in which nothing was found is an input error: `harness check recordings/` must not pass
    # CI when the recordings were never written there.
    folders_read: set[str] = set()
    for path, folder, problem in _inputs(args.paths, skipped, irregular):
        if problem is not None:
            reports.append(FileReport(path=path, error=problem))
        else:
            report = check_file(path, disabled=disabled, whole_run=args.whole_run, outcome=args.outcome,
                                options={"output_tools": args.output_tools} if args.output_tools else None)
            if folder is not None and report.not_a_recording:
                skipped.append(path)
                continue
            reports.append(report)
        if folder is not None:
            folders_read.add(folder)
    for given in dict.fromkeys(args.paths):
        if Path(given).is_dir() and given not in folders_read:
            passed_over = sum(Path(p).is_relative_to(given) for p in skipped)
            why = f" ({passed_over} file(s) in it skipped as not recordings)" if passed_over else ""
            reports.append(FileReport(path=given, error=f"{given}: no recording found in this folder{why}"))
    out = io.StringIO()
    if args.format == "json":
        json.dump({"files": [r.to_dict() for r in reports], "skipped": skipped, "not_regular_files": irregular},
                  out, ensure_ascii=False, indent=2)
        out.write("\n")
    else:
        _print_text(reports, skipped, irregular, out)
    # Notes and paths may carry lone surrogates (a JSON body's "\ud800", a file name's undecodable
    # bytes): written as escapes, the output stays valid UTF-8, and valid JSON.
    sys.stdout.write(printable(out.getvalue()))
    if any(r.error is not None for r in reports):
        return 2
    return 1 if any(f.severity == "error" for r in reports for f in r.findings) else 0


def check_file(path: str, *, disabled: list[str], whole_run: bool, outcome: str | None = None,
               options: dict[str, Any] | None = None) -> FileReport:
    """Read one recording and run the enabled rules on it; a read failure becomes the report's error.

    `outcome` is how the user says the run ended; a run whose end is known is a whole run.
    """
    whole_run = whole_run or outcome is not None
    # One pause over reading and checking, and the trace dropped inside it: every object made here
    # lives until the findings are out, so a collection in between would only walk them all again,
    # and one just after (the collector counts what was made while paused) would walk them once more.
    with gc_paused():
        try:
            trace = load_trace(path, whole_run=whole_run)
        except NotARecording as exc:
            return FileReport(path=path, error=str(exc), not_a_recording=True)
        except InputError as exc:
            return FileReport(path=path, error=str(exc))
        except Exception as exc:  # noqa: BLE001 - one file's failure must not hide the others
            return FileReport(path=path, error=_defect(path, "reading", exc))
        if outcome is not None:
            trace.outcome = Outcome(status=cast(OutcomeStatus, outcome), reason="given with --outcome")
        try:
            # Unless the user said so, each run is as whole as its reader found it: a harness run read
            # back from its spans carries its outcome, so its end is known (and a file may hold several).
            findings = check_trace(trace, disabled=disabled, whole_run=True if whole_run else None, options=options)
        except Exception as exc:  # noqa: BLE001
            return FileReport(path=path, error=_defect(path, "checking", exc))
        notes = list(trace.notes)
        for why, codes in unjudged(trace, disabled=disabled).items():
            notes.append(f"{', '.join(codes)} not checked: {why}")
        report = FileReport(path=path, threads=len(trace.threads), calls=len(trace.calls), findings=findings,
                            notes=notes)
        del trace
    return report


def _defect(path: str, doing: str, exc: Exception) -> str:
    """The error line of a file that broke the harness itself: the others are still checked."""
    return (f"{path}: {doing} failed ({type(exc).__name__}: {exc}); this is a defect of the harness, "
            "please report it with the file if you can")


def _inputs(paths: list[str], skipped: list[str],
            irregular: list[str]) -> Iterator[tuple[str, str | None, str | None]]:
    """(path, the folder given whose scan met it, why it cannot be read): files named directly, then
    each folder's files in a stable order.

    A folder's file is read when a recording format could hold it (its suffix or opening bytes);
    the others go to `skipped`, as do the read ones that turn out to be no recording. FIFOs,
    devices and sockets go to `irregular` unopened (opening a FIFO waits for a writer forever).
    A folder that cannot be listed is an input that cannot be read, like a file.
    """
    for given in paths:
        path = Path(given)
        if not path.is_dir():
            yield given, None, None  # a missing file is reported by the reader, with the others still checked
            continue
        unlisted: list[OSError] = []
        for root, dirs, files in os.walk(path, onerror=unlisted.append):
            for error in unlisted:
                yield str(error.filename), given, f"{error.filename}: folder not read ({error.strerror or error})"
            unlisted.clear()
            dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_DIRS and not d.startswith("."))
            for name in sorted(files):
                candidate = str(Path(root, name))
                try:
                    mode = os.stat(candidate).st_mode
                except OSError:
                    yield candidate, given, None  # the reader says why
                    continue
                if not stat.S_ISREG(mode):
                    irregular.append(f"{candidate} ({file_kind(mode)})")
                elif _head_says_recording(candidate):
                    yield candidate, given, None
                else:
                    skipped.append(candidate)
        for error in unlisted:  # the top folder itself
            yield str(error.filename), given, f"{error.filename}: folder not read ({error.strerror or error})"


def _head_says_recording(path: str) -> bool:
    try:
        with open(path, "rb") as handle:
            head = handle.read(HEAD_BYTES)
    except OSError:
        return True  # unreadable: let the reader say why
    return worth_reading(path, head)


def format_finding(finding: Finding) -> str:
    """One line: `CODE severity thread T, step S, messages[i].content[j]: message` (`Finding.line`)."""
    return finding.line(severity=True)


def _print_text(reports: list[FileReport], skipped: list[str], irregular: list[str], out: TextIO) -> None:
    for report in reports:
        if report.error is not None:
            out.write(f"{report.path}: not read\n  error: {report.error}\n")
            continue
        out.write(f"{report.path}: {report.threads} thread(s), {report.calls} call(s)\n")
        for finding in report.findings:
            out.write(f"  {format_finding(finding)}\n")
        for note in report.notes:
            out.write(f"  note: {note}\n")
    if skipped:
        shown = ", ".join(skipped[:_SKIPPED_SHOWN]) + (f", and {len(skipped) - _SKIPPED_SHOWN} more"
                                                        if len(skipped) > _SKIPPED_SHOWN else "")
        out.write(f"skipped {len(skipped)} file(s) that are not recordings: {shown}\n")
    if irregular:
        out.write(f"skipped {len(irregular)} path(s) that are not regular files: {', '.join(irregular)}\n")
    errors = sum(f.severity == "error" for r in reports for f in r.findings)
    warnings = sum(f.severity == "warning" for r in reports for f in r.findings)
    unreadable = sum(r.error is not None for r in reports)
    calls = sum(r.calls for r in reports)
    out.write(
        f"{len(reports)} file(s), {calls} call(s): {errors} error(s), {warnings} warning(s), "
        f"{unreadable} unreadable file(s)\n"
    )


def print_rules(catalogue: dict[str, Any], fmt: str, out: TextIO) -> None:
    if fmt == "json":
        listed = [{"code": r.code, "title": r.title, "needs": r.needs} for r in catalogue.values()]
        json.dump({"rules": listed}, out, ensure_ascii=False, indent=2)
        out.write("\n")
        return
    for registered in catalogue.values():
        out.write(f"{registered.code}  [{registered.needs}]  {registered.title}\n")
    out.write(f"{len(catalogue)} rule(s)\n")
