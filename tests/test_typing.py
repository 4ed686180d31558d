"""The package type-checks: mypy --strict (configured in pyproject.toml) finds nothing in harness/."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_mypy_finds_nothing() -> None:
    pytest.importorskip("mypy", reason="mypy comes with the test extra: pip install -e '.[test]'")
    cache = ROOT / ".mypy_cache"
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(cache)], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Success: no issues found" in result.stdout
