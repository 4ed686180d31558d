"""The page of results files, most of its runs' details packed by a second process while this one reads the runs.

A run's details (every step drawn, redacted, packed) are the heaviest part of a report and depend on
that run alone, so with a core to spare a worker process reads the same files and packs three chunks
of details in four while this process reads them for the figures and packs the fourth. Both pack
with the very code one process uses (`run_entry`, `_Details`), so the page is the same byte for byte
however many processes built it. Each process holds one trace at a time; the worker sends its chunks
as they are packed (held until the page is written, as one process holds them).

The worker reads the files on its own (sending it each parsed run would cost more than reading it
again), and without checking each line's keys: this process checks every line, and stops the worker
on the first damaged one, which it names. The worker's failure is an error, never a hang. Both read
only the bytes each file had when this process began (a `harness run` may still append to it), so
appended lines are seen by neither; files rewritten meanwhile are said, not shown half old, half new.
"""

from __future__ import annotations

import contextlib
import gc
import os
import pickle
import signal
import subprocess
import sys
import threading
from collections.abc import Collection, Iterator, Sequence
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from .._secrets import default_secrets
from ..cost import CallCost, PriceTable
from ..errors import HarnessError, UsageError
from ..results import RunResult
from ..results._store import read_lines
from ._data import RunEntry, prepare, run_entry
from ._render import CHUNK_RUNS, Page, RunChunk, _Details, prepare_page

TWO_PROCESSES_FROM_BYTES = 30_000_000
"""Results files from this size on (about 3,000 typical runs) are reported by two processes when a core
is idle: below it the worker's start (a new interpreter importing the harness, about 0.4 s) takes
about what it saves."""


class ReportWorkerError(HarnessError):
    """The process building the runs' details failed or ended without finishing."""


class ResultsChangedError(ReportWorkerError):
    """The results files changed while the two processes read them: not the worker's failure."""


def prepare_files(paths: Sequence[str | os.PathLike[str]], prices: PriceTable | None = None, *,
                  only: Collection[str] | None = None, warnings: list[str] | None = None,
                  processes: int | None = None) -> Page:
    """The page of the results files `paths` (their runs in order, only those whose run id is in `only`
    when given): what `prepare_page` makes of them, on `processes` processes (1 or 2; by default as
    `_default_processes` says). Torn last lines are noted in `warnings`.

    Two processes are a speed-up: unless they were asked for (`processes`, `PROCESSES_VARIABLE`), a
    worker that cannot start or fails is said in one line on stderr and the page built by one process."""
    forced = processes is not None or processes_told() is not None
    if processes is None:
        processes = _default_processes(paths)
    if processes < 2 or os.name != "posix":  # the worker is given its pipe by descriptor number: POSIX only
        return prepare_page(_runs(paths, [None] * len(paths), only, warnings), prices)
    stamps = [_stamp(path) for path in paths]
    sizes = [None if stamp is None else stamp[0] for stamp in stamps]
    noted = len(warnings) if warnings is not None else 0
    try:
        page = _two_processes(paths, sizes, prices, only, warnings)
    except ResultsChangedError:
        raise
    except ReportWorkerError as exc:
        if forced:
            raise
        print(f"harness: {exc}; building the report in one process", file=sys.stderr)
        if warnings is not None:
            del warnings[noted:]  # noted again as this process reads the files again
        # The same bytes the worker was given: the page of the files as they were when the report began.
        return prepare_page(_runs(paths, sizes, only, warnings), prices)
    _check_unchanged(paths, stamps)
    return page


def _two_processes(paths: Sequence[str | os.PathLike[str]], sizes: Sequence[int | None],
                   prices: PriceTable | None, only: Collection[str] | None, warnings: list[str] | None) -> Page:
    worker = _Worker(paths, sizes, prices, only)
    try:
        details = _Details()
        ours = _Share(details, main=True)
        data = prepare(_runs(paths, sizes, only, warnings), prices, render=ours)
        details.close()
        data.comparison  # noqa: B018 - made while the worker finishes, rather than after, when the page is written
        chunks = worker.chunks(data.runs, details.chunks)
    finally:
        worker.stop()
    return Page(data, chunks)


Stamp = tuple[int, int, int]
"""A file's size, mtime_ns and inode."""


def _stamp(path: str | os.PathLike[str]) -> Stamp | None:
    try:
        found = os.stat(path)
    except OSError:  # said by the reading, which names the file
        return None
    return found.st_size, found.st_mtime_ns, found.st_ino


def _check_unchanged(paths: Sequence[str | os.PathLike[str]], stamps: Sequence[Stamp | None]) -> None:
    """Raise if a file was replaced or rewritten while both processes read its first bytes: the run ids
    they compare cannot tell a line rewritten with the same id. A file that grew, the same file still,
    was appended to (a `harness run` still writing), which neither read; its first bytes are taken as
    kept (a stamp cannot tell a file emptied and written longer from one appended to)."""
    for path, before in zip(paths, stamps, strict=True):
        if before is None:
            continue
        after = _stamp(path)
        size, mtime_ns, inode = before
        if after is None or after[2] != inode or after[0] < size or (after[0] == size and after[1] != mtime_ns):
            raise ResultsChangedError(
                f"{path} was replaced or rewritten while the report read it (its size, modification time or "
                "inode changed); build the report again once nothing rewrites it")


MAIN_SHARE = 4
"""This process packs the details of one chunk in MAIN_SHARE (its runs are read here anyway), the
worker the others: the worker also starts an interpreter and reads every run again, and with this
share the two end about together."""


class _Share:
    """A render for `prepare` handing on only the runs of one process's chunks (the others' traces are
    let go as soon as read, `prepare` keeping no trace of a run handed to a render)."""

    def __init__(self, details: _Details, *, main: bool) -> None:
        self._details = details
        self._main = main

    def ours(self, n: int) -> bool:
        return (((n - 1) // CHUNK_RUNS) % MAIN_SHARE == 0) == self._main

    def __call__(self, run: RunEntry, call_costs: list[CallCost | None]) -> None:
        if self.ours(run.n):
            self._details(run, call_costs)


def _runs(paths: Sequence[str | os.PathLike[str]], sizes: Sequence[int | None], only: Collection[str] | None,
          warnings: list[str] | None, *, checked: bool = True) -> Iterator[RunResult]:
    """The runs of `paths`, each file read up to its size in `sizes` (None: to its end)."""
    for path, size in zip(paths, sizes, strict=True):
        for result in read_lines(path, warnings=warnings, checked=checked, size=size):
            if only is None or result.run_id in only:
                yield result


PROCESSES_VARIABLE = "HARNESS_REPORT_PROCESSES"
"""1 or 2: how many processes build a report, whatever the files' size and the machine's load (a CI
runner in a container sees its host's load and cores, not its own share)."""


def processes_told() -> int | None:
    """`PROCESSES_VARIABLE`'s value, None when unset; any other value than 1 or 2 is a UsageError (which
    `harness run` raises before its first run, not once they are all done)."""
    told = os.environ.get(PROCESSES_VARIABLE, "").strip()
    if not told:
        return None
    if told not in ("1", "2"):
        raise UsageError(f"{PROCESSES_VARIABLE} is {told!r}: give 1 or 2 (processes building a report)")
    return int(told)


def _default_processes(paths: Sequence[str | os.PathLike[str]]) -> int:
    """`PROCESSES_VARIABLE` when set; else 2 for large files with two cores or more, one of them idle,
    else 1: the worker reads every run again, so on a machine whose cores are all busy it only adds work
    (a third more CPU time) and the build takes longer."""
    told = processes_told()
    if told is not None:
        return told
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    try:
        size = sum(os.stat(path).st_size for path in paths)
        busy = os.getloadavg()[0]
    except (OSError, AttributeError):  # a file that cannot be read is said by the reading; Windows has no load
        return 1
    # A core idle besides this process's: on one core the worker only takes turns with it, whatever the load.
    return 2 if size >= TWO_PROCESSES_FROM_BYTES and cores >= 2 and busy <= cores - 1 else 1


# What the worker sends: ("chunk", RunChunk, run ids), then ("done", None, runs) or ("error", message, None).
Message = tuple[str, Any, Any]


def worker_main() -> None:
    """The worker process's start: its task (paths, sizes, prices, run ids, secrets) pickled on stdin,
    its messages sent on the descriptor named by its argument."""
    # Ctrl-C reaches the whole process group: the process that started this one stops it, and says so.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    conn = Connection(int(sys.argv[1]), readable=False)
    paths, sizes, prices, only, secrets = pickle.load(sys.stdin.buffer)
    _build_details(conn, paths, sizes, prices, only, secrets)


def _build_details(conn: Connection, paths: Sequence[str | os.PathLike[str]], sizes: Sequence[int | None],
                   prices: PriceTable | None, only: Collection[str] | None, secrets: tuple[str, ...]) -> None:
    """The worker: every run's details, packed as one process packs them, sent chunk by chunk with the
    run ids they hold (so this process can tell that both read the same runs)."""
    gc.set_threshold(100_000, 50, 100)  # as `harness report` sets it: the same allocations, the same reason
    try:
        details = _Details(secrets)
        share = _Share(details, main=False)
        ids: list[str] = []
        n = 0
        for n, result in enumerate(_runs(paths, sizes, only, None, checked=False), start=1):
            if not share.ours(n):
                continue
            entry, call_costs, _ = run_entry(n, result, prices if prices is not None else result.price_table)
            details(entry, call_costs)
            ids.append(result.run_id)
            if details.chunks:
                conn.send(("chunk", details.chunks.pop(), ids))
                ids = []
        details.close()
        if details.chunks:
            conn.send(("chunk", details.chunks.pop(), ids))
        conn.send(("done", None, n))
    except BaseException as exc:  # noqa: BLE001 - any failure is told to the waiting process, never a hang
        with contextlib.suppress(OSError):  # that process is gone (killed): nobody to tell
            conn.send(("error", f"{type(exc).__name__}: {exc}", None))
    finally:
        conn.close()


_ON_PATH = """\
import os, sys
root = sys.argv[2]
if root not in {os.path.realpath(entry or os.curdir) for entry in sys.path}:
    sys.path.insert(1, root)
"""
"""The worker's first lines: the harness root given (a checkout run in place) goes on its path, after the
`-c` script's own entry as PYTHONPATH would put it, only when missing. An installed harness's root
is site-packages, already on the path after the standard library: put first, it came before it."""
_WORKER_START = _ON_PATH + "from harness.report._files import worker_main\nworker_main()\n"


class _Worker:
    """The worker process and a thread of this one that takes its chunks as they come, so the worker
    never waits on a full pipe while this process is busy reading."""

    def __init__(self, paths: Sequence[str | os.PathLike[str]], sizes: Sequence[int | None],
                 prices: PriceTable | None, only: Collection[str] | None) -> None:
        # A new interpreter, not multiprocessing's: a fork would copy whatever threads and locks this
        # process holds (`harness run`'s), and multiprocessing's spawn runs the caller's main script again.
        receive, send = os.pipe()
        self._conn = Connection(receive, writable=False)
        self._messages: list[Message] = []
        # The harness this process runs, on the worker's path (`_ON_PATH`): the same code builds both halves.
        root = str(Path(__file__).resolve().parents[2])
        try:
            self._process = subprocess.Popen([sys.executable, "-c", _WORKER_START, str(send), root],
                                             stdin=subprocess.PIPE, pass_fds=(send,))
        except OSError as exc:
            self._conn.close()
            raise ReportWorkerError(f"cannot start the process building the runs' details ({exc})") from exc
        finally:
            os.close(send)  # the worker's end only: its exit then ends our reads
        # The secrets this process redacts (`--secret NAME` adds to them as it runs), through the pipe,
        # never a file or the command line.
        task = ([os.fspath(p) for p in paths], list(sizes), prices, None if only is None else frozenset(only),
                default_secrets())
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
            raise ReportWorkerError(f"cannot start the thread receiving the runs' details ({exc})") from exc

    def _receive(self, task: tuple[Any, ...]) -> None:
        """Give the worker its task (by this thread: the run ids of a large `harness run` fill the pipe
        before the worker, still starting, reads them), then take its messages until its last."""
        assert self._process.stdin is not None
        try:
            # Pickled whole before any of it is sent: a task that cannot be pickled (a price table
            # holding what pickle cannot take) is then an error said by `chunks`, not this thread's
            # traceback, and the worker is ended before it reads half a task.
            data = pickle.dumps(task)
        except Exception as exc:  # noqa: BLE001 - pickle raises many kinds (PicklingError, TypeError, ...)
            self._process.kill()
            self._process.stdin.close()
            self._messages.append(("error", f"cannot give it its task ({type(exc).__name__}: {exc})", None))
            return
        try:
            with self._process.stdin as stdin:
                stdin.write(data)
        except BrokenPipeError:
            pass  # the worker ended already: said when its chunks are asked for
        try:
            while True:
                message: Message = self._conn.recv()
                self._messages.append(message)
                if message[0] != "chunk":
                    return
        except (EOFError, OSError):  # the worker ended without a last word (killed), or we stopped it
            return

    def chunks(self, runs: list[RunEntry], ours: list[RunChunk]) -> list[RunChunk]:
        """Every run's chunk, ours and the worker's in order, once the worker is done; the worker's
        checked to hold the runs this process read."""
        self._thread.join()
        self._process.wait()
        theirs: list[RunChunk] = []
        for kind, value, extra in self._messages:
            if kind == "error":
                raise ReportWorkerError(f"the process building the runs' details failed: {value}")
            if kind == "done":
                if extra != len(runs):
                    raise _changed()
                break
            chunk: RunChunk = value
            if extra != [run.result.run_id for run in runs[chunk.first - 1:chunk.first - 1 + chunk.count]]:
                raise _changed()
            theirs.append(chunk)
        else:
            raise ReportWorkerError(f"the process building the runs' details ended before it finished "
                                    f"(exit code {self._process.returncode})")
        chunks = sorted([*ours, *theirs], key=lambda chunk: chunk.first)
        if [chunk.first for chunk in chunks] != list(range(1, len(runs) + 1, CHUNK_RUNS)):
            raise _changed()
        return chunks

    def stop(self) -> None:
        """End the worker if it still runs (this process failed first) and let go of everything."""
        if self._process.poll() is None:
            self._process.kill()
        self._process.wait()
        self._thread.join()  # the worker's end is closed now: its read ends
        self._conn.close()


def _changed() -> ResultsChangedError:
    return ResultsChangedError("the results changed while the report read them (the two processes building it "
                             "read different runs); build the report again once nothing writes to them")
