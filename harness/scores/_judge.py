"""The model-graded scorer: a judge model reads the task, the final answer and (optionally) the
trajectory, and gives a structured verdict through a forced tool, `verdict`.

Its calls are the harness's own (`x-harness-role: judge`): made through the run's session, so they
are recorded into the cassette, replayed offline and scripted (`thread: judge` steps) like the
agent's, but never part of the agent's trace. With `repeats: K` the judge is asked K times: the
score is the mean of the values (the majority for labels), and verdicts that disagree are flagged.
A reply that is not a verdict is an error that shows the raw reply, never a score.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field, field_validator

from .._ask import Asked, ask, shorten
from ..errors import MalformedReply, UsageError
from ._context import ScoreContext
from ._model import Score
from ._options import Options
from ._registry import scorer

DISAGREEMENT_SPREAD = 0.25
"""Numeric verdicts disagree when they span more than this (max - min), or when they fall on both
sides of 0.5 (the pass/fail majority would flip on one of them)."""

TRAJECTORY_CHARS = 500
"""How much of each tool input and result the judge sees in the trajectory."""

JUDGE_SYSTEM = (
    "You are an impartial grader of an AI assistant's work. You read the user's task, the assistant's "
    "final answer{trajectory} and a rubric, and you grade the answer against the rubric only: not its "
    "style, length or confidence unless the rubric asks for them. Think it through in `reasoning` first, "
    "then give your verdict with the verdict tool."
)


class JudgeOptions(Options):
    """A rubric, the judge's model, and how often to ask it."""

    rubric: str = Field(min_length=1)
    """What a good answer does (and what fails it), in words the judge grades against."""
    model: str = Field(min_length=1)
    """The judge's model: the same for every matrix cell, so that every cell is judged alike."""
    effort: Literal["low", "medium", "high", "xhigh", "max"] | None = None
    """Sent as the judge's output_config.effort; omitted means the API default."""
    repeats: int = Field(default=1, ge=1, le=25)
    """How many times the judge is asked: the score is the mean (the majority for labels), and
    verdicts that disagree are flagged."""
    trajectory: bool = False
    """Also show the judge the run's tool calls and their results, not only the final answer."""
    max_tokens: int = Field(default=2048, ge=1)
    labels: dict[str, float] | None = None
    """The entry's `labels` (the common key): the judge then answers with one of these labels
    instead of a number, and the score is the majority label's value."""

    @field_validator("labels")
    @classmethod
    def _some_labels(cls, value: dict[str, float] | None) -> dict[str, float] | None:
        if value is not None and not value:
            raise ValueError("labels, when given, name at least one label")
        return value


def verdict_tool(labels: dict[str, float] | None) -> dict[str, Any]:
    """The forced tool the judge answers with: reasoning first, then the score or the label."""
    properties: dict[str, Any] = {"reasoning": {"type": "string", "description": "Why, in a few sentences."}}
    if labels:
        properties["label"] = {"type": "string", "enum": list(labels), "description": "The grade the rubric deserves."}
    else:
        properties["score"] = {"type": "number", "minimum": 0, "maximum": 1,
                               "description": "0: fails the rubric; 1: meets it fully; in between: partly."}
    return {
        "name": "verdict",
        "description": "Give the verdict on the assistant's answer.",
        "input_schema": {"type": "object", "properties": properties, "required": list(properties),
                         "additionalProperties": False},
    }


def judge_prompt(ctx: ScoreContext, options: JudgeOptions) -> str:
    """What the judge reads: the task, the final answer, the trajectory when asked for, the rubric."""
    if ctx.conversation:
        # A simulated user's run: the judge reads the whole conversation, up to the final answer.
        said = list(ctx.conversation)
        if said[-1][0] == "assistant":
            said.pop()
        task = "\n\n".join(f"{'USER' if who == 'user' else 'ASSISTANT'}: {text}" for who, text in said)
    else:
        turns = [ctx.prompt] if isinstance(ctx.prompt, str) else list(ctx.prompt)
        task = "\n\n".join(f"USER: {turn}" for turn in turns)
    if ctx.system:
        task = f"SYSTEM PROMPT OF THE ASSISTANT: {ctx.system}\n\n{task}"
    outcome = ctx.outcome
    if ctx.final_text:
        answer = ctx.final_text
    elif outcome is not None:
        answer = f"(no final answer: the run ended {outcome.status}{': ' + outcome.reason if outcome.reason else ''})"
    else:
        answer = "(no final answer)"
    parts = [f"<task>\n{task}\n</task>", f"<final_answer>\n{answer}\n</final_answer>"]
    if options.trajectory:
        parts.append(f"<trajectory>\n{trajectory(ctx)}\n</trajectory>")
    labels = f" one of the labels ({', '.join(options.labels)})" if options.labels else " a score from 0 to 1"
    parts.append(f"<rubric>\n{options.rubric}\n</rubric>")
    parts.append(f"Grade the final answer against the rubric: call the verdict tool with your reasoning and{labels}.")
    return "\n\n".join(parts)


def trajectory(ctx: ScoreContext) -> str:
    """The run's steps as the judge sees them: each tool call the model made, and what came back."""
    results: dict[str, str] = {}
    for execution in ctx.trace.tool_executions:
        results[execution.tool_use_id] = ("error: " if execution.is_error else "") + _clip(execution.output)
    lines: list[str] = []
    for number, call in enumerate(ctx.trace.calls, start=1):
        for block in call.content:
            if block.get("type") == "tool_use":
                line = f"step {number}: called {block.get('name')}({_clip(block.get('input'))})"
                result = results.get(str(block.get("id")))
                lines.append(line + (f" -> {result}" if result is not None else ""))
            elif block.get("type") == "text" and block.get("text"):
                lines.append(f"step {number}: wrote: {_clip(block.get('text'))}")
    return "\n".join(lines) or "(no step)"


def _clip(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= TRAJECTORY_CHARS else text[:TRAJECTORY_CHARS] + "…"


@dataclass(frozen=True)
class Verdict:
    """One reply of the judge, read."""

    value: float
    label: str | None
    reasoning: str


def read_verdict(asked: Asked, options: JudgeOptions) -> Verdict:
    """The verdict in one reply; MalformedReply showing the raw reply when it is not one."""
    answer = asked.answer
    reasoning = answer.get("reasoning")
    if not isinstance(reasoning, str) or not reasoning.strip():
        raise _malformed(asked, options, "no reasoning")
    if options.labels:
        label = answer.get("label")
        if not isinstance(label, str) or label not in options.labels:
            raise _malformed(asked, options, f"label {label!r} is not one of {', '.join(options.labels)}")
        return Verdict(options.labels[label], label, reasoning)
    value = answer.get("score")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise _malformed(asked, options, f"score {value!r} is not a number from 0 to 1")
    return Verdict(float(value), None, reasoning)


def _malformed(asked: Asked, options: JudgeOptions, problem: str) -> MalformedReply:
    return MalformedReply(
        f"the judge ({options.model}) gave a malformed verdict ({problem}); raw reply: {shorten(asked.raw)}")


@scorer("judge", options=JudgeOptions, kind="judge")
def judge(ctx: ScoreContext, options: JudgeOptions) -> Score:
    """A judge model grades the final answer (and optionally the trajectory) against a rubric."""
    if ctx.harness_client is None:
        raise UsageError("the judge needs the run's session to call its model: score the run with `harness run`")
    client = ctx.harness_client("judge")
    tool = verdict_tool(options.labels)
    prompt = judge_prompt(ctx, options)
    system = JUDGE_SYSTEM.format(trajectory=", the steps it took" if options.trajectory else "")
    verdicts = []
    for _ in range(options.repeats):
        asked = ask(client, who="the judge", model=options.model, system=system, prompt=prompt, tool=tool,
                    max_tokens=options.max_tokens, effort=options.effort)
        verdicts.append(read_verdict(asked, options))
    return aggregate(verdicts, options)


def aggregate(verdicts: list[Verdict], options: JudgeOptions) -> Score:
    """One score from K verdicts: the mean value, or the majority label (a tie goes to the lowest
    value: a judge that cannot make up its mind does not pass on a coin toss); flagged when they disagree."""
    values = [v.value for v in verdicts]
    details: dict[str, Any] = {
        "model": options.model,
        "repeats": options.repeats,
        "verdicts": [{"value": v.value, "label": v.label, "reasoning": v.reasoning} for v in verdicts],
    }
    label: str | None = None
    labels = options.labels
    if labels:
        counts = Counter(v.label for v in verdicts if v.label is not None)
        top = max(counts.values())
        label = min((lbl for lbl, n in counts.items() if n == top), key=lambda lbl: labels[lbl])
        value = labels[label]
        disagree = len(counts) > 1
        summary = f"majority {label} ({counts[label]} of {len(verdicts)}: {', '.join(str(v.label) for v in verdicts)})"
    else:
        value = sum(values) / len(values)
        passing = sum(1 for v in values if v >= 0.5)
        disagree = max(values) - min(values) > DISAGREEMENT_SPREAD or 0 < passing < len(values)
        summary = f"mean {value:.2f} of {len(verdicts)} verdicts ({', '.join(f'{v:.2f}' for v in values)})"
        details["majority"] = "pass" if passing * 2 > len(values) else "fail"
    details["disagreement"] = disagree
    details["spread"] = round(max(values) - min(values), 6)
    if len(verdicts) == 1:
        reason = verdicts[0].reasoning
    else:
        flag = "the judge's verdicts DISAGREE: " if disagree else ""
        reason = f"{flag}{summary}. First verdict: {verdicts[0].reasoning}"
    return Score("judge", value, reason, label=label, kind="judge", details=details)
