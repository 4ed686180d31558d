"""Worker processes for the runs that spend CPU (scripted, replay): with -j N, N of them go at once on
N cores, where threads would share one interpreter lock.

Each worker is forked from a *zygote*: a process forked once, when the batch starts and the harness
is still a single thread, with everything a run needs already loaded (scenarios, agents, plugins, the
SDK), so a worker imports nothing and reads nothing again. Forking from the zygote rather than from
the harness itself means no worker inherits a lock that a thread of the harness (the results syncer,
a live run) held at that moment; `spawn` would import the SDK in every worker and need every agent to
be importable by name. The zygote and its workers are a process group of their own: a Ctrl-C reaches
the harness alone, which then ends them all.

A run goes to a worker as its index in the batch. The worker makes it and sends back its results
line (serialized and redacted there, the costly part) and the result without its traces; the
harness, their one writer, appends the line. A slot whose runs are quick sends the next few along
with the one under way (`make`'s `then`), and reads their answers a few at a time (`GATHER_S`): a
worker that waited for the harness to hear of each run before it got the next sat idle for that
round trip, and the harness, woken for each answer, took a core from a worker each time; either way
the next run started on a cold cache (bench/bench_run.py measures what that costs).

A worker that dies before answering (killed, an agent calling `os._exit`) ends its run as an error
saying so, and the next run gets a fresh worker; so does a run whose agent the deadline had to leave
running. The answers it sent before it died are read first: only the run it was making has that error,
and the runs sent after it go to the next worker.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import signal
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable, Sequence

from ..agents._processes import kill_every_run
from ..results import ResultsWriter, RunResult
from ..trace import Outcome
from . import _deadline, _execute
from ._execute import unfinished_result
from ._plan import PlannedRun

Make = Callable[[PlannedRun], tuple[bytes, RunResult]]
"""Make one run in this process: its results line and its result without traces."""

GATHER_S = 0.02
"""How long a slot whose worker has two or more runs waiting lets the answers gather before it reads
them: the harness then wakes about 50 times a second for each worker, not once for each run."""
_FRAME = struct.Struct("!I")
_DEATH = struct.Struct("!ii")
_CLOSE_S = 5.0
"""How long idle workers are given to end once the batch is over, before they are killed."""
_END_RUNS_S = 2.0
"""How long the workers of an interrupted batch are given to kill their runs' commands before they are killed."""
BACKSTOP_S = 30.0
"""How long past its deadline (and the grace a stopped agent has) a run's worker is waited for before
it is killed: only an agent stuck where the worker's own deadline cannot reach it (a C loop holding
the interpreter lock) lasts that long."""


class WorkerPool:
    """Worker processes for the slots of one batch, each slot with at most one worker at a time."""

    def __init__(self, runs: Sequence[PlannedRun], make: Make, *, close_fds: Sequence[int] = ()) -> None:
        """Fork the zygote now: call this before the harness starts any thread of the batch. `close_fds`
        are closed in the zygote (the results file: its lock must end with the harness)."""
        self._runs = runs
        self._control, theirs = socket.socketpair()
        self._control_lock = threading.Lock()
        self._deaths: dict[int, int] = {}
        self._workers: dict[int, tuple[int, socket.socket]] = {}
        self._sent: dict[int, list[int]] = {}
        """By slot: the runs sent to its worker and not answered yet, oldest first (the one it is making)."""
        self._answers: dict[int, list[bytes]] = {}
        """By slot: answers read from its worker and not yet taken, oldest first."""
        _flush()  # what the harness printed but had not written would be written again by each worker
        self._pid = os.fork()
        if self._pid == 0:  # the zygote: never returns
            try:
                self._control.close()
                for fd in close_fds:
                    os.close(fd)
                _zygote(theirs, runs, make)
            finally:
                os._exit(0)
        theirs.close()
        with contextlib.suppress(OSError):  # as the zygote does itself: whichever comes first
            os.setpgid(self._pid, self._pid)

    def make(self, slot: int, index: int, deadline_s: float | None, *, then: Sequence[int] = (),
             ) -> tuple[bytes, RunResult]:
        """Make run `index` in the slot's worker (forked first if it has none): its line and its result
        without traces. A worker that dies, or that the backstop kills, gives the run's error result.

        `then`, the runs this slot makes next, in order, are sent now to wait in the worker's channel:
        the worker starts each the moment the one before ends. The slot's next call must be for the
        first of them; a worker that ends before it makes them (died, retired) leaves them to be sent
        to the next worker. With two or more waiting, the worker stays busy while this waits
        `GATHER_S` before it reads, so that it reads several answers at once."""
        run = self._runs[index]
        pid = None
        try:
            pid, channel = self._workers.get(slot) or self._fork_worker(slot)
            sent, answers = self._sent[slot], self._answers[slot]
            if sent and sent[0] != index:  # its answer would be another run's
                raise RuntimeError(f"run {index} asked of a worker that makes run {sent[0]} first")
            try:
                for wanted in (index, *then):
                    if wanted not in sent:
                        _send(channel, pickle.dumps(wanted))
                        sent.append(wanted)
            except OSError:
                pass  # the worker has ended: what it answered before is read below, then its end is met
            if not answers and len(sent) > 2:
                time.sleep(GATHER_S)
                answers += _ready(channel)
            channel.settimeout(None if deadline_s is None else deadline_s + _deadline.GRACE_S + BACKSTOP_S)
            try:
                answer = answers.pop(0) if answers else _receive(channel)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                self._retire(slot)
                result = _overran(run, deadline_s)
                return ResultsWriter.line(result), result
            sent.pop(0)  # answered: an answer that cannot be read costs its run alone, not the slot's next ones
            line, result, retire = pickle.loads(answer)
        except (OSError, EOFError, pickle.UnpicklingError):
            self._retire(slot)
            result = _died(run, None if pid is None else self._death_of(pid))
            return ResultsWriter.line(result), result
        if retire:
            self._retire(slot)
        return line, result

    def _fork_worker(self, slot: int) -> tuple[int, socket.socket]:
        ours, theirs = socket.socketpair()
        with self._control_lock:
            socket.send_fds(self._control, [b"w"], [theirs.fileno()])
        theirs.close()
        self._workers[slot] = (-1, ours)  # retired (closed) if the zygote cannot fork it
        self._sent[slot] = []
        self._answers[slot] = []
        pid: int = pickle.loads(_receive(ours))
        self._workers[slot] = (pid, ours)
        return pid, ours

    def end(self, slot: int) -> None:
        """End the slot's worker and forget the runs sent to it, whose results could not be kept (the
        results file failed): it ends the run it is making as an interrupt would, and starts no other."""
        pid, _ = self._workers.get(slot, (-1, None))
        if pid > 0:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)  # a worker kills its run's command and exits (`_end_at_once`)
        self._retire(slot)

    def _retire(self, slot: int) -> None:
        if slot in self._workers:
            self._workers.pop(slot)[1].close()
        self._sent.pop(slot, None)  # what it was sent and did not make goes to the slot's next worker
        self._answers.pop(slot, None)

    def _death_of(self, pid: int) -> int | None:
        """The wait status of a worker that died, as the zygote reports it (None if it does not in time)."""
        with self._control_lock:
            try:
                self._control.settimeout(2.0)
                while pid not in self._deaths:
                    died, status = _DEATH.unpack(_exactly(self._control, _DEATH.size))
                    self._deaths[died] = status
            except (OSError, EOFError):
                return None
            return self._deaths.pop(pid)

    def close(self, *, at_once: bool = False) -> None:
        """End the workers and the zygote: idle ones by closing their channels, so that the zygote reaps
        them (their CPU time is then counted as the harness's children); `at_once`, or once
        `_CLOSE_S` has passed, by killing the group, whatever runs were under way (an interrupt cut them)."""
        if at_once:
            self._end_runs()
            self._kill()
        for _, channel in list(self._workers.values()):
            channel.close()
        self._workers.clear()
        self._control.close()
        if not at_once:
            waited = 0.0
            while waited < _CLOSE_S:
                with contextlib.suppress(ChildProcessError):
                    if os.waitpid(self._pid, os.WNOHANG)[0] != 0:
                        return
                time.sleep(0.01)
                waited += 0.01
        self._kill()
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self._pid, 0)

    def _end_runs(self) -> None:
        """Tell every worker to end its run's agent command before the group is killed: a worker killed
        outright leaves its command (its own session, out of the group) and all it started running."""
        with contextlib.suppress(OSError):
            os.killpg(self._pid, signal.SIGTERM)  # a worker kills its command and exits; the zygote just exits
        waited = 0.0
        while waited < _END_RUNS_S:
            try:
                os.killpg(self._pid, 0)  # anyone left in the group?
            except OSError:
                return
            # The zygote, killed, is this process's to reap; a worker it forked is reaped by init.
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self._pid, os.WNOHANG)
            time.sleep(0.01)
            waited += 0.01

    def _kill(self) -> None:
        with contextlib.suppress(OSError):
            os.killpg(self._pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.kill(self._pid, signal.SIGKILL)


def _died(run: PlannedRun, status: int | None) -> RunResult:
    """The result of a run whose worker process died before giving it."""
    if status is None:
        how = "ended"
    elif os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            how = f"was killed by signal {number} ({signal.Signals(number).name})"
        except ValueError:  # a number Python has no name for
            how = f"was killed by signal {number}"
    else:
        how = f"exited with status {os.waitstatus_to_exitcode(status)} (os._exit in the agent?)"
    result = unfinished_result(run)
    result.error = f"the worker process making this run {how} before it gave the run's result"
    result.outcome = Outcome(status="error", reason=result.error)
    return result


def _overran(run: PlannedRun, deadline_s: float | None) -> RunResult:
    """The result of a run whose worker the harness killed, its agent stuck past the deadline."""
    result = unfinished_result(run)
    reason = (f"the harness killed the worker process making this run: its agent was still running {BACKSTOP_S:g}s "
              f"past its deadline ({deadline_s:g}s) and the grace after it, beyond the reach of the run's own stop")
    result.outcome = Outcome(status="limit", limit="wall_time", reason=reason)
    result.error = reason
    return result


def _zygote(control: socket.socket, runs: Sequence[PlannedRun], make: Make) -> None:
    """Fork a worker for each socket the harness sends; report each worker's end as (pid, wait status).
    Ends when the harness closes its end of `control`, once its workers (told the same way) have ended."""
    os.setpgid(0, 0)  # a group of its own: a Ctrl-C at the terminal is the harness's to handle
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    while True:
        readable, _, _ = select.select([control], [], [], 0.05)
        if readable:
            message, fds, _, _ = socket.recv_fds(control, 16, 4)
            if not message:
                with contextlib.suppress(ChildProcessError):
                    while True:
                        os.wait()
                return
            for fd in fds:
                pid = os.fork()
                if pid == 0:
                    try:
                        control.close()
                        _worker(socket.socket(fileno=fd), runs, make)
                    finally:
                        os._exit(0)
                os.close(fd)
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            try:
                control.sendall(_DEATH.pack(pid, status))
            except OSError:
                return


def _worker(channel: socket.socket, runs: Sequence[PlannedRun], make: Make) -> None:
    """Make the runs the harness sends, one at a time, until it closes the channel."""
    _execute.in_worker_process()
    # Sent by the harness when the batch is interrupted (`WorkerPool._end_runs`): the run's command ends too.
    signal.signal(signal.SIGTERM, _end_at_once)
    _send(channel, pickle.dumps(os.getpid()))
    while True:
        try:
            index = pickle.loads(_receive(channel))
        except (OSError, EOFError):
            return
        line, result = make(runs[index])
        _flush()  # what the agent printed, before this process may end
        # An agent the deadline left running would go on spending this process's CPU: a fresh worker instead.
        retire = _deadline.agents_left_running()
        _send(channel, pickle.dumps((line, result, retire), protocol=pickle.HIGHEST_PROTOCOL))
        if retire:
            return


def _end_at_once(number: int, frame: object) -> None:
    kill_every_run()
    os._exit(128 + number)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()


def _send(channel: socket.socket, payload: bytes) -> None:
    channel.sendall(_FRAME.pack(len(payload)) + payload)


def _ready(channel: socket.socket) -> list[bytes]:
    """Every whole message the channel holds now, without waiting for more: each read only once whole,
    so that what is left (a message still being written, the end of the channel, its error) is
    `_receive`'s. A worker that died with runs unread in its channel leaves ours an ECONNRESET after
    the messages it sent: those are read all the same."""
    messages: list[bytes] = []
    timeout = channel.gettimeout()
    channel.settimeout(0.0)  # with a timeout, even MSG_DONTWAIT would wait that long for a message
    try:
        while True:
            try:
                head = channel.recv(_FRAME.size, socket.MSG_PEEK)
                if len(head) < _FRAME.size:
                    return messages
                whole = _FRAME.size + _FRAME.unpack(head)[0]
                if len(channel.recv(whole, socket.MSG_PEEK)) < whole:
                    return messages
            except OSError:  # nothing more yet (BlockingIOError), or the channel's end, which `_receive` meets
                return messages
            messages.append(_exactly(channel, whole)[_FRAME.size:])
    finally:
        channel.settimeout(timeout)


def _receive(channel: socket.socket) -> bytes:
    (size,) = _FRAME.unpack(_exactly(channel, _FRAME.size))
    return _exactly(channel, size)


def _exactly(channel: socket.socket, size: int) -> bytes:
    """`size` bytes from the channel; EOFError when it ends first (the other side died)."""
    chunks = bytearray()
    while len(chunks) < size:
        chunk = channel.recv(min(size - len(chunks), 1 << 20))
        if not chunk:
            raise EOFError("the channel closed")
        chunks += chunk
    return bytes(chunks)
