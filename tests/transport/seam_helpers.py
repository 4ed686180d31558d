"""Helpers of the transport tests: a small tool-using conversation driven by the real SDK.

The far end is the project's scripted model or, for what it cannot do, an httpx2 MockTransport;
everything between the SDK and that edge is the real seam under test.
"""

from __future__ import annotations

from typing import Any

import anthropic

MODEL = "claude-opus-4-8"
FAKE_KEY = "sk-ant-api03-TESTKEY-0123456789abcdefghijklmnopqrstuvwxyz-AAAA"

TOOLS: list[dict[str, Any]] = [
    {
        "name": "get_customer",
        "description": "Look a customer up by id.",
        "input_schema": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
    }
]

QUESTION: list[dict[str, Any]] = [{"role": "user", "content": "Are C1 and C2 active?"}]
"""The opening turn of `converse`."""

THREE_CALL_SCRIPT: list[dict[str, Any]] = [
    {"tool_use": {"name": "get_customer", "input": {"id": "C1"}}},
    {"tool_use": {"name": "get_customer", "input": {"id": "C2"}}},
    {"text": "Both customers are active."},
]


def converse(client: anthropic.Anthropic, *, tool_result: str = "ok", calls: int = 3) -> list[dict[str, Any]]:
    """A tool loop of `calls` model calls; the last one uses the SDK's stream helper.

    Returns each response as JSON data, so two runs can be compared for equality.
    """
    messages: list[dict[str, Any]] = list(QUESTION)
    answers: list[dict[str, Any]] = []
    for n in range(calls):
        kwargs: dict[str, Any] = dict(model=MODEL, max_tokens=256, messages=messages, tools=TOOLS)
        if n == calls - 1:
            with client.messages.stream(**kwargs) as stream:
                response = stream.get_final_message()
        else:
            response = client.messages.create(**kwargs)
        answers.append(response.model_dump(mode="json", exclude_none=True))
        messages = _next_history(messages, answers[-1], tool_result)
    return answers


def _next_history(messages: list[dict[str, Any]], answer: dict[str, Any], tool_result: str) -> list[dict[str, Any]]:
    """The history after `answer`: the response as it came, then one tool_result per tool_use."""
    history = [*messages, {"role": "assistant", "content": answer["content"]}]
    tool_uses = [b for b in answer["content"] if b["type"] == "tool_use"]
    if tool_uses:
        results = [{"type": "tool_result", "tool_use_id": b["id"], "content": tool_result} for b in tool_uses]
        history.append({"role": "user", "content": results})
    return history


async def aconverse(client: anthropic.AsyncAnthropic, *, tool_result: str = "ok",
                    calls: int = 3) -> list[dict[str, Any]]:
    """`converse` for the async SDK client."""
    messages: list[dict[str, Any]] = list(QUESTION)
    answers: list[dict[str, Any]] = []
    for n in range(calls):
        kwargs: dict[str, Any] = dict(model=MODEL, max_tokens=256, messages=messages, tools=TOOLS)
        if n == calls - 1:
            async with client.messages.stream(**kwargs) as stream:
                response = await stream.get_final_message()
        else:
            response = await client.messages.create(**kwargs)
        answers.append(response.model_dump(mode="json", exclude_none=True))
        messages = _next_history(messages, answers[-1], tool_result)
    return answers
