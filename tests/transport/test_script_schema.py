"""The script file's JSON schema: generated from the strict models, shipped, and given by `harness schema script`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import harness
from harness.cli import main
from harness.transport.scripted import load_script
from harness.transport.scripted._format import SCHEMA_PATH, schema_text, script_schema

ROOT = Path(__file__).resolve().parents[2]
OPEN_OBJECTS = {"OtherBlock", "Usage"}
"""Mappings that pass unknown keys through: block types the format does not know, and usage fields."""


def test_the_shipped_schema_file_equals_the_generated_one() -> None:
    assert SCHEMA_PATH.read_text(encoding="utf-8") == schema_text(), (
        "harness/transport/scripted/script.schema.json is stale; regenerate it with "
        "`python -m harness.transport.scripted`"
    )


def test_every_mapping_but_the_open_ones_forbids_unknown_keys() -> None:
    definitions = script_schema()["$defs"]
    assert OPEN_OBJECTS <= set(definitions)
    for name, definition in definitions.items():
        assert (definition.get("additionalProperties") is not False) == (name in OPEN_OBJECTS), name


def test_a_block_of_a_known_type_matches_one_member_of_the_union() -> None:
    # `oneOf` fails in an editor when two members match: the pass-through block excludes the known types.
    other = script_schema()["$defs"]["OtherBlock"]["properties"]["type"]
    assert set(other["not"]["enum"]) >= {"text", "tool_use", "thinking"}


def test_harness_schema_script_prints_writes_and_locates_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "script"]) == 0
    assert json.loads(capsys.readouterr().out) == script_schema()
    target = tmp_path / ".harness" / "script.schema.json"
    assert main(["schema", "script", "-o", str(target)]) == 0
    assert json.loads(target.read_text(encoding="utf-8")) == script_schema()
    assert main(["schema", "script", "--path"]) == 0
    installed = Path(capsys.readouterr().out.strip())
    assert installed == SCHEMA_PATH and installed.is_relative_to(Path(harness.__file__).parent)


def test_the_shipped_scripts_point_editors_at_the_schema_and_load() -> None:
    scripts = sorted((ROOT / "tests" / "node" / "scripts").glob("*.yaml"))
    assert scripts
    first_line = "# yaml-language-server: $schema=../../../harness/transport/scripted/script.schema.json"
    for path in scripts:
        assert path.read_text(encoding="utf-8").splitlines()[0] == first_line, path.name
        assert len(load_script(path)) >= 1
