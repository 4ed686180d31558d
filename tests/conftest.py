"""Fixtures every test folder may use."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest


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
