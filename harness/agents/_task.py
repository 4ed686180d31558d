"""What an agent under test is given: the task, the tools to call, and the limits to honour.

An agent is any function `agent(client, task)` (or `async def` with an `AsyncAnthropic` client) that
runs its loop and returns the final text, or an `Outcome` when it wants to say how the run ended.
Tools run through `task.run_tool`, which is how the harness records tool events (start, end,
error, overlap) for the rules that need them. A framework that hands a tool function only its input
(the SDK's tool runner, smolagents) need not know the tool_use id: `run_tool` finds it in the answers
the run has received.

Every run is also served on a local Messages API endpoint: an agent built on a framework (or one
that makes its own client) points it at `task.base_url` with `task.api_key`, or calls
`task.client()` / `task.async_client()`. Whatever passes there is the run's trace, as for `client`.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import json
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import ToolUseNotFound
from ..trace._model import Exchange, ToolExecution
from ..transport._endpoint import ENDPOINT_API_KEY

if TYPE_CHECKING:
    import anthropic

ToolHandler = Callable[[dict[str, Any]], Any] | Callable[[dict[str, Any]], Awaitable[Any]]

UserReply = Callable[[Sequence[tuple[str, str]]], "str | None"]
"""A simulated user: the conversation so far (`("user" | "assistant", text)` turns, oldest first) in,
the user's next turn out, or None when the user is done."""


class ToolError(Exception):
    """Raise from a tool handler to return an error to the model (`is_error: true`)."""


@dataclass
class Limits:
    """The limits every loop needs (rules B001-B004); None means not set."""

    steps: int | None = None
    """Most model calls in the run."""
    tokens: int | None = None
    """Budget of cumulative input + output + cache_creation + cache_read tokens."""
    wall_time_s: float | None = None
    tool_errors: int | None = None
    """Most consecutive tool errors before the run stops."""


@dataclass
class ToolResult:
    """What a tool returned, ready to be put in a `tool_result` block."""

    content: str | list[dict[str, Any]]
    is_error: bool = False

    def block(self, tool_use_id: str) -> dict[str, Any]:
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_use_id, "content": self.content}
        if self.is_error:
            block["is_error"] = True
        return block


def _as_content(value: Any) -> str | list[dict[str, Any]]:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(b, dict) and "type" in b for b in value):
        return value
    return json.dumps(value, ensure_ascii=False)


@dataclass
class Task:
    """One run's task for an agent."""

    prompt: str | list[str]
    """The user's request; several strings are several user turns, sent one after another."""
    model: str = "claude-sonnet-5"
    system: str | None = None
    tools: list[dict[str, Any]] = field(default_factory=list)
    """Tool definitions exactly as sent in the request's `tools`."""
    handlers: dict[str, ToolHandler] = field(default_factory=dict)
    """Python implementation of each tool by name; missing ones are unknown tools."""
    sequential_tools: frozenset[str] = frozenset()
    """Tools with side effects that must not run concurrently with others."""
    effort: str | None = None
    max_tokens: int = 4096
    request_options: dict[str, Any] = field(default_factory=dict)
    """Other request parameters (thinking, temperature, context_management, ...)."""
    extra_headers: dict[str, str] = field(default_factory=dict)
    """Headers to send with every call (e.g. anthropic-beta)."""
    limits: Limits = field(default_factory=Limits)
    policies: dict[str, Any] = field(default_factory=dict)
    """Workflow policies the scenario declares (`prerequisites`, `approvals`, `circuit_breakers`), in the
    same shape as the check options, so an agent's dispatcher can enforce what the W rules check."""
    executions: list[ToolExecution] = field(default_factory=list)
    """Every tool run so far, filled in by `run_tool`."""
    base_url: str | None = None
    """This run's Messages API endpoint on loopback, `http://127.0.0.1:PORT/run/<id>`: give it to any
    client or framework as its base URL (`ANTHROPIC_BASE_URL`). Set by the harness when the run starts
    (None for a task no harness runs); it answers until the run ends, in every mode."""
    api_key: str = ENDPOINT_API_KEY
    """The key to give a client pointed at `base_url`: a placeholder, never the real key."""
    simulated_user: UserReply | None = None
    """The scenario's simulated user, if any: `next_turn` asks it for the user's next turn."""
    _t0: float = field(default_factory=time.monotonic, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _answers: Callable[[], Sequence[Exchange]] | None = field(default=None, init=False, repr=False)
    _conversation: list[tuple[str, str]] = field(default_factory=list, init=False, repr=False)
    _claimed: set[str] = field(default_factory=set, init=False, repr=False)
    """tool_use ids a tool run has taken, so that two identical calls get one id each."""
    _clients: list[anthropic.Anthropic] = field(default_factory=list, init=False, repr=False)
    _async_clients: list[anthropic.AsyncAnthropic] = field(default_factory=list, init=False, repr=False)
    _stop_hooks: list[Callable[[], None]] = field(default_factory=list, init=False, repr=False)
    _stopped: bool = field(default=False, init=False, repr=False)

    def watch_answers(self, exchanges: Callable[[], Sequence[Exchange]]) -> None:
        """Where `run_tool` looks for the tool_use id it was not given: the run's exchanges so far.

        The harness calls this when it runs the agent; a test that builds a Task by hand may too.
        """
        self._answers = exchanges

    @property
    def turns(self) -> list[str]:
        return [self.prompt] if isinstance(self.prompt, str) else list(self.prompt)

    def next_turn(self, answer: str) -> str | None:
        """The user's next turn, once the agent has given its final `answer` to the last of `turns`
        (or to the turn this returned before); None when the conversation is over: the scenario has
        no simulated user, or it is done. An agent that converses calls this after every final
        answer and, given a turn, sends it as the next user message of the same conversation.

        The simulated user sees the conversation as a user would: the scenario's turns, then each
        final answer and its reply. Agents in other languages ask over HTTP (`POST
        {base_url}/harness/user`)."""
        if self.simulated_user is None:
            return None
        with self._lock:
            if not self._conversation:
                self._conversation.extend(("user", turn) for turn in self.turns)
            self._conversation.append(("assistant", answer))
            conversation = list(self._conversation)
        reply = self.simulated_user(conversation)
        if reply is not None:
            with self._lock:
                self._conversation.append(("user", reply))
        return reply

    @property
    def conversation(self) -> list[tuple[str, str]]:
        """The conversation with the simulated user so far, as it saw it (`("user" | "assistant",
        text)`, oldest first); empty until the agent's first final answer, or without one."""
        with self._lock:
            return list(self._conversation)

    def request_params(self) -> dict[str, Any]:
        """The request fields this task fixes, for `client.messages.create(**params, messages=...)`."""
        params: dict[str, Any] = {"model": self.model, "max_tokens": self.max_tokens}
        if self.system is not None:
            params["system"] = self.system
        if self.tools:
            params["tools"] = self.tools
        # A deep copy: an agent that edits its params (pops a key of output_config) must not edit
        # the task's, nor the scenario's that later runs are built from.
        options = copy.deepcopy(self.request_options)
        if self.effort is not None:
            output_config = dict(options.pop("output_config", {}) or {})
            output_config["effort"] = self.effort
            options["output_config"] = output_config
        params.update(options)
        if self.extra_headers:
            params["extra_headers"] = dict(self.extra_headers)
        return params

    def client(self, **options: Any) -> anthropic.Anthropic:
        """An `anthropic.Anthropic` on this run's endpoint (`base_url`, `api_key`); SDK options such as
        `max_retries` or `default_headers` pass through. The harness closes it when the run ends."""
        import anthropic

        from ..transport._live import shared_ssl_context

        # The endpoint is plain HTTP, but a default client would still build its own TLS context,
        # loading the CA bundle for every run; the process's one context costs nothing.
        options.setdefault("http_client", anthropic.DefaultHttpxClient(verify=shared_ssl_context()))
        client = anthropic.Anthropic(base_url=self._endpoint_url(), api_key=self.api_key, **options)
        with self._lock:
            self._clients.append(client)
        return client

    def async_client(self, **options: Any) -> anthropic.AsyncAnthropic:
        """The same as `client`, for async agents."""
        import anthropic

        from ..transport._live import shared_ssl_context

        options.setdefault("http_client", anthropic.DefaultAsyncHttpxClient(verify=shared_ssl_context()))
        client = anthropic.AsyncAnthropic(base_url=self._endpoint_url(), api_key=self.api_key, **options)
        with self._lock:
            self._async_clients.append(client)
        return client

    def _endpoint_url(self) -> str:
        if self.base_url is None:
            raise RuntimeError(
                "this task has no endpoint: task.base_url is set when the harness runs the task "
                "(harness run, the pytest plugin, or Session.serve())"
            )
        return self.base_url

    def close_clients(self) -> None:
        """Close the clients `client()` made (the harness does, when the run ends)."""
        with self._lock:
            clients, self._clients = self._clients, []
        for client in clients:
            client.close()

    async def aclose_clients(self) -> None:
        """Close the clients `client()` and `async_client()` made (for async runs, on their loop)."""
        self.close_clients()
        with self._lock:
            clients, self._async_clients = self._async_clients, []
        for client in clients:
            await client.close()

    def elapsed(self) -> float:
        return time.monotonic() - self._t0

    def _when_stopped(self, hook: Callable[[], None]) -> Callable[[], None]:
        """Call `hook` when the harness stops this run past its deadline (at once if it already has):
        how an agent command is killed. Returns what takes the hook off again."""
        with self._lock:
            stopped = self._stopped
            if not stopped:
                self._stop_hooks.append(hook)
        if stopped:
            hook()

        def remove() -> None:
            with self._lock:
                if hook in self._stop_hooks:
                    self._stop_hooks.remove(hook)

        return remove

    def _stop(self) -> int:
        """The harness stops the run: what can be ended (a command's processes) is ended now.
        Returns how many things were ended (none for a Python agent, which cannot be)."""
        with self._lock:
            self._stopped = True
            hooks, self._stop_hooks = self._stop_hooks, []
        for hook in hooks:
            hook()
        return len(hooks)

    def run_tool(
        self, name: str, tool_input: Any, tool_use_id: str | None = None, *, thread_key: str | None = None
    ) -> ToolResult:
        """Run a tool by name; failures and unknown tools come back as `is_error` results.

        Without `tool_use_id`, the id is that of the tool_use block of the same name and input in
        the newest answer that has one not yet run (the first such block when a turn asks twice for
        the same call); failing an exact match, the only not-yet-run block of that name. Raises
        `ToolUseNotFound` when no answer asked for this tool.
        """
        tool_use_id = self._tool_use_id(name, tool_input, tool_use_id)
        return asyncio.run(self.arun_tool(name, tool_input, tool_use_id, thread_key=thread_key)) if self._is_async(
            name
        ) else self._run_sync(name, tool_input, tool_use_id, thread_key)

    async def arun_tool(
        self, name: str, tool_input: Any, tool_use_id: str | None = None, *, thread_key: str | None = None
    ) -> ToolResult:
        """The same as `run_tool`, for async agents; sync handlers run in a worker thread."""
        tool_use_id = self._tool_use_id(name, tool_input, tool_use_id)
        handler = self.handlers.get(name)
        started = self.elapsed()
        if handler is None:
            return self._record(name, tool_input, tool_use_id, thread_key, started, None, f"unknown tool {name!r}")
        try:
            if inspect.iscoroutinefunction(handler):
                value = await handler(dict(tool_input or {}))
            else:
                value = await asyncio.to_thread(handler, dict(tool_input or {}))
        except Exception as exc:  # a tool's failure goes back to the model, it never kills the loop
            return self._record(name, tool_input, tool_use_id, thread_key, started, None, _describe(exc))
        return self._record(name, tool_input, tool_use_id, thread_key, started, value, None)

    def _tool_use_id(self, name: str, tool_input: Any, given: str | None) -> str:
        """The id this run of the tool answers: the one given, or the one found and claimed."""
        with self._lock:
            if given is not None:
                self._claimed.add(given)
                return given
            found = self._find_tool_use(name, tool_input)
            self._claimed.add(found)
            return found

    def _claim_asked(self, name: str, tool_use_id: str) -> str | None:
        """Claim `tool_use_id` for a run of `name` that names its id (over HTTP, where any string may
        come), or say why it cannot be this call's: no answer of the run asked for it, it asks for
        another tool, or it was run already. A Python agent's `run_tool` takes the id it is given."""
        with self._lock:
            exchanges = self._answers() if self._answers is not None else ()
            use = next((use for exchange in exchanges for use in _tool_uses(exchange) if use["id"] == tool_use_id),
                       None)
            if use is None:
                return (f"is the id of no tool_use block the run's answers asked for "
                        f"(open: {', '.join(self._open_uses(exchanges)) or 'none'})")
            if use.get("name") != name:
                return f"is a tool_use block of {use.get('name')}, not {name}"
            if tool_use_id in self._claimed:
                return "was run already: each tool_use gets one tool_result"
            self._claimed.add(tool_use_id)
            return None

    def _find_tool_use(self, name: str, tool_input: Any) -> str:
        if self._answers is None:
            raise ToolUseNotFound(
                f"run_tool({name!r}) was given no tool_use_id and this task is not in a harness run, so there "
                "is no answer to find it in: pass the tool_use block's id"
            )
        exchanges = self._answers()
        for exact in (True, False):
            for exchange in reversed(exchanges):
                open_uses = [use for use in _tool_uses(exchange) if use.get("id") not in self._claimed
                             and use.get("name") == name]
                if exact:
                    for use in open_uses:
                        if use.get("input") == tool_input:
                            return str(use["id"])
                elif len(open_uses) == 1:
                    # The framework passed the input transformed (defaults filled in, types coerced).
                    return str(open_uses[0]["id"])
                elif open_uses:
                    break  # several candidates and none exact: picking one would be a guess
        asked = self._open_uses(exchanges)
        raise ToolUseNotFound(
            f"run_tool({name!r}, {tool_input!r}) was given no tool_use_id and no answer of this run asks for "
            f"that call still unanswered (open tool_use blocks: {', '.join(asked) or 'none'}). Run a tool only "
            "after the answer that asks for it has been read to its end, or pass the tool_use block's id",
            open_uses=asked,
        )

    def _open_uses(self, exchanges: Sequence[Exchange]) -> tuple[str, ...]:
        """The tool_use blocks of the run's answers that no tool run has taken yet, as `name id`."""
        return tuple(f"{use.get('name')} {use['id']}" for exchange in exchanges
                     for use in _tool_uses(exchange) if use["id"] not in self._claimed)

    def _is_async(self, name: str) -> bool:
        return inspect.iscoroutinefunction(self.handlers.get(name))

    def _run_sync(self, name: str, tool_input: Any, tool_use_id: str, thread_key: str | None) -> ToolResult:
        handler = self.handlers.get(name)
        started = self.elapsed()
        if handler is None:
            return self._record(name, tool_input, tool_use_id, thread_key, started, None, f"unknown tool {name!r}")
        try:
            value = handler(dict(tool_input or {}))
        except Exception as exc:  # a tool's failure goes back to the model, it never kills the loop
            return self._record(name, tool_input, tool_use_id, thread_key, started, None, _describe(exc))
        return self._record(name, tool_input, tool_use_id, thread_key, started, value, None)

    def _record(
        self,
        name: str,
        tool_input: Any,
        tool_use_id: str,
        thread_key: str | None,
        started: float,
        value: Any,
        error: str | None,
    ) -> ToolResult:
        result = value if error is None and isinstance(value, ToolResult) else None
        if error is None:
            try:
                if result is None:
                    result = ToolResult(_as_content(value))
                if not isinstance(result.content, str):
                    # The content goes back to the model in a JSON request and into the run's results
                    # line: a ToolResult or content blocks holding bytes or a set would break both.
                    json.dumps(result.content)
            except (TypeError, ValueError, RecursionError):  # the tool failed, the loop goes on
                returned = (f"a ToolResult holding {type(value.content).__name__}" if isinstance(value, ToolResult)
                            else type(value).__name__)
                result = None
                error = (f"tool {name!r} returned {returned}, which is no tool_result content; "
                         "return a str, a list of content blocks or JSON values")
        if result is None:
            result = ToolResult(content=f"Error: {error}", is_error=True)
        execution = ToolExecution(
            tool_use_id=tool_use_id,
            name=name,
            input=tool_input,
            started_at=started,
            ended_at=self.elapsed(),
            output=result.content,
            is_error=result.is_error,
            error=error,
            thread_key=thread_key,
        )
        with self._lock:
            self.executions.append(execution)
        return result


def _tool_uses(exchange: Exchange) -> list[dict[str, Any]]:
    body = exchange.response_body
    content = body.get("content") if isinstance(body, dict) else None
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_use" and isinstance(b.get("id"), str)]


def _describe(exc: Exception) -> str:
    text = str(exc)
    if isinstance(exc, ToolError) and text:
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
