"""Fixtures of the rule tests: a fresh recording (see `recordings`) and its first conversation."""

from __future__ import annotations

import pytest
from recordings import Conversation, Recording


@pytest.fixture
def recording() -> Recording:
    return Recording()


@pytest.fixture
def conv(recording: Recording) -> Conversation:
    return recording.conversation()
