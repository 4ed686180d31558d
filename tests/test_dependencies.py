"""Every package the harness imports is a declared dependency, not one that happens to arrive with another."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def imported_packages() -> dict[str, str]:
    """Top-level third-party module -> a file that imports it, over harness/."""
    found: dict[str, str] = {}
    for path in sorted((ROOT / "harness").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                if top != "harness" and top not in sys.stdlib_module_names:
                    found.setdefault(top, str(path.relative_to(ROOT)))
    return found


def test_every_imported_package_is_declared() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    # An extra the harness offers (not the test one) counts: its imports are guarded and say what to install.
    offered = [spec for extra, specs in project.get("optional-dependencies", {}).items() if extra != "test"
               for spec in specs]
    declared = {canonical(re.split(r"[<>=!~;\[ ]", spec, maxsplit=1)[0])
                for spec in [*project["dependencies"], *offered]}
    distributions = packages_distributions()
    missing = []
    for module, where in imported_packages().items():
        owners = {canonical(d) for d in distributions.get(module, [module])}
        if not owners & declared:
            missing.append(f"{module} (imported in {where}; from {', '.join(sorted(owners))})")
    assert missing == [], "declare in pyproject.toml [project] dependencies: " + "; ".join(missing)


# The first setuptools that reads `license = "<SPDX expression>"` (PEP 639): 68.0.0, 76.1.0 and 77.0.0
# refuse it ("`project.license` must be valid exactly by one definition") when pip builds without
# build isolation; 77.0.3 builds. With isolation pip fetches whatever `requires` allows.
SPDX_LICENSE_SETUPTOOLS = (77, 0, 3)


def test_the_build_requires_a_setuptools_that_can_read_this_pyproject() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert isinstance(pyproject["project"]["license"], str)  # an SPDX expression: what needs the floor below
    [floor] = [re.fullmatch(r"setuptools\s*>=\s*([\d.]+)", spec) for spec in pyproject["build-system"]["requires"]
               if canonical(re.split(r"[<>=!~;\[ ]", spec, maxsplit=1)[0]) == "setuptools"]
    assert floor is not None, "pin setuptools with a floor: >=X.Y.Z"
    assert tuple(int(part) for part in floor.group(1).split(".")) >= SPDX_LICENSE_SETUPTOOLS, (
        f"a string project.license needs setuptools>={'.'.join(map(str, SPDX_LICENSE_SETUPTOOLS))}"
    )
