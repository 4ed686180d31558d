"""A tool implementation that scenario tests point a `python` fixture at."""

from __future__ import annotations

from typing import Any

from harness.agents import ToolError


def double(tool_input: dict[str, Any]) -> int:
    if tool_input["n"] < 0:
        raise ToolError("negative numbers are not allowed")
    return int(tool_input["n"]) * 2


def image_bytes(tool_input: dict[str, Any]) -> bytes:
    """A tool that hands back raw bytes, which no tool_result can carry as they are."""
    return b"\x89PNG\r\n"
