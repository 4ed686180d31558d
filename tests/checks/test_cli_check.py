"""`harness check` through `harness.cli.main` and as `python -m harness`: output shapes and exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from vcr.serializers import yamlserializer

from harness.cli import main

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "tests" / "corpus" / "recordings"

# A user's plugin, as `--plugin` imports it. Its rules fire only on models no other test uses,
# because a registered rule stays in the catalogue for the rest of the process.
PLUGIN = '''
from harness.checks import rule

@rule("X901", "calls to claude-flagged are errors")
def flagged(trace, ctx):
    for call in trace.calls:
        if call.model == "claude-flagged":
            yield ctx.finding("X901", call, f"model {call.model} is flagged", message_index=0, block_index=0)

@rule("X902", "a thread must not end on claude-unfinished")
def unfinished(trace, ctx):
    for call in trace.calls:
        if call.model == "claude-unfinished":
            yield ctx.at_end("X902", call, "the thread ends after this call")
'''


@pytest.fixture(scope="module")
def plugin_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("plugin")
    (folder / "harness_test_plugin_rules.py").write_text(PLUGIN)
    sys.path.insert(0, str(folder))
    yield folder
    sys.path.remove(str(folder))


def cassette(path: Path, model: str = "claude-sonnet-5", *, calls: int = 1, stop_reason: str = "end_turn") -> Path:
    interactions = []
    for i in range(calls):
        request = {"model": model, "max_tokens": 50, "messages": [{"role": "user", "content": f"question {i}"}]}
        answer = {"type": "message", "role": "assistant", "content": [{"type": "text", "text": "ok"}],
                  "stop_reason": stop_reason, "usage": {"input_tokens": 3, "output_tokens": 1}}
        interactions.append({
            "request": {"body": json.dumps(request), "headers": {}, "method": "POST",
                        "uri": "https://api.anthropic.com/v1/messages"},
            "response": {"body": {"string": json.dumps(answer)}, "headers": {"content-type": ["application/json"]},
                         "status": {"code": 200, "message": "OK"}},
        })
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yamlserializer.serialize({"interactions": interactions, "version": 1}))
    return path


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    status = main(["check", "--format", "json", *args])
    return status, json.loads(capsys.readouterr().out)


def test_a_clean_file_exits_0_with_a_header_and_a_total(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = cassette(tmp_path / "clean.yaml", calls=2)
    assert main(["check", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"{path}: 2 thread(s), 2 call(s)"
    assert lines[-1] == "1 file(s), 2 call(s): 0 error(s), 0 warning(s), 0 unreadable file(s)"


def test_json_output_has_exactly_the_documented_shape(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = cassette(tmp_path / "clean.yaml")
    status, output = run_json(capsys, str(path))
    assert status == 0
    assert list(output) == ["files", "skipped", "not_regular_files"] and output["skipped"] == []
    (entry,) = output["files"]
    assert entry == {"path": str(path), "threads": 1, "calls": 1, "findings": [], "notes": [], "error": None}


def test_an_error_finding_exits_1_and_is_one_line(plugin_dir: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    path = cassette(tmp_path / "flagged.yaml", "claude-flagged")
    assert main(["check", "--plugin", "harness_test_plugin_rules", str(path)]) == 1
    out = capsys.readouterr().out
    assert "  X901 error thread 1, step 1, messages[0].content[0]: model claude-flagged is flagged\n" in out
    assert out.splitlines()[-1].startswith("1 file(s), 1 call(s): 1 error(s)")

    status, output = run_json(capsys, "--plugin", "harness_test_plugin_rules", str(path))
    assert status == 1
    (finding,) = output["files"][0]["findings"]
    assert {k: finding[k] for k in ("code", "severity", "thread", "step")} == {
        "code": "X901", "severity": "error", "thread": 1, "step": 1}
    assert finding["message"] == "model claude-flagged is flagged"


def test_disable_takes_repeated_and_comma_separated_codes(plugin_dir: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    flagged = cassette(tmp_path / "a.yaml", "claude-flagged")
    unfinished = cassette(tmp_path / "b.yaml", "claude-unfinished")
    base = ["check", "--plugin", "harness_test_plugin_rules", str(flagged), str(unfinished)]
    assert main([*base, "--disable", "x901"]) == 0
    assert main([*base, "--whole-run", "--disable", "X901,X902"]) == 0
    assert main([*base, "--whole-run", "--disable", "X901"]) == 1
    capsys.readouterr()
    assert main([*base, "--disable", "Z999"]) == 2
    err = capsys.readouterr().err
    assert "Z999" in err and "X901" in err


def test_whole_run_turns_what_is_missing_at_the_end_into_an_error(plugin_dir: Path, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    path = cassette(tmp_path / "end.yaml", "claude-unfinished")
    status, output = run_json(capsys, "--plugin", "harness_test_plugin_rules", str(path))
    assert status == 0 and output["files"][0]["findings"][0]["severity"] == "warning"
    status, output = run_json(capsys, "--plugin", "harness_test_plugin_rules", "--whole-run", str(path))
    assert status == 1 and output["files"][0]["findings"][0]["severity"] == "error"


def test_list_rules_includes_plugin_rules(plugin_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--plugin", "harness_test_plugin_rules", "--list-rules"]) == 0
    out = capsys.readouterr().out
    assert "X901  [wire]  calls to claude-flagged are errors" in out
    assert main(["check", "--plugin", "no_such_module_for_harness", "--list-rules"]) == 2


def test_a_plugin_in_the_current_folder_imports_without_pythonpath(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # `harness` is a console script: sys.path[0] is its bin folder, not the folder it runs in. A
    # rules file there must import as a user's agent module does, without PYTHONPATH=.
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", ".", os.getcwd(), str(tmp_path))])
    monkeypatch.delitem(sys.modules, "harness_test_cwd_rules", raising=False)
    (tmp_path / "harness_test_cwd_rules.py").write_text(
        "from harness.checks import rule\n\n"
        "@rule('X903', 'calls to claude-cwd-plugin are errors')\n"
        "def cwd(trace, ctx):\n"
        "    for call in trace.calls:\n"
        "        if call.model == 'claude-cwd-plugin':\n"
        "            yield ctx.finding('X903', call, 'flagged by the plugin in the current folder')\n"
    )
    monkeypatch.chdir(tmp_path)
    path = cassette(tmp_path / "flagged.yaml", model="claude-cwd-plugin")
    status, output = run_json(capsys, "--plugin", "harness_test_cwd_rules", str(path))
    assert status == 1 and [f["code"] for f in output["files"][0]["findings"]] == ["X903"]
    sys.modules.pop("harness_test_cwd_rules", None)


def test_a_missing_plugin_says_where_it_was_looked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.chdir(tmp_path)
    assert main(["check", "--plugin", "no_such_rules_for_harness", "--list-rules"]) == 2
    err = capsys.readouterr().err
    assert "cannot import plugin 'no_such_rules_for_harness': No module named 'no_such_rules_for_harness'" in err
    assert f"(looked in {tmp_path.resolve()} and the installed packages)" in err


def test_an_import_error_inside_a_found_plugin_is_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The plugin was found: "looked in" would send the user searching for the wrong module.
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delitem(sys.modules, "harness_test_broken_rules", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "harness_test_broken_rules.py").write_text("import no_such_dependency_for_harness\n")
    assert main(["check", "--plugin", "harness_test_broken_rules", "--list-rules"]) == 2
    err = capsys.readouterr().err
    assert "No module named 'no_such_dependency_for_harness'" in err and "looked in" not in err


def test_an_unreadable_file_exits_2_and_the_others_are_still_checked(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    good = cassette(tmp_path / "good.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("interactions:\n- request:\n    method: POST\n  response: {}\n")
    missing = tmp_path / "missing.har"
    status, output = run_json(capsys, str(bad), str(good), str(missing))
    assert status == 2
    by_path = {f["path"]: f for f in output["files"]}
    assert by_path[str(good)]["calls"] == 1 and by_path[str(good)]["error"] is None
    assert by_path[str(bad)]["error"] == f"{bad}:2: interactions[0].request.uri: expected the request URL as a string"
    assert "cannot read the recording" in by_path[str(missing)]["error"]
    assert main(["check", str(bad)]) == 2
    assert f"{bad}:2: interactions[0].request.uri" in capsys.readouterr().out


def test_folders_are_walked_for_recordings_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cassette(tmp_path / "suite" / "a.yaml")
    cassette(tmp_path / "suite" / "nested" / "b.yml")
    (tmp_path / "suite" / "package.json").write_text('{"name": "app"}')
    (tmp_path / "suite" / "README.md").write_text("# not a recording")
    (tmp_path / "suite" / "TestX.httprr").write_text("httprr trace v1\n")
    status, output = run_json(capsys, str(tmp_path / "suite"))
    assert status == 0
    assert [Path(f["path"]).name for f in output["files"]] == ["TestX.httprr", "a.yaml", "b.yml"]
    assert output["files"][0]["notes"] == ["no interactions recorded in this file; nothing to check"]
    assert [Path(p).name for p in output["skipped"]] == ["README.md", "package.json"]
    assert main(["check", str(tmp_path / "suite")]) == 0
    out = capsys.readouterr().out
    assert (f"skipped 2 file(s) that are not recordings: {tmp_path / 'suite' / 'README.md'}, "
            f"{tmp_path / 'suite' / 'package.json'}\n") in out


def test_a_folder_with_no_recording_in_it_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # `harness check recordings/` in CI, where the recordings were never written: not a green run.
    empty, notes, suite = tmp_path / "empty", tmp_path / "notes", tmp_path / "suite"
    empty.mkdir()
    notes.mkdir()
    (notes / "README.md").write_text("# not a recording")
    good = cassette(suite / "a.yaml")
    assert main(["check", str(empty)]) == 2
    out = capsys.readouterr().out
    assert f"{empty}: not read\n  error: {empty}: no recording found in this folder\n" in out
    assert out.endswith("1 file(s), 0 call(s): 0 error(s), 0 warning(s), 1 unreadable file(s)\n")
    status, output = run_json(capsys, str(notes), str(suite))
    assert status == 2
    assert [(f["path"], f["error"]) for f in output["files"]] == [
        (str(good), None),
        (str(notes), f"{notes}: no recording found in this folder (1 file(s) in it skipped as not recordings)"),
    ]
    assert output["skipped"] == [str(notes / "README.md")]
    assert main(["check", str(suite)]) == 0


def test_as_a_subprocess(tmp_path: Path) -> None:
    good = cassette(tmp_path / "good.yaml")
    broken = tmp_path / "broken.json"
    broken.write_text("{ not json")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "harness", "check", "--format", "json", str(broken), str(good)],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert done.returncode == 2, done.stderr
    unreadable, checked = json.loads(done.stdout)["files"]
    assert unreadable["error"].startswith(f"{broken}:1: is not valid JSON")
    assert checked["path"] == str(good) and checked["calls"] == 1 and checked["error"] is None


def test_the_whole_corpus_is_read(capsys: pytest.CaptureFixture[str]) -> None:
    status, output = run_json(capsys, str(CORPUS))
    assert status == 1  # the real flaws pinned in tests/corpus/test_corpus_findings.py
    assert all(f["error"] is None for f in output["files"])
    # Every recording is found in the folder, and nothing else (README, MANIFEST, LICENSE) is taken for one.
    assert len(output["files"]) == 92
    assert sum(f["calls"] for f in output["files"]) == 153


def test_outcome_says_how_the_run_ended_so_the_end_is_judged_on_it(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    path = cassette(tmp_path / "cut.yaml", stop_reason="max_tokens")  # the loop then raised, as a correct loop does
    # From the wire alone a whole run that ends on a cut answer may have returned it as the answer.
    status, report = run_json(capsys, "--whole-run", str(path))
    assert status == 1 and [f["code"] for f in report["files"][0]["findings"]] == ["L005"]
    # The user knows the loop raised on the cut: nothing is wrong.
    status, report = run_json(capsys, "--outcome", "error", str(path))
    assert status == 0 and report["files"][0]["findings"] == []
    # Returning the cut text as the completed answer is the violation, stated now as a fact.
    status, report = run_json(capsys, "--outcome", "completed", str(path))
    assert status == 1 and [f["code"] for f in report["files"][0]["findings"]] == ["L005"]
    assert "reports 'completed'" in report["files"][0]["findings"][0]["message"]


def test_output_tool_lets_a_thread_end_on_it(capsys: pytest.CaptureFixture[str]) -> None:
    recording = REPO / "tests/corpus/recordings/pydantic__pydantic-ai/test_anthropic_tool_output.yaml"
    assert main(["check", "--whole-run", str(recording)]) == 1
    assert "L002 error thread 1, step 2:" in capsys.readouterr().out
    assert main(["check", "--whole-run", "--output-tool", "final_result", str(recording)]) == 0
    out = capsys.readouterr().out
    assert "note: L002 thread 1, step 2: the thread ends on the output tool final_result" in out


def test_a_tool_use_without_a_name_is_shown_as_having_none(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    # A recorder that dropped the names: the findings said "tool_use (None)" and "calls None", a name
    # the block never had.
    for shipped in ("buggy-done-when-text", "buggy-drops-parallel-results"):
        text = (REPO / "cassettes" / f"{shipped}.yaml").read_text()
        nameless = text.replace('"name":"get_customer",', "").replace('"name":"lookup_order",', "")
        (tmp_path / f"{shipped}.yaml").write_text(nameless)
    assert main(["check", "--whole-run", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "the thread ends on tool_use (no name) without sending the tool results" in out
    assert "calls a tool with no name, which the request does not declare" in out
    assert "no tool_result for tool_use toolu_01pwZw05krPjqoge0dVqtLFk (no name, the 2nd of 2 in messages[1])" in out
    assert "None" not in out
