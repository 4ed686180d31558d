"""Fixtures every test folder may use."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _secret_names_kept_to_their_test() -> Iterator[None]:
    """A test calling `main(["...", "--secret", NAME])` names NAME a secret for the rest of the process, as
    a command does for its own process: here for that test only, so a later test's stderr does not hold a
    warning that its variable is not set. Looked up, not imported: tests count what the harness imports."""
    module = sys.modules.get("harness._secrets")
    before = list(module._listed) if module is not None else []
    yield
    module = sys.modules.get("harness._secrets")
    if module is not None:
        module._listed[:] = before


def _ends(pid: int) -> bool:
    """Whether the process ends within 5 s: reaped, or a zombie nobody waits for (its parent, the
    command killed with it, is gone too)."""
    for _ in range(50):
        try:
            os.kill(pid, 0)
            if Path(f"/proc/{pid}/stat").read_text().split(") ")[-1].startswith("Z"):
                return True
        except (ProcessLookupError, FileNotFoundError):
            return True
        time.sleep(0.1)
    return False


@pytest.fixture
def process_ends() -> Callable[[int], bool]:
    """`process_ends(pid)`: whether a process an agent command left (a child, a grandchild) ends
    within 5 s, for the tests that the harness kills a command with its whole process group."""
    return _ends


def _lines_written(process: subprocess.Popen[str], path: Path, lines: int) -> None:
    """Wait until the running command has written `lines` lines to `path`; the deadline only guards
    against a hang (nothing is timed), and a command that ends first fails the test with its output."""
    deadline = time.monotonic() + 120
    while not (path.exists() and path.read_text(encoding="utf-8").count("\n") >= lines):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "no result line appeared"
        time.sleep(0.05)


def _interrupted_after(process: subprocess.Popen[str], path: Path, lines: int,
                       sent: signal.Signals = signal.SIGINT) -> tuple[str, str]:
    """Send `sent` to the running command once it has written `lines` lines to `path`; its stdout and
    stderr once it has ended (killed if it has not within 120 s, a hang guard)."""
    try:
        _lines_written(process, path, lines)
        process.send_signal(sent)
        return process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()


@pytest.fixture
def interrupted_after() -> Callable[..., tuple[str, str]]:
    """`interrupted_after(process, results, n, sent=SIGINT)`: interrupt a running `harness run` once it
    has written n result lines; its stdout and stderr."""
    return _interrupted_after
