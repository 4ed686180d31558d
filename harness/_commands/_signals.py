"""SIGTERM stops a long-running command the way Ctrl-C does: with what finished kept and reported.

A CI job stops a background command with `kill`, and a background job of a shell script ignores
SIGINT, so SIGTERM is the only signal such a job can send that the command will hear.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """Inside the block SIGTERM raises KeyboardInterrupt; the previous handler is put back after.

    Python lets only the main thread install a handler; elsewhere (a test calling the command) the
    block runs with SIGTERM left as it was.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt
