"""Writing the files the harness makes (results, reports, JUnit, schemas): whole or not at all, and
never through a symlink that leads out of the file's own folder.

A file is written to a temporary file beside it and renamed over it, so a reader (a CI step, a
browser) sees the old file or the new one, never half of one, and a failed write leaves the old
file as it was. A symlink planted where an output goes could make the harness overwrite any file
the user can write; one that stays in its folder (`latest.jsonl -> run-42.jsonl`) is followed.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TextIO

from .errors import InputError, UsageError

NEW_FILE_MODE = 0o644
"""What a new output file gets (as `open` would give it under the usual umask); a file written over keeps its own."""


def output_target(path: str | os.PathLike[str]) -> Path:
    """Where writing `path` really writes: `path`, or the target of a symlink that stays in its folder.

    A symlink whose target is outside the link's folder is refused with an InputError naming both."""
    given = Path(path)
    if not given.is_symlink():
        return given
    target = given.resolve()
    if target.parent != given.parent.resolve():
        raise InputError(
            str(given), f"is a symlink to {target}, outside its folder; the harness does not write through it. "
            "Remove the link or choose another path"
        )
    return target


RESULTS_START = re.compile(rb'\{\s*"run_id"\s*:')
"""How a results file (JSON Lines, one result a line) begins as the harness writes it: its first result's
first key, not any JSON (a package.json, a JSON script). See `refuse_foreign_results` for other orders."""
JUNIT_START = re.compile(rb'(?:<\?xml[^>]{0,200}\?>\s*)?<testsuite\s+name="harness"')
"""How the harness's JUnit begins: its own suite, not any XML (a pom.xml, another tool's JUnit)."""
JSON_START = re.compile(rb'\{\s*"totals"\s*:')
"""How the harness's JSON summary begins (its first key), not any JSON (a package.json, a script)."""
MARKDOWN_START = re.compile("#{1,6} (?:✅|❌|⚠️) Agent harness:".encode())
"""How the harness's Markdown summary begins, whatever its icon."""
PAGE_START = re.compile(rb'<!DOCTYPE html>\s*<html lang="en">\s*<head>\s*<meta charset="utf-8">\s*'
                        rb'<meta http-equiv="Content-Security-Policy" content="default-src (?:&#39;|\')none')
"""How the harness's pages (the report's and the diff's index.html) begin, as every version wrote them:
not any HTML page (a site's own index.html in the folder `-o` or `--report` names)."""


def refuse_foreign(path: str | os.PathLike[str], what: str, starts: tuple[bytes, ...] | re.Pattern[bytes]) -> None:
    """Refuse, before anything is written, to replace an existing file that does not begin as the
    harness writes `what`: a mistyped output path (`-o`, `--results`, `--junit`) must not replace a
    scenario, a script or a cassette, as recording never writes over a file that is no cassette.
    An empty file, or one that begins like `what` (one of the prefixes `starts`, or a match of the
    pattern `starts`), is the harness's to write over."""
    target = output_target(path)  # a symlink out of its folder is refused first, as such
    if not target.is_file():
        return
    try:
        with target.open("rb") as handle:
            head = handle.read(512)
    except OSError:
        return  # unreadable: writing it says why, naming the file
    head = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    ours = starts.match(head) is not None if isinstance(starts, re.Pattern) else head.startswith(starts)
    if head and not ours:
        raise UsageError(f"{path} exists and is not {what}: the harness never writes over a file it did not "
                         "create. Name another path, or move that file")


_FIRST_LINE_READ = 64 * 1024 * 1024
"""How much of a results file's first line is read to find its run id when its keys are in another order:
more than any line a run writes but the largest traces."""


def refuse_foreign_results(path: str | os.PathLike[str]) -> None:
    """`refuse_foreign` for a results file: one the harness wrote begins with its run id, and one whose
    keys were put in another order since (`jq -S`, a script's json.dumps with sort_keys) is known by its
    first line, a JSON object with a run id among its keys."""
    try:
        refuse_foreign(path, "a results file", RESULTS_START)
    except UsageError:
        if not _first_line_holds_run_id(output_target(path)):
            raise


def _first_line_holds_run_id(target: Path) -> bool:
    try:
        with target.open("rb") as handle:
            line = handle.readline(_FIRST_LINE_READ)
        record = json.loads(line.removeprefix(b"\xef\xbb\xbf"))
    except (OSError, ValueError, RecursionError):  # not JSON (ValueError: JSONDecodeError, UnicodeDecodeError)
        return False
    return isinstance(record, dict) and isinstance(record.get("run_id"), str)


def refuse_unwritable(path: str | os.PathLike[str], then: str) -> Path:
    """Refuse now, before a long job (the runs of `harness run`), an output `path` that could not be
    written at its end: under a file (a `--report` DIR that is a file), or in a folder this process may
    not write (nor create, in the nearest folder that exists). `then` says what was not done, e.g.
    "nothing was run". Nothing is created; returns what writing `path` would write (`output_target`)."""
    target = output_target(path)  # a symlink out of its folder is refused first, as such
    folder = next(p for p in (target.parent, *target.parent.parents) if os.path.lexists(p) or p == p.parent)
    if not folder.is_dir():
        why = f"{folder} is a file, not a folder"
    elif target.is_dir():  # a folder where the file goes: os.replace would fail once the work is done
        why = f"{target} is a folder, not a file"
    elif not os.access(folder, os.W_OK | os.X_OK):
        why = os.strerror(13)  # Permission denied, as the write would say
    else:
        return target
    raise InputError(str(path), f"cannot be written ({why}); {then}")


def write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write `text` (UTF-8) to `path` atomically; returns the path written (a followed symlink's target)."""
    return write_with(path, lambda out: out.write(text))


def write_with(path: str | os.PathLike[str], write: Callable[[TextIO], object]) -> Path:
    """Write `path` atomically with `write(out)` (UTF-8 text): for output made piece by piece.

    Any failure (a full disk, a read-only folder) is an InputError naming the file, and the file is
    left as it was."""
    target = output_target(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with _temporary_beside(target) as (fd, temporary):
            with os.fdopen(fd, "w", encoding="utf-8", closefd=False) as out:
                write(out)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, target)
    except OSError as exc:
        why = why_not_written(exc, target)
        raise InputError(str(path), f"cannot be written ({why}); the file is as it was") from exc
    return target


def why_not_written(exc: OSError, target: Path) -> str:
    """Why `target` could not be written, in words: the OS says "File exists" or "Not a directory"
    when a folder on its path is a file, which names neither."""
    if isinstance(exc, (FileExistsError, NotADirectoryError)):
        blocker = next((p for p in target.parents if p.exists() and not p.is_dir()), None)
        if blocker is not None:
            return f"{blocker} is a file, not a folder"
    return exc.strerror or str(exc)


@contextlib.contextmanager
def _temporary_beside(target: Path) -> Iterator[tuple[int, str]]:
    """A temporary file in `target`'s folder (a rename across file systems would not be atomic),
    with the mode `target` has or a new file would get; removed unless it was renamed."""
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        try:
            mode = target.stat().st_mode & 0o7777
        except FileNotFoundError:
            mode = NEW_FILE_MODE
        os.fchmod(fd, mode)
        yield fd, name
    finally:
        os.close(fd)
        Path(name).unlink(missing_ok=True)
