"""The shipped JSON schema is the one the models generate, and it describes the shipped scenarios."""

from __future__ import annotations

import json
from pathlib import Path

from harness.scenario import SCHEMA_PATH, scenario_schema
from harness.scenario._schema import schema_text

ROOT = Path(__file__).resolve().parents[2]


def test_the_shipped_schema_file_equals_the_generated_one() -> None:
    assert SCHEMA_PATH.read_text(encoding="utf-8") == schema_text(), (
        "harness/scenario/scenario.schema.json is stale; regenerate it with `python -m harness.scenario`"
    )


def test_the_schema_forbids_unknown_keys_everywhere() -> None:
    schema = scenario_schema()
    assert schema["additionalProperties"] is False
    for name, definition in schema["$defs"].items():
        if definition.get("type") == "object":
            assert definition.get("additionalProperties") is False, name


def test_every_shipped_scenario_points_editors_at_the_schema() -> None:
    first_line = "# yaml-language-server: $schema=../harness/scenario/scenario.schema.json"
    scenarios = sorted((ROOT / "scenarios").glob("*.yaml"))
    assert scenarios, "no shipped scenarios found"
    for path in scenarios:
        assert path.read_text(encoding="utf-8").splitlines()[0] == first_line, path.name
    assert json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))["title"] == "harness scenario"
