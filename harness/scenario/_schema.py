"""The JSON schema of scenario files, generated from the models so editors can autocomplete them.

`python -m harness.scenario` rewrites the shipped `scenario.schema.json`; a test fails when
the shipped file and the models disagree, so the schema cannot drift.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from ._model import Scenario

SCHEMA_PATH = Path(__file__).with_name("scenario.schema.json")


def scenario_schema() -> dict[str, Any]:
    """The JSON schema (draft 2020-12) of a scenario file."""
    schema = Scenario.model_json_schema()
    return {**schema, "$schema": "https://json-schema.org/draft/2020-12/schema", "title": "harness scenario"}


def schema_text() -> str:
    return json.dumps(scenario_schema(), indent=2, ensure_ascii=False, sort_keys=True) + "\n"


def main() -> int:
    SCHEMA_PATH.write_text(schema_text(), encoding="utf-8")
    print(f"wrote {SCHEMA_PATH}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
