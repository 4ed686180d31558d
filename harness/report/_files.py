"""The page of results files, its runs read by two processes: this one and a worker, each reading
the chunks of runs it claims whole while the other only counts their lines.

A run's reading (its line parsed, its trace built, priced) and its details (every step drawn,
redacted, packed) are nearly all of a report's work, and they depend on that run alone. So with a
core to spare, a worker process reads and packs some chunks of runs, this process the others
(whichever comes to a chunk first claims it: `_Claims`); the worker sends, with each chunk of
details, its runs' figures (`RunFigures`: the run without its trace, its frame row, its calls' tokens
and costs), and this process counts them in the runs' order as if it had read them itself. Both
read with the very code one process uses (`run_figures`, `_Details`), so the page is the same byte
for byte however many processes built it, and the first damaged line is said, whoever read it.

Both number the runs alike without parsing each other's lines: a line is a run unless it is blank
or superseded (`result_lines`), a torn last line is read by both, and with `only` (the runs of one
`harness run`) a run's id is read off its line's start. Both read only the bytes each file had when
this process began (a `harness run` may still append to it), so appended lines are seen by neither;
files rewritten meanwhile are said, not shown half old, half new.
"""

from __future__ import annotations

import contextlib
import copyreg
import gc
import io
import os
import pickle
import queue
import sys
import threading
from collections import deque
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import fields
from multiprocessing.connection import Connection
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from .._secrets import default_secrets
from ..cost import PriceTable, load_prices
from ..cost._prices import keep_shipped
from ..errors import HarnessError, InputError
from ..results import RunResult
from ..results._model import ExpectationResult, Usage
from ..results._store import ResultLine, read_lines, result_lines
from ..trace._model import Outcome
from ._chunks import CHUNK_RUNS, RunChunk, _Details
from ._data import FindingLink, RunEntry, RunFigures, Tally, run_figures, without_trace
from ._processes import StartedWorker, processes_told
from ._processes import default_processes as _default_processes

if TYPE_CHECKING:
    from ._render import Page


class ReportWorkerError(HarnessError):
    """The process building the runs' details failed or ended without finishing."""


class ResultsChangedError(ReportWorkerError):
    """The results files changed while the two processes read them: not the worker's failure."""


class _OneProcessNeeded(ReportWorkerError):
    """A line the two processes cannot number alike without both reading it (a run id its line's start
    does not say as its record does), or a file the worker does not see as this process does (a name of
    this process's own: /dev/stdin, /dev/fd/N): the page is left to one process, which reads every line."""


def prepare_files(paths: Sequence[str | os.PathLike[str]], prices: PriceTable | None = None, *,
                  only: Collection[str] | None = None, warnings: list[str] | None = None,
                  processes: int | None = None, started: StartedWorker | None = None) -> Page:
    """The page of the results files `paths` (their runs in order, only those whose run id is in `only`
    when given): what `prepare_page` makes of them, on `processes` processes (1 or 2; by default as
    `_default_processes` says, 2 when given the worker `started` already, which this ends in any case).
    Torn last lines are noted in `warnings`.

    Two processes are a speed-up: unless they were asked for (`processes`, `PROCESSES_VARIABLE`), a
    worker that cannot start or fails is said in one line on stderr and the page built by one process."""
    try:
        return _prepare_files(paths, prices, only, warnings, processes, started)
    finally:
        if started is not None:
            started.close()  # unless the build took it: one process built the page, or failed first


def _prepare_files(paths: Sequence[str | os.PathLike[str]], prices: PriceTable | None, only: Collection[str] | None,
                   warnings: list[str] | None, processes: int | None, started: StartedWorker | None) -> Page:
    # Here, not at the top: the worker imports this module and never writes the page (Jinja, the figures:
    # about 0.03 s of CPU to import).
    from ._render import prepare_page

    forced = processes is not None or processes_told() is not None
    if processes is None:
        processes = 2 if started is not None else _default_processes(paths)
    stamps = [_stamp(path) for path in paths]
    # The bytes each file has now: a results file still appended to is reported as it was when the report began.
    sizes = [None if stamp is None else stamp[0] for stamp in stamps]
    if processes < 2 or os.name != "posix":  # the worker is given its pipe by descriptor number: POSIX only
        return prepare_page(_runs(paths, sizes, only, warnings), prices)
    noted = len(warnings) if warnings is not None else 0
    try:
        page = _two_processes(paths, stamps, prices, only, warnings, started)
    except ResultsChangedError:
        raise
    except ReportWorkerError as exc:
        if forced and not isinstance(exc, _OneProcessNeeded):
            raise
        if not isinstance(exc, _OneProcessNeeded):
            print(f"harness: {exc}; building the report in one process", file=sys.stderr)
        if warnings is not None:
            del warnings[noted:]  # noted again as this process reads the files again
        # The same bytes the worker was given: the page of the files as they were when the report began,
        # unless one was replaced or rewritten meanwhile (the worker may have stopped at it).
        page = prepare_page(_runs(paths, sizes, only, warnings), prices)
    _check_unchanged(paths, stamps)
    return page


class _Claims:
    """Which process reads each chunk of runs: the first to come to it, as both number the runs in order.

    A fixed share cannot be right for long: the worker starts later (an interpreter to start and the
    harness to import), the two processes' costs per byte differ, and on a shared machine either may
    lose its core for a while; a share tuned by counting instructions left this process idle for a
    second of a 3-second build. Claimed as they come, neither waits for the other longer than the
    chunk it is reading.

    Both processes hold the same unnamed file (`_processes.StartedWorker.claims`): byte 1 + k says who
    claimed chunk k (`MAIN` or `WORKER`; 0 or past the end: nobody yet), and byte 0 is locked while one
    of them reads and writes a claim. Bytes, not held locks: the worker, done, ends, and its locks
    with it, while this process may still be numbering the chunks it read. A claim written in the file
    before the processes start is kept (a test makes them read what it wants so)."""

    MAIN = b"m"
    WORKER = b"w"

    def __init__(self, fd: int, me: bytes) -> None:
        self._fd = fd
        self._me = me
        self._ours = False

    def ours(self, n: int) -> bool:
        """Run `n` (the runs numbered in order from 1) is this process's to read."""
        if (n - 1) % CHUNK_RUNS == 0:
            self._ours = self.claim((n - 1) // CHUNK_RUNS) == self._me
        return self._ours

    def claim(self, chunk: int) -> bytes:
        """Who reads `chunk`: this process unless the other claimed it first."""
        import fcntl  # here, not at the top: POSIX only, as two processes are (one builds the report on Windows)

        fcntl.lockf(self._fd, fcntl.LOCK_EX, 1, 0)
        try:
            claimed = os.pread(self._fd, 1, 1 + chunk)
            if claimed in (b"", b"\0"):
                os.pwrite(self._fd, self._me, 1 + chunk)
                return self._me
            return claimed
        finally:
            fcntl.lockf(self._fd, fcntl.LOCK_UN, 1, 0)


def _two_processes(paths: Sequence[str | os.PathLike[str]], stamps: Sequence[Stamp | None],
                   prices: PriceTable | None, only: Collection[str] | None, warnings: list[str] | None,
                   started: StartedWorker | None) -> Page:
    from ._compare import load_comparison
    from ._render import Page, page_template  # see `_prepare_files`

    sizes = [None if stamp is None else stamp[0] for stamp in stamps]
    worker = _Worker(paths, stamps, prices, only, started)
    claims = _Claims(worker.claims, _Claims.MAIN)
    try:
        # What writing the page needs once the runs are read, loaded first: meanwhile the worker reads the
        # chunks this process would have (they are claimed as they come), where after the reading, which
        # the two end within a chunk of each other, it was this process's alone, the worker done and idle.
        load_comparison()
        page_template()
        details = _Details()
        tally = Tally(prices)
        # Every run in order, read or not yet: this process's own figures, None for a run the worker reads.
        # Counted as soon as all before them are, so this process never waits for the worker while it reads.
        order: deque[RunFigures | None] = deque()
        n, reading = 0, False
        try:
            for n, line, result, ours in _numbered(paths, sizes, only, warnings, claims, main=True):
                if not ours:
                    order.append(None)
                    continue
                reading = True
                result = _read(line, result, only, warnings)
                figures, call_costs = run_figures(n, result, tally.table(result))
                details(figures.entry, call_costs)
                order.append(without_trace(figures))
                reading = False
                worker.count(order, tally, block=False)
        except InputError as exc:
            if exc is not worker.damaged:
                # The first damaged line is said: the worker's, when one of its lines before this one is.
                worker.raise_earlier(n if reading else n + 1)
            raise exc from None
        details.close()
        worker.count(order, tally, block=True)
        worker.finish(n)
        chunks = sorted([*details.chunks, *worker.chunks], key=lambda chunk: chunk.first)
        if [chunk.first for chunk in chunks] != list(range(1, n + 1, CHUNK_RUNS)):
            raise _changed()
        return Page(tally.data(), chunks)
    finally:
        worker.stop()


def _read(line: ResultLine, result: RunResult | None, only: Collection[str] | None,
          warnings: list[str] | None) -> RunResult:
    """The run on `line` (read already when `result`), one of `only` when given."""
    if result is None:
        result = line.result(warnings)
        assert result is not None  # only a torn last line holds none, and those are read when numbered
    if only is not None and result.run_id not in only:
        raise _OneProcessNeeded(f"{line.path}:{line.number} says another run id than its first key")
    return result


def _numbered(paths: Sequence[str | os.PathLike[str]], sizes: Sequence[int | None], only: Collection[str] | None,
              warnings: list[str] | None, claims: _Claims, *,
              main: bool) -> Iterator[tuple[int, ResultLine, RunResult | None, bool]]:
    """Each run's line with the run's number in the report, both processes numbering alike; with the
    run when telling it needed reading it: a torn last line (a run, or nothing), a line whose run id
    its start does not say (with `only`); and whether this process reads it (`claims`). Lines of runs
    not in `only` are read by this process (`main`), so a damaged one is said as one process says it,
    and skipped by the worker."""
    n = 0
    for path, size in zip(paths, sizes, strict=True):
        for line in result_lines(path, size):
            result = line.result(warnings) if line.torn else None
            if line.torn and result is None:
                continue
            if only is not None:
                run_id = result.run_id if result is not None else line.written_id()
                if run_id is None:
                    result = _read(line, None, None, warnings)
                    run_id = result.run_id
                if run_id not in only:
                    if main and result is None and _read(line, None, None, warnings).run_id in only:
                        raise _OneProcessNeeded(f"{line.path}:{line.number} says another run id than its first key")
                    continue
            n += 1
            yield n, line, result, claims.ours(n)


def _runs(paths: Sequence[str | os.PathLike[str]], sizes: Sequence[int | None], only: Collection[str] | None,
          warnings: list[str] | None) -> Iterator[RunResult]:
    """The runs of `paths`, each file read up to its size in `sizes` (None: to its end)."""
    for path, size in zip(paths, sizes, strict=True):
        for result in read_lines(path, warnings=warnings, size=size):
            if only is None or result.run_id in only:
                yield result


Stamp = tuple[int, int, int, int]
"""A file's size, mtime_ns, inode and device."""


def _stamp(path: str | os.PathLike[str]) -> Stamp | None:
    try:
        found = os.stat(path)
    except OSError:  # said by the reading, which names the file
        return None
    return found.st_size, found.st_mtime_ns, found.st_ino, found.st_dev


def _check_unchanged(paths: Sequence[str | os.PathLike[str]], stamps: Sequence[Stamp | None]) -> None:
    """Raise if a file was replaced or rewritten while the report read its first bytes (in two processes, or
    again in one after the worker stopped): the two processes compare only how many runs they numbered,
    which cannot tell a line rewritten in place. A file that grew, the same file still, was appended to
    (a `harness run` still writing), which neither read; its first bytes are taken as kept (a stamp
    cannot tell a file emptied and written longer from one appended to)."""
    for path, before in zip(paths, stamps, strict=True):
        if before is None:
            continue
        after = _stamp(path)
        size, mtime_ns, inode, _ = before
        if after is None or after[2] != inode or after[0] < size or (after[0] == size and after[1] != mtime_ns):
            raise ResultsChangedError(
                f"{path} was replaced or rewritten while the report read it (its size, modification time or "
                "inode changed); build the report again once nothing rewrites it")


# What the worker sends: ("chunk", RunChunk, its runs' RunFigures) for each chunk it read; then
# ("done", None, runs numbered), ("input", InputError's fields, run n where it was met) for a damaged
# line, ("one", why, None) for a line it cannot number as this process does (or a file it sees as
# another), or ("error", why, None).
Message = tuple[str, Any, Any]


BY_FIELDS: tuple[type, ...] = (RunFigures, RunEntry, FindingLink, RunResult, Usage, ExpectationResult, Outcome)
"""The records a worker sends its runs' figures in (`_send_chunk`) pickled as their class and their fields'
values in order, made again by the class's `__init__`. Pickle's own way sends each one's `__dict__`, keys
and all, which the receiving process builds as a dict, then copies key by key, each key interned, into
the record it made without its `__init__`: unpickling a run took this process 117,000 instructions, and
the worker 100,000 to pickle it (70,000 and 75,000 so). Only classes whose `__init__` takes every field
and does nothing else (no `__post_init__`; not frozen: a frozen record's `__init__` sets each field
through `object.__setattr__`, no faster than pickle's own way, as `Finding`'s)."""


def _by_fields(cls: type) -> Callable[[Any], tuple[type, tuple[Any, ...]]]:
    """The reducer of `cls` (`BY_FIELDS`): its class and its fields' values, in its `__init__`'s order."""
    values = attrgetter(*(field.name for field in fields(cls)))  # two fields or more: a tuple of values
    return lambda record: (cls, values(record))


class _FiguresPickler(pickle.Pickler):
    """Pickles the worker's chunks of figures, `BY_FIELDS` records by their fields (read by `Connection.recv`,
    as any message)."""

    dispatch_table = {**copyreg.dispatch_table, **{cls: _by_fields(cls) for cls in BY_FIELDS}}


def _send_chunk(conn: Connection, chunk: RunChunk, figures: list[RunFigures]) -> None:
    """Send a chunk of details and its runs' figures, pickled by `_FiguresPickler`."""
    data = io.BytesIO()
    _FiguresPickler(data, pickle.HIGHEST_PROTOCOL).dump(("chunk", chunk, figures))
    conn.send_bytes(data.getbuffer())


def worker_main() -> None:
    """The worker process's start: its task (paths, their stamps, prices, run ids, secrets, the shipped
    price table) pickled on stdin, its messages sent on the descriptor named by its first argument, chunks
    claimed in the file its third names (`_Claims`; the second is the harness's root, `_processes._ON_PATH`)."""
    conn = Connection(int(sys.argv[1]), readable=False)
    claims = _Claims(int(sys.argv[3]), _Claims.WORKER)
    try:
        paths, stamps, prices, only, secrets, shipped = pickle.load(sys.stdin.buffer)
    except (EOFError, pickle.UnpicklingError):
        # No task, or half of one: the process that started it ended first (killed alone, by `kill` or a
        # CI timeout; it ends the worker itself otherwise). Started before it had a task to give
        # (`_processes.start_early`), the worker ends without a traceback on its terminal.
        return
    if shipped is not None:
        keep_shipped(shipped)  # as this process read it: the worker then imports no YAML, reads no file of prices
    _build_details(conn, claims, paths, stamps, prices, only, secrets)


def _build_details(conn: Connection, claims: _Claims, paths: Sequence[str | os.PathLike[str]],
                   stamps: Sequence[Stamp | None], prices: PriceTable | None, only: Collection[str] | None,
                   secrets: tuple[str, ...]) -> None:
    """The worker: the chunks of runs it claims read, their details packed as one process packs them, sent
    chunk by chunk with the runs' figures. `stamps`: the files as the process that started it found them."""
    gc.set_threshold(100_000, 50, 100)  # as `harness report` sets it: the same allocations, the same reason
    try:
        for path, stamp in zip(paths, stamps, strict=True):
            # A name of that process's own file (/dev/stdin, /dev/fd/N) is another file here, or none.
            found = _stamp(path)
            if stamp is not None and (found is None or found[2:] != stamp[2:]):
                conn.send(("one", f"{path} is not the same file to the process building the runs' details", None))
                return
        sizes = [None if stamp is None else stamp[0] for stamp in stamps]
        details = _Details(secrets)
        figures: list[RunFigures] = []
        n, reading = 0, False
        try:
            for n, line, result, ours in _numbered(paths, sizes, only, None, claims, main=False):
                if not ours:
                    continue
                reading = True
                result = _read(line, result, only, None)
                run, call_costs = run_figures(n, result, prices if prices is not None else result.price_table)
                details(run.entry, call_costs)
                figures.append(without_trace(run))
                reading = False
                if details.chunks:
                    _send_chunk(conn, details.chunks.pop(), figures)
                    figures = []
        except InputError as exc:
            conn.send(("input", (exc.path, exc.problem, exc.line, exc.key), n if reading else n + 1))
            return
        except _OneProcessNeeded as exc:
            conn.send(("one", str(exc), None))
            return
        details.close()
        if details.chunks:
            _send_chunk(conn, details.chunks.pop(), figures)
        conn.send(("done", None, n))
    except BaseException as exc:  # noqa: BLE001 - any failure is told to the waiting process, never a hang
        with contextlib.suppress(OSError):  # that process is gone (killed): nobody to tell
            conn.send(("error", f"{type(exc).__name__}: {exc}", None))
    finally:
        conn.close()


class _Worker:
    """The worker process and a thread of this one that takes its messages as they come, so the worker
    never waits on a full pipe while this process is busy reading."""

    def __init__(self, paths: Sequence[str | os.PathLike[str]], stamps: Sequence[Stamp | None],
                 prices: PriceTable | None, only: Collection[str] | None, started: StartedWorker | None) -> None:
        """`started`: the worker process, started already (`_processes.start_early`); else started here."""
        # The shipped table, when each run is priced as it was run: read here, and given to the worker, which
        # then neither imports yaml nor parses prices.yaml (about 0.03 s of CPU).
        shipped = load_prices() if prices is None else None
        try:
            self._process, receive, claims = (started if started is not None else StartedWorker()).take()
        except OSError as exc:
            raise ReportWorkerError(f"cannot start the process building the runs' details ({exc})") from exc
        self.claims = claims
        """The file the two processes claim chunks in (`_Claims`)."""
        self._conn = Connection(receive, writable=False)
        # Its messages as they come; None after its last (or once it ended without one).
        self._messages: queue.SimpleQueue[Message | None] = queue.SimpleQueue()
        self._figures: deque[RunFigures] = deque()
        """Figures of runs the worker sent, not counted yet."""
        self.chunks: list[RunChunk] = []
        """The details the worker packed, as they came."""
        self.damaged: InputError | None = None
        """The damaged line the worker met, once raised."""
        # The secrets this process redacts (`--secret NAME` adds to them as it runs), through the pipe,
        # never a file or the command line.
        task = ([os.fspath(p) for p in paths], list(stamps), prices, None if only is None else frozenset(only),
                default_secrets(), shipped)
        self._thread = threading.Thread(target=self._receive, args=(task,), name="harness-report-receive",
                                        daemon=True)
        try:
            self._thread.start()
        except RuntimeError as exc:  # out of threads: the worker, started, is ended and reaped
            self._process.kill()
            self._process.wait()
            assert self._process.stdin is not None
            self._process.stdin.close()
            self._conn.close()
            os.close(self.claims)
            raise ReportWorkerError(f"cannot start the thread receiving the runs' details ({exc})") from exc

    def _receive(self, task: tuple[Any, ...]) -> None:
        """Give the worker its task (by this thread: the run ids of a large `harness run` fill the pipe
        before the worker, still starting, reads them), then take its messages until its last."""
        assert self._process.stdin is not None
        try:
            # Pickled whole before any of it is sent: a task that cannot be pickled (a price table
            # holding what pickle cannot take) is then an error said as the worker's messages are
            # taken (`_next`), not this thread's traceback, and the worker is ended before it reads
            # half a task.
            data = pickle.dumps(task)
        except Exception as exc:  # noqa: BLE001 - pickle raises many kinds (PicklingError, TypeError, ...)
            self._process.kill()
            self._process.stdin.close()
            self._messages.put(("error", f"cannot give it its task ({type(exc).__name__}: {exc})", None))
            self._messages.put(None)
            return
        try:
            with self._process.stdin as stdin:
                stdin.write(data)
        except BrokenPipeError:
            pass  # the worker ended already: said as its messages are taken
        try:
            while True:
                message: Message = self._conn.recv()
                self._messages.put(message)
                if message[0] != "chunk":
                    break
        except (EOFError, OSError):  # the worker ended without a last word (killed), or we stopped it
            pass
        self._messages.put(None)

    def _next(self, block: bool) -> Message | None:
        """The worker's next message; None when none came yet (not `block`). Its failure is raised."""
        try:
            message = self._messages.get(block)
        except queue.Empty:
            return None
        return self._told(message)

    def _told(self, message: Message | None) -> Message:
        """A chunk or the worker's end as it came; raised: its failure, a line it cannot number as this
        process does (`_OneProcessNeeded`), its damaged line."""
        if message is None:
            self._messages.put(None)  # said again to whoever asks next
            self._process.wait()
            raise ReportWorkerError(f"the process building the runs' details ended before it finished "
                                    f"(exit code {self._process.returncode})")
        kind, value, _ = message
        if kind == "error":
            raise ReportWorkerError(f"the process building the runs' details failed: {value}")
        if kind == "one":
            raise _OneProcessNeeded(value)
        if kind == "input":
            path, problem, line, key = value
            self.damaged = InputError(path, problem, line=line, key=key)
            raise self.damaged
        return message

    def count(self, order: deque[RunFigures | None], tally: Tally, *, block: bool) -> None:
        """Count the runs of `order` into `tally` from its start as far as the worker sent the figures of
        its runs among them (to its end, waiting for the worker, when `block`)."""
        while order:
            figures = order[0]
            if figures is None:
                while not self._figures:
                    message = self._next(block)
                    if message is None:
                        return
                    if message[0] != "chunk":  # done: fewer runs than this process numbered
                        raise _changed()
                    self.chunks.append(message[1])
                    self._figures.extend(message[2])
                figures = self._figures.popleft()
            if figures.entry.n != len(tally.runs) + 1:
                raise _changed()
            order.popleft()
            tally.add(figures)

    def finish(self, runs: int) -> None:
        """Check that the worker, done, numbered as many runs as this process: `runs`."""
        message = self._next(True)
        assert message is not None
        if self._figures or message[0] != "done" or message[2] != runs:
            raise _changed()

    def raise_earlier(self, n: int) -> None:
        """Raise the worker's damaged line when it met one before run `n` (this process met one at run
        `n`): the first damaged line of the files is the one said, whichever process read it. Raise too
        what stopped the worker before run `n` (its failure, a line it cannot number as this process
        does): a damaged line of its share may lie before run `n` unread, which one process then says."""
        while True:
            message = self._messages.get()
            if message is not None:
                kind, value, where = message
                if kind == "done" or (kind == "chunk" and value.first > n) or (kind == "input" and where >= n):
                    return  # past run n without a damaged line: this process's is said
            self._told(message)

    def stop(self) -> None:
        """End the worker if it still runs (this process failed first) and let go of everything."""
        if self._process.poll() is None:
            self._process.kill()
        self._process.wait()
        self._thread.join()  # the worker's end is closed now: its read ends
        self._conn.close()
        os.close(self.claims)


def _changed() -> ResultsChangedError:
    return ResultsChangedError("the results changed while the report read them (the two processes building it "
                             "read different runs); build the report again once nothing writes to them")
