"""The catalogue is registered through `@rule` like a user's plugin; codes can be disabled; a user's
rule runs the same way."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from recordings import Conversation, Recording, check, codes, text, tool_use

from harness.checks import CheckContext, Finding, check_trace, load_plugin, rule, rules
from harness.checks._registry import _RULES
from harness.trace import Trace

CATALOGUE = {
    *(f"L00{n}" for n in range(1, 7)), *(f"T00{n}" for n in range(1, 9)), "H001", "H002", "H003",
    "B001", "B002", "B003", "B004", *(f"R00{n}" for n in range(1, 9)), "E001", "E002", "M001",
    "W001", "W002", "W003",
}


@pytest.fixture
def x900() -> Iterator[None]:
    yield
    _RULES.pop("X900", None)


def test_every_code_of_the_catalogue_is_registered_from_its_family_module() -> None:
    registered = rules()
    assert CATALOGUE <= set(registered)
    for code in CATALOGUE:
        module = registered[code].fn.__module__
        assert module.startswith("harness.checks._"), (code, module)
    assert {registered[c].needs for c in ("T008",)} == {"events"}
    assert {registered[c].needs for c in ("W001", "W002", "W003", "B001")} == {"scenario"}


def test_a_rule_disabled_by_code_does_not_run(conv: Conversation, recording: Recording) -> None:
    conv.user("Look up c1")
    conv.call(tool_use("get_customer", {"customer_id": "c1"}))
    conv.user("Did it work?")
    conv.call(text("Not sure."))
    assert codes(check(recording)) == {"L002"}
    assert check(recording, disabled=["l002"]) == []
    with pytest.raises(ValueError, match="unknown rule code"):
        check(recording, disabled=["L999"])


def test_a_users_rule_registers_and_runs_like_a_builtin(conv: Conversation, recording: Recording, x900: None) -> None:
    @rule("X900", "Every request names the support system prompt")
    def support_prompt(trace: Trace, ctx: CheckContext) -> Iterator[Finding]:
        for call in trace.calls:
            if "support" not in str(call.request.get("system")):
                yield ctx.finding("X900", call, f"system prompt {call.request.get('system')!r} is not the support one")

    conv.user("Hi")
    conv.call(text("Hello."))
    assert "X900" in rules()
    findings = check(recording)
    assert codes(findings) == {"X900"} and findings[0].step == 1
    assert check(recording, disabled=["X900"]) == []


def test_a_plugin_module_loads_its_rules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, recording: Recording,
                                         x900: None) -> None:
    (tmp_path / "x900_rules.py").write_text(textwrap.dedent('''
        from harness.checks import rule

        @rule("X900", "No call uses more than 50 input tokens")
        def small_calls(trace, ctx):
            for call in trace.calls:
                if call.usage.get("input_tokens", 0) > 50:
                    yield ctx.finding("X900", call, "too many input tokens")
    '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    load_plugin("x900_rules")
    conv = recording.conversation()
    conv.user("Hi")
    conv.call(text("Hello."))
    assert codes(check_trace(recording.trace())) == {"X900"}
    sys.modules.pop("x900_rules", None)
