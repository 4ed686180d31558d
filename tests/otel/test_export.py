"""`harness export --otlp` and `harness run --otlp-endpoint`: runs as OpenTelemetry traces, read back.

The shipped scenarios are run (replaying their cassettes), each run is exported with the SDK's
exporters and checked again from the spans alone: the findings must be the run's own.
"""

from __future__ import annotations

import json
import os
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the [otel] extra is not installed")

from harness.checks import Finding, check_trace, rules  # noqa: E402
from harness.checks._registry import unjudged  # noqa: E402
from harness.cli import main  # noqa: E402
from harness.results import RunResult, read_results, write_results  # noqa: E402
from harness.results._otlp import ExportError, export_results  # noqa: E402
from harness.trace import load_trace  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> list[RunResult]:
    """Every shipped scenario, run once from its cassette."""
    where = tmp_path_factory.mktemp("runs")
    main(["run", str(ROOT / "scenarios"), "--results", str(where / "results.jsonl"), "--no-report"])
    found = read_results(where / "results.jsonl")
    assert len(found) >= 40 and all(r.trace is not None for r in found)
    return found


def wire_findings(findings: list[Any]) -> list[tuple[Any, ...]]:
    # Scenario policies and limits are the scenario's, not the trace's: `harness check` has none.
    catalogue = rules()
    return [(f.code, f.severity, f.thread, f.step, f.message_index, f.block_index, f.message) for f in findings
            if catalogue[f.code].needs == "wire"]


def test_every_run_exported_and_checked_again_gives_its_findings(results: list[RunResult], tmp_path: Path) -> None:
    compared = set()
    for result in results:
        path = tmp_path / f"{result.scenario}.jsonl"
        summary = export_results([result], str(path), content=True)
        assert summary.runs == 1
        trace = load_trace(path)
        assert trace.missing == {}, result.run_id
        assert trace.whole_run and trace.outcome == result.outcome
        assert len(trace.calls) == result.steps, result.run_id
        # As `harness check` judges the run's own trace (scenario policies aside: neither side has them).
        expected = check_trace(result.trace)
        assert wire_findings(check_trace(trace)) == wire_findings(expected), result.run_id
        compared.update(f.code for f in expected)
    # The comparison covered most of the catalogue, not only clean runs.
    assert {"L001", "L002", "L003", "L005", "L006", "T001", "T002", "T003", "T005", "T006", "H001", "H002",
            "R001", "R002", "R004", "R005", "R006", "E002", "M001"} <= compared


FIXES_ITS_REQUEST = """\
import anthropic


def agent(client, task):
    asked = [{"role": "user", "content": task.turns[0]}]
    try:
        client.messages.create(**task.request_params(), messages=asked)
    except anthropic.BadRequestError:
        asked = [{"role": "user", "content": task.turns[0] + " (in fewer words)"}]
    return client.messages.create(**task.request_params(), messages=asked).content[0].text
"""


def test_without_content_a_request_fixed_after_a_400_is_not_called_unchanged(tmp_path: Path) -> None:
    # Spans without content carry no request body: every request looks alike, so E002 ("re-sent
    # unchanged") would judge a guess, here about a loop that did fix its request.
    (tmp_path / "fixes.py").write_text(FIXES_ITS_REQUEST)
    scenario = tmp_path / "fixes.yaml"
    scenario.write_text("name: fixes\nagent: fixes:agent\nprompt: Hi\nmode: scripted\n"
                        "script:\n- error: {type: invalid_request_error}\n- text: Hello.\n")
    assert main(["run", str(scenario), "--results", str(tmp_path / "r.jsonl"), "--no-report"]) == 0
    [result] = read_results(tmp_path / "r.jsonl")
    assert check_trace(result.trace) == []
    for content in (True, False):
        path = tmp_path / f"content-{content}.jsonl"
        export_results([result], str(path), content=content)
        trace = load_trace(path)
        assert [f.line() for f in check_trace(trace)] == [], content
        assert any("E002" in codes for codes in unjudged(trace).values()) is not content


def test_runs_exported_together_keep_every_call(results: list[RunResult], tmp_path: Path) -> None:
    # Runs replayed from one cassette (two cells of a matrix) answer with the same response ids: the
    # importer merges spans of one call by response id only within a trace, so no run's call vanishes.
    path = tmp_path / "all.jsonl"
    summary = export_results(results, str(path), content=True)
    assert summary.runs == len(results)
    trace = load_trace(path)
    assert len(trace.calls) == sum(r.steps for r in results)


def test_runs_exported_into_one_file_are_each_checked_as_their_own_trace(
        results: list[RunResult], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # One file, every shipped run: a run's request, tool_use ids and history are no other run's (the
    # replayed runs re-send each other's requests and ids), so the file gives each run's own findings,
    # in the file's thread and call numbers, and judges each run's end on its own outcome.
    results_file = tmp_path / "results.jsonl"
    write_results(results_file, results)
    path = tmp_path / "runs.jsonl"
    assert main(["export", str(results_file), "--otlp", str(path), "--content"]) == 0
    capsys.readouterr()
    main(["check", str(path), "--format", "json"])
    [report] = json.loads(capsys.readouterr().out)["files"]
    got = [Finding.from_dict(f) for f in report["findings"]]
    expected = []
    threads = calls = 0
    for result in results:
        assert result.trace is not None
        expected += [(f.code, f.severity, f.thread + threads if f.thread else None, f.step, f.message_index,
                      f.block_index) for f in check_trace(result.trace) if rules()[f.code].needs == "wire"]
        threads, calls = threads + len(result.trace.threads), calls + len(result.trace.calls)
    assert sorted((f[:6] for f in wire_findings(got)), key=str) == sorted(expected, key=str)
    assert report["threads"] == threads and report["calls"] == calls
    assert not any("checked as one trace" in note for note in report["notes"])


def test_exported_spans_follow_the_genai_conventions(results: list[RunResult], tmp_path: Path) -> None:
    [result] = [r for r in results if r.scenario == "buggy-text-before-results"]
    path = tmp_path / "run.jsonl"
    export_results([result], str(path), content=False)
    spans = [span for line in path.read_text().splitlines()
             for rs in json.loads(line)["resourceSpans"] for ss in rs["scopeSpans"] for span in ss["spans"]]
    by_name: dict[str, list[dict[str, Any]]] = {}
    for span in spans:
        by_name.setdefault(span["name"].split(" ")[0], []).append(span)
    assert sorted(by_name) == ["chat", "execute_tool", "invoke_agent"]
    [root] = by_name["invoke_agent"]
    attributes = {a["key"]: a["value"] for a in root["attributes"]}
    assert attributes["harness.scenario"] == {"stringValue": "buggy-text-before-results"}
    assert attributes["harness.outcome"] == {"stringValue": result.outcome.status}
    assert "harness.cost_usd" in attributes and "gen_ai.request.model" in attributes
    assert all(span["parentSpanId"] == root["spanId"] and span["traceId"] == root["traceId"]
               for span in by_name["chat"] + by_name["execute_tool"])
    chat = {a["key"]: a["value"] for a in by_name["chat"][0]["attributes"]}
    assert chat["gen_ai.operation.name"] == {"stringValue": "chat"}
    assert chat["gen_ai.response.finish_reasons"] == {"arrayValue": {"values": [{"stringValue": "tool_use"}]}}
    assert {"gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "gen_ai.usage.cache_read.input_tokens",
            "gen_ai.usage.cache_creation.input_tokens"} <= chat.keys()
    # Content is opt-in.
    assert not any(key.startswith(("gen_ai.input", "gen_ai.output", "anthropic.request")) for key in chat)
    [event] = [e for span in by_name["chat"] for e in span.get("events", [])]
    finding = {a["key"]: a["value"] for a in event["attributes"]}
    assert event["name"] == "harness.finding"
    assert finding["harness.finding.code"] == {"stringValue": "T003"}
    assert finding["harness.finding.severity"] == {"stringValue": "error"}
    assert finding["harness.finding.location"] == {"stringValue": "thread 1, step 2, messages[2].content[1]"}
    # Without content the spans say so when read back, and the rules needing it are skipped.
    trace = load_trace(path)
    assert "content" in trace.missing and check_trace(trace) == []


def test_exported_content_is_redacted(results: list[RunResult], tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-ant-api03-" + "x" * 40
    monkeypatch.setenv("ANTHROPIC_API_KEY", secret)
    result = RunResult.from_dict(json.loads(json.dumps(results[0].to_dict())))
    result.trace.calls[0].request["messages"][0]["content"] = f"my key is {secret}"
    path = tmp_path / "run.jsonl"
    export_results([result], str(path), content=True)
    text = path.read_text()
    assert secret not in text and "REDACTED" in text


class _Receiver(BaseHTTPRequestHandler):
    bodies: list[tuple[str, str, bytes]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["content-length"]))
        _Receiver.bodies.append((self.path, self.headers["content-type"], body))
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


def test_run_sends_its_traces_to_an_otlp_http_receiver(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        status = main(["run", str(ROOT / "scenarios" / "buggy-text-before-results.yaml"), "--results",
                       str(tmp_path / "r.jsonl"), "--no-report", "--otlp-endpoint",
                       f"http://127.0.0.1:{server.server_port}"])
    finally:
        server.shutdown()
    assert status == 0
    assert "exported 1 run(s) as" in capsys.readouterr().out
    [(path, content_type, body)] = _Receiver.bodies
    assert (path, content_type) == ("/v1/traces", "application/x-protobuf")
    request = ExportTraceServiceRequest.FromString(body)
    names = [span.name for rs in request.resource_spans for ss in rs.scope_spans for span in ss.spans]
    assert names.count("invoke_agent buggy-text-before-results") == 1 and any(n.startswith("chat ") for n in names)


@pytest.mark.parametrize("target", ["ftp://collector/traces", "grpc://127.0.0.1:4317"])
def test_a_url_that_is_no_otlp_http_endpoint_is_refused_not_taken_for_a_file(
    results: list[RunResult], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    target: str,
) -> None:
    # Taken for a file name, the spans went to ./ftp:/collector/traces and the command said "exported".
    monkeypatch.chdir(tmp_path)
    stored = tmp_path / "r.jsonl"
    write_results(stored, results[:1])
    assert main(["export", str(stored), "--otlp", target]) == 2
    scheme = target.split(":")[0]
    assert capsys.readouterr().err == (f"harness: {target}: {scheme}:// is no OTLP/HTTP endpoint; give an "
                                       "http:// or https:// URL (http://host:4318) or a file path\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.jsonl"]


def test_an_endpoint_url_is_told_from_a_file_whatever_the_case_of_its_scheme(
    results: list[RunResult], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Receiver.bodies.clear()
    try:
        export_results(results[:1], f"HTTP://127.0.0.1:{server.server_port}")
    finally:
        server.shutdown()
    assert [path for path, _, _ in _Receiver.bodies] == ["/v1/traces"]
    assert list(tmp_path.iterdir()) == []


def test_an_endpoint_that_is_down_fails_the_export_in_one_line_not_the_run(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    status = main(["run", str(ROOT / "scenarios" / "stop-end-turn.yaml"), "--results", str(tmp_path / "r.jsonl"),
                   "--no-report", "--otlp-endpoint", f"http://127.0.0.1:{port}"])
    err = capsys.readouterr().err
    assert status == 0
    [line] = [line for line in err.splitlines() if "OTLP" in line]
    assert line == (f"harness: OTLP export to http://127.0.0.1:{port} failed (no OTLP/HTTP receiver answered in time, "
                    "or it refused the spans); 1 run(s) not exported")
    assert "Traceback" not in err
    assert main(["export", str(tmp_path / "r.jsonl"), "--otlp", f"http://127.0.0.1:{port}"]) == 2


def test_without_the_sdk_the_export_says_what_to_install(results: list[RunResult], tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)
    with pytest.raises(ExportError, match=r"pip install 'agent-harness\[otel\]'"):
        export_results(results[:1], str(tmp_path / "x.jsonl"))
    assert os.path.exists(tmp_path / "x.jsonl") is False
