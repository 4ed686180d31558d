"""The scenario file format: strict pydantic models, one per YAML mapping.

Every model forbids unknown keys, so a typo fails with the valid choices instead of being ignored.
The JSON schema shipped for editors (`scenario.schema.json`) is generated from these models.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, field_validator, model_validator

from .._modes import Mode
from .._strict import Regex
from ..checks._options import Limits, Policies

Effort = Literal["low", "medium", "high", "xhigh", "max"]
LimitName = Literal["steps", "tokens", "wall_time", "tool_errors"]

DEFAULT_MODEL = "claude-sonnet-5"

_SPEC = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
_CODE = re.compile(r"^[A-Z][0-9]{3}$")

# Request fields the scenario sets through its own keys; `request` repeating them would be ambiguous.
_OWN_KEYS = {
    "model": "model",
    "max_tokens": "max_tokens",
    "system": "system",
    "tools": "tools",
    "messages": "prompt or turns",
    "extra_headers": "headers",
    "stream": "the agent (streaming is the agent's choice)",
}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, frozen=True)


def _check_spec(value: str | None, what: str) -> str | None:
    if value is not None and not _SPEC.match(value):
        raise ValueError(f"{what} must be 'module:function' (e.g. 'myproject.tools:lookup'), got {value!r}")
    return value


class Answer(_Strict):
    """One answer of a tool fixture: an output, or an error returned with `is_error: true`."""

    output: Any = None
    """What the tool returns: a string, or any YAML value (sent to the model as JSON)."""
    error: str | None = None
    """Error text returned to the model with `is_error: true`."""
    delay_s: float = Field(default=0.0, ge=0)
    """Seconds the tool takes before answering (to exercise timeouts and concurrency)."""

    @model_validator(mode="after")
    def _one_answer(self) -> Answer:
        if self.error is not None and "output" in self.model_fields_set:
            raise ValueError("give either output or error, not both")
        if self.error is None and "output" not in self.model_fields_set:
            raise ValueError("give output or error")
        return self


class MatchAnswer(Answer):
    """An answer chosen when the call's input contains `input`."""

    input: dict[str, Any]
    """Partial input: every key given must be equal in the call's input (nested mappings compare the same way)."""


class Fixture(_Strict):
    """How a tool answers in this scenario. Give one of output, error, sequence or python; `match` may
    come alone or before one of them, which then answers the calls no `match` entry covers."""

    output: Any = None
    """Fixed output for every call."""
    error: str | None = None
    """Fixed error for every call, returned with `is_error: true`."""
    delay_s: float = Field(default=0.0, ge=0)
    """Seconds every call takes before answering."""
    sequence: list[Answer] | None = None
    """Answers for successive calls, in order; the last one repeats once the list is used up."""
    match: list[MatchAnswer] | None = None
    """Answers chosen by input: the first entry whose `input` the call's input contains."""
    python: str | None = None
    """'module:function' called with the input dict; its return value is the output, and a
    `harness.ToolError` (or any exception) it raises is returned as an error."""

    @field_validator("python")
    @classmethod
    def _python_spec(cls, value: str | None) -> str | None:
        return _check_spec(value, "python")

    @model_validator(mode="after")
    def _one_kind(self) -> Fixture:
        kinds = [k for k in ("output", "error", "sequence", "python") if k in self.model_fields_set]
        if len(kinds) > 1:
            raise ValueError(f"give only one of output, error, sequence, python (got {', '.join(kinds)})")
        if not kinds and self.match is None:
            raise ValueError("give one of output, error, sequence, match, python")
        return self


class Tool(_Strict):
    """A client tool offered to the model, and its fixture."""

    name: str = Field(pattern=r"^[a-zA-Z0-9_-]{1,128}$")
    description: str = ""
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    """JSON schema of the input, sent as is."""
    strict: bool | None = None
    """Sent as the tool's `strict` (structured tool inputs); omitted when not set."""
    sequential: bool = False
    """The tool has side effects: it must not run concurrently with other tools (rule T008)."""
    fixture: Fixture | None = None
    """How the tool answers; a call to a tool without fixture gets an error that says so."""

    def definition(self) -> dict[str, Any]:
        """The tool as sent in the request's `tools`."""
        tool: dict[str, Any] = {"name": self.name, "description": self.description, "input_schema": self.input_schema}
        if self.strict is not None:
            tool["strict"] = self.strict
        return tool


class RuleOptions(_Strict):
    """Options of rules that the scenario's other keys do not already set."""

    history_projection: bool = False
    """The agent projects its history client-side on purpose (rule H002 then allows edits)."""
    max_consecutive_tool_errors: int | None = Field(default=None, ge=1)
    """Rule T007's N (default: limits.tool_errors, else 3)."""


class FinalText(_Strict):
    """What the final answer must look like; every key given must hold."""

    contains: str | list[str] | None = None
    """Substring(s) the final text must contain."""
    equals: str | None = None
    matches: Regex | None = None
    """Regular expression searched in the final text (re.search)."""

    @model_validator(mode="after")
    def _says_something(self) -> FinalText:
        # An empty final_text (or `contains: []`) checked nothing and passed every run.
        if not self.contains and self.equals is None and self.matches is None:
            raise ValueError("give contains, equals or matches (or drop final_text)")
        return self


class ExpectedCall(_Strict):
    """A tool call the agent is expected to make."""

    name: str
    input: dict[str, Any] = Field(default_factory=dict)
    """Partial input: keys not given are not compared."""


class ToolsCalled(_Strict):
    """The tool calls of the run (every thread, in order) compared with expected calls."""

    mode: Literal["strict", "unordered", "subset", "superset"] = "strict"
    """strict: the same calls in the same order; unordered: the same calls in any order;
    subset: every call made is among the expected ones (nothing else was called);
    superset: every expected call was made (others may be made too)."""
    calls: list[ExpectedCall]


class Expect(_Strict):
    """What the run must show to pass, besides having no error finding."""

    outcome: Literal["completed", "limit", "refused", "error"] | None = None
    """How the agent says the run ended."""
    limit: LimitName | None = None
    """Which limit stopped the run; implies outcome `limit`."""
    final_text: FinalText | None = None
    tools_called: ToolsCalled | None = None
    max_steps: int | None = Field(default=None, ge=0)
    """Most model calls in the run (all threads)."""
    max_cost_usd: float | None = Field(default=None, ge=0)
    """Most the run may cost; fails when the cost is unknown."""
    max_tokens_total: int | None = Field(default=None, ge=0)
    """Most tokens (input + output + cache creation + cache read) over the run."""
    findings: list[str] = Field(default_factory=list)
    """Rule codes that MUST be found (anti-pattern examples); those codes then do not fail the run."""
    min_score: float | dict[str, float] | None = None
    """The least score that passes: one number for the mean of the run's scores, or one per score
    name (`{tool_calls: 1, final_text: 0.5}`; the key `mean` is the mean of them all). A score with
    no value (a label without one, an unpriced cost) does not pass."""

    @field_validator("min_score")
    @classmethod
    def _in_unit(cls, value: float | dict[str, float] | None) -> float | dict[str, float] | None:
        for each in [value] if isinstance(value, (int, float)) else (value or {}).values():
            if not 0.0 <= float(each) <= 1.0:
                raise ValueError(f"a score is in [0, 1]; min_score {each} can never be met or always is")
        return value

    @field_validator("findings")
    @classmethod
    def _codes(cls, value: list[str]) -> list[str]:
        for code in value:
            if not _CODE.match(code):
                raise ValueError(f"{code!r} is not a rule code (a letter and three digits, e.g. L002)")
        return value

    @model_validator(mode="before")
    @classmethod
    def _limit_implies_outcome(cls, data: Any) -> Any:
        # `limit: steps` alone checked nothing (only `outcome` is evaluated): a run that completed passed it.
        if isinstance(data, dict) and data.get("limit") is not None and data.get("outcome") is None:
            return {**data, "outcome": "limit"}
        return data

    @model_validator(mode="after")
    def _limit_needs_outcome(self) -> Expect:
        if self.limit is not None and self.outcome not in (None, "limit"):
            raise ValueError(f"limit is only meaningful with outcome: limit (got outcome: {self.outcome})")
        return self


class Case(_Strict):
    """One case of a scenario: the variables its templates are rendered with."""

    id: str | None = Field(default=None, min_length=1, max_length=120, pattern=r"^[^\[\]/\\\x00]+$")
    """Shown in the run id (`scenario[case][cell]`); default: the case's number, from 1."""
    vars: dict[str, Any] = Field(default_factory=dict)
    """Values for the `{{ name }}` templates of prompt, turns, system, tools, script, user, expect and score."""


class Matrix(_Strict):
    """Cells to run: every model x every effort, each `repeats` times."""

    models: list[str] | None = Field(default=None, min_length=1)
    """Defaults to the scenario's `model`."""
    efforts: list[Effort | None] | None = Field(default=None, min_length=1)
    """Defaults to the scenario's `effort`; null in the list means the API default."""
    repeats: int = Field(default=1, ge=1)


class ScriptedUser(_Strict):
    """A simulated user that replies from a list: after each final answer, the next reply in order;
    the conversation ends when the list is used up."""

    script: list[Annotated[str, Field(min_length=1)]] = Field(min_length=1)
    """The user's replies, one per final answer of the agent."""


class PersonaUser(_Strict):
    """A simulated user played by a model: after each final answer, it reads the conversation and
    writes the user's next turn, or says the user is done. Its calls go through the run's transport
    (recorded, replayed, scripted with `thread: user` steps), never into the agent's trace."""

    persona: str = Field(min_length=1)
    """Who the user is and what they want, in the user's own situation (the model plays them)."""
    model: str | None = None
    """The model playing the user; default: the scenario's `model` (not the matrix cell's, so every
    cell meets the same user)."""
    effort: Effort | None = None
    """Sent as the user model's output_config.effort; omitted means the API default."""
    max_turns: int = Field(default=5, ge=1)
    """Most turns the simulated user writes after the opening prompt; the conversation ends there."""
    max_tokens: int = Field(default=1024, ge=1)


SimulatedUser = Annotated[
    Annotated[ScriptedUser, Tag("scripted user")] | Annotated[PersonaUser, Tag("persona user")],
    # `script` says which: its errors then name the scripted user's own keys, not a failed union.
    Discriminator(lambda value: "scripted user" if isinstance(value, ScriptedUser) or (
        isinstance(value, dict) and "script" in value) else "persona user"),
]


HARNESS_ENV = ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "HARNESS_TASK", "HARNESS_RUN_TAG")
"""Variables the harness sets for an agent command; its `env` cannot set them."""


class AgentCommand(_Strict):
    """An agent in any language: a process started for each run, pointed at the run's local endpoint.

    It gets ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY (the endpoint's placeholder key, never the
    real one) and HARNESS_TASK, the path of a JSON file with the request fields, the user turns,
    the limits, the scenario's name and the case. The last line it prints is its final answer, or
    a JSON object `{"outcome": "completed|limit|refused|error", "text": ...}`.
    """

    command: list[Annotated[str, Field(min_length=1)]] = Field(min_length=1)
    """The program and its arguments, e.g. [node, agent.mjs]; run as is, not through a shell."""
    cwd: str = "."
    """The folder it runs in, relative to this scenario file."""
    env: dict[str, str] = Field(default_factory=dict)
    """Variables added to the environment it inherits."""
    timeout_s: float = Field(default=300.0, gt=0)
    """Seconds a run may take; past them the command is killed with every process it started."""

    @field_validator("env")
    @classmethod
    def _not_the_harness_env(cls, value: dict[str, str]) -> dict[str, str]:
        taken = sorted(set(value) & set(HARNESS_ENV))
        if taken:
            raise ValueError(
                f"{', '.join(taken)} is set by the harness for every run (the run's endpoint, task and "
                "processes)")
        return value


class Scenario(_Strict):
    """One scenario file: a task for an agent, how its tools answer, and what the run must show."""

    name: str | None = None
    """Defaults to the file name without extension."""
    description: str = ""
    agent: Annotated[
        Annotated[str, Tag("agent name")] | Annotated[AgentCommand, Tag("agent command")],
        # A mapping is a command: its errors then name its own keys, not a failed match with a string.
        Discriminator(lambda value: "agent command" if isinstance(value, (dict, AgentCommand)) else "agent name"),
    ] = "reference"
    """A built-in agent (reference, reference-async, coordinator, buggy.<name>), 'module:function', or
    `{command: [...]}`: a program in any language, run once per run against the run's endpoint."""
    system: str | None = None
    prompt: str | None = None
    """The user's request. Give prompt or turns."""
    turns: list[str] | None = Field(default=None, min_length=1)
    """Several user turns, sent one after another."""
    tools: list[Tool] = Field(default_factory=list)
    model: str = DEFAULT_MODEL
    effort: Effort | None = None
    """Sent as output_config.effort; omitted means the API default."""
    max_tokens: int = Field(default=4096, ge=1)
    request: dict[str, Any] = Field(default_factory=dict)
    """Other request options, sent as is: thinking, context_management, tool_choice, output_config,
    stop_sequences, metadata..."""
    headers: dict[str, str] = Field(default_factory=dict)
    """Headers sent with every call, e.g. anthropic-beta."""
    user: SimulatedUser | None = None
    """A simulated user for a multi-turn task: `{script: [...]}` (fixed replies) or `{persona, model,
    max_turns}` (a model plays the user). After the agent's final answer to the last of the prompt's
    turns, it writes the next turn, until it is done."""
    limits: Limits = Field(default_factory=Limits)
    output_tools: list[str] = Field(default_factory=list)
    """Tools whose input is the run's answer (a structured-output tool): the run may end on one
    without a tool_result (rule L002). A tool forced by tool_choice is recognised without this."""
    disable: list[str] = Field(default_factory=list)
    """Rule codes not checked for this scenario."""
    policies: Policies = Field(default_factory=Policies)
    options: RuleOptions = Field(default_factory=RuleOptions)
    expect: Expect = Field(default_factory=Expect)
    matrix: Matrix | None = None
    mode: Mode = "replay"
    """How the model is reached: replay a cassette, record one, call the API live, or a scripted model."""
    cassette: str | None = None
    """Cassette path, relative to this file. May use {stem}, {name}, {case}, {model}, {effort}, {repeat};
    must use enough of them to tell the runs apart. Default: ../cassettes/{stem}.yaml for one cell,
    ../cassettes/{stem}/{model}-{effort}-r{repeat}.yaml for several; with cases,
    ../cassettes/{stem}/{case}.yaml and ../cassettes/{stem}/{case}/{model}-{effort}-r{repeat}.yaml."""
    script: Annotated[list[dict[str, Any]], Field(min_length=1)] | str | None = None
    """The scripted model's steps (mode scripted, and when recording cassettes from the script):
    inline, or a path relative to this file."""
    cases: list[Case] | None = Field(default=None, min_length=1)
    """Run the scenario once per case, its templates (`{{ name }}`, Jinja) rendered with the case's vars."""
    dataset: str | None = None
    """Cases from a file, relative to this one: .jsonl (one object a line), .csv (a header row), or
    .yaml (a list of mappings). Each row's `id` column (optional) is its id; its other columns, or its
    `vars` mapping, are its variables."""
    score: list[str | dict[str, Any]] = Field(default_factory=list)
    """Scorers: a built-in name (tool_calls, final_text, efficiency), 'module:function', or one of
    them mapped to its options, e.g. `- final_text: {contains: refund}`. Each entry may add `name:`
    and `labels:` (the value of each label it gives)."""

    @field_validator("agent")
    @classmethod
    def _agent_spec(cls, value: str | AgentCommand) -> str | AgentCommand:
        if isinstance(value, str) and ":" in value:
            _check_spec(value, "agent")
        return value

    @field_validator("disable")
    @classmethod
    def _disable_codes(cls, value: list[str]) -> list[str]:
        return [code.upper() for code in Expect._codes(value)]

    @field_validator("request")
    @classmethod
    def _request_keys(cls, value: dict[str, Any]) -> dict[str, Any]:
        for key in value:
            if key in _OWN_KEYS:
                raise ValueError(f"{key} is set by the scenario's `{_OWN_KEYS[key]}`, not by `request`")
        if "effort" in value:
            raise ValueError(
                "effort goes in the scenario's `effort` key (sent as output_config.effort), not in request")
        return value

    @model_validator(mode="after")
    def _prompt_or_turns(self) -> Scenario:
        if (self.prompt is None) == (self.turns is None):
            raise ValueError("give exactly one of prompt (one user message) or turns (several)")
        names = [tool.name for tool in self.tools]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"tool names must be unique; repeated: {', '.join(twice)}")
        return self

    @model_validator(mode="after")
    def _cases_or_dataset(self) -> Scenario:
        if self.cases is not None and self.dataset is not None:
            raise ValueError("give cases (inline) or dataset (a file), not both")
        if self.cases is not None:
            ids = [case.id for case in self.cases if case.id is not None]
            twice = sorted({i for i in ids if ids.count(i) > 1})
            if twice:
                raise ValueError(f"case ids must be unique; repeated: {', '.join(twice)}")
        return self

    @property
    def prompt_turns(self) -> str | list[str]:
        return self.prompt if self.prompt is not None else list(self.turns or [])
