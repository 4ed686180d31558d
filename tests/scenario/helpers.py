"""A tool implementation that scenario tests point a `python` fixture at."""

from __future__ import annotations

from typing import Any

from harness.agents import ToolError, ToolResult


def double(tool_input: dict[str, Any]) -> int:
    if tool_input["n"] < 0:
        raise ToolError("negative numbers are not allowed")
    return int(tool_input["n"]) * 2


def image_bytes(tool_input: dict[str, Any]) -> bytes:
    """A tool that hands back raw bytes, which no tool_result can carry as they are."""
    return b"\x89PNG\r\n"


def result_of_a_set(tool_input: dict[str, Any]) -> ToolResult:
    """A tool whose ToolResult holds what no tool_result can carry."""
    return ToolResult(content={"delivered"})  # type: ignore[arg-type]


def blocks_of_bytes(tool_input: dict[str, Any]) -> list[dict[str, Any]]:
    """A tool whose content blocks hold bytes, which no tool_result can carry as they are."""
    return [{"type": "text", "text": b"delivered"}]
