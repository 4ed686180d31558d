"""Fixtures of the run tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from run_support import Project


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return Project(tmp_path)
