"""Tool fixtures -> tool handlers: how a scenario's tools answer the agent.

Handlers are built fresh for every run, so a `sequence` starts over in each matrix cell and repeat.
Errors are raised as `ToolError`, which the task returns to the model with `is_error: true`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .._imports import import_user_module, raised_at_import
from ..agents._task import ToolError, ToolHandler
from ._load import ScenarioFile
from ._model import Answer, Fixture, MatchAnswer


def contains(actual: Any, expected: Any) -> bool:
    """Partial match: every key of an expected mapping is in the actual one with a matching value."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(k in actual and contains(actual[k], v) for k, v in expected.items())
    return bool(actual == expected)


def import_callable(spec: str, *, near: Path | None = None) -> Callable[..., Any]:
    """Import 'module:function'. The current directory and `near` (the scenario's folder) are
    searched too, so a project's own helpers import without being installed."""
    module_name, _, attribute = spec.partition(":")
    target: Any = import_user_module(module_name, near=near)
    for part in attribute.split("."):
        target = getattr(target, part)
    if not callable(target):
        raise TypeError(f"{spec} is a {type(target).__name__}, not a function")
    function: Callable[..., Any] = target
    return function


def build_handlers(source: ScenarioFile) -> dict[str, ToolHandler]:
    """One handler per tool of the scenario. Raises ScenarioError, at the fixture's own line, when a
    `python` fixture cannot be imported, whatever its module raised."""
    handlers: dict[str, ToolHandler] = {}
    for index, tool in enumerate(source.scenario.tools):
        if tool.fixture is None:
            handlers[tool.name] = _no_fixture(tool.name, source.path)
            continue
        python = None
        if tool.fixture.python is not None:
            try:
                python = import_callable(tool.fixture.python, near=source.path.parent)
            except KeyboardInterrupt:
                raise
            except BaseException as exc:  # noqa: B036 - a module's import may raise anything, sys.exit included
                raise source.error(("tools", index, "fixture", "python"),
                                   f"cannot import {tool.fixture.python}: {raised_at_import(exc)}") from exc
        handlers[tool.name] = _FixtureHandler(tool.name, tool.fixture, python)
    return handlers


def _no_fixture(name: str, path: Path) -> ToolHandler:
    def handler(tool_input: dict[str, Any]) -> Any:
        raise ToolError(f"tool {name!r} has no fixture in {path}; add tools[].fixture to say how it answers")

    return handler


class _FixtureHandler:
    """A tool handler answering from a fixture; safe to call from several threads."""

    def __init__(self, name: str, fixture: Fixture, python: Callable[..., Any] | None) -> None:
        self.name = name
        self.fixture = fixture
        self.python = python
        self.calls = 0
        self._lock = threading.Lock()

    def __call__(self, tool_input: dict[str, Any]) -> Any:
        with self._lock:
            call = self.calls
            self.calls += 1
        if self.fixture.delay_s:
            time.sleep(self.fixture.delay_s)
        for entry in self.fixture.match or []:
            if contains(tool_input, entry.input):
                return _answer(entry)
        fixture = self.fixture
        if fixture.sequence is not None:
            return _answer(fixture.sequence[min(call, len(fixture.sequence) - 1)])
        if self.python is not None:
            return self.python(tool_input)
        if fixture.error is not None:
            raise ToolError(fixture.error)
        if "output" in fixture.model_fields_set:
            return fixture.output
        raise ToolError(
            f"no match entry of tool {self.name!r} fits input {tool_input!r}; "
            "add a match entry for it, or an output/error for every other input"
        )


def _answer(answer: Answer | MatchAnswer) -> Any:
    if answer.delay_s:
        time.sleep(answer.delay_s)
    if answer.error is not None:
        raise ToolError(answer.error)
    return answer.output
