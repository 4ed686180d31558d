"""The harness's own calls (a simulated user's, a judge's) are their own lines of the cost ledger:
never in the agents' rows, the comparison or the runs' cost; unpriced stays unpriced."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from markupsafe import escape

from harness.cli import main

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "scenarios" / "support-simulated-user.yaml"


def scenario_with_user_model(tmp_path: Path, model: str) -> Path:
    path = tmp_path / "scenarios" / "chat.yaml"
    path.parent.mkdir()
    path.write_text(SHIPPED.read_text(encoding="utf-8").replace("model: claude-haiku-4-5", f"model: {model}"),
                    encoding="utf-8")
    return path


@pytest.mark.parametrize(("model", "cost"), [("claude-haiku-4-5", "$0.0010"), ("claude-mystery-9", "unpriced")])
def test_the_simulated_users_calls_are_their_own_ledger_line(tmp_path: Path, model: str, cost: str,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    path = scenario_with_user_model(tmp_path, model)
    results = tmp_path / "results.jsonl"
    assert main(["run", str(path), "--mode", "scripted", "--results", str(results),
                 "--report", str(tmp_path / "page")]) == 0
    said = capsys.readouterr().out
    assert main(["report", str(results), "-o", str(tmp_path / "page"), "--markdown", str(tmp_path / "summary.md"),
                 "--json", str(tmp_path / "summary.json")]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text(encoding="utf-8"))
    line = f"simulated user ({model})"
    # The agent's own cost is priced (claude-sonnet-5) and holds none of the user's calls.
    assert list(summary["cost_by_model"]) == ["claude-sonnet-5"]
    assert summary["total_cost_usd"] == pytest.approx(summary["runs"][0]["cost_usd"])
    assert list(summary["cost_by_harness_calls"]) == [line]
    if cost == "unpriced":
        assert summary["harness_cost_usd"] is None and summary["cost_by_harness_calls"][line] is None
    else:
        assert summary["harness_cost_usd"] == pytest.approx(summary["cost_by_harness_calls"][line])
        assert summary["harness_cost_usd"] > 0
    markdown = (tmp_path / "summary.md").read_text(encoding="utf-8")
    # The page's header says it as the Markdown does: beside the agents' total, never folded into it as $0.
    note = f"(+ {cost} for the harness's own calls (simulated user))"
    assert note in markdown
    # So does `harness run`'s summary, beside the agents' total as the Markdown has it.
    agents = f"total cost ${summary['total_cost_usd']:.4f} "
    assert f"\n{agents}{note}\n" in said and f"{agents}{note}" in markdown, said
    page = (tmp_path / "page" / "index.html").read_text(encoding="utf-8")
    unpriced = ' class="unpriced"' if cost == "unpriced" else ""
    assert f'<span id="harness-cost"{unpriced}>{escape(note)}</span>' in page
    assert "The harness's own calls</h3>" in page and f"<td>{line}</td>" in page
