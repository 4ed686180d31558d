"""`harness check` on an OTLP file of several harness runs (`harness export --content`): each run is
judged as the whole run it is, and a finding about a run as a whole says which run.

The runs are real: two scripted scenarios run by `harness run`, exported by `harness export`.
"""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the [otel] extra is not installed")

from harness.checks._registry import _RULES  # noqa: E402
from harness.cli import main  # noqa: E402
from harness.results import read_results, write_results  # noqa: E402

# An agent that gives up on the first failure: the SDK's retries turned off, so a 529 ends the run
# unretried (E001, an error of the run).
GIVES_UP = """\
import anthropic


def agent(client, task):
    try:
        return client.with_options(max_retries=0).messages.create(
            **task.request_params(), messages=[{"role": "user", "content": task.turns[0]}]).content[0].text
    except anthropic.APIStatusError as exc:
        return f"gave up: {exc.status_code}"
"""

# A user's rule about each run as a whole (tied to no call).
RUN_RULE = '''
from harness.checks import rule


@rule("X951", "A run makes at least two calls")
def two_calls(trace, ctx):
    if len(trace.calls) < 2:
        yield ctx.finding("X951", None, f"the run made {len(trace.calls)} call(s)")
'''


@pytest.fixture(scope="module")
def runs_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two runs in one OTLP/JSON file: `fine` answers, `giveup` gets a 529 it never retries."""
    where = tmp_path_factory.mktemp("runs")
    (where / "gives_up.py").write_text(GIVES_UP)
    for name, step in (("fine", "- text: Hello."), ("giveup", "- error: {status: 529}")):
        (where / f"{name}.yaml").write_text(f"name: {name}\nagent: gives_up:agent\nprompt: Hi\nmode: scripted\n"
                                            f"script:\n{step}\n")
    results = where / "results.jsonl"
    assert main(["run", str(where / "fine.yaml"), str(where / "giveup.yaml"), "--results", str(results),
                 "--no-report"]) == 1
    path = where / "runs.jsonl"
    assert main(["export", str(results), "--otlp", str(path), "--content"]) == 0
    return path


def _trace_ids(path: Path) -> dict[str, str]:
    """Scenario -> the traceId of its run's root span."""
    found = {}
    for line in path.read_text().splitlines():
        for resource in json.loads(line)["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    attributes = {a["key"]: a["value"] for a in span["attributes"]}
                    if "harness.scenario" in attributes:
                        found[attributes["harness.scenario"]["stringValue"]] = span["traceId"]
    return found


@pytest.fixture
def x951(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    (tmp_path / "x951_rules.py").write_text(textwrap.dedent(RUN_RULE))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    _RULES.pop("X951", None)
    sys.modules.pop("x951_rules", None)


def test_a_run_wide_finding_names_its_run(runs_file: Path, x951: None, capsys: pytest.CaptureFixture[str]) -> None:
    ids = _trace_ids(runs_file)
    assert main(["check", str(runs_file), "--plugin", "x951_rules", "--disable", "E001"]) == 1  # X951 errors
    out = capsys.readouterr().out
    lines = sorted(line.strip() for line in out.splitlines() if "X951" in line)
    # Runs are numbered in the file's order (their first call's start), whichever scenario ran first.
    assert [line.split(" (traceId")[0] for line in lines] == ["X951 error run 1 of 2", "X951 error run 2 of 2"], out
    assert {line.split("traceId ")[1] for line in lines} == {f"{ids[name]}): the run made 1 call(s)"
                                                             for name in ("fine", "giveup")}, out
    assert main(["check", str(runs_file), "--plugin", "x951_rules", "--disable", "E001", "--format", "json"]) == 1
    [report] = json.loads(capsys.readouterr().out)["files"]
    assert sorted(f["run"] for f in report["findings"] if f["code"] == "X951") == [line.split(" ", 3)[3].split(": ")[0]
                                                           for line in lines]


def test_a_harness_run_read_back_from_its_spans_is_judged_as_the_whole_run_it_is(
        runs_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The export carries each run's outcome: its end is known, so what is missing after its last call is
    # an error as in the run itself (E001: a 529 never retried), without --whole-run, in a file of one
    # run or of several.
    giveup = tmp_path / "giveup-results.jsonl"
    write_results(giveup, [r for r in read_results(runs_file.parent / "results.jsonl") if r.scenario == "giveup"])
    one = tmp_path / "giveup.jsonl"
    assert main(["export", str(giveup), "--otlp", str(one), "--content"]) == 0
    for path in (runs_file, one):
        assert main(["check", str(path)]) == 1
        out = capsys.readouterr().out
        assert "E001 error thread " in out and "--whole-run" not in out, out
