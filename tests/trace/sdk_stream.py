"""The anthropic SDK's own reading of an SSE body, reached through the httpx2 transport seam.

Tests compare `reassemble_stream` with what the SDK hands an agent for the very same bytes.
"""

from __future__ import annotations

from typing import Any

import anthropic
import httpx2


def sdk_final_message(sse: str | bytes, *, beta: bool = True) -> dict[str, Any]:
    """Stream `sse` through the real SDK client and return its final message as JSON-ready data."""
    body = sse.encode("utf-8") if isinstance(sse, str) else sse

    def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    client = anthropic.Anthropic(
        api_key="test-key-not-secret",
        base_url="http://sdk.test",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(answer)),
    )
    messages = client.beta.messages if beta else client.messages
    with messages.stream(model="claude-test", max_tokens=64, messages=[{"role": "user", "content": "hi"}]) as stream:
        return stream.get_final_message().model_dump(mode="json", exclude_none=True)


def without_nulls(value: Any) -> Any:
    """Drop null fields, as `model_dump(exclude_none=True)` does, to compare plain dicts with the SDK's."""
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(v) for v in value]
    return value
