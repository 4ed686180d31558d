"""Scenario files: strict models loaded from YAML with line numbers, tool fixtures, and the JSON schema."""

from ._cases import Case
from ._fixtures import build_handlers, contains, import_callable
from ._load import (
    ScenarioFile,
    case_files,
    check_script_tools,
    find_scenarios,
    is_cassette,
    load_scenario,
    parse_scenario,
)
from ._model import AgentCommand, Expect, Fixture, Matrix, Scenario, Tool
from ._schema import SCHEMA_PATH, scenario_schema

__all__ = [
    "SCHEMA_PATH",
    "AgentCommand",
    "Case",
    "Expect",
    "Fixture",
    "Matrix",
    "Scenario",
    "ScenarioFile",
    "Tool",
    "build_handlers",
    "case_files",
    "check_script_tools",
    "contains",
    "find_scenarios",
    "is_cassette",
    "import_callable",
    "load_scenario",
    "parse_scenario",
    "scenario_schema",
]
