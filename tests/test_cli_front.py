"""The `harness` front: `--help` and `--version` answer without importing any command, and each
command imports only what it runs. Budgets are counted in imported modules, never timed."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from harness.cli import COMMANDS, build_parser, main

# What `python -c "import yaml, json"` loads is the floor; argparse and its helpers sit on top.
EXTRA_MODULES_BUDGET = 40
HEAVY = ("anthropic", "pydantic", "deepdiff", "pandas", "numpy", "jinja2", "vcr", "httpx2", "httpx", "yaml")


def _modules_after(code: str) -> list[str]:
    """The modules a fresh interpreter holds after running `code` (which may exit)."""
    script = (
        "import contextlib, io, json, sys\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
        "    try:\n" + "".join(f"        {line}\n" for line in code.splitlines()) +
        "    except SystemExit:\n        pass\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return list(json.loads(result.stdout))


@pytest.mark.parametrize("argv", [["--help"], ["--version"], []])
def test_the_front_imports_no_command_and_no_heavy_package(argv: list[str]) -> None:
    floor = _modules_after("import yaml, json")
    loaded = _modules_after(f"from harness.cli import main; main({argv!r})")
    ours = [m for m in loaded if m == "harness" or m.startswith("harness.")]
    # The front itself and what guards every command's output (redaction, inert control characters).
    assert ours == ["harness", "harness._console", "harness._lazy", "harness._secrets", "harness._version",
                    "harness.cli", "harness.errors"]
    heavy = [m for m in loaded if m.split(".")[0] in HEAVY]
    assert heavy == [], f"harness {' '.join(argv)} imports {heavy}"
    extra = sorted(set(loaded) - set(floor))
    assert len(extra) <= EXTRA_MODULES_BUDGET, f"{len(extra)} modules beyond the floor: {extra}"


@pytest.mark.parametrize("command", ["run", "report", "diff", "merge", "check", "serve", "rules"])
def test_a_command_does_not_import_deepdiff_before_a_diff_is_shown(command: str) -> None:
    loaded = _modules_after(f"from harness.cli import build_parser; build_parser(only={command!r})")
    assert f"harness._commands.{command}" in loaded
    assert "deepdiff" not in loaded, f"building `harness {command}` imports deepdiff before any diff is shown"


@pytest.mark.parametrize("command", ["report", "diff", "merge", "check", "rules"])
def test_a_command_that_reads_files_does_not_import_the_sdk(command: str) -> None:
    loaded = _modules_after(f"from harness.cli import build_parser; build_parser(only={command!r})")
    assert "harness._commands.run" not in loaded and "anthropic" not in loaded


ROOT = Path(__file__).resolve().parents[1]
FRAMES = ("deepdiff", "pandas", "numpy")
"""What only a diff or a comparison table needs."""


def test_checking_recordings_imports_neither_the_sdk_nor_a_diff_or_frame_package() -> None:
    recordings = str(ROOT / "tests" / "corpus" / "recordings")
    loaded = _modules_after(f"from harness.cli import main; main(['check', {recordings!r}])")
    assert "harness.trace.formats._vcrpy" in loaded  # it did read the recordings
    # pydantic only validates options; without any, the defaults need no validating.
    heavy = sorted({m.split(".")[0] for m in loaded} & {*FRAMES, "anthropic", "httpx", "vcr", "jinja2", "pydantic"})
    assert heavy == [], f"harness check imports {heavy}"


def test_a_replay_run_imports_no_diff_or_frame_package(tmp_path: Path) -> None:
    scenario = str(ROOT / "scenarios" / "limit-steps.yaml")
    results = str(tmp_path / "results.jsonl")
    loaded = _modules_after(f"from harness.cli import main; "
                            f"main(['run', {scenario!r}, '--mode', 'replay', '--results', {results!r}, '--no-report'])")
    assert "anthropic" in loaded and Path(results).read_text(encoding="utf-8")  # the run ran, through the SDK
    heavy = sorted({m.split(".")[0] for m in loaded} & set(FRAMES))
    assert heavy == [], f"harness run imports {heavy} though no diff is shown"


def test_a_diff_of_unchanged_trajectories_does_not_import_deepdiff() -> None:
    code = (
        "from harness.results._diff import diff_results\n"
        "from harness.results import RunResult\n"
        "import sys\n"
        "run = RunResult(run_id='a', scenario='s', scenario_path='s.yaml', model='m', effort=None, repeat=0,\n"
        "                mode='replay', status='passed', outcome=None, started_at='2026-01-01T00:00:00Z',\n"
        "                duration_s=1.0, steps=0)\n"
        "assert not diff_results([run], [run]).regressed\n"
    )
    assert "deepdiff" not in _modules_after(code)


def test_each_command_is_listed_with_the_help_its_module_registers() -> None:
    full = build_parser()
    action = full._subparsers._group_actions[0]  # type: ignore[union-attr]
    registered = {choice.dest: choice.help for choice in action._choices_actions}
    assert registered == COMMANDS, "edit COMMANDS in harness/cli.py to match the command's own help="


def test_version_is_the_installed_distributions() -> None:
    result = subprocess.run([sys.executable, "-m", "harness", "--version"], capture_output=True, text=True, check=True)
    assert result.stdout == f"harness {version('agent-harness')}\n"


def test_ctrl_c_while_the_command_is_still_importing_says_interrupted_not_a_traceback(tmp_path: Path) -> None:
    # A real SIGINT, sent by the interpreter to itself the moment the command's module starts to import
    # (the seconds `harness run` spends importing the SDK and pydantic, when a user often hits Ctrl-C).
    script = (
        "import os, signal, sys\n"
        "signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal, whatever the parent ignores\n"
        "class CtrlC:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'harness._commands.run':\n"
        "            os.kill(os.getpid(), signal.SIGINT)\n"
        "        return None\n"
        "sys.meta_path.insert(0, CtrlC())\n"
        "from harness.cli import main\n"
        "raise SystemExit(main(sys.argv[1:]))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script, "run", "--no-report", "--results", str(tmp_path / "r.jsonl")],
        capture_output=True, text=True, cwd=tmp_path, check=False,
    )
    assert (result.returncode, result.stderr) == (130, "harness: interrupted\n")


@pytest.mark.parametrize(("trigger", "argv"), [
    ("harness.report._files", ["report", "{results}", "-o", "{tmp}/html"]),
    ("my_rules", ["check", "--plugin", "my_rules", "{tmp}"]),
])
def test_sigterm_mid_command_ends_it_as_ctrl_c_does(tmp_path: Path, trigger: str, argv: list[str]) -> None:
    # SIGTERM (a CI job's timeout, `kill`) was heard by `harness run` and `harness serve` alone: the other
    # commands died of it (exit 143, a report's worker process left reading), where the README says 130.
    # Sent by the interpreter to itself once the command is under way, as it imports what it needs.
    results = tmp_path / "results.jsonl"
    assert main(["run", str(ROOT / "scenarios" / "stop-end-turn.yaml"), "--results", str(results), "--no-report"]) == 0
    script = (
        "import os, signal, sys\n"
        "class Term:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        f"        if name == {trigger!r}:\n"
        "            os.kill(os.getpid(), signal.SIGTERM)\n"
        "        return None\n"
        "sys.meta_path.insert(0, Term())\n"
        "from harness.cli import main\n"
        "raise SystemExit(main(sys.argv[1:]))\n"
    )
    args = [arg.format(results=results, tmp=tmp_path) for arg in argv]
    result = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, cwd=tmp_path,
                            check=False)
    assert (result.returncode, result.stderr) == (130, "harness: interrupted\n")
