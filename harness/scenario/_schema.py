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
    schema["properties"]["score"]["items"] = _score_entry(schema.setdefault("$defs", {}))
    return {**schema, "$schema": "https://json-schema.org/draft/2020-12/schema", "title": "harness scenario"}


def _score_entry(defs: dict[str, Any]) -> dict[str, Any]:
    """A `score:` entry: a scorer's name, or a one-key mapping of a scorer to its options, for every
    scorer registered with the harness (its options' schema, plus `name` and `labels`), or a
    `module:function` of the project's own."""
    from ..scores import scorers
    from ..scores._registry import BUILTIN_MODULES

    common = {
        "name": {"type": "string", "description": "The score's name (default: the scorer's)."},
        "labels": {"type": "object", "additionalProperties": {"type": "number", "minimum": 0, "maximum": 1},
                   "description": "The value of each label the scorer may give."},
    }
    variants: list[dict[str, Any]] = [{"type": "string",
                                       "description": "A scorer without options, or 'module:function'."}]
    # The harness's own scorers only: a plugin registered in this process is not part of the shipped schema.
    shipped = {name: info for name, info in scorers().items() if info.function.__module__ in BUILTIN_MODULES}
    for name, info in sorted(shipped.items()):
        options: dict[str, Any] = {"type": "object", "properties": dict(common), "additionalProperties": False}
        if info.options is not None:
            own = info.options.model_json_schema(ref_template="#/$defs/{model}")
            defs.update(own.pop("$defs", {}))
            options = {**own, "properties": {**own.get("properties", {}), **common}}
        variants.append({"type": "object", "description": info.description, "additionalProperties": False,
                         "required": [name], "properties": {name: options}})
    variants.append({"type": "object",
                     "description": "A scorer of your own, 'module:function', with keyword arguments.",
                     "minProperties": 1, "maxProperties": 1,
                     "patternProperties": {r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$": {"type": ["object", "null"]}},
                     "additionalProperties": False})
    return {"anyOf": variants}


def schema_text() -> str:
    return json.dumps(scenario_schema(), indent=2, ensure_ascii=False, sort_keys=True) + "\n"


def main() -> int:
    SCHEMA_PATH.write_text(schema_text(), encoding="utf-8")
    print(f"wrote {SCHEMA_PATH}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
