"""Every example under examples/ runs as its README promises: `harness run examples/<name>` passes.

Each framework runs in its own virtualenv with its pinned packages (venvs.py), the TypeScript SDK in
its own npm folder; a package the registry cannot serve skips that example with pip's or npm's words.
The runs are real: the framework's own client speaks HTTP to the run's endpoint, the scripted model
answers, and the tool events must pair with the tool_use ids the model sent.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from venvs import CACHE, EXAMPLES, EXAMPLES_DIR, Venv, _locked, example_requirements

from harness.cli import main
from harness.results import RunResult, read_results

NPM_TIMEOUT_S = 600.0


def _check(results: list[RunResult], scenarios: int) -> None:
    assert len(results) == scenarios
    for result in results:
        assert result.status == "passed", (result.scenario, result.error, result.outcome, result.findings)
        assert result.trace is not None and result.findings == []
        asked = [b["id"] for c in result.trace.calls
                 for b in (c.response or {}).get("content", []) if b.get("type") == "tool_use"]
        assert [e.tool_use_id for e in result.trace.tool_executions] == asked, result.scenario


def _scenarios(example: str) -> list[Path]:
    return sorted((EXAMPLES_DIR / example).glob("*.yaml"))


def test_every_example_has_a_scenario_and_is_documented() -> None:
    frameworks = (EXAMPLES_DIR.parent / "docs" / "frameworks.md").read_text(encoding="utf-8")
    for example in EXAMPLES:
        assert _scenarios(example), f"examples/{example} has no scenario"
        assert f"examples/{example}/" in frameworks, f"docs/frameworks.md does not explain examples/{example}"


def test_no_example_touches_a_private_attribute() -> None:
    for path in EXAMPLES_DIR.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
                pytest.fail(f"{path}:{node.lineno} uses the private attribute {node.attr}")


@pytest.mark.parametrize("example", [e for e in EXAMPLES if not example_requirements(e) and e != "typescript"])
def test_an_sdk_example_passes(tmp_path: Path, example: str) -> None:
    results = tmp_path / "results.jsonl"
    main(["run", str(EXAMPLES_DIR / example), "--results", str(results), "--no-report"])
    _check(read_results(results), len(_scenarios(example)))


@pytest.mark.parametrize("example", [e for e in EXAMPLES if example_requirements(e)])
def test_a_framework_example_passes_in_its_own_venv(venvs: Callable[[str], Venv], tmp_path: Path, example: str) -> None:
    env = venvs(example)
    results = tmp_path / "results.jsonl"
    run = env.run("-m", "harness", "run", EXAMPLES_DIR / example, "--results", results, "--no-report",
                  cwd=tmp_path, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    _check(read_results(results), len(_scenarios(example)))


def _npm_install(folder: Path) -> None:
    """`npm ci` of the example's pinned packages, once: node_modules is kept while the lockfile is unchanged."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are not on PATH: the TypeScript example cannot run here")
    lock = (folder / "package-lock.json").read_bytes()
    stamp = folder / "node_modules" / ".harness-lock"
    with _locked(CACHE / "typescript.lock"):
        if stamp.is_file() and stamp.read_bytes() == lock:
            return
        npm = subprocess.run(["npm", "ci", "--prefix", str(folder), "--no-audit", "--no-fund", "--loglevel=error"],
                             capture_output=True, text=True, timeout=NPM_TIMEOUT_S)
        if npm.returncode != 0:
            said = npm.stderr[-600:]
            if any(word in said for word in ("ENOTFOUND", "ETARGET", "E404", "EAI_AGAIN", "ECONNREFUSED", "ETIMEDOUT")):
                pytest.skip(f"the npm registry cannot serve the TypeScript example's packages: {said}")
            pytest.fail(f"npm ci --prefix {folder} failed:\n{said}")
        stamp.write_bytes(lock)


def test_the_typescript_sdk_example_passes_as_a_command(tmp_path: Path) -> None:
    _npm_install(EXAMPLES_DIR / "typescript")
    results = tmp_path / "results.jsonl"
    main(["run", str(EXAMPLES_DIR / "typescript"), "--results", str(results), "--no-report"])
    _check(read_results(results), 1)
