"""Fuzzing: no recording, however broken, makes the reader, the rules or the report raise.

`harness check` runs on recordings nobody here has seen, from any recorder and any client. Every
input must either read (findings, notes) or fail with a CassetteError naming the file, and the other
files are still checked. Three levels are fuzzed, each seeded from real traffic:

- structural mutations of the request and response bodies of real exchanges (the vendored
  recordings in tests/corpus and the shipped cassettes), fed through `exchange_from_http`,
  `build_trace`, `check_trace`, the trace's round trip through JSON, and the HTML report;
- SSE text: shuffled, cut, duplicated and garbled events through `reassemble_stream`;
- whole files cut at a random byte, garbled or mis-nested, or given a hostile top-level key (an
  alias bomb or cycle, a 4,400-digit integer, an impossible date, terminal escapes, a gzip bomb),
  through `harness check --format json`;
- YAML text assembled from anchors, aliases, tags, long integers and impossible dates, through
  the one YAML loader.

Hypothesis runs derandomized with bounded examples so CI sees the same inputs every time and the
file stays fast. The regression tests at the end pin the minimal input of each crash found.
"""

from __future__ import annotations

import base64
import copy
import functools
import gzip
import io
import json
import os
import sys
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness._yaml import parse_yaml
from harness.checks import check_trace
from harness.cli import main
from harness.errors import CassetteError, InputError
from harness.report import render_report
from harness.results import RunResult
from harness.run._execute import usage_of
from harness.trace import Exchange, build_trace, exchange_from_http, read_exchanges, reassemble_stream
from harness.trace._exchange import MAX_DEPTH, _decode_body
from harness.trace._model import Outcome, Trace

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "tests" / "corpus" / "recordings"
CASSETTES = REPO / "cassettes"

# HARNESS_FUZZ_SCALE=50 multiplies every example budget for a long local hunt; CI runs the default.
SCALE = max(1, int(os.environ.get("HARNESS_FUZZ_SCALE", "1")))
FUZZ = settings(max_examples=120 * SCALE, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def examples(n: int) -> int:
    return n * SCALE

MESSAGES_URL = "https://api.anthropic.com/v1/messages"


# --- starting points: real exchanges ------------------------------------------------------------


def _recordings() -> list[Path]:
    found = sorted(p for p in CASSETTES.glob("*.yaml"))
    return found + sorted(p for p in CORPUS.rglob("*") if p.is_file() and p.name not in {"README.md", "MANIFEST.tsv",
                                                                                        "LICENSE"})


@functools.cache
def real_exchanges() -> tuple[tuple[str, tuple[Exchange, ...]], ...]:
    """(file name, its Messages exchanges) for every readable recording; at most 6 exchanges each."""
    out = []
    for path in _recordings():
        exchanges, _ = read_exchanges(path)
        calls = tuple(e for e in exchanges if e.is_messages_call)[:6]
        if calls:
            out.append((path.name, calls))
    return tuple(out)


@functools.cache
def seed_files() -> tuple[Path, ...]:
    """A few recordings of each format, to cut and garble."""
    by_suffix: dict[str, list[Path]] = {}
    for path in _recordings():
        by_suffix.setdefault(path.suffix, []).append(path)
    return tuple(p for paths in by_suffix.values() for p in paths[:: max(1, len(paths) // 5)][:5])


# --- values and mutations -----------------------------------------------------------------------

ODD_TEXT = ["", "\x00", "\ud800", "\udfff\ud800", "\u202e\u2066bidi\u2069", "a\x00b", "\ufeff", "\U0001f600" * 3,
            "\r\n\r", "event: x\ndata: {", "9" * 40]

_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False), st.sampled_from(ODD_TEXT), st.text(max_size=12),
    st.sampled_from(["tool_use", "tool_result", "text", "thinking", "assistant", "user", "end_turn", "message"]),
)
JSON_VALUES = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["type", "id", "name", "role", "content", "tool_use_id", "text", "input", "x"]), inner,
        max_size=4),
    max_leaves=12,
)


def deep(depth: int) -> Any:
    value: Any = {"type": "text", "text": "bottom"}
    for i in range(depth):
        value = [value] if i % 2 else {"content": value}
    return value


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found += _paths(item, (*prefix, i))
    return found


def _set(body: Any, path: tuple[Any, ...], value: Any, *, drop: bool = False) -> Any:
    if not path:
        return value
    parent = body
    for key in path[:-1]:
        parent = parent[key]
    if drop and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return body


def _messages(body: Any) -> list[Any]:
    messages = body.get("messages") if isinstance(body, dict) else None
    return messages if isinstance(messages, list) else []


def _all_blocks(body: Any) -> list[dict[str, Any]]:
    """Content blocks of a request's messages and of a response."""
    holders = [m for m in _messages(body) if isinstance(m, dict)]
    if isinstance(body, dict) and "content" in body:
        holders.append(body)
    return [b for h in holders if isinstance(h.get("content"), list) for b in h["content"] if isinstance(b, dict)]


Mutation = Callable[[Any, st.DataObject], Any]


def generic(body: Any, data: st.DataObject) -> Any:
    """Any node of the body dropped or replaced with any JSON value."""
    path = data.draw(st.sampled_from(_paths(body)))
    return _set(body, path, data.draw(JSON_VALUES), drop=data.draw(st.booleans()))


def on_message(field: str) -> Mutation:
    def mutate(body: Any, data: st.DataObject) -> Any:
        messages = [m for m in _messages(body) if isinstance(m, dict)]
        if not messages:
            return generic(body, data)
        message = data.draw(st.sampled_from(messages))
        if data.draw(st.booleans()):
            message.pop(field, None)
        else:
            message[field] = data.draw(JSON_VALUES)
        return body
    return mutate


def on_block(kind: str | None, field: str) -> Mutation:
    def mutate(body: Any, data: st.DataObject) -> Any:
        found = [b for b in _all_blocks(body) if kind is None or b.get("type") == kind]
        if not found:
            return generic(body, data)
        block = data.draw(st.sampled_from(found))
        if data.draw(st.booleans()):
            block.pop(field, None)
        else:
            block[field] = data.draw(JSON_VALUES)
        return body
    return mutate


def on_key(key: str, values: st.SearchStrategy[Any] = JSON_VALUES) -> Mutation:
    def mutate(body: Any, data: st.DataObject) -> Any:
        if not isinstance(body, dict):
            return generic(body, data)
        body[key] = data.draw(values)
        return body
    return mutate


def on_usage(body: Any, data: st.DataObject) -> Any:
    if not isinstance(body, dict):
        return generic(body, data)
    usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
    key = data.draw(st.sampled_from(["input_tokens", "output_tokens", "cache_read_input_tokens",
                                     "cache_creation_input_tokens", "server_tool_use", "cache_creation"]))
    usage[key] = data.draw(st.one_of(st.integers(min_value=-(10**12), max_value=-1),
                                     st.sampled_from(["12", "", "-3", "1e3"]),
                                     JSON_VALUES))
    body["usage"] = usage
    return body


def huge(body: Any, data: st.DataObject) -> Any:
    path = data.draw(st.sampled_from(_paths(body)))
    big = data.draw(st.sampled_from([deep(60), deep(400), deep(900), "x" * 200_000, list(range(5_000)),
                                     [{"type": "text", "text": "t"}] * 3_000]))
    return _set(body, path, big)


MUTATIONS: list[Mutation] = [
    generic, generic, generic, huge, on_usage,
    on_message("role"), on_message("content"),
    on_block(None, "type"), on_block("tool_use", "id"), on_block("tool_use", "name"), on_block("tool_use", "input"),
    on_block("tool_result", "tool_use_id"), on_block("tool_result", "content"), on_block("tool_result", "is_error"),
    on_block("text", "text"), on_block("thinking", "signature"),
    on_key("messages"), on_key("content"), on_key("tools"), on_key("system"), on_key("stop_reason"),
    on_key("stop_reason", st.sampled_from([None, "", "tool_use ", "weird_new_reason", "END_TURN"])),
    on_key("thread"),
    on_key("thread", st.fixed_dictionaries({"type": st.just("continue"), "previous_message_id": JSON_VALUES})),
    on_key("context_management"), on_key("context_management", st.fixed_dictionaries({"edits": JSON_VALUES})),
    on_key("output_config"),
    on_key("output_config", st.fixed_dictionaries({"task_budget": JSON_VALUES, "effort": JSON_VALUES})),
    on_key("model"), on_key("type"), on_key("id"), on_key("role"), on_key("effort"), on_key("betas"),
]


class Case:
    """Mutated exchanges, shown in a failure as the seed file and what was done to it (the bodies
    themselves can be hundreds of kilobytes)."""

    def __init__(self, name: str, exchanges: list[Exchange], log: list[str]) -> None:
        self.name, self.exchanges, self.log = name, exchanges, log

    def __repr__(self) -> str:
        return f"Case({self.name!r}, {self.log})"


@st.composite
def mutated_exchanges(draw: st.DrawFn) -> Case:
    """A real recording's Messages exchanges with one to four of its bodies mutated."""
    data = draw(st.data())
    name, originals = draw(st.sampled_from(real_exchanges()))
    bodies = [[copy.deepcopy(e.request_body), copy.deepcopy(e.response_body)] for e in originals]
    log = []
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        which = draw(st.integers(min_value=0, max_value=len(bodies) - 1))
        side = draw(st.integers(min_value=0, max_value=1))
        pair = bodies[which]
        if pair[side] is None:
            pair[side] = {}
        mutation = draw(st.sampled_from(MUTATIONS))
        log.append(f"exchange {which} {('request', 'response')[side]}: {getattr(mutation, '__qualname__', mutation)}")
        pair[side] = mutation(pair[side], data)
    exchanges = []
    for e, (request, response) in zip(originals, bodies, strict=True):
        # Bodies that are no longer objects go in as the JSON text a recorder would have written.
        exchanges.append(exchange_from_http(
            e.index, e.method, e.url, e.request_headers,
            request if isinstance(request, dict | list) or request is None else json.dumps(request),
            e.status, e.response_headers,
            response if isinstance(response, dict | list) or response is None else json.dumps(response),
        ))
    return Case(name, exchanges, log)


def run_result(trace: Trace, findings: list[Any]) -> RunResult:
    return RunResult(run_id="fuzz[claude-opus-4-8-default-r0]", scenario="fuzz", scenario_path="fuzz.yaml",
                     model="claude-opus-4-8", effort=None, repeat=0, mode="replay", status="failed",
                     outcome=trace.outcome, findings=findings, steps=len(trace.calls), usage=usage_of(trace),
                     trace=trace)


def check_everything(exchanges: list[Exchange], *, report: bool = False) -> None:
    """The whole path of `harness check` and of a stored result, on one trace; raises on any crash."""
    trace = build_trace(exchanges, "fuzz.yaml")
    findings = check_trace(trace)
    check_trace(trace, whole_run=True)
    for finding in findings:
        assert isinstance(finding.message, str) and finding.severity in ("error", "warning")
    # What --format json writes, through a strict UTF-8 stream like a pipe's.
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    json.dump({"findings": [f.to_dict() for f in findings], "notes": trace.notes}, out, ensure_ascii=False)
    out.flush()
    stored = json.loads(json.dumps(trace.to_dict()))
    again = Trace.from_dict(stored)
    assert [f.to_dict() for f in check_trace(again)] == [f.to_dict() for f in findings]
    if report:
        page = render_report([run_result(trace, findings)])
        assert "<html" in page[:500]
        page.encode("utf-8")  # build_report writes it as UTF-8


# --- (a) structural mutations of real exchanges -------------------------------------------------


@FUZZ
@given(mutated_exchanges())
def test_mutated_exchanges_never_crash_the_rules(case: Case) -> None:
    check_everything(case.exchanges)


@settings(FUZZ, max_examples=examples(60))
@given(mutated_exchanges())
def test_mutated_exchanges_never_crash_the_report(case: Case) -> None:
    check_everything(case.exchanges, report=True)


# --- (b) SSE text -------------------------------------------------------------------------------

START = {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
                                              "content": [], "stop_reason": None, "usage": {"input_tokens": 3}}}
SSE_EVENTS: list[Any] = [
    START,
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_start", "index": 1,
     "content_block": {"type": "tool_use", "id": "t1", "name": "f", "input": {}}},
    {"type": "content_block_start", "index": 2, "content_block": {"type": "thinking", "thinking": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}},
    {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": '{"a": [1, '}},
    {"type": "content_block_delta", "index": 2, "delta": {"type": "thinking_delta", "thinking": "hm"}},
    {"type": "content_block_delta", "index": 2, "delta": {"type": "signature_delta", "signature": "sig"}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "citations_delta", "citation": {"x": 1}}},
    {"type": "content_block_delta", "index": 7, "delta": {"type": "text_delta", "text": "lost"}},
    {"type": "content_block_delta", "index": "0", "delta": {"type": "text_delta", "text": "str index"}},
    {"type": "content_block_delta", "index": 0, "delta": None},
    {"type": "content_block_delta", "index": 0, "delta": {"type": ["odd"]}},
    {"type": "content_block_stop", "index": 1},
    {"type": "content_block_stop", "index": -1},
    {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}},
    {"type": "message_delta", "delta": [], "usage": "lots"},
    {"type": "message_stop"},
    {"type": "ping"},
    {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    {"type": "error", "error": "text"},
    {"type": "message_start", "message": None},
    {"type": "message_start", "message": {"content": "not a list"}},
    {"type": None}, {"type": ["a"]}, {"type": {"a": 1}}, [], 5, "text", None,
]


def _frame(event: Any, name: str | None, newline: str) -> str:
    data = json.dumps(event)
    head = f"event: {name}{newline}" if name is not None else ""
    return f"{head}data: {data}{newline}{newline}"


@st.composite
def sse_texts(draw: st.DrawFn) -> str:
    events = draw(st.lists(st.sampled_from(SSE_EVENTS), max_size=20))
    newline = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    frames = []
    for event in events:
        name = event.get("type") if isinstance(event, dict) else None
        label = draw(st.sampled_from([name, None, "ping", "error", "\x00"])) if isinstance(name, str | None) else None
        frames.append(_frame(event, label, newline))
    text = "".join(frames)
    cut = draw(st.integers(min_value=0, max_value=len(text)))
    text = text[:cut] if draw(st.booleans()) else text
    garbage = draw(st.sampled_from(["", ": comment\n", "data: {\"type\": \n\n", "data\n\n",
                                    "event:\n", "\x00\xff\ufffd",
                                    "\ud800", "data: [1,2\n\n", "retry: 5\nid: 1\n", "\r\r\r"]))
    at = draw(st.integers(min_value=0, max_value=len(text)))
    return text[:at] + garbage + text[at:]


@settings(FUZZ, max_examples=examples(200))
@given(sse_texts())
def test_reassemble_stream_never_raises(text: str) -> None:
    result = reassemble_stream(text)
    assert result.message is None or isinstance(result.message, dict)
    assert all(isinstance(note, str) for note in result.notes)
    json.dumps(result.message)


@settings(FUZZ, max_examples=examples(200))
@given(st.binary(max_size=400) | st.text(max_size=400))
def test_reassemble_stream_takes_any_garbage(raw: bytes | str) -> None:
    text = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw
    reassemble_stream(text)
    reassemble_stream("event: message_start\n" + text)


@settings(FUZZ, max_examples=examples(60))
@given(sse_texts())
def test_a_garbled_stream_in_an_exchange_is_checked(text: str) -> None:
    request = {"model": "claude-opus-4-8", "max_tokens": 5, "stream": True,
               "messages": [{"role": "user", "content": "q"}]}
    exchange = exchange_from_http(0, "POST", MESSAGES_URL, {}, json.dumps(request), 200,
                                  {"content-type": "text/event-stream"}, text.encode("utf-8", "surrogatepass"))
    check_everything([exchange])


# --- (c) whole files ----------------------------------------------------------------------------


def run_check(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    code = main(["check", "--format", "json", str(path)])
    out = capsys.readouterr().out
    assert code in (0, 1, 2), code
    document = json.loads(out)
    assert set(document) == {"files", "skipped", "not_regular_files"}
    assert len(document["files"]) == 1 and document["skipped"] == []
    report = document["files"][0]
    assert set(report) == {"path", "threads", "calls", "findings", "notes", "error"}
    assert report["path"] == str(path)
    if code == 2:
        assert isinstance(report["error"], str) and str(path) in report["error"]
    else:
        assert report["error"] is None
    for finding in report["findings"]:
        assert {"code", "severity", "thread", "step", "message"} <= set(finding)
    return code, report


@functools.lru_cache(maxsize=1)
def _gzip_bomb() -> bytes:
    """About 70 KB of gzip that inflates to 80 MB, past the cap on inflated bodies."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return b"".join([*(packer.compress(bytes(1 << 20)) for _ in range(80)), packer.flush()])


def _laughs(levels: int) -> bytes:
    lines = [b"l0: &l0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]".encode() for i in range(1, levels)]
    return b"\n".join(lines) + b"\n"


# Top-level keys an attacker adds to a recording: each must end in a note or the file's error line.
HOSTILE_PREFIXES = (
    lambda: _laughs(9),                                            # an alias bomb (10**9 nodes expanded)
    lambda: b"loop: &loop [1, *loop]\n",                           # an alias cycle
    lambda: b"n: " + b"7" * 4400 + b"\n",                          # an integer Python will not read
    lambda: b"recorded_at: 2024-02-30T00:00:00Z\n",                # a date that never was
    lambda: b"name: \"\\e[2K\\e[1A\\rALL GOOD\"\n",             # terminal escapes
    lambda: b"deep: " + b"[" * 900 + b"]" * 900 + b"\n",           # nesting near libyaml's own limit
    lambda: b"bomb: !!binary '" + base64.b64encode(_gzip_bomb()) + b"'\n",
)


def _garble(data: bytes, draw: st.DrawFn) -> bytes:
    how = draw(st.sampled_from(["cut", "cut", "flip", "splice", "nest", "binary", "gzip", "hostile", "bomb-body"]))
    at = draw(st.integers(min_value=0, max_value=len(data)))
    if how == "cut":
        return data[:at]
    if how == "flip":
        size = draw(st.integers(min_value=1, max_value=8))
        return data[:at] + draw(st.binary(min_size=size, max_size=size)) + data[at + size:]
    if how == "splice":
        piece = draw(st.sampled_from([b"]", b"}", b"{", b"[", b": ", b"\n  - ", b"\t", b"!!binary |\n  @@@@\n",
                                      b"!binary \"not base64\"", b"\"\\ud800\"", b"- - - -", b"&a *a", b"*nope",
                                      b"\x00", b"\xff\xfe", b"'", b'"']))
        return data[:at] + piece + data[at:]
    if how == "nest":
        return b'{"interactions": {"request": ' + data[:at] + b"}}"
    if how == "binary":
        return (b"interactions:\n- request: {method: POST, uri: '" + MESSAGES_URL.encode()
                + b"', body: !!binary 'Zm9v@@@'}\n"
                + b"  response: {status: {code: 200}, body: {string: !!binary '"
                + base64.b64encode(b"\x1f\x8b" + data[:at]) + b"'}}\n")
    if how == "hostile":
        return draw(st.sampled_from(HOSTILE_PREFIXES))() + data
    if how == "bomb-body":
        return (b"interactions:\n- request: {method: POST, uri: '" + MESSAGES_URL.encode() + b"', body: '{}'}\n"
                + b"  response: {status: {code: 200}, body: {string: !!binary '"
                + base64.b64encode(_gzip_bomb()) + b"'}}\n")
    return gzip.compress(data)[:at]  # a gzipped file with no gzip reader in front


@st.composite
def garbled_files(draw: st.DrawFn) -> tuple[str, bytes]:
    path = draw(st.sampled_from(seed_files()))
    data = path.read_bytes()
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        data = _garble(data, draw)
    return path.suffix, data


@settings(FUZZ, max_examples=examples(100), suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                         HealthCheck.function_scoped_fixture])
@given(garbled_files())
def test_garbled_files_read_or_fail_cleanly(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            case: tuple[str, bytes]) -> None:
    suffix, data = case
    path = tmp_path / f"garbled{suffix}"
    path.write_bytes(data)
    run_check(path, capsys)


def test_a_broken_file_does_not_stop_the_others(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "a-broken.yaml"
    broken.write_text("interactions:\n- request: [\n")
    good = real_exchanges()[0][0]
    source = next(p for p in _recordings() if p.name == good)
    (tmp_path / f"b-good{source.suffix}").write_bytes(source.read_bytes())
    code = main(["check", "--format", "json", str(tmp_path)])
    files = json.loads(capsys.readouterr().out)["files"]
    assert code == 2
    assert [f["error"] is not None for f in files] == [True, False]
    assert str(broken) in files[0]["error"] and files[1]["calls"] > 0


YAML_PIECES = ("a", "1", "-1", "9" * 4400, "2024-02-30", "2024-02-30T25:61:00Z", "&x", "*x", "&y", "*y", "[", "]",
               "{", "}", ", ", ": ", "\n", "\n  ", "- ", "!!binary", "!!int", "!!timestamp", "!ruby/object:X", "? ",
               "<<: ", "'\\ud800'", '"\\ud800"', "~", "\x1b[2K", "#")


@settings(FUZZ, max_examples=examples(300))
@given(st.lists(st.sampled_from(YAML_PIECES), max_size=40), st.booleans())
def test_any_yaml_loads_or_is_an_input_error(pieces: list[str], recording: bool) -> None:
    """The one loader, on texts made of what hostile files are made of: anchors, aliases, tags,
    long integers, impossible dates, merge keys, escapes. Never another exception, never a hang."""
    text = "".join(pieces)
    try:
        parse_yaml(text, "fuzz.yaml", recording=recording)
    except InputError as exc:
        assert exc.path == "fuzz.yaml"


def test_check_prints_a_file_name_with_terminal_escapes_inert(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    evil = tmp_path / "x\x1b[2K\x1b[1A\rALL GOOD.yaml"
    evil.write_text("interactions: []\n")
    main(["check", str(evil)])
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\r" not in out and "x\\x1b[2K\\x1b[1A\\x0dALL GOOD.yaml" in out


# --- regressions: the minimal input of each crash the fuzzing found -----------------------------


def call(messages: Any, content: Any = None, *, index: int = 0, request: dict[str, Any] | None = None,
         **response: Any) -> Exchange:
    """One answered Messages call with the given request messages and response fields."""
    body = {"model": "claude-opus-4-8", "max_tokens": 50, "messages": messages, **(request or {})}
    answer = {"id": f"msg_{index}", "type": "message", "role": "assistant", "stop_reason": "end_turn",
              "content": [{"type": "text", "text": "ok"}] if content is None else content,
              "usage": {"input_tokens": 3, "output_tokens": 1}, **response}
    return exchange_from_http(index, "POST", MESSAGES_URL, {"anthropic-version": "2023-06-01"}, body, 200, {}, answer)


def checked(*exchanges: Exchange) -> tuple[Trace, list[str]]:
    trace = build_trace(list(exchanges), "regression.yaml")
    check_everything(list(exchanges), report=True)
    return trace, [f.code for f in check_trace(trace, whole_run=True)]


def test_a_response_block_that_is_not_an_object() -> None:
    # of_type / _tool_use_ids / H001 called .get on each block of call.content: 'float' has no 'get'.
    trace, _ = checked(call([{"role": "user", "content": "q"}],
                            [1.5, {"type": "tool_use", "id": "t", "name": "f", "input": {}}],
                            stop_reason="tool_use"))
    assert trace.calls[0].content[0] == {"type": "float", "value": 1.5}


def test_a_stop_reason_that_is_a_list_is_an_unknown_stop_reason() -> None:
    # L006 looked the stop_reason up in a frozenset: unhashable type 'list'.
    trace, _ = checked(call([{"role": "user", "content": "q"}], stop_reason=["end_turn"]))
    assert trace.calls[0].stop_reason == '["end_turn"]'
    trace.outcome = Outcome(status="completed")
    assert [f.code for f in check_trace(trace)] == ["L006"]  # ended as completed on an unknown stop_reason
    assert any("stop_reason is a list" in note for note in trace.notes)


def test_a_tool_use_whose_name_or_id_is_not_a_string() -> None:
    # L002 and T006 looked the name up in the set of declared tools: unhashable type 'list'.
    tools = [{"name": "f", "input_schema": {"type": "object"}}]
    use = {"type": "tool_use", "id": 7, "name": ["f"], "input": {}}
    first = call([{"role": "user", "content": "q"}], [use], request={"tools": tools}, stop_reason="tool_use")
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": 7, "content": "r"}]}
    second = call([{"role": "user", "content": "q"}, {"role": "assistant", "content": [use]}, result], index=1,
                  request={"tools": tools})
    trace, codes = checked(first, second)
    assert trace.calls[0].content[0]["name"] == '["f"]' and trace.calls[0].content[0]["id"] == "7"
    assert "T006" in codes  # the tool named ["f"] is not declared, and its result is not an error
    assert "T001" not in codes  # tool_use id 7 and tool_use_id 7 still pair up


def test_a_loose_continuation_whose_new_message_has_a_list_role() -> None:
    # Thread reconstruction tested the appended message's role against a set: unhashable type 'list'.
    user = {"role": "user", "content": "q"}
    first = call([user, {"role": "assistant", "content": "a1"}, {"role": "user", "content": "u2"}])
    second = call([user, {"role": "assistant", "content": "edited"}, {"role": "user", "content": "u2"},
                   {"role": ["user"], "content": "x"}], index=1)
    trace, _ = checked(first, second)
    # A message with no usable role vouches for no continuation: the second call opens its own thread.
    assert len(trace.threads) == 2
    assert any("messages[3] has role ['user']" in note for note in trace.notes)


def test_a_context_management_edit_whose_type_is_a_list() -> None:
    # R002 looked the edit type up in the dict of edit betas: unhashable type 'list'.
    checked(call([{"role": "user", "content": "q"}],
                 request={"context_management": {"edits": [{"type": ["compact"]}]}}))


@pytest.mark.parametrize("count", ["12", -3, [1], {"n": 1}, 2.5, True])
def test_usage_counts_that_are_not_counts(count: Any) -> None:
    # The report's ledger did int(usage.get(...)): a list raised TypeError, "\x00" ValueError.
    trace, _ = checked(call([{"role": "user", "content": "q"}], usage={"input_tokens": count, "output_tokens": 2}))
    assert trace.calls[0].usage == {"output_tokens": 2}
    assert any("usage input_tokens not a non-negative integer" in note for note in trace.notes)


def test_a_lone_surrogate_reaches_the_output_escaped(tmp_path: Path) -> None:
    # --format json wrote the finding (quoting the tool name "\ud800") with ensure_ascii=False to a UTF-8
    # stdout: UnicodeEncodeError. The report page had the same fault.
    tools = [{"name": "f", "input_schema": {"type": "object"}}]
    answer = {"id": "m", "type": "message", "role": "assistant", "stop_reason": "tool_use", "usage": {},
              "content": [{"type": "tool_use", "id": "t", "name": "\ud800", "input": {}}]}
    request = {"model": "claude-opus-4-8", "max_tokens": 5, "tools": tools,
               "messages": [{"role": "user", "content": "q"}]}
    path = tmp_path / "surrogate.json"
    path.write_text(json.dumps({"interactions": [{
        "request": {"method": "POST", "uri": MESSAGES_URL, "headers": {}, "body": json.dumps(request)},
        "response": {"status": {"code": 200}, "headers": {}, "body": {"string": json.dumps(answer)}}}]}))
    for fmt in ("json", "text"):
        stdout = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")  # strict, like a pipe
        real, sys.stdout = sys.stdout, stdout
        try:
            code = main(["check", "--format", fmt, str(path)])
        finally:
            sys.stdout = real
        stdout.seek(0)
        out = stdout.read()
        assert code in (0, 1) and "\\ud800" in out
        if fmt == "json":
            finding = json.loads(out)["files"][0]["findings"][0]
            assert "\\ud800" in finding["message"]  # escaped once, where the finding was made
    trace = build_trace(read_exchanges(path)[0], str(path))
    render_report([run_result(trace, check_trace(trace))]).encode("utf-8")


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 600, 990])
def test_a_body_nested_too_deeply_is_noted_not_walked(depth: int) -> None:
    # normalize/canonical/json.dumps recurse per level: a body json.loads accepts (~1,000 levels) blew the stack.
    notes: list[str] = []
    deep_answer = {"type": "message", "content": [{"type": "text", "text": "x", "citations": deep(depth)}]}
    deep_text = '{"type": "message", "content": ' + "[" * depth + "]" * depth + "}"
    for body in (deep_answer, deep_text):
        exchange = exchange_from_http(0, "POST", MESSAGES_URL, {}, {"model": "m", "messages": []}, 200, {}, body,
                                      notes=notes)
        assert exchange.response_body is None
        check_everything([exchange], report=True)
    assert any("nested deeper than" in note for note in notes)


@pytest.mark.parametrize("depth", [MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1])
def test_brackets_and_escapes_inside_strings_do_not_change_the_depth_a_body_is_judged_at(depth: int) -> None:
    # The depth is read off the text: quotes, escaped quotes and backslashes, brackets in strings.
    tricky = ['\\"]]}}', '[[{\\', '"\\\\"', "\u005b", "{[é☃"]
    value: Any = tricky
    for level in range(depth - 1):
        value = {"k\\": value, "s": tricky[level % len(tricky)]} if level % 2 else [value, "]}\\\"["]
    for ensure_ascii in (True, False):
        text = json.dumps(value, ensure_ascii=ensure_ascii)
        _, parsed = _decode_body(text, {}, notes := [], "body")
        assert (parsed is None) == (depth > MAX_DEPTH) and bool(notes) == (depth > MAX_DEPTH)


def test_a_file_nested_deeper_than_json_reads_is_a_cassette_error(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    # json.loads raised RecursionError, which the reader did not turn into a CassetteError.
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000)
    with pytest.raises(CassetteError, match="nested too deeply"):
        read_exchanges(path)
    code, report = run_check(path, capsys)
    assert code == 2 and "nested too deeply" in report["error"]
    body = tmp_path / "deep-body.json"
    body.write_text(json.dumps({"interactions": [{"request": {"method": "POST",
                                                              "uri": MESSAGES_URL, "body": "[" * 100_000},
                                                  "response": {"status": {"code": 200},
                                                               "body": {"string": "[" * 100_000}}}]}))
    code, report = run_check(body, capsys)
    assert code in (0, 1) and any("nested deeper than" in note for note in report["notes"])
