"""A client no one here wrote: the official TypeScript SDK runs seed 000's loop against `harness serve`.

Polly.JS records the SDK's traffic on the client side as a HAR (tests/node/record.mjs), and
`harness check --whole-run` must read that recording and judge the loop: clean where the seed is
right, T006 where its `ejecutar` ignores the tool's name. Skips only without node/npm or their install.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from node_agents import check, errors, requires_node, run_agent

TOOL_THEN_END_TURN = """\
- text: Busco en la documentación.
  tool_use: {name: buscar_docs, input: {consulta: límites del bucle}}
- text: No encontré nada sobre los límites del bucle en la documentación interna.
"""

pytestmark = requires_node


def run_seed_agent(script_text: str, tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], str, int, Path]:
    """Seed 000's `agente` on the script: node's process, the server's stderr and status, the HAR."""
    run = run_agent(script_text, tmp_path)
    return run.agent, run.server_err, run.server_status, run.har


def test_the_ts_sdk_runs_the_seed_loop_through_serve_and_its_har_checks_clean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    agent, server_err, server_status, har = run_seed_agent(TOOL_THEN_END_TURN, tmp_path)

    assert agent.returncode == 0, agent.stderr
    assert agent.stdout.strip() == "No encontré nada sobre los límites del bucle en la documentación interna."
    assert server_status == 0, server_err
    assert "POST /v1/messages -> step 1 (tool_use buscar_docs)" in server_err
    assert "POST /v1/messages -> step 2 (end_turn)" in server_err
    assert "all 2 steps were played" in server_err

    entries = json.loads(har.read_text(encoding="utf-8"))["log"]["entries"]
    headers = {h["name"].lower(): h["value"] for h in entries[0]["request"]["headers"]}
    assert headers["user-agent"].startswith("Anthropic/JS "), headers  # the official SDK made the calls
    assert "sk-ant-test-node" not in har.read_text(encoding="utf-8")
    second = json.loads(entries[1]["request"]["postData"]["text"])
    first_answer = json.loads(entries[0]["response"]["content"]["text"])
    tool_use = first_answer["content"][1]
    assert second["messages"][1] == {"role": "assistant", "content": first_answer["content"]}
    assert second["messages"][2] == {"role": "user", "content": [{
        "type": "tool_result", "tool_use_id": tool_use["id"], "content": "Sin resultados para «límites del bucle»",
    }]}

    status, report = check(har, capsys, "--whole-run")
    assert (report["threads"], report["calls"]) == (1, 2)
    assert errors(report) == [] and status == 0, report["findings"]


@pytest.mark.parametrize(
    ("script_text", "answer"),
    [
        pytest.param(
            "- content: [{type: server_tool_use, name: web_search, input: {query: límites bucle agente}}]\n"
            "  stop_reason: pause_turn\n"
            "- text: Pasos, tokens, tiempo y errores seguidos.\n",
            "Pasos, tokens, tiempo y errores seguidos.",
            id="pause_turn-resumed",
        ),
        pytest.param(
            "- stop_reason: refusal\n  stop_details: {type: refusal, category: cyber, explanation: null}\n",
            "No puedo ayudar con esta petición.",
            id="refusal-not-retried",
        ),
    ],
)
def test_the_seed_loop_handles_pause_turn_and_refusal_cleanly(
    script_text: str, answer: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    agent, server_err, server_status, har = run_seed_agent(script_text, tmp_path)

    assert agent.returncode == 0 and agent.stdout.strip() == answer, agent.stderr
    assert server_status == 0, server_err
    status, report = check(har, capsys, "--whole-run")
    assert errors(report) == [] and status == 0, report["findings"]


def test_the_checker_catches_the_seed_loop_running_a_tool_the_request_never_declared(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    # The seed's TypeScript `ejecutar` calls buscarDocs whatever `b.name` says (its Python twin
    # looks the name up and answers is_error), so a hallucinated tool silently "succeeds".
    script_text = "- tool_use: {name: borrar_docs, input: {consulta: todo}}\n- text: Hecho.\n"
    agent, server_err, server_status, har = run_seed_agent(script_text, tmp_path)

    assert agent.returncode == 0 and agent.stdout.strip() == "Hecho.", agent.stderr
    assert server_status == 0, server_err
    status, report = check(har, capsys, "--whole-run")
    assert status == 1
    assert [f["code"] for f in report["findings"] if f["severity"] == "error"] == ["T006"], report["findings"]
    assert "'borrar_docs'" in report["findings"][0]["message"]


def test_the_seed_loop_stops_on_max_tokens_without_running_the_cut_tool_use(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    script_text = (
        "- text: Busco en la documentación.\n"
        "  tool_use: {name: buscar_docs, input: {consulta: límites}}\n"
        "  stop_reason: max_tokens\n"
    )
    agent, server_err, server_status, har = run_seed_agent(script_text, tmp_path)

    assert agent.returncode == 1
    assert "agente: Respuesta cortada: sube max_tokens o divide la tarea" in agent.stderr
    assert server_status == 0, server_err
    # Without an outcome the wire cannot tell a raise from a cut answer returned as final, so as a
    # fragment the end of the thread is a warning and no error: the cut tool_use was never run.
    status, report = check(har, capsys)
    assert report["calls"] == 1
    assert errors(report) == [] and status == 0, report["findings"]
    assert [(f["code"], f["severity"]) for f in report["findings"]] == [("L005", "warning")]
