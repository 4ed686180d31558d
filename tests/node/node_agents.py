"""Run a transcribed TypeScript agent on the official SDK against `harness serve`, recorded by Polly.JS.

Shared by the tests of this folder: `missing_install()` says why they must skip, `run_agent()`
serves a script, runs one agent of tests/node/*.mjs under tests/node/record.mjs and returns what
each side said and the HAR, and `check()` runs `harness check --format json` on it in-process.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main

NODE_DIR = Path(__file__).resolve().parent
SCRIPTS = NODE_DIR / "scripts"
QUESTION = "What limits does an agent loop need?"
# `python -m harness` imports the whole package before printing its URL; on a loaded CI machine
# that has taken several seconds, so the wait is generous rather than tuned to a fast laptop.
SERVE_START_TIMEOUT_S = 60.0
NODE_TIMEOUT_S = 120.0


def missing_install() -> str | None:
    """Why the node tests cannot run here, or None when node, npm and the pinned packages are present."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        return "node and npm are not on PATH: the TypeScript SDK cannot run here"
    declared = json.loads((NODE_DIR / "package.json").read_text(encoding="utf-8"))["dependencies"]
    absent = [name for name in declared if not (NODE_DIR / "node_modules" / name / "package.json").is_file()]
    if absent:
        return (f"tests/node packages not installed ({', '.join(absent)}): `npm ci --prefix tests/node` "
                "did not run or failed (scripts/test runs it when node and npm exist)")
    return None


requires_node = pytest.mark.skipif(missing_install() is not None, reason=missing_install() or "")


@contextmanager
def serving(script: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """`harness serve SCRIPT --exit-when-done` on a free port, yielding the process and its base URL."""
    process = subprocess.Popen(
        [sys.executable, "-m", "harness", "serve", str(script), "--port", "0", "--exit-when-done"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        # readline blocks until the URL line or EOF (a server that died); the timeout guards a hang.
        first_line = _readline(process, SERVE_START_TIMEOUT_S)
        assert first_line.startswith("export ANTHROPIC_BASE_URL=http://127.0.0.1:"), (
            first_line + (process.stderr.read() if process.stderr and process.poll() is not None else "")
        )
        yield process, first_line.strip().split("=", 1)[1]
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=10)


def _readline(process: subprocess.Popen[str], timeout: float) -> str:
    assert process.stdout is not None
    stdout = process.stdout
    line: list[str] = []
    reader = threading.Thread(target=lambda: line.append(stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    return line[0] if line else f"(no URL from harness serve within {timeout:.0f}s)"


@dataclass
class NodeRun:
    agent: subprocess.CompletedProcess[str]
    """node's exit status, stdout (the agent's answer) and stderr (its error)."""
    server_err: str
    """`harness serve`'s log: one line per request, then what was left unplayed."""
    server_status: int
    """0 when every step was played and nothing asked after the script ran out."""
    har: Path


def run_agent(script: str | Path, tmp_path: Path, *, agent: str = "agent.mjs#agent",
              question: str = QUESTION) -> NodeRun:
    """Serve `script` (YAML text, or a file), run `agent` (MODULE#EXPORT of tests/node) on `question`."""
    if isinstance(script, str):
        path = tmp_path / "script.yaml"
        path.write_text(script, encoding="utf-8")
        script = path
    recordings = tmp_path / "recordings"
    with serving(script) as (server, base_url):
        # Only the variables the agent's client reads are set, so no key from the machine's
        # environment reaches the recording or the server.
        env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
        env.update(ANTHROPIC_BASE_URL=base_url, ANTHROPIC_API_KEY="sk-ant-test-node")
        completed = subprocess.run(
            ["node", str(NODE_DIR / "record.mjs"), question, str(recordings), agent],
            cwd=NODE_DIR, env=env, capture_output=True, text=True, timeout=NODE_TIMEOUT_S,
        )
        _, server_err = server.communicate(timeout=30)
    hars = sorted(recordings.rglob("*.har"))
    assert len(hars) == 1, f"expected one HAR from Polly, found {hars}; node said: {completed.stderr}"
    return NodeRun(completed, server_err, server.returncode, hars[0])


def check(har: Path, capsys: pytest.CaptureFixture[str], *options: str) -> tuple[int, dict[str, Any]]:
    """`harness check --format json OPTIONS HAR`: its exit status and the report of the one file."""
    capsys.readouterr()
    status = main(["check", "--format", "json", *options, str(har)])
    report = json.loads(capsys.readouterr().out)["files"][0]
    assert report["error"] is None, report["error"]
    return status, report


def errors(report: dict[str, Any]) -> list[str]:
    return [f"{f['code']}: {f['message']}" for f in report["findings"] if f["severity"] == "error"]
