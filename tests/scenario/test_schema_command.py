"""`harness schema scenario`: the schema an installed harness gives editors, without this repository."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import harness
from harness.cli import main
from harness.scenario import SCHEMA_PATH, scenario_schema


def test_it_prints_the_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "scenario"]) == 0
    assert json.loads(capsys.readouterr().out) == scenario_schema()


def test_it_writes_the_schema_where_the_project_keeps_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / ".harness" / "scenario.schema.json"
    assert main(["schema", "scenario", "-o", str(target)]) == 0
    assert json.loads(target.read_text(encoding="utf-8")) == scenario_schema()
    assert capsys.readouterr().err.strip() == f"wrote {target}"


def test_the_installed_copy_is_inside_the_package(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "scenario", "--path"]) == 0
    path = Path(capsys.readouterr().out.strip())
    assert path == SCHEMA_PATH and path.is_relative_to(Path(harness.__file__).parent)
    assert json.loads(path.read_text(encoding="utf-8")) == scenario_schema()


def test_an_unwritable_target_is_one_line_not_a_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert main(["schema", "scenario", "-o", str(blocker / "scenario.schema.json")]) == 2
    assert capsys.readouterr().err.startswith(f"harness: {blocker / 'scenario.schema.json'}: cannot be written (")


def test_an_unknown_kind_names_the_known_ones(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["schema", "scenarios"])
    assert exit_.value.code == 2
    assert "invalid choice: 'scenarios' (choose from 'scenario', 'script')" in capsys.readouterr().err
