"""What the rules' docs share: the Anthropic pages they rest on, and the tools their examples declare.

Kept apart from the rules so that each `@rule` registration reads as its documentation: a few named
tools and links instead of the same JSON schema repeated in every example.
"""

from __future__ import annotations

from typing import Any

STOP_REASONS_DOC = "https://platform.claude.com/docs/en/build-with-claude/handling-stop-reasons"
TOOL_CALLS_DOC = "https://platform.claude.com/docs/en/agents-and-tools/tool-use/handle-tool-calls"
THINKING_DOC = "https://platform.claude.com/docs/en/build-with-claude/extended-thinking"
CONTEXT_EDITING_DOC = "https://platform.claude.com/docs/en/build-with-claude/context-editing"
TASK_BUDGETS_DOC = "https://platform.claude.com/docs/en/build-with-claude/task-budgets"
ERRORS_DOC = "https://platform.claude.com/docs/en/api/errors"

MODEL = "claude-sonnet-4-5"


def _tool(name: str, **properties: str) -> dict[str, Any]:
    return {"name": name, "input_schema": {"type": "object",
                                           "properties": {k: {"type": v} for k, v in properties.items()}}}


TOOLS = [_tool("get_weather", city="string")]
PAY_TOOLS = [_tool("charge_card", amount="number"), _tool("refund", amount="number")]
REFUND_TOOLS = [_tool("get_customer", customer_id="string"), _tool("process_refund", customer_id="string"),
                _tool("request_approval", action="string"), _tool("delete_account", customer_id="string")]
