"""The scenario's tools and simulated user over HTTP, for agents in other languages.

`POST {base_url}/harness/user` asks the simulated user for its next turn (`task.next_turn`): the body
is `{"answer": <the agent's final answer>}`, the reply `{"turn": <the next user turn, or null when
the conversation is over>}`. In a scenario with no simulated user it is a 404 saying how to declare
one: a `null` there would read as a user who is done, hiding a scenario that forgot its `user:`.

`POST {base_url}/harness/tools/{name}` runs one of the scenario's tools.

The body is the tool's input (JSON); the answer is `{"content": ..., "is_error": bool}`, the two
fields of the tool_result block to send back. The tool runs through `task.run_tool`, so the call
is one of the run's tool events (the W rules and T005/T008 read them) exactly as a Python agent's.
The tool_use id is found from the answers of the run, or taken from the `x-harness-tool-use-id`
header when the agent sends it; an id no answer of the run issued, one of another tool's block, or one
already run is a 409 (`conflict_error`, as the API types its 409s) and runs nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .._console import loggable_target
from ..errors import HarnessError, ToolUseNotFound
from ._task import Task

TOOLS_PREFIX = "/harness/tools/"
USER_PATH = "/harness/user"
TOOL_USE_ID_HEADER = "x-harness-tool-use-id"
NO_SIMULATED_USER = (
    "this scenario declares no simulated user, so there is no next user turn to ask for: the agent's last "
    'final answer is the run\'s. To have the agent converse, declare one in the scenario: `user: {persona: "..."}` '
    '(a model plays that person) or `user: {script: ["...", "..."]}` (fixed replies, in order)'
)


def tools_handler(task: Task) -> Any:
    """The endpoint's local handler for TOOLS_PREFIX: (method, path, headers, body) -> (status, JSON)."""

    def handle(method: str, path: str, headers: Mapping[str, str], body: bytes) -> tuple[int, Any]:
        route = path.partition("?")[0]
        name = route[len(TOOLS_PREFIX):] if route.startswith(TOOLS_PREFIX) else ""
        if method != "POST" or not name or "/" in name:
            return 404, _error("not_found_error",
                               f"POST {TOOLS_PREFIX}{{name}} runs a tool of the scenario; got "
                               f"{method} {loggable_target(path)}")
        if name not in task.handlers:
            known = ", ".join(sorted(task.handlers)) or "none"
            return 404, _error("not_found_error", f"no tool {name} in this scenario (its tools: {known})")
        try:
            tool_input = json.loads(body or b"{}")
        except ValueError as exc:
            return 400, _error("invalid_request_error", f"the body must be the tool's input as JSON: {exc}")
        if not isinstance(tool_input, dict):
            return 400, _error("invalid_request_error",
                               f"the tool's input must be a JSON object, got {_JSON_KINDS[type(tool_input)]}")
        tool_use_id = {k.lower(): v for k, v in headers.items()}.get(TOOL_USE_ID_HEADER)
        if tool_use_id is not None:
            problem = task._claim_asked(name, tool_use_id)
            if problem is not None:
                # Running it would record a tool event no tool_result can pair with (T001, the W rules).
                return 409, _error("conflict_error",
                                   f"{TOOL_USE_ID_HEADER} {tool_use_id} {problem}. Send the id of a tool_use block "
                                   f"of {name} from the answer you are answering, or leave the header out and "
                                   "the harness matches the call by name and input")
        try:
            result = task.run_tool(name, tool_input, tool_use_id)
        except ToolUseNotFound as exc:
            # Said in the words of the request the agent sent (its input as JSON), not of run_tool's Python.
            return 409, _error("conflict_error",
                               f"no answer of this run asks for {name} with input {_json(tool_input)} and is still "
                               f"unanswered (open tool_use blocks: {', '.join(exc.open_uses) or 'none'}). Call a "
                               "tool once the answer asking for it has been read to its end, or send its tool_use "
                               f"id in the {TOOL_USE_ID_HEADER} header")
        return 200, {"content": result.content, "is_error": result.is_error}

    return handle


def user_handler(task: Task, no_user: str = NO_SIMULATED_USER) -> Any:
    """The endpoint's local handler for USER_PATH: (method, path, headers, body) -> (status, JSON);
    `no_user` is the 404's message when the task has no simulated user."""

    def handle(method: str, path: str, headers: Mapping[str, str], body: bytes) -> tuple[int, Any]:
        route = path.split("?", 1)[0]
        if method != "POST" or route.rstrip("/") != USER_PATH:
            return 404, _error("not_found_error",
                               f"POST {USER_PATH} asks the simulated user for its next turn; got {method} {route}")
        if task.simulated_user is None:
            return 404, _error("not_found_error", no_user)
        try:
            request = json.loads(body or b"{}")
        except ValueError as exc:
            return 400, _error("invalid_request_error", f"the body must be JSON, {{\"answer\": \"...\"}}: {exc}")
        answer = request.get("answer") if isinstance(request, dict) else None
        if not isinstance(answer, str):
            return 400, _error("invalid_request_error", 'the body must be {"answer": "<the agent\'s final answer>"}')
        try:
            turn = task.next_turn(answer)
        except HarnessError as exc:
            # The harness's own failure (a malformed reply, a replay miss): the run reports it.
            return 502, _error("api_error", f"harness: the simulated user failed: {exc}")
        return 200, {"turn": turn}

    return handle


_JSON_KINDS = {list: "an array", str: "a string", int: "a number", float: "a number", bool: "a boolean",
               type(None): "null"}


def _json(value: Any, limit: int = 200) -> str:
    """A value as the agent sent it (JSON), cut to a readable length."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + "..."


def _error(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}
