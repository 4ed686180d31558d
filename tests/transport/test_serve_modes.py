"""`harness serve` in every mode, as a real subprocess: replay, record and live against a local stand-in API."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest
import yaml
from seam_helpers import FAKE_KEY, MODEL
from upstream import upstream

from harness.agents._served_tools import NO_SIMULATED_USER
from harness.cli import main
from harness.transport import read_cassette_metadata

HI: list[Any] = [{"role": "user", "content": "hi"}]


@contextmanager
def serving(*options: str,
            env: dict[str, str] | None = None) -> Iterator[tuple[subprocess.Popen[str], anthropic.Anthropic]]:
    process = subprocess.Popen(
        [sys.executable, "-m", "harness", "serve", "--port", "0", *options],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, **(env or {})},
    )
    try:
        first_line = process.stdout.readline() if process.stdout else ""
        assert first_line.startswith("export ANTHROPIC_BASE_URL=http://127.0.0.1:"), (
            first_line + (process.stderr.read() if process.stderr and process.poll() is not None else "")
        )
        client = anthropic.Anthropic(base_url=first_line.strip().split("=", 1)[1], api_key="placeholder", max_retries=0)
        yield process, client
        client.close()
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=10)


def stop(process: subprocess.Popen[str]) -> str:
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=30)
    return err


def ask(client: anthropic.Anthropic) -> list[str]:
    first = client.messages.create(model=MODEL, max_tokens=8, messages=HI)
    with client.messages.stream(model=MODEL, max_tokens=8, messages=HI) as stream:
        second = stream.get_final_message()
    return [first.content[0].text, second.content[0].text]  # type: ignore[union-attr]


def test_record_then_replay_then_live(tmp_path: Path) -> None:
    cassette = tmp_path / "served.yaml"
    with upstream([{"text": "one"}, {"text": "two"}, {"text": "three"}, {"text": "four"}]) as api:
        env = {"ANTHROPIC_BASE_URL": api.base_url, "ANTHROPIC_API_KEY": FAKE_KEY}
        with serving("--mode", "record", "--record", str(cassette), env=env) as (process, client):
            assert ask(client) == ["one", "two"]
            err = stop(process)
        assert process.returncode == 0, err
        assert "POST /v1/messages -> 200" in err and "POST /v1/messages -> 200 stream" in err
        assert f"recorded {cassette}" in err
        assert f"harness serve: forwarding to {api.base_url}, recording to {cassette}" in err
        with serving("--mode", "live", env=env) as (process, client):
            assert ask(client) == ["three", "four"]
            err = stop(process)
        assert process.returncode == 0, err
    assert api.credentials == [{"Authorization": f"Bearer {FAKE_KEY}"}] * 4
    written = cassette.read_text(encoding="utf-8")
    assert FAKE_KEY not in written and "placeholder" not in written and "Bearer" not in written
    assert len(yaml.safe_load(written)["interactions"]) == 2
    assert read_cassette_metadata(cassette)["base_url"] == api.base_url  # type: ignore[index]

    # Offline now: no key, no upstream.
    with serving("--mode", "replay", "--cassette", str(cassette), env={"ANTHROPIC_API_KEY": ""}) as (process, client):
        assert ask(client) == ["one", "two"]
        err = stop(process)
    assert process.returncode == 0, err
    assert f"every interaction of {cassette} was played" in err


def test_replay_reports_unplayed_interactions_and_misses_on_exit(tmp_path: Path) -> None:
    cassette = tmp_path / "served.yaml"
    with upstream([{"text": "one"}, {"text": "two"}]) as api:
        env = {"ANTHROPIC_BASE_URL": api.base_url, "ANTHROPIC_API_KEY": FAKE_KEY}
        with serving("--mode", "record", "--record", str(cassette), "--quiet", env=env) as (process, client):
            ask(client)
            stop(process)
    with serving("--mode", "replay", "--cassette", str(cassette), "--quiet") as (process, client):
        client.messages.create(model=MODEL, max_tokens=8, messages=HI)
        # The miss names where the client sent its request, not the upstream the cassette was recorded from.
        sent_to = f"{str(client.base_url).rstrip('/')}/v1/messages"
        with pytest.raises(anthropic.InternalServerError, match=f"no recorded interaction matches POST {sent_to}"):
            client.messages.create(model=MODEL, max_tokens=99, messages=HI)
        err = stop(process)
    assert process.returncode == 1
    assert f"replay: no recorded interaction matches POST {sent_to}." in err and "api.anthropic.com" not in err, err
    assert "1 of 2 recorded interactions were not played: #2 POST /v1/messages" in err


def test_replay_leaves_the_judges_recorded_calls_to_harness_run_not_calling_them_unplayed(tmp_path: Path) -> None:
    cassette = tmp_path / "judged.yaml"
    judge = {"x-harness-role": "judge"}
    with upstream([{"text": "one"}, {"text": "verdict"}]) as api:
        env = {"ANTHROPIC_BASE_URL": api.base_url, "ANTHROPIC_API_KEY": FAKE_KEY}
        with serving("--mode", "record", "--record", str(cassette), "--quiet", env=env) as (process, client):
            client.messages.create(model=MODEL, max_tokens=8, messages=HI)
            client.messages.create(model=MODEL, max_tokens=9, messages=HI, extra_headers=judge)
            stop(process)
    # The agent's one call is served; the judge's is harness run's to make, not an unplayed interaction.
    with serving("--mode", "replay", "--cassette", str(cassette), "--quiet") as (process, client):
        assert client.messages.create(model=MODEL, max_tokens=8, messages=HI).content[0].text == "one"  # type: ignore[union-attr]
        err = stop(process)
    assert process.returncode == 0, err
    assert "not played" not in err
    assert (f"every interaction the agent made in {cassette} was played; its 1 judge or simulated-user call(s) are "
            "the harness's own, made by `harness run`, not served here") in err
    # An agent call left unplayed still is one, and the judge's is not listed with it.
    with serving("--mode", "replay", "--cassette", str(cassette), "--quiet") as (process, client):
        err = stop(process)
    assert process.returncode == 1
    assert "1 of 1 recorded interactions were not played: #1 POST /v1/messages (messages: 1)." in err


def test_replay_answers_a_v1_path_that_is_no_api_call_with_a_404_naming_it_not_a_replay_miss(tmp_path: Path) -> None:
    cassette = tmp_path / "served.yaml"
    with upstream([{"text": "one"}]) as api:
        env = {"ANTHROPIC_BASE_URL": api.base_url, "ANTHROPIC_API_KEY": FAKE_KEY}
        with serving("--mode", "record", "--record", str(cassette), "--quiet", env=env) as (process, client):
            client.messages.create(model=MODEL, max_tokens=8, messages=HI)
            stop(process)
    with serving("--mode", "replay", "--cassette", str(cassette)) as (process, client):
        stray = httpx2.post(f"{str(client.base_url).rstrip('/')}/v1/complete?key=sk-ant-in-the-query",
                            json={"prompt": "hi"})
        reply = client.messages.create(model=MODEL, max_tokens=8, messages=HI)
        assert reply.content[0].text == "one"  # type: ignore[union-attr]
        err = stop(process)
    assert stray.status_code == 404
    message = stray.json()["error"]["message"]
    assert message.startswith("POST /v1/complete?[query of 23 characters not logged] is not a Messages API call")
    assert "sk-ant-in-the-query" not in stray.text + err
    assert process.returncode == 0, err  # the 404 is the endpoint's answer: no replay miss, nothing unplayed
    assert "POST /v1/complete?[query of 23 characters not logged] -> 404 (not a Messages API path)" in err
    assert f"every interaction of {cassette} was played" in err


TOOLS_SCENARIO = """name: lookup
prompt: Where is order O1?
tools:
  - name: lookup_order
    input_schema: {type: object, properties: {order_id: {type: string}}, required: [order_id]}
    fixture:
      match:
        - {input: {order_id: O1}, output: {status: delivered}}
      error: order not found
"""


def test_serve_runs_a_scenarios_tool_fixtures_at_the_tools_route(tmp_path: Path) -> None:
    script = tmp_path / "script.yaml"
    script.write_text("- tool_use: {name: lookup_order, input: {order_id: O1}}\n- tool_use: "
                      "{name: lookup_order, input: "
                      "{order_id: O9}}\n- text: delivered\n", encoding="utf-8")
    scenario = tmp_path / "lookup.yaml"
    scenario.write_text(TOOLS_SCENARIO, encoding="utf-8")
    with serving(str(script), "--tools", str(scenario), "--exit-when-done") as (process, client):
        tools = f"{str(client.base_url).rstrip('/')}/harness/tools"
        first = client.messages.create(model=MODEL, max_tokens=8, messages=HI)
        found = httpx2.post(f"{tools}/lookup_order", json={"order_id": "O1"})
        client.messages.create(model=MODEL, max_tokens=8, messages=HI)
        missing = httpx2.post(f"{tools}/lookup_order", json={"order_id": "O9"})
        unknown = httpx2.post(f"{tools}/cancel_order?token=secret-in-query", json={})
        user = httpx2.post(f"{str(client.base_url).rstrip('/')}/harness/user", json={"answer": "delivered"})
        client.messages.create(model=MODEL, max_tokens=8, messages=HI)
        _, err = process.communicate(timeout=30)
    assert first.stop_reason == "tool_use"
    assert found.status_code == 200 and found.json() == {"content": '{"status": "delivered"}', "is_error": False}
    assert missing.json() == {"content": "Error: order not found", "is_error": True}
    assert unknown.status_code == 404
    assert "no tool cancel_order in this scenario (its tools: lookup_order)" in unknown.text
    assert "secret-in-query" not in unknown.text
    # The same 404 as a run of a scenario without `user:`, not the one of a path that is no API call.
    assert user.status_code == 404
    assert user.json()["error"] == {"type": "not_found_error", "message": NO_SIMULATED_USER}
    assert process.returncode == 0, err
    assert f"tools of {scenario} at http://127.0.0.1:" in err
    assert f"2 tool call(s) answered from the fixtures of {scenario}" in err


def test_serve_tools_of_a_scenario_with_a_simulated_user_says_serve_plays_none(tmp_path: Path) -> None:
    script = tmp_path / "script.yaml"
    script.write_text("- text: delivered\n", encoding="utf-8")
    scenario = tmp_path / "lookup.yaml"
    scenario.write_text(TOOLS_SCENARIO + "user: {script: [Thanks, and order O2?]}\n", encoding="utf-8")
    with serving(str(script), "--tools", str(scenario), "--exit-when-done") as (process, client):
        user = httpx2.post(f"{str(client.base_url).rstrip('/')}/harness/user", json={"answer": "delivered"})
        client.messages.create(model=MODEL, max_tokens=8, messages=HI)
        _, err = process.communicate(timeout=30)
    assert user.status_code == 404
    assert user.json()["error"] == {
        "type": "not_found_error",
        "message": f"{scenario} declares a simulated user, but harness serve plays none (its calls are `harness "
                   "run`'s to make), so there is no next user turn to ask for: to converse with it, run the "
                   "scenario with `harness run`",
    }
    assert process.returncode == 0, err


def test_serve_tools_names_a_scenario_without_tools(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = tmp_path / "bare.yaml"
    scenario.write_text("name: bare\nprompt: hi\n", encoding="utf-8")
    assert main(["serve", "--mode", "live", "--tools", str(scenario), "--port", "0"]) == 2
    assert f"--tools {scenario}: the scenario declares no tools" in capsys.readouterr().err


def test_a_scripted_run_can_be_recorded_too(tmp_path: Path) -> None:
    script = tmp_path / "script.yaml"
    script.write_text("- text: one\n- text: two\n", encoding="utf-8")
    cassette = tmp_path / "scripted.yaml"
    with serving(str(script), "--record", str(cassette), "--exit-when-done") as (process, client):
        assert ask(client) == ["one", "two"]
        _, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert "all 2 steps were played" in err and f"recorded {cassette}" in err
    assert read_cassette_metadata(cassette)["recorded_against"] == "scripted model"  # type: ignore[index]
    # The agent's two requests alone: the server makes no request of its own (no readiness probe) to record.
    recorded = yaml.safe_load(cassette.read_text(encoding="utf-8"))["interactions"]
    assert [(i["request"]["method"], i["request"]["uri"].rsplit("/", 2)[-2:]) for i in recorded] == [
        ("POST", ["v1", "messages"])] * 2


def test_a_recording_refused_for_holding_the_key_is_not_said_to_be_recorded(tmp_path: Path) -> None:
    # The key in a query string is recorded as sent, so the cassette is refused; the lines after the
    # refusal must not say "recorded" over it: a CI log read from its end would take the file as written.
    script = tmp_path / "script.yaml"
    script.write_text("- text: one\n", encoding="utf-8")
    cassette = tmp_path / "scripted.yaml"
    key = "sk-ant-serve-refusal-0123456789abcdef"
    with serving(str(script), "--record", str(cassette), "--exit-when-done",
                 env={"ANTHROPIC_API_KEY": key}) as (process, client):
        client.messages.create(model=MODEL, max_tokens=8, messages=HI, extra_query={"key": key})
        _, err = process.communicate(timeout=30)
    assert process.returncode == 1, err
    assert "not written" in err and not cassette.exists()
    assert f"recorded {cassette}" not in err and key not in err


def test_a_scripts_judge_steps_are_not_served_to_the_agent_nor_waited_for(tmp_path: Path) -> None:
    # The script a scenario runs under `harness run`, judge verdict included: served alone, the agent
    # plays its own steps and --exit-when-done stops then, without waiting for a judge that never comes.
    script = tmp_path / "script.yaml"
    verdict = "- {thread: judge, tool_use: {name: verdict, input: {reasoning: ok, score: 1}}}\n"
    script.write_text("- text: one\n- text: two\n" + verdict, encoding="utf-8")
    with serving(str(script), "--exit-when-done") as (process, client):
        assert ask(client) == ["one", "two"]
        _, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert ("all 2 steps were played; the script's 1 judge or simulated-user step(s) are the harness's own, "
            "answered under `harness run`, not served here") in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--mode", "replay"], "mode replay needs --cassette FILE"),
        (["--mode", "record"], "mode record needs --record FILE"),
        (["--mode", "live", "s.yaml"], "SCRIPT is for mode scripted, not live"),
        (["--mode", "scripted"], "mode scripted needs SCRIPT"),
        (["--mode", "live", "--cassette", "c.yaml"], "with --mode live use --record FILE"),
        (["--mode", "replay", "--cassette", "c.yaml", "--record", "d.yaml"], "drop --record"),
    ],
)
def test_options_that_do_not_fit_the_mode_are_refused(args: list[str], message: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--port", "0", *args]) == 2
    assert message in capsys.readouterr().err


def test_live_without_a_key_says_how_to_set_it(capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert main(["serve", "--mode", "live", "--port", "0"]) == 2
    assert "ANTHROPIC_API_KEY is not set" in capsys.readouterr().err
