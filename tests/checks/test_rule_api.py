"""The API a rule author writes against: typed options that refuse a typo, published wire helpers,
and rule packages found by their entry point once installed."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from recordings import Conversation, Recording, check, codes, tool_use

import harness.checks.wire as wire
from harness.checks import CheckOptions, check_trace, rules
from harness.checks._registry import option_values
from harness.errors import UsageError

ROOT = Path(__file__).resolve().parents[2]


def test_a_misspelt_option_is_an_error_that_names_the_right_one(recording: Recording) -> None:
    with pytest.raises(UsageError, match=r"unknown check option 'max_consecutive_tool_error' \(did you mean "
                                         r"'max_consecutive_tool_errors'\?\)"):
        check_trace(recording.trace(), options={"max_consecutive_tool_error": 1})


def test_a_bad_option_value_says_which_and_why() -> None:
    with pytest.raises(UsageError, match=r"limits.steps: Input should be greater than or equal to 1"):
        CheckOptions.of({"limits": {"steps": 0}})
    with pytest.raises(UsageError, match=r"limits.step: Extra inputs are not permitted"):
        CheckOptions.of({"limits": {"step": 3}})


def test_typed_options_and_their_mapping_give_the_same_findings(conv: Conversation, recording: Recording) -> None:
    conv.user("Look up c1")
    conv.call(tool_use("get_customer", {"customer_id": "c1"}))
    conv.results("found")
    conv.call(tool_use("get_customer", {"customer_id": "c2"}))
    trace = recording.trace()
    assert codes(check_trace(trace, options=CheckOptions.of({"limits": {"steps": 1}}))) == {"B001"}
    assert codes(check_trace(trace, options={"limits": {"steps": 1}})) == {"B001"}
    assert "B001" not in codes(check(recording))


def test_nested_policies_apply_and_a_top_level_list_wins() -> None:
    nested = {"prerequisites": [{"tool": "refund", "requires": "verify"}]}
    assert CheckOptions.of({"policies": nested}).as_dict()["prerequisites"][0]["requires"] == "verify"
    both = CheckOptions.of({"policies": nested, "prerequisites": []})
    assert both.as_dict()["prerequisites"] == []


def test_no_options_are_the_defaults_of_check_options() -> None:
    # A check without options skips pydantic and spells the defaults out; they must be CheckOptions'.
    assert option_values(None) == CheckOptions().as_dict() == CheckOptions.of({}).as_dict()


def test_a_plugins_own_options_reach_it_by_name() -> None:
    assert CheckOptions.of({"plugins": {"max_refund": 100}}).as_dict()["max_refund"] == 100


def test_the_wire_helpers_are_published_with_a_literal_all() -> None:
    source = (ROOT / "harness" / "checks" / "wire.py").read_text(encoding="utf-8")
    listed = source.split("__all__ = [", 1)[1].split("]", 1)[0]
    assert sorted(wire.__all__) == sorted(name.strip().strip('",') for name in listed.split() if name.strip())
    assert all(getattr(wire, name) is not None for name in wire.__all__)
    assert "blocks" in wire.__all__ and "trace_index" in wire.__all__


def test_an_installed_rule_package_joins_the_catalogue_through_its_entry_point(tmp_path: Path) -> None:
    # What `pip install` of a package with [project.entry-points."harness.rules"] leaves on sys.path.
    site = tmp_path / "site"
    (site / "refund_rules").mkdir(parents=True)
    (site / "refund_rules" / "__init__.py").write_text(textwrap.dedent('''
        from harness.checks import rule
        from harness.checks.wire import blocks, role

        @rule("X950", "No user turn mentions a refund", why="demo", fix="demo")
        def no_refunds(trace, ctx):
            """A user message that asks for a refund is flagged."""
            for call in trace.calls:
                for i, message in enumerate(call.messages):
                    if role(message) == "user" and any("refund" in str(b.get("text")) for b in blocks(message)):
                        yield ctx.finding("X950", call, "a refund was asked for", message_index=i)
    '''))
    dist = site / "refund_rules-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: refund-rules\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[harness.rules]\nrefunds = refund_rules\n")
    recording = tmp_path / "refund.json"
    recording.write_text(json.dumps({"log": {"entries": [{
        "request": {"method": "POST", "url": "https://api.anthropic.com/v1/messages", "headers": [],
                    "postData": {"mimeType": "application/json", "text": json.dumps(
                        {"model": "claude-sonnet-4-5",
                         "messages": [{"role": "user", "content": "A refund, please"}]})}},
        "response": {"status": 200, "headers": [], "content": {"mimeType": "application/json", "text": json.dumps(
            {"content": [{"type": "text", "text": "Done."}], "stop_reason": "end_turn"})}},
    }]}}))
    env = {"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"}
    listed = subprocess.run([sys.executable, "-m", "harness", "rules"], capture_output=True, text=True,
                            env=env, cwd=tmp_path, timeout=120)
    assert "X950  [wire]  No user turn mentions a refund" in listed.stdout, listed.stderr
    checked = subprocess.run([sys.executable, "-m", "harness", "check", "--format", "json", str(recording)],
                             capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert checked.returncode == 1, checked.stderr
    assert [f["code"] for f in json.loads(checked.stdout)["files"][0]["findings"]] == ["X950"]


def test_a_broken_installed_rule_package_is_named_without_a_traceback(tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "broken_rules-1.0.dist-info").mkdir(parents=True)
    (site / "broken_rules-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-rules\n"
                                                                 "Version: 1.0\n")
    (site / "broken_rules-1.0.dist-info" / "entry_points.txt").write_text("[harness.rules]\nbroken = no_such_module\n")
    done = subprocess.run([sys.executable, "-m", "harness", "rules"], capture_output=True, text=True,
                          env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"}, cwd=tmp_path, timeout=120)
    assert done.returncode == 2
    assert "the installed rule plugin 'broken' (no_such_module, from the broken-rules package)" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_builtin_catalogue_is_unchanged_by_the_entry_point_scan() -> None:
    assert {code for code, r in rules().items() if r.fn.__module__.startswith("harness.checks.")} >= {"L001", "W003"}
