"""One convention for what tests share (CONTRIBUTING.md, "A test"): fixtures in conftest.py, shared
code in helper modules imported by bare name, test folders that are not packages."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parent
# Other projects' files kept for the tests to read, not tests of ours.
FOREIGN = ("node_modules", "recordings")


def _modules() -> list[Path]:
    return sorted(p for p in TESTS.rglob("*.py") if not any(part in FOREIGN for part in p.relative_to(TESTS).parts))


def test_no_test_folder_is_a_package() -> None:
    packages = [str(p.relative_to(TESTS)) for p in _modules() if p.name == "__init__.py"]
    assert packages == [], "test folders are not packages; import shared code by its module's bare name"


def test_every_module_name_under_tests_is_unique() -> None:
    # With each folder on sys.path, two helpers (or two test modules) of one name would shadow each other.
    names = Counter(p.name for p in _modules() if p.name != "conftest.py")
    assert [name for name, count in names.items() if count > 1] == []


def test_nothing_imports_from_a_conftest() -> None:
    importers = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else (
                [alias.name for alias in node.names] if isinstance(node, ast.Import) else [])
            if any(name == "conftest" or name.endswith(".conftest") or (
                    isinstance(node, ast.ImportFrom) and node.level and name == "conftest") for name in names):
                importers.append(str(path.relative_to(TESTS)))
    assert importers == [], "move what tests import out of conftest.py into a helper module beside them"
