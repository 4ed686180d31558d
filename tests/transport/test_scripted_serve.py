"""`harness serve` as a real subprocess: it prints the base URL, answers the SDK, reports unused steps."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest

from harness.cli import main

ASK: dict[str, Any] = {"model": "claude-sonnet-5", "max_tokens": 64,
                       "messages": [{"role": "user", "content": "Where is order 7?"}]}

SCRIPT = """\
- text: Let me check.
  tool_use: {name: get_order, input: {order_id: 7}}
- text: Order 7 ships tomorrow.
"""


@contextmanager
def serving(script: Path, *options: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    process = subprocess.Popen(
        [sys.executable, "-m", "harness", "serve", str(script), "--port", "0", *options],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        first_line = process.stdout.readline() if process.stdout else ""
        assert first_line.startswith("export ANTHROPIC_BASE_URL=http://127.0.0.1:"), (
            first_line + (process.stderr.read() if process.stderr and process.poll() is not None else "")
        )
        yield process, first_line.strip().split("=", 1)[1]
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=10)


def test_serve_answers_the_sdk_and_exits_when_the_script_is_done(tmp_path: Path) -> None:
    script = tmp_path / "order.yaml"
    script.write_text(SCRIPT, encoding="utf-8")
    with serving(script, "--exit-when-done") as (process, base_url):
        client = anthropic.Anthropic(base_url=base_url, api_key="k", max_retries=0)
        first = client.messages.create(**ASK)
        with client.messages.stream(**ASK) as stream:
            second = stream.get_final_message()
        out, err = process.communicate(timeout=30)

    assert first.stop_reason == "tool_use" and first.content[1].input == {"order_id": 7}  # type: ignore[union-attr]
    assert second.content[0].text == "Order 7 ships tomorrow."  # type: ignore[union-attr]
    assert process.returncode == 0, err
    assert "POST /v1/messages -> step 1 (tool_use get_order)" in err
    assert "POST /v1/messages -> step 2 (end_turn) stream" in err
    assert "all 2 steps were played" in err


def test_serve_reports_unused_steps_on_ctrl_c_and_fails(tmp_path: Path) -> None:
    script = tmp_path / "order.yaml"
    script.write_text(SCRIPT, encoding="utf-8")
    with serving(script, "--quiet") as (process, base_url):
        anthropic.Anthropic(base_url=base_url, api_key="k").messages.create(**ASK)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)

    assert process.returncode == 1
    assert "1 of 2 scripted responses were not used: step 2 (end_turn)" in err
    assert "->" not in err


def test_serve_reports_unused_steps_on_sigterm_too(tmp_path: Path) -> None:
    # `harness serve ... &` in a CI script, stopped with `kill $!`: SIGTERM, since a shell script's
    # background jobs ignore SIGINT. It used to die silently with -15 and no report.
    script = tmp_path / "order.yaml"
    script.write_text(SCRIPT, encoding="utf-8")
    with serving(script) as (process, base_url):
        anthropic.Anthropic(base_url=base_url, api_key="k").messages.create(**ASK)
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=30)

    assert process.returncode == 1, err
    assert "harness serve: stopped" in err
    assert "1 of 2 scripted responses were not used: step 2 (end_turn)" in err


def test_serve_logs_a_stream_error_step_as_the_error_the_client_got(tmp_path: Path) -> None:
    script = tmp_path / "faults.yaml"
    script.write_text(
        "- {text: a, stream_error: {type: overloaded_error, after: 2}}\n"
        "- {text: b, stream_error: {type: rate_limit_error}}\n",
        encoding="utf-8",
    )
    with serving(script, "--exit-when-done") as (process, base_url):
        client = anthropic.Anthropic(base_url=base_url, api_key="k", max_retries=0)
        with pytest.raises(anthropic.APIStatusError), client.messages.stream(**ASK) as stream:
            stream.get_final_message()
        with pytest.raises(anthropic.RateLimitError):
            client.messages.create(**ASK)
        out, err = process.communicate(timeout=30)
    assert "-> step 1 (end_turn) stream with event: error overloaded_error after 2 event(s)" in err
    assert "-> step 2 (end_turn) answered as HTTP 429 rate_limit_error" in err


def test_serve_rejects_an_invalid_script_with_the_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "bad.yaml"
    script.write_text("- text: Hi.\n  stop: end_turn\n", encoding="utf-8")
    assert main(["serve", str(script), "--port", "0"]) == 2
    captured = capsys.readouterr()
    assert f"{script}:2: step 1: stop: unknown key; valid keys:" in captured.err
    assert captured.out == ""


def test_serve_on_a_port_in_use_says_so_and_which_option_to_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "script.yaml"
    script.write_text("- text: Hi.\n", encoding="utf-8")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", str(script), "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert f"harness: cannot listen on 127.0.0.1:{port}: " in err
    assert err.rstrip().endswith("pick another --port (0 for any free one)")


@pytest.mark.parametrize("port", ["65536", "-1", "http"])
def test_serve_on_a_port_that_cannot_be_is_refused_in_one_line(port: str, capsys: pytest.CaptureFixture[str]) -> None:
    # 65536 reached the socket's bind: an OverflowError traceback, exit 1.
    with pytest.raises(SystemExit) as refused:
        main(["serve", "--port", port])
    assert refused.value.code == 2
    assert (f"harness serve: error: argument --port: expected a port from 0 to 65535 (0 for any free one), "
            f"got {port!r}\n") in capsys.readouterr().err


@pytest.mark.parametrize(("args", "says"), [
    (["--mode", "replay"], "mode replay needs --cassette FILE, the recording to answer from"),
    (["--mode", "record"], "mode record needs --record FILE, where to write what passed"),
    ([], "mode scripted needs SCRIPT, the script file to play"),
])
def test_serve_options_that_do_not_go_together_are_one_line_said_once(
    args: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # The line was "harness: harness serve: mode replay needs ...": the command's name given twice.
    assert main(["serve", *args]) == 2
    assert capsys.readouterr().err == f"harness: {says}\n"


def test_serve_logs_one_whole_line_per_request_when_requests_come_at_once(tmp_path: Path) -> None:
    # Each connection has its own thread: a log line written in two pieces (the text, then its
    # newline) let another thread's line in between, gluing two requests on one line.
    script = tmp_path / "script.yaml"
    script.write_text("- text: Hi.\n", encoding="utf-8")
    count = {"model": "claude-sonnet-5", "messages": ASK["messages"]}
    with serving(script) as (process, base_url):
        client = anthropic.Anthropic(base_url=base_url, api_key="k", max_retries=0)
        with ThreadPoolExecutor(max_workers=32) as pool:
            list(pool.map(lambda _: client.messages.count_tokens(**count), range(400)))
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=30)
    logged = [line for line in err.splitlines() if "count_tokens" in line]
    assert logged == ["harness serve: POST /v1/messages/count_tokens -> HTTP 200"] * 400, err[:2000]


def test_serve_logs_a_request_the_script_never_saw_once_and_a_step_once(tmp_path: Path) -> None:
    # An agent on the wrong path (an OpenAI-style client, a base URL with an extra /v1) is the first
    # thing to find in the log; the script's own requests keep their single line naming the step.
    script = tmp_path / "order.yaml"
    script.write_text(SCRIPT, encoding="utf-8")
    with serving(script) as (process, base_url):
        missed = httpx2.post(f"{base_url}/chat/completions", json={"messages": []})
        client = anthropic.Anthropic(base_url=base_url, api_key="k", max_retries=0)
        client.messages.create(**ASK)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
    assert missed.status_code == 404
    lines = err.splitlines()
    assert [line for line in lines if "/chat/completions" in line] == [
        "harness serve: POST /chat/completions -> 404 (not a Messages API path)"]
    assert [line for line in lines if "POST /v1/messages" in line] == [
        "harness serve: POST /v1/messages -> step 1 (tool_use get_order)"]
