"""The page's run details are built straight from the trace (`_details`), the diff page's steps
through view objects (`_view`): both must show the same steps, blocks and pairings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from report_data import finding_at, matrix, result_for, rich_trace, run_details

from harness.cost._cost import price_calls
from harness.report import build_report
from harness.report._data import RunEntry, expected_codes, prepare, tokens
from harness.report._details import _usage
from harness.report._details import run_details as details_of
from harness.report._view import BlockView, StepView, _common_prefix, pretty_json, thread_views
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
