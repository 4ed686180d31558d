"""The page's run details are built straight from the trace (`_details`), the diff page's steps
through view objects (`_view`): both must show the same steps, blocks and pairings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from report_data import exchange, finding_at, matrix, result_for, rich_trace, run_details

from harness.cost._cost import price_calls
from harness.report import build_report
from harness.report._data import RunEntry, expected_codes, prepare, seconds, tokens, usd
from harness.report._details import NotPlain, _compact, _says, _usage
from harness.report._details import run_details as details_of
from harness.report._view import BlockView, StepView, _common_prefix, pretty_json, thread_views
from harness.trace import build_trace
from harness.trace._model import Outcome


def _block(view: BlockView) -> dict[str, Any]:
    """What the page's data says of a block, from its view (empty values absent, as in the data)."""
    shown: dict[str, Any] = {"k": view.kind, "t": view.text, "n": view.name, "id": view.id, "err": view.is_error,
                             "a": view.anchor}
    if view.kind == "tool_use":
        shown["rc"] = view.result_count
        if view.result is not None:
            shown["r"] = {"t": view.result.text, "err": view.result.is_error, "step": view.result_step}
    return shown


def _data_block(data: dict[str, Any]) -> dict[str, Any]:
    shown = {"k": data["k"], "t": data.get("t", ""), "n": data.get("n", ""), "id": data.get("id", ""),
             "err": data.get("err", False), "a": data.get("a", "")}
    if data["k"] == "tool_use":
        shown["rc"] = data["rc"]
        if "r" in data:
            shown["r"] = {"t": data["r"].get("t", ""), "err": data["r"].get("err", False), "step": data["r"]["step"]}
    return shown


def _step(view: StepView) -> dict[str, Any]:
    return {"a": view.anchor, "step": view.step, "call": view.call_index, "model": view.model,
            "stop": view.stop_reason or "—", "from": view.delta_from, "edited": view.history_edited,
            "att": view.attempts, "f": [f.code for f in view.findings], "sys": view.system,
            "tools": None if view.tools is None else ", ".join(view.tools) or "none",
            "delta": [(m.index, m.role, m.previous_response, [_block(b) for b in m.blocks]) for m in view.delta],
            "resp": [_block(b) for b in view.response]}


def _data_step(data: dict[str, Any]) -> dict[str, Any]:
    return {"a": data["a"], "step": data["step"], "call": data["call"], "model": data["model"], "stop": data["stop"],
            "from": data["from"], "edited": data.get("edited", False), "att": data.get("att", []),
            "f": [f["c"] for f in data.get("f", [])], "sys": data.get("sys"), "tools": data.get("tools"),
            "delta": [(m["i"], m["role"], m.get("prev", False), [_data_block(b) for b in m.get("b", [])])
                      for m in data.get("delta", [])],
            "resp": [_data_block(b) for b in data.get("resp", [])]}


def test_the_pages_steps_show_what_the_diff_pages_views_of_the_same_trace_show(tmp_path: Path) -> None:
    results = matrix()
    details = run_details(build_report(results, tmp_path / "report").read_text(encoding="utf-8"))
    compared = 0
    for n, result in enumerate(results, start=1):
        trace = result.trace
        if trace is None:
            assert "threads" not in details[n]
            continue
        views = thread_views(n, trace, result.findings, price_calls(trace), frozenset(expected_codes(result)),
                             replay_run=result.mode == "replay")
        threads = details[n]["threads"]
        assert [(t["id"], t["a"]) for t in threads] == [(v.id, v.anchor) for v in views]
        for thread, view in zip(threads, views, strict=True):
            assert [_data_step(s) for s in thread["steps"]] == [_step(s) for s in view.steps]
            compared += len(view.steps)
    # The rich trace has tool results paired and pointed at, an edited history and findings on steps.
    assert compared >= 4 * 24


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(value=_JSON | st.dictionaries(st.text(max_size=5), st.none() | st.booleans() | st.integers() | st.floats()
                                     | st.text(), max_size=5))
def test_pretty_json_writes_what_json_dumps_writes(value: Any) -> None:
    # Its fast path for flat objects and scalars must give json's own text byte for byte: the page is
    # compared with older ones, and NaN or a nested value must still take json's way.
    assert pretty_json(value) == json.dumps(value, indent=2, ensure_ascii=False, default=str)


def test_pretty_json_writes_keys_and_values_as_json_does() -> None:
    value = {"q\"uote": "line\nbreak\t\u2028é\x00", "n": -0.0, "big": 10**30, "t": True, "f": False, "z": None,
             "x": 1e-300, "nan": float("nan")}
    assert pretty_json(value) == json.dumps(value, indent=2, ensure_ascii=False, default=str)
    del value["nan"]
    assert pretty_json(value) == json.dumps(value, indent=2, ensure_ascii=False, default=str)
    assert pretty_json({1: "a"}) == '{\n  "1": "a"\n}' and pretty_json({}) == "{}" and pretty_json([]) == "[]"


@settings(max_examples=300, deadline=None)
@given(counts=st.dictionaries(st.sampled_from(["input_tokens", "output_tokens", "cache_creation_input_tokens",
                                               "cache_read_input_tokens"]),
                              st.integers(min_value=0, max_value=2**60) | st.integers(min_value=0, max_value=2000)))
def test_a_steps_usage_line_writes_each_count_as_tokens_writes_it(counts: dict[str, int]) -> None:
    # `_usage` writes a count under 1,000 itself: it must say what `tokens` says of every count.
    written = [tokens(counts.get(k, 0)) for k in ("input_tokens", "output_tokens", "cache_creation_input_tokens",
                                                    "cache_read_input_tokens")]
    assert _usage(counts) == "in {} · out {} · cache write {} · cache read {}".format(*written)


def test_a_runs_details_lose_a_secret_and_keep_a_lone_surrogate_as_its_escape(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The details are redacted, then encoded once with a lone surrogate (valid JSON, not UTF-8) escaped.
    secret = "corp-gateway-Credential-4471"
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", secret)
    trace = rich_trace()
    trace.outcome = Outcome(status="completed", final_text=f"x\ud83d{secret} ¿\udfff")
    page = build_report([result_for(trace)], tmp_path / "report").read_text(encoding="utf-8")
    [details] = run_details(page).values()
    assert details["outcome"]["final"] == "x\ud83d[REDACTED] ¿\udfff"  # JSON.parse reads the escape back
    assert secret not in page


def test_the_common_prefix_of_two_histories_is_where_they_first_differ() -> None:
    a, b, c = {"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}
    assert _common_prefix([], [a]) == 0
    assert _common_prefix([a, b], [dict(a), dict(b), c]) == 2  # re-sent whole (equal, not the same objects)
    assert _common_prefix([a, b, c], [a, b]) == 2  # the new one is shorter
    assert _common_prefix([a, b, c], [a, {"role": "assistant", "content": "edited"}, c]) == 1
    assert _common_prefix([a, b], [b, a]) == 0


@pytest.mark.parametrize("href", [None, "#run-1"])
def test_a_steps_finding_is_shown_as_the_runs_list_shows_it_linked_to_the_step(href: str | None) -> None:
    # A step shows the run's own entry for a finding that links to it; one the run's list links
    # elsewhere (a RunEntry made in code) is shown at its step linked to the step all the same.
    trace = rich_trace()
    result = result_for(trace, findings=[finding_at(trace, "T005", 1, 2, "slow")])
    made: list[dict[str, Any]] = []

    def render(run: RunEntry, costs: list[Any]) -> None:
        if href is not None:
            run.findings[0].href = href
        made.append(details_of(run, costs))

    prepare([result], render=render)
    [details] = made
    [listed] = details["f"]
    [step] = [s for s in details["threads"][0]["steps"] if "f" in s]
    assert step["f"] == [{**listed, "h": "#" + step["a"]}]
    assert listed["h"] == (href or "#" + step["a"]) and listed["c"] == "T005" and listed["m"] == "slow"


class _Text(str):
    """A str subclass, as a result built in code may hold: the details' fast paths take exact strs only."""


def test_a_trace_of_odd_shapes_gives_the_steps_the_diff_pages_views_give() -> None:
    # The details read the common shapes inline (a str content, a text block, a tool_result's text, a
    # string system prompt and tool names); every other shape must still come out as the views have it.
    odd_tools: list[Any] = [{"name": "get_customer"}, {"type": "web_search_20250305"}, {"name": 7}, "bare"]
    h1: list[Any] = [{"role": "user", "content": _Text("subclassed text")}, "not a message",
                     {"role": 5, "content": [{"type": "text", "text": 12}, {"type": "text", "text": ""}, 3]}]
    step1 = [{"type": "text", "text": "calling"}, {"type": "tool_use", "id": "tu_1", "name": "get_customer",
                                                 "input": {"id": "c-1", "n": 1.5}},
             {"type": "tool_use", "id": "tu_2", "name": "get_customer", "input": {}}]
    h2 = [*h1, {"role": "assistant", "content": step1}, {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "tu_1", "content": [{"type": "text", "text": "a"}, {"x": 1}]},
        {"type": "tool_result", "tool_use_id": "tu_2", "content": _Text(""), "is_error": True},
        {"type": "tool_result", "tool_use_id": "tu_9", "content": ""}, {"type": "image"}]}]
    step2 = [{"type": "text", "text": ""}, {"type": "thinking", "thinking": "t", "signature": "s"}]
    h3 = [*h2, {"role": "assistant", "content": [{"type": "text", "text": "edited"}]}, {"role": "user", "content": ""}]
    system_blocks = [{"type": "text", "text": "You help."}, "plain"]
    exchanges = [exchange(0, h1, step1, tools=odd_tools, system=_Text("")),
                 exchange(1, h2, step2, tools=[*odd_tools], system=system_blocks,  # type: ignore[arg-type]
                          usage={"input_tokens": 1_234_567, "output_tokens": 999, "cache_read_input_tokens": 1000}),
                 exchange(2, h3, [{"type": "text", "text": "done"}], tools=odd_tools[:2], status=529),
                 exchange(3, h3, [{"type": "text", "text": "done"}], tools=odd_tools[:2], stop_reason=[1]),  # type: ignore[arg-type]
                 exchange(4, [{"role": "user", "content": "again"}], None, status=500)]
    trace = build_trace(exchanges, "run", whole_run=True)
    result = result_for(trace)
    made: list[dict[str, Any]] = []
    prepare([result], render=lambda run, costs: made.append(details_of(run, costs)))
    [details] = made
    views = thread_views(1, trace, result.findings, price_calls(trace), replay_run=True)
    steps = [s for thread in details["threads"] for s in thread["steps"]]
    shown = [s for view in views for s in view.steps]
    assert [_data_step(s) for s in steps] == [_step(s) for s in shown]
    # The texts the views leave to the page's templates: tokens, cost and latency as `_data` writes them.
    for data, view in zip(steps, shown, strict=True):
        written = [tokens(view.usage[k]) for k in ("input_tokens", "output_tokens", "cache_creation_input_tokens",
                                                   "cache_read_input_tokens")]
        assert data["usage"] == "in {} · out {} · cache write {} · cache read {}".format(*written)
        assert data["cost"] == usd(view.cost.total_usd if view.cost else None)
        assert data["lat"] == ("n/a (replayed; no recorded time)" if view.latency_s is None and view.replayed
                               else seconds(view.latency_s) + (" recorded" if view.latency_recorded else ""))
    # Each odd shape was drawn: the 529 retried within its call, the odd stop_reason, the failed call.
    assert [len(s["att"]) for s in steps] == [1, 1, 2, 1] and steps[2]["stop"] == "[1]" and "err" in steps[3]
    assert steps[0]["tools"] == "get_customer, web_search_20250305, 7, bare" and steps[1]["sys"] == "You help.\nplain"


@pytest.mark.parametrize("value", [None, False, True, "", _Text(""), _Text("x"), [], [0], {}, 0, 0.0, -0.0,
                                   NotPlain(""), NotPlain(_Text("")), NotPlain(0.0), NotPlain([]), NotPlain(1.5)])
def test_compact_leaves_out_what_the_four_comparisons_leave_out(value: Any) -> None:
    # `_compact` skips the comparisons for a true value: it must keep and leave out what they do.
    data = {"a": 1, "v": value, "z": "z"}
    kept = {k: v for k, v in data.items() if v is not None and v is not False and v != "" and v != []}
    assert list(_compact(dict(data)).items()) == list(kept.items())
    assert _says(value) == ("v" in kept)
