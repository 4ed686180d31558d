"""Agents under test that overrun their deadline, each in its own way."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from harness import Outcome, Task


def _ask(client: Any, task: Task) -> str:
    message = client.messages.create(**task.request_params(), messages=[{"role": "user", "content": task.turns[0]}])
    return "".join(block.text for block in message.content if block.type == "text")


def sleeper(client: Any, task: Task) -> str:
    """Works for a minute without looking at the clock, then asks."""
    time.sleep(60)
    return _ask(client, task)


async def async_sleeper(client: Any, task: Task) -> str:
    await asyncio.sleep(60)
    message = await client.messages.create(**task.request_params(), messages=[{"role": "user", "content": "hi"}])
    return str(message.id)


def _past_the_deadline(task: Task) -> None:
    """Sleep until the deadline has passed on the run's clock, which starts at its first call."""
    time.sleep(float(task.limits.wall_time_s or 0) + 0.5)


def late_caller(client: Any, task: Task) -> str:
    """Asks once, dawdles past its deadline, then asks again without checking it."""
    _ask(client, task)
    _past_the_deadline(task)
    return _ask(client, task)


def late_caller_over_http(client: Any, task: Task) -> str:
    """The same, through the run's endpoint, as a framework with its own client would."""
    return late_caller(task.client(max_retries=0), task)


def late_caller_with_timeout(client: Any, task: Task) -> str:
    """Asks once, dawdles past a 2 s --timeout (its scenario allows 30 s), then asks again."""
    _ask(client, task)
    time.sleep(2.5)
    return _ask(client, task)


def late_caller_that_stops(client: Any, task: Task) -> Outcome:
    """Asks past the deadline, and on the refusal reports the limit itself."""
    first = _ask(client, task)
    _past_the_deadline(task)
    try:
        return Outcome(status="completed", final_text=_ask(client, task))
    except Exception as exc:
        return Outcome(status="limit", limit="wall_time", reason=str(exc), final_text=first)
