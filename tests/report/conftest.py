"""Fixtures of the report tests: the matrix of stored results from `report_data`."""

from __future__ import annotations

import pytest
from report_data import matrix

from harness.results import RunResult


@pytest.fixture
def results() -> list[RunResult]:
    return matrix()
