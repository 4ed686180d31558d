"""Agents are driven through the real SDK; the only double is the scripted model behind its transport."""

from __future__ import annotations

import pytest
from support_desk import Desk


@pytest.fixture
def desk() -> Desk:
    """A fresh support backend whose refunds and escalations a test can inspect."""
    return Desk()
