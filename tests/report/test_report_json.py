"""The page's runs data (each run's details and record) is written by pydantic_core's encoder where it
writes what `json` writes, and by `json` wherever it would not: the page stays the same byte for byte."""

from __future__ import annotations

import enum
import json
import subprocess
import sys
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from report_data import result_for, rich_trace

from harness._console import _BIDI_CONTROLS
from harness._secrets import redact_json, secret_forms
from harness.checks._registry import Finding
from harness.report._chunks import _details_bytes, _record_text, _run_record, page_json, script_json
from harness.report._data import prepare
from harness.report._details import NotPlain, plain, run_details
from harness.results import ExpectationResult, RunResult
from harness.scores._model import Score
from harness.trace._normalize import printable


def _json(value: Any) -> str:
    """What the page held before pydantic_core wrote it: `json`'s text, a wrapped value as itself."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), check_circular=False,
                      default=lambda o: o.value if isinstance(o, NotPlain) else json.JSONEncoder().default(o))


class _Str(str):
    def __str__(self) -> str:
        return "not what json writes"


class _Named(str, enum.Enum):  # noqa: UP042 (the shape a result's own types may have, not StrEnum's)
    """A str whose Enum value is not its text: json writes the text, pydantic_core the value."""

    def __new__(cls, text: str, value: int) -> _Named:
        member = str.__new__(cls, text)
        member._value_ = value
        return member

    A = ("five", 6)

    def __repr__(self) -> str:  # Enum's own writes the value as a str
        return "_Named.A"


class _Count(int, enum.Enum):
    """An int whose Enum value is not its number."""

    def __new__(cls, number: int, value: str) -> _Count:
        member = int.__new__(cls, number)
        member._value_ = value
        return member

    ONE = (1, "one")

    def __repr__(self) -> str:  # Enum's own writes the value as an int
        return "_Count.ONE"


class _Plain(enum.Enum):
    A = "a"  # json refuses it; pydantic_core writes its value


_TEXT = "q\"uote \\ line\nbreak\ttab \x00\x1f\x7f \u2028\u2029 é ǅ 中 \U0001f600 </script><!-- \u202e"


@pytest.mark.parametrize("value", [
    _TEXT, "", 0, -1, 2**63 - 1, 2**63, 2**64, -2**63 - 1, 10**30, -10**40, True, False, None, [], {},
    {"a": [1, {"b": None, "c": [True, _TEXT]}], _TEXT: _TEXT},
], ids=repr)
def test_plain_values_are_written_as_json_writes_them(value: Any) -> None:
    assert page_json(value) == _json(value)


@pytest.mark.parametrize("value", [
    "x\ud800", "\udfff", "a\ud83d" + _TEXT,  # lone surrogates: valid JSON, not UTF-8 (pydantic_core refuses them)
    {"t": ["\ud800"], "n": 1},
    NotPlain(1e-07), NotPlain(1e-05), NotPlain(0.1), NotPlain(-0.0), NotPlain(1e16), NotPlain(float("inf")),
    NotPlain(float("-inf")), NotPlain(float("nan")), NotPlain(_Str("s")), NotPlain(_Str("")), NotPlain(_Named.A),
    NotPlain(_Count.ONE), NotPlain((1, "2")), NotPlain([NotPlain(2.5e-08)]), {"k": NotPlain(3e-9), "j": _TEXT},
], ids=repr)
def test_what_pydantic_core_writes_otherwise_is_written_by_json(value: Any) -> None:
    assert page_json(value) == _json(value)


# In a fresh interpreter: pydantic_core's encoder found without importing its package (`_chunks._first_to_json`),
# what it writes, and pydantic imported afterwards, the package taking the compiled module as its own.
_WRITTEN_ALONE = """\
import json, sys
from harness.report._chunks import page_json
values = json.loads(sys.argv[1])
written = [page_json(value) for value in values]
alone = [m for m in sys.modules if m.startswith("pydantic")]
import pydantic, pydantic_core
import pydantic_core._pydantic_core as compiled
class Model(pydantic.BaseModel):
    x: int
print(json.dumps([alone, written == [pydantic_core.to_json(value).decode() for value in values],
                  compiled.to_json is pydantic_core.to_json, Model.model_validate_json('{"x": 1}').x]))
"""


def test_the_encoder_is_taken_from_pydantic_cores_compiled_module_alone() -> None:
    values = [_TEXT, "", 0, 2**63, -10**40, True, None, [], {}, {"a": [1, {"b": None, "c": [True, _TEXT]}]}]
    done = subprocess.run([sys.executable, "-c", _WRITTEN_ALONE, json.dumps(values)], capture_output=True,
                          text=True, check=True)
    assert json.loads(done.stdout) == [["pydantic_core._pydantic_core"], True, True, 1]


def test_a_value_json_refuses_is_refused_as_before() -> None:
    for value in (NotPlain(_Plain.A), {"k": NotPlain({1, 2})}):
        with pytest.raises(TypeError, match="is not JSON serializable"):
            page_json(value)


def test_a_value_is_wrapped_only_when_it_is_not_exactly_str_int_bool_or_none() -> None:
    for value in ("s", 1, 2**70, True, False, None):
        assert plain(value) is value
    odd: Any
    for odd in (1.0, _Str("s"), _Named.A, _Count.ONE, (1,), [1], {"a": 1}):
        wrapped = plain(odd)
        assert isinstance(wrapped, NotPlain) and wrapped.value is odd
    # Compared as its value: the details leave out an empty value whatever its type, as they did.
    assert plain(_Str("")) == "" and not plain(_Str("")) != "" and plain(0.5) != ""


_SCALARS = st.none() | st.booleans() | st.integers() | st.text(alphabet=st.characters(codec="utf-8"))


@settings(max_examples=300, deadline=None)
@given(value=st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=3)
                          | st.dictionaries(st.text(max_size=5), inner, max_size=4), max_leaves=12))
def test_any_plain_value_is_written_as_json_writes_it(value: Any) -> None:
    assert page_json(value) == _json(value)


def _page_data(result: RunResult) -> tuple[dict[str, Any], dict[str, Any]]:
    """The run's details and record, made as a report makes them (while its trace is loaded)."""
    made: list[tuple[dict[str, Any], dict[str, Any]]] = []
    prepare([result], render=lambda run, costs: made.append((run_details(run, costs), _run_record(run, ()))))
    [data] = made
    return data


def _set(result: RunResult, where: str, value: Any) -> None:
    """Sets, in a result built in code, one value the page takes as it is."""
    trace = result.trace
    assert trace is not None and trace.outcome is not None
    call = trace.calls[1]  # thread 1, step 2
    if where.startswith("outcome."):
        setattr(trace.outcome, where.removeprefix("outcome."), value)
    elif where.startswith("expectation."):
        setattr(result.expectations[1], where.removeprefix("expectation."), value)
    elif where.startswith("score."):
        score = Score(name="judged", value=0.5, reason="why", label="label", kind="judge",
                      details={"disagreement": True})
        result.scores = (replace(score, **{where.removeprefix("score."): value}),)
    elif where.startswith("finding."):
        finding = Finding(code="T001", severity="error", thread=1, step=2, message="what", call=call.index)
        result.findings.append(replace(finding, **{where.removeprefix("finding."): value}))
    elif where == "note":
        trace.notes.append(value)
    elif where.startswith("thread."):
        setattr(trace.threads[1], where.removeprefix("thread."), value)
    elif where == "call.step":
        call.step = value
    elif where == "stop_reason":
        trace.calls[3].attempts[-1].response_body["stop_reason"] = value
    elif where == "call.model":  # the request's: the response names none
        del trace.calls[3].attempts[-1].response_body["model"]
        trace.calls[3].attempts[-1].request_body["model"] = value
    elif where == "system":
        call.attempts[-1].request_body["system"] = value
    elif where == "tool_result":  # shown beside its tool_use
        call.messages[2]["content"][0]["content"] = value
    elif where == "orphan tool_result":  # answering no tool_use: shown where it was sent
        call.messages[2]["content"][0].update(content=value, tool_use_id="toolu_none")
    else:
        setattr(result, where, value)


# Each value the page takes from a result as it is, with a value of a type pydantic_core writes otherwise
# than json does: a float where one does not break the report itself, a str Enum anywhere.
_FLOAT = ["outcome.status", "outcome.limit", "outcome.reason", "outcome.final_text", "steps", "expectation.message",
          "expectation.passed", "thread.key", "thread.parent", "call.step", "stop_reason", "system", "tool_result",
          "orphan tool_result"]
_STR = ["outcome.status", "outcome.limit", "outcome.reason", "outcome.final_text", "expectation.message",
        "expectation.passed", "thread.key", "thread.parent", "call.step", "stop_reason", "system", "tool_result",
        "orphan tool_result", "error", "run_id", "status", "scenario", "model", "effort", "mode", "expectation.name",
        "score.name", "score.reason", "score.label", "score.kind", "finding.code", "finding.severity",
        "finding.message", "note", "call.model"]


@pytest.mark.parametrize(("where", "value"), [(w, 1e-07) for w in _FLOAT] + [(w, _Named.A) for w in _STR], ids=str)
def test_a_run_built_in_code_is_written_as_json_wrote_it(where: str, value: Any) -> None:
    # One odd value at a time: a run holding two would be written by json if either were wrapped.
    result = result_for(rich_trace())
    result.expectations.append(ExpectationResult("second", False, "unmet"))
    _set(result, where, value)
    details, record = _page_data(result)
    written = page_json(details) + page_json(record)
    assert written == _json(details) + _json(record)
    assert (repr(value) if isinstance(value, float) else '"five"') in written  # the value is on the page


# What the page's runs data is made of, however it is made: `script_json`'s text, redacted of the secrets
# (the details of Bearer tokens later, with their chunk), encoded. Kept as UTF-8 bytes where none of that
# changes more than `<` (`_chunks._script_bytes`): the same bytes, whatever the text holds.
_SECRETS = ("pass<wörd\"1234", "Abcdefgh12345678")
_PIECES = [
    "a", " ", "<", ">", "\\", '"', "\n", "\x00", "é", "·", "—", "’", "中", "\U0001f600", "\ud800", "\udfff",
    *_BIDI_CONTROLS, "sk-ant-api03-abcdefgh", "Bearer abcdefgh1234", "bEaReR\\tabcdefgh1234",
    *(form for secret in _SECRETS for form in secret_forms(secret)),
    "pass\\u003cwörd", "pass<w\\u00f6rd", "\\\\" + _SECRETS[1], "\\" + _SECRETS[1],
]


def _slow_details(value: Any, secrets: tuple[str, ...]) -> bytes:
    text = redact_json(script_json(value), secrets, bearer=False)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return printable(text).encode("utf-8")


def _check_as_the_text_steps_make_it(value: Any) -> None:
    for secrets in ((), _SECRETS):
        assert _details_bytes(value, secrets) == _slow_details(value, secrets)
        assert _record_text(value, secrets) == redact_json(printable(script_json(value)), secrets)


@pytest.mark.parametrize("piece", _PIECES, ids=ascii)
def test_runs_data_kept_as_bytes_is_what_the_text_steps_make(piece: str) -> None:
    _check_as_the_text_steps_make_it({"t": f"x{piece}y", "l": [piece, piece + piece, 1, None], piece: True})


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.sampled_from(_PIECES), max_size=6).map("".join), max_size=4))
def test_runs_data_of_any_mix_kept_as_bytes_is_what_the_text_steps_make(texts: list[str]) -> None:
    _check_as_the_text_steps_make_it({"texts": texts, "n": len(texts)})
    _check_as_the_text_steps_make_it({"texts": texts, "odd": plain(1e-07)})  # pydantic_core refuses it: json's text
