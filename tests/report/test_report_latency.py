"""The report's latency is the model's: recorded for replays, n/a when a cassette kept none, never the replay's."""

from __future__ import annotations

import re
from collections.abc import Callable

from report_data import exchange, result_for, rich_trace

from harness.cost import load_prices
from harness.report import markdown_summary, prepare, render_report
from harness.results._model import RunResult
from harness.trace import build_trace

USER = [{"role": "user", "content": "hi"}]
TEXT = [{"type": "text", "text": "done"}]


def one_call_run(*, recorded: float | None, replay: bool = True, effort: str = "high") -> RunResult:
    ex = exchange(0, USER, TEXT, duration_s=recorded if recorded is not None else 0.004,
                  replay_s=0.004 if replay else None)
    if replay and recorded is None:
        ex.recorded_duration_s = ex.recorded_started_at = None  # a cassette recorded before timings were kept
    trace = build_trace([ex], "run")
    result = result_for(trace, effort=effort, duration_s=0.02 if replay else 4.0)
    result.mode = "replay" if replay else "live"
    return result


def test_comparison_latency_of_replays_is_the_recorded_one() -> None:
    data = prepare([one_call_run(recorded=2.0), one_call_run(recorded=4.0)], load_prices())
    (cell,) = data.comparison.overall
    assert cell.latency_median == 3.0 and cell.latency_recorded and cell.latency_runs == 2
    assert "3.00s recorded" in markdown_summary(data)
    assert re.search(r"<td class=\"num\">3\.00s recorded</td>",
                     render_report([one_call_run(recorded=2.0), one_call_run(recorded=4.0)]))


def test_replays_without_recorded_latency_say_na_not_the_replay_time(with_bodies: Callable[[str], str]) -> None:
    results = [one_call_run(recorded=None), one_call_run(recorded=None)]
    (cell,) = prepare(results, load_prices()).comparison.overall
    assert cell.latency_median is None and cell.latency_p90 is None and cell.latency_runs == 0
    page = with_bodies(render_report(results))
    assert "<td class=\"num\">n/a</td>" in page
    assert "latency n/a (replayed; no recorded time)" in page
    assert "20 ms" not in page and " 4 ms" not in page


def test_an_old_replay_result_without_the_replayed_flag_is_not_taken_for_model_latency(
    with_bodies: Callable[[str], str],
) -> None:
    result = one_call_run(recorded=None, replay=False)
    result.mode = "replay"  # written before exchanges said they were replayed: duration_s is the replay's
    (cell,) = prepare([result], load_prices()).comparison.overall
    assert cell.latency_median is None
    assert "latency n/a (replayed; no recorded time)" in with_bodies(render_report([result]))


def test_live_runs_keep_their_measured_wall_time_unlabelled(with_bodies: Callable[[str], str]) -> None:
    results = [one_call_run(recorded=1.0, replay=False)]
    (cell,) = prepare(results, load_prices()).comparison.overall
    assert cell.latency_median == 4.0 and not cell.latency_recorded
    page = with_bodies(render_report(results))
    assert "<td class=\"num\">4.00s</td>" in page
    # No latency on the page says "recorded" (the sentence naming the price table may use the word).
    assert not re.search(r"\ds recorded", re.sub(r"<script.*?</script>", "", page, flags=re.S))


def test_a_cell_with_some_unknown_latencies_says_how_many_runs_it_is_over() -> None:
    data = prepare([one_call_run(recorded=2.0), one_call_run(recorded=None)], load_prices())
    (cell,) = data.comparison.overall
    assert cell.latency_median == 2.0 and cell.latency_runs == 1
    assert "2.00s recorded (1/2 runs)" in markdown_summary(data)


def test_the_rich_fixture_step_shows_recorded_latency(with_bodies: Callable[[str], str]) -> None:
    assert "latency 2.30s recorded" in with_bodies(render_report([result_for(rich_trace())]))
