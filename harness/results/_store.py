"""The results file: JSON Lines, one `RunResult` a line, appended the moment a run finishes.

Each line goes to the file in one write the moment its run finishes, before the run counts as
finished, so a killed process keeps every finished result. A thread of the writer's own syncs the
file to disk in batches (one fsync for whatever was appended meanwhile, at most every
`SYNC_INTERVAL_S`), so no run waits for the disk; closing the writer syncs the rest. A reader skips
a torn last line and says so instead of failing. Every line is redacted as it is made (`_line`): a
run's trace holds what the model said, which may be the API key.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import sys
import threading
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import MISSING, dataclass, fields
from pathlib import Path
from typing import BinaryIO

from .._output import NEW_FILE_MODE, output_target, why_not_written, write_with
from ..errors import InputError
from ..trace._json import loads
from ..trace._scrub import default_secrets, redact_json
from ._model import RunResult
from ._shape import json_kind, read_checked, shape_problem

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


SYNC_INTERVAL_S = 1.0
"""Most time between two syncs of the results file: what a power cut (not a killed process) may lose."""


class ResultsWriter:
    """Appends results to a JSONL file, durably, one whole line per run, as its only writer.

    The file is locked for as long as the writer is open: a second writer (another `harness run`
    given the same --results) is refused at once instead of interleaving lines with this one. A
    write that fails (disk full, quota) is undone to the last whole line and raised as
    `ResultsWriteError`, so the file never holds a torn line of ours.
    """

    def __init__(self, path: str | os.PathLike[str], *, fresh: bool = False) -> None:
        """`fresh` empties the file (once it is locked); otherwise results are appended, after
        dropping a torn last line a killed writer may have left."""
        self.path = Path(path)
        target = output_target(self.path)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            # O_NOFOLLOW: a symlink planted at the checked path since the check is not followed either.
            self._fd = os.open(target,
                               os.O_RDWR | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0), NEW_FILE_MODE)
        except OSError as exc:
            why = why_not_written(exc, target)
            raise ResultsWriteError(str(self.path), f"cannot open the results file ({why})") from exc
        try:
            _lock(self._fd, self.path)
            if fresh:
                os.ftruncate(self._fd, 0)
            else:
                _drop_torn_tail(self._fd)
        except BaseException:
            os.close(self._fd)
            raise
        self._append_lock = threading.Lock()
        self._sync_lock = threading.Lock()
        self._written = self._synced = os.lseek(self._fd, 0, os.SEEK_END)
        self._dirty = threading.Event()
        self._stop = threading.Event()
        self._closing = False
        self._sync_error: ResultsWriteError | None = None
        self._syncer: threading.Thread | None = None

    def fileno(self) -> int:
        """The file's descriptor: a process forked from this one closes it (the lock is the writer's alone)."""
        return self._fd

    def write(self, result: RunResult) -> None:
        """Append `result`'s line (see `append`)."""
        self.append(self.line(result))

    @staticmethod
    def line(result: RunResult) -> bytes:
        """The result's line, ready to append: serializing and redacting need no lock, so concurrent runs
        do it side by side."""
        return _line(result).encode("utf-8")

    def append(self, data: bytes) -> None:
        """Append one line in a single write. When this returns the line is in the file: a process killed
        afterwards (kill -9) loses nothing, the kernel holds it. It reaches the disk with the next
        batched fsync, made by a thread of the writer's own so that no run waits for the disk, and at
        the latest when the writer is closed.

        The lines of concurrent callers never interleave. A failed write is cut back to the last whole
        line; a failed fsync is raised by the next append or by `close`.
        """
        with self._append_lock:
            if self._sync_error is not None:
                raise self._sync_error
            start = os.lseek(self._fd, 0, os.SEEK_END)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(self._fd, view):]
            except OSError as exc:
                with contextlib.suppress(OSError):
                    os.ftruncate(self._fd, start)
                raise ResultsWriteError(
                    str(self.path), f"cannot write a result ({exc.strerror or exc}); every line before it is whole"
                ) from exc
            self._written = start + len(data)
            if self._syncer is None:
                # Started before it is kept: a Ctrl-C landing between the two must not leave `close` a
                # thread to join that never started.
                syncer = threading.Thread(target=self._sync_batches, name="harness-results-sync", daemon=True)
                syncer.start()
                self._syncer = syncer
        self._dirty.set()

    def sync(self) -> None:
        """Return once every line appended so far is on disk."""
        with self._sync_lock:
            written = self._written
            if self._synced >= written or self._fd < 0:
                return
            try:
                os.fsync(self._fd)
            except OSError as exc:
                self._sync_error = ResultsWriteError(
                    str(self.path), f"cannot sync the results file to disk ({exc.strerror or exc})"
                )
                raise self._sync_error from exc
            self._synced = written

    def start_over(self) -> None:
        """Empty the file, still holding its lock (what `fresh` does when the writer opens)."""
        with self._append_lock, self._sync_lock:
            os.ftruncate(self._fd, 0)
            self._written = self._synced = 0

    def _sync_batches(self) -> None:
        """The syncer thread: one fsync for whatever was appended since the last, at most every
        `SYNC_INTERVAL_S`. Not back to back: on a busy disk an append to a page under writeback waits for
        the fsync, so a syncer that never paused would stall every run's write."""
        while True:
            self._dirty.wait()
            if self._closing:
                return
            self._dirty.clear()
            try:
                self.sync()
            except ResultsWriteError:
                return  # kept in `_sync_error`, raised to the next append or to close
            self._stop.wait(SYNC_INTERVAL_S)

    def close(self) -> None:
        """Sync what is left, stop the syncer, close (and unlock) the file. Raises a failed sync."""
        if self._fd < 0:
            return
        self._closing = True
        self._stop.set()
        self._dirty.set()
        if self._syncer is not None:
            self._syncer.join()
        try:
            if self._sync_error is None:
                self.sync()
        finally:
            with self._sync_lock:  # a syncer that was never joined must not fsync a closed descriptor
                os.close(self._fd)  # also releases the lock
                self._fd = -1
        if self._sync_error is not None:
            raise self._sync_error

    def __enter__(self) -> ResultsWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ResultsWriteError(InputError):
    """The results file cannot be opened or written (a full disk, a read-only folder, another writer)."""


def _lock(fd: int, path: Path) -> None:
    if fcntl is None:  # pragma: no cover - Windows: no advisory locks, one writer is up to the user
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise ResultsWriteError(
            str(path), "another harness command is writing this results file; wait for it to end, or give this "
            "one its own --results and join them with `harness merge`"
        ) from None


def _drop_torn_tail(fd: int) -> None:
    """Cut a last line without its newline (a writer killed mid-line) so appended lines stay whole."""
    size = os.lseek(fd, 0, os.SEEK_END)
    if size == 0:
        return
    step = 4096
    end = size
    if os.pread(fd, 1, size - 1) == b"\n":
        return
    while end > 0:
        start = max(0, end - step)
        chunk = os.pread(fd, end - start, start)
        cut = chunk.rfind(b"\n")
        if cut >= 0:
            os.ftruncate(fd, start + cut + 1)
            return
        end = start
    os.ftruncate(fd, 0)


def read_results(path: str | os.PathLike[str], *, warnings: list[str] | None = None) -> list[RunResult]:
    """Read a results file. A torn last line (interrupted run) is skipped and noted in `warnings`;
    anything else that is not a results file is one InputError naming the file and line. A run id
    written twice (rerun by --retry-errors) counts once, with its last line."""
    return list(iter_results(path, warnings=warnings))


def iter_results(path: str | os.PathLike[str], *, warnings: list[str] | None = None) -> Iterator[RunResult]:
    """The results of a file one at a time, as they are read: a report of 100,000 runs holds one
    trace at a time. Errors and the later-line-wins rule as `read_results`."""
    return read_lines(path, warnings=warnings)


def read_lines(path: str | os.PathLike[str], *, warnings: list[str] | None,
               size: int | None = None) -> Iterator[RunResult]:
    """`iter_results`, given a `size`, of the file's first `size` bytes only (a line they cut is its torn
    last line): a report of a file still appended to reads the lines it had when the report began."""
    for line in result_lines(path, size):
        result = line.result(warnings)
        if result is not None:
            yield result


@dataclass(slots=True)
class ResultLine:
    """A line of a results file that holds a run (not blank, not superseded by a later line), unread:
    its bytes are read from the file only when asked for (`utf8`), while the file's lines are taken
    (`result_lines`), so a process leaving the line to another never copies it."""

    path: str | os.PathLike[str]
    number: int
    torn: bool
    """The file's last line, cut before its newline: a run written whole, or an interrupted one."""
    written: str | None
    """The run id its first key writes, as the pass over the run ids read it (`written_id`)."""
    lines: _Lines
    data: bytes | None = None
    """Its bytes, once read (`utf8`)."""
    cut: str | None = None
    """A torn line's text, its bytes cut inside a character left out (`_text`)."""

    @property
    def utf8(self) -> bytes:
        """The line's bytes (a BOM before the first line's left out): parsed as they were read. Decoded only
        when the line's text is needed, a line that fails: not every line of a file as it is numbered (each
        process of a two-process report numbers all of them, and reads half)."""
        if self.data is None:
            self.data = self.lines.read(self.number)
        return self.data

    @property
    def text(self) -> str:
        """The line as text; UnicodeDecodeError for bytes that are not UTF-8."""
        return self.cut if self.cut is not None else self.utf8.decode("utf-8")

    def result(self, warnings: list[str] | None) -> RunResult | None:
        """The run on the line; None for a torn last line that holds none (noted in `warnings`).
        Damage is an InputError naming the file, the line and what is wrong."""
        return _result(self.path, self.number, self.text if self.torn else self.utf8, last=self.torn,
                       warnings=warnings)

    def written_id(self) -> str | None:
        """The run id as the line's first key writes it (as `_line` writes every one), read without
        parsing the line; None when the line does not start so."""
        return self.written


def result_lines(path: str | os.PathLike[str], size: int | None = None) -> Iterator[ResultLine]:
    """The lines of a results file that hold its runs, in order, unread (`read_lines` reads them): a
    reader may leave some to another process. Up to `size` bytes when given. A line's bytes are read
    when asked for, before the next line is taken."""
    source = Path(path)
    if source.is_dir():
        raise InputError(str(path), "is a folder; give a results file (JSON Lines, as `harness run --results` writes)")
    with contextlib.suppress(OSError):  # a file that cannot be read is said as it is opened
        if stat.S_ISFIFO(source.stat().st_mode):
            # Read once by the pass over run ids, it would be read empty for the runs: no runs, said as none.
            raise InputError(str(path), "is a pipe, not a file: a results file is read twice (the lines a later "
                             "line supersedes, then the runs); save the results to a file and give that")
    number = 0
    try:
        # One file opened for both passes: the lines numbered are the lines whose run ids were read.
        with source.open("rb", buffering=0) as file:
            lines = _scan(path, file, size)
            superseded, ids, count = lines.superseded, lines.ids, len(lines.ids)
            for number in range(1, count + 1):
                if number in superseded:
                    continue
                written = ids[number - 1]
                torn = lines.torn and number == count
                if written is not None and not torn:
                    # A run's line as `_line` writes it (its first key its run id): not blank, its bytes left
                    # unread until asked for.
                    yield ResultLine(path, number, False, written, lines)
                    continue
                # Any other line (the torn last one, one that starts otherwise) is read now: whether it is
                # blank, or text at all, is told from its bytes.
                data = lines.read(number, torn)
                if torn:
                    text = _text(data, torn)
                    if text and not text.isspace():
                        yield ResultLine(path, number, torn, written, lines, data, cut=text)
                # A line that starts with its `{` is not blank: no need to decode it to tell; any other is
                # blank as `str.strip` says, of any Unicode whitespace.
                elif data.startswith(b"{") or not data.decode("utf-8").isspace():
                    yield ResultLine(path, number, torn, written, lines, data)
    except FileNotFoundError:
        raise InputError(str(path), "no such results file") from None
    except UnicodeDecodeError as exc:
        raise _not_utf8(path, number, exc) from None
    except OSError as exc:
        raise InputError(str(path), f"cannot read the results file ({exc.strerror})") from None


class _Lines:
    """Where each line of an open results file starts, found by the pass over its run ids (`_scan`):
    a line is read from there when its bytes are needed, not every line the file holds."""

    __slots__ = ("_file", "_path", "ids", "starts", "superseded", "torn")

    def __init__(self, path: str | os.PathLike[str], file: BinaryIO, starts: array[int], ids: list[str | None],
                 superseded: set[int], torn: bool) -> None:
        self._path = path
        self._file = file
        self.starts = starts
        """Line `n` is the bytes from `starts[n - 1]` to `starts[n]`."""
        self.ids = ids
        """The run id line `n` writes as its first key, `ids[n - 1]`; None when it writes none."""
        self.superseded = superseded
        """Lines whose run id a later line writes again."""
        self.torn = torn
        """The last line is cut before its newline."""

    def read(self, number: int, torn: bool = False) -> bytes:
        """The bytes of line `number` (`torn`: the last, cut before its newline)."""
        start, end = self.starts[number - 1], self.starts[number]
        try:
            data = _read_at(self._file.fileno(), end - start, start)
        except OSError as exc:
            raise InputError(str(self._path), f"cannot read the results file ({exc.strerror})") from None
        if len(data) != end - start or not (torn or data.endswith(b"\n")):
            # Cut shorter, or written over, since its lines were found: not damage of the line said.
            raise InputError(str(self._path), "changed while it was read (its lines are no longer where they "
                             "were); read it again once nothing rewrites it", line=number)
        return data


def _read_at(fd: int, count: int, offset: int) -> bytes:
    """`count` bytes of the file from `offset`, fewer only at its end (a read may return fewer: a signal,
    a network file system)."""
    data = os.pread(fd, count, offset)
    if 0 < len(data) < count:
        pieces, got = [data], len(data)
        while got < count and (more := os.pread(fd, count - got, offset + got)):
            pieces.append(more)
            got += len(more)
        data = b"".join(pieces)
    return data


_BOM = b"\xef\xbb\xbf"


def _not_utf8(path: str | os.PathLike[str], number: int, exc: UnicodeDecodeError) -> InputError:
    """A line that is not UTF-8: found as the lines are numbered (one that may be blank is decoded to tell),
    or as the line is read (one that starts as a run's line is decoded only if jiter refuses its bytes)."""
    return InputError(str(path), f"not UTF-8 ({exc.reason}); results files are UTF-8 JSON Lines", line=number)


def _text(line: bytes, torn: bool) -> str:
    """A line's text. A torn line may be cut inside a character (a writer killed mid-line, or a report
    reading the bytes a file had while a run was written): its text ends before it, an incomplete line
    (said as such when read), not one that is not UTF-8."""
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError as exc:
        if torn and exc.end == len(line) and exc.reason == "unexpected end of data":
            return line[:exc.start].decode("utf-8")
        raise


# A line's run id, read without parsing the line: `_line` writes it as the first key. Never past the
# line's end: the file is searched a block of lines at a time, not line by line. An id as `_line` writes
# nearly every one, with no escape nor control character, is matched by `_PLAIN_RUN_ID`: one character
# class, which the regex engine runs through at once, where `_RUN_ID`'s alternation (any other id) tries
# each character twice, a sixth of the time for a typical id; it is then read without json.loads.
_PLAIN_RUN_ID = re.compile(rb'\{"run_id":"([^"\\\x00-\x1f]*)"')
_RUN_ID = re.compile(rb'\{"run_id":("(?:[^"\\\n]|\\[^\n])*")')


def _written_id(data: bytes, at: int = 0, end: int = sys.maxsize) -> str | None:
    """The run id the line starting at `at` (and ending by `end`) writes as its first key; None when it
    starts otherwise, or its id cannot be read (damage: the line is named when it is read)."""
    try:
        plain = _PLAIN_RUN_ID.match(data, at, end)
        if plain is not None:
            # Decoded as json.loads decodes bytes (surrogatepass), so both ways read the same ids.
            return plain.group(1).decode("utf-8", "surrogatepass")
        found = _RUN_ID.match(data, at, end)
        run_id = None if found is None else json.loads(found.group(1))
    except ValueError:  # an escape JSON has not, or not UTF-8
        return None
    return run_id if isinstance(run_id, str) else None


_BLOCK = 1 << 18
"""Bytes read at a time by `_scan`: 256 KiB stay in the CPU's cache while searched (4 MiB blocks took
half as long again)."""


def _scan(path: str | os.PathLike[str], file: BinaryIO, size: int | None = None) -> _Lines:
    """Where each line starts, the run id it writes as its first key, and the lines whose run id a later
    line writes again (`harness run --retry-errors` appends a run's new result after its error): the
    later line wins. A pass over the run ids only, so the results can then be read one at a time. The
    file is read in blocks, each line's start found in them: not each line made a string of its own,
    which cost a tenth of reading 10,000 runs. Each block is read from the start of the line the last
    one cut, not joined to its piece: joining copied every block once more. Only the first `size` bytes
    when given, as `read_lines` reads them."""
    fd = file.fileno()
    starts = array("q")
    ids: list[str | None] = []
    last: dict[str, int] = {}
    earlier: set[int] = set()
    number, offset, torn = 0, 0, False  # offset: where the first line not yet numbered starts
    want = _BLOCK
    while True:
        asked = want if size is None else max(0, min(want, size - offset))
        block = _read_at(fd, asked, offset)
        final = len(block) < want  # the file's end (or the size's)
        end = len(block) if final else block.rfind(b"\n") + 1
        if end == 0 and not final:
            want *= 2  # one line longer than the block: read it again whole, in twice as many bytes
            continue
        at = 3 if offset == 0 and block.startswith(_BOM) else 0  # a BOM an editor may add is no part of the line
        while at < end:
            number += 1
            starts.append(offset + at)
            run_id = _written_id(block, at, end)
            ids.append(run_id)
            after = block.find(b"\n", at, end) + 1
            # The torn last line only when whole: one cut short (its run killed, or still being written)
            # holds no run, and the line it would supersede stays the run's.
            if run_id is not None and (after or _whole(block[at:end])):
                if run_id in last:
                    earlier.add(last[run_id])
                last[run_id] = number
            if after == 0:
                torn = True  # the last line, cut before its newline
                break
            at = after
        offset += end
        if final:
            break
        want = _BLOCK
    starts.append(offset)  # where the last line ends
    return _Lines(path, file, starts, ids, earlier, torn)


def _whole(line: bytes) -> bool:
    """A torn last line holds a JSON value (its run written whole, not yet its newline), as `_result` reads
    it: one it skips as incomplete supersedes no line."""
    try:
        json.loads(line)  # as bytes, decoded as `_result`'s text is: a character cut at the end fails here
    except RecursionError:
        return True  # damage, said when the line is read
    except ValueError:  # not JSON, or cut inside a character (a number too long also: damage said anyway)
        return False
    return True


def _result(path: str | os.PathLike[str], number: int, line: str | bytes, *, last: bool,
            warnings: list[str] | None) -> RunResult | None:
    """The result on a line, given as its text or its bytes (UTF-8 or damaged); None for a torn last line
    (noted in `warnings`)."""
    try:
        data = loads(line)
    except UnicodeDecodeError as exc:  # a ValueError: before those below
        raise _not_utf8(path, number, exc) from None
    except json.JSONDecodeError as exc:
        if last:
            if warnings is not None:
                warnings.append(f"{path}:{number}: last line is incomplete (interrupted run?); skipped")
            return None
        # json's "Invalid control character at" ends where its position is said: the column is said here.
        raise InputError(str(path), f"not a JSON results line ({exc.msg.removesuffix(' at')}, column {exc.colno})",
                         line=number) from exc
    except RecursionError:
        raise InputError(str(path), "not a harness result record (nested too deeply to read)", line=number) from None
    except ValueError:  # Python reads no integer longer than its int_max_str_digits
        raise InputError(str(path), "not a harness result record (a number too long to read)", line=number) from None
    if not isinstance(data, dict):
        raise InputError(str(path), f"not a harness result record (expected a JSON object, got {json_kind(data)})",
                         line=number)
    result = read_checked(data)  # nearly every line: checked and read in one pass
    if result is not None:
        return result
    # Read again, a step at a time, to say what is wrong (or read what the one pass does not).
    missing = [name for name in _REQUIRED if name not in data]
    if missing:
        raise InputError(str(path), f"not a harness result record (missing {', '.join(missing)})", line=number)
    wrong = shape_problem(data)
    if wrong is not None:
        key, problem = wrong
        raise InputError(str(path), f"not a harness result record ({key}: {problem})", line=number)
    try:
        return RunResult.from_dict(data)
    except (TypeError, KeyError, ValueError, AttributeError, RecursionError) as exc:
        # Python names the class it was building ("RunResult.__init__() got an unexpected keyword
        # argument 'x'"): the reader needs the key, not our class.
        why = re.sub(r"^\w+\.__init__\(\) got an unexpected keyword argument ", "unknown key ", str(exc))
        why = re.sub(r"\b[\w.]+\(\) ", "", why)
        raise InputError(str(path), f"not a harness result record ({why})", line=number) from None


_REQUIRED = tuple(f.name for f in fields(RunResult) if f.default is MISSING and f.default_factory is MISSING)


def write_results(path: str | os.PathLike[str], results: Iterable[RunResult]) -> None:
    """Write a whole results file atomically (merge, the default file's previous results)."""
    write_with(path, lambda out: out.writelines(_line(result) for result in results))


def _line(result: RunResult) -> str:
    """One result as its line of the file: compact JSON, non-ASCII kept as is, secrets redacted.

    A lone surrogate (valid in JSON, e.g. a model's cut emoji) cannot be written as UTF-8; such a
    line is escaped to ASCII instead, which reads back the same.

    The line is redacted after it is serialized, whichever way it was, so that no string of the
    record (final text, tool output, request and response bodies, error messages) can carry the key
    to disk, and every report built from the file is clean as well. The environment is read on
    every line: a long-lived writer sees the key a test or a caller sets later.
    """
    data = result.to_dict()
    line = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        line = json.dumps(data, ensure_ascii=True, separators=(",", ":"))
    return redact_json(line, default_secrets()) + "\n"
