"""Agents that talk to somewhere other than the run's endpoint (a closed port on loopback stands in
for the internet), and one that talks to nobody."""

from __future__ import annotations

import anthropic

from harness import Task

ELSEWHERE = "http://127.0.0.1:9"  # the discard port: nothing listens, the connection is refused


def own_client_agent(client: anthropic.Anthropic, task: Task) -> str:
    mine = anthropic.Anthropic(base_url=ELSEWHERE, api_key="sk-mine", max_retries=1)
    answer = mine.messages.create(**task.request_params(), messages=[{"role": "user", "content": task.turns[0]}])
    return str(answer.content[0])


def silent_agent(client: anthropic.Anthropic, task: Task) -> str:
    return "I answered without asking the model."


if __name__ == "__main__":  # as a command: the same mistake in a program of its own
    import os

    os.environ["ANTHROPIC_BASE_URL"] = ELSEWHERE
    anthropic.Anthropic(max_retries=1).messages.create(model="m", max_tokens=10,
                                                       messages=[{"role": "user", "content": "hi"}])
