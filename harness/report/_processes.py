"""How many processes build a report, and the start of the second one (`_files`' worker).

Of the standard library only, and cheap to import: `harness report` starts its worker first thing, so
the worker imports the harness (about 0.3 s of CPU) while this process imports it too, on the other
core, rather than after; the worker is given its task once this process has it (`_files._Worker`).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from ..errors import UsageError

TWO_PROCESSES_FROM_BYTES = 30_000_000
"""Results files from this size on (about 3,000 typical runs) are reported by two processes on a machine
of two cores or more: below it the worker's start (a new interpreter importing the harness, about 0.4 s) takes
about what it saves."""

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


def default_processes(paths: Sequence[str | os.PathLike[str]]) -> int:
    """`PROCESSES_VARIABLE` when set; else 2 for large files with two cores or more, else 1.

    Not decided by the load average: the chunks of runs are claimed as they come (`_files._Claims`), so
    on a busy machine the worker reads what its share of a core allows, for the CPU its start and its
    numbering of the lines cost (0.3-0.4 s of a 10,000-run build's 4-5 s). Measured with both cores
    busy (load 3 on 2 cores), two processes built the 10,000-run page in 5.3-7.1 s where one took 9.6 s
    (one round in three the other way: 13.5 s against 12.1 s). And the load average lags a minute
    behind, counts processes waiting on a disk and, in a container, may be the host's: a machine idle
    but for a `pip install` just finished would be told busy, and its report built on one core."""
    told = processes_told()
    if told is not None:
        return told
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    try:
        size = sum(os.stat(path).st_size for path in paths)
    except OSError:  # a file that cannot be read is said by the reading
        return 1
    # On one core the worker only takes turns with this process.
    return 2 if size >= TWO_PROCESSES_FROM_BYTES and cores >= 2 else 1


_ON_PATH = """\
import os, sys
root = sys.argv[2]
if root not in {os.path.realpath(entry) for entry in sys.path if entry}:
    sys.path.insert(0, root)
"""
"""The worker's first lines: the harness root given (a checkout run in place) goes first on its path, only
when missing. An installed harness's root is site-packages, already on the path after the standard library:
put first, it came before it. The worker runs with `-P` (`SAFE_PATH`): no entry for the directory it was
started in, whose own `harness` (another checkout's, another version's) or `signal.py` was imported before
the harness this process runs, so the two halves of a page were built by different code, or not at all."""
SAFE_PATH = "-P"
"""Python's flag (3.11+) to put no directory of the caller's on the path: a `-c` script's path starts with ''."""
_IGNORE_CTRL_C = "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
"""The worker's very first line: Ctrl-C reaches the whole process group, the worker too, maybe while it
still imports the harness (a KeyboardInterrupt's traceback on the user's terminal, then); the process
that started it stops it, and says so."""
_WORKER_START = _IGNORE_CTRL_C + _ON_PATH + "from harness.report._files import worker_main\nworker_main()\n"


class StartedWorker:
    """The worker process, started and importing the harness, not yet given its task (on its stdin,
    which it reads once its imports are done); or why it could not start (`failure`)."""

    def __init__(self) -> None:
        # A new interpreter, not multiprocessing's: a fork would copy whatever threads and locks this
        # process holds (`harness run`'s), and multiprocessing's spawn runs the caller's main script again.
        self.process: subprocess.Popen[bytes] | None = None
        self.receive: int | None = None
        """This process's end of the pipe the worker sends its messages on."""
        self.claims: int | None = None
        """The file both processes claim chunks of runs in (`_files._Claims`): unnamed, gone with them."""
        self.failure: OSError | None = None
        try:
            self.claims = _unnamed_file()
        except OSError as exc:
            self.failure = exc
            return
        receive, send = os.pipe()
        # The harness this process runs, on the worker's path (`_ON_PATH`): the same code builds both halves.
        root = str(Path(__file__).resolve().parents[2])
        try:
            self.process = subprocess.Popen([sys.executable, SAFE_PATH, "-c", _WORKER_START, str(send), root,
                                             str(self.claims)],
                                            stdin=subprocess.PIPE, pass_fds=(send, self.claims))
        except OSError as exc:
            os.close(receive)
            os.close(self.claims)
            self.claims = None
            self.failure = exc
        else:
            self.receive = receive
        finally:
            os.close(send)  # the worker's end only: its exit then ends our reads

    def take(self) -> tuple[subprocess.Popen[bytes], int, int]:
        """The process, the pipe's end and the claims' file, for `_files._Worker`, which ends them;
        raises the start's OSError."""
        if self.failure is not None:
            raise self.failure
        assert self.process is not None and self.receive is not None and self.claims is not None
        taken = self.process, self.receive, self.claims
        self.process = self.receive = self.claims = None
        return taken

    def close(self) -> None:
        """End the worker unless it was taken (the report failed before it was given its task)."""
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            assert self.process.stdin is not None
            self.process.stdin.close()
            self.process = None
        for fd in (self.receive, self.claims):
            if fd is not None:
                os.close(fd)
        self.receive = self.claims = None


def _unnamed_file() -> int:
    """A new empty file with no name, read and written by descriptor: nothing is left behind however
    the two processes end."""
    with tempfile.TemporaryFile(buffering=0) as file:
        return os.dup(file.fileno())


def start_early(paths: Sequence[str | os.PathLike[str]]) -> StartedWorker | None:
    """The worker of a report of `paths`, started now, when the report is to be built by two processes
    (`default_processes`); None when by one, or when `PROCESSES_VARIABLE` is wrong (said by the build)."""
    try:
        if default_processes(paths) < 2 or os.name != "posix":  # the worker's pipe is given by number: POSIX only
            return None
    except UsageError:
        return None
    return StartedWorker()
