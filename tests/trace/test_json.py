"""`harness.trace._json.loads` reads what `json.loads` reads, as it reads it, and fails where it fails.

Every results line and every body of a run is read through it, with jiter first: a value jiter gives
is taken without `json.loads` ever seeing the text, so it must be the very value `json.loads` gives,
type for type (1 is not 1.0 nor True to a results line's checks), key order and duplicate keys too.
Where the two differ jiter must fail, and `json.loads` decide.
"""

from __future__ import annotations

import json
import math
import random
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jiter
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.trace import build_trace, read_exchanges
from harness.trace._json import JITER_INT_DIGITS, loads

REPO = Path(__file__).resolve().parents[2]


def same(a: Any, b: Any) -> bool:
    """Equal and of one type all the way down: -0.0 is not 0.0, NaN is NaN, a dict's keys in one order.
    Without recursion: json.loads reads nesting deeper than Python's stack."""
    pending = [(a, b)]
    while pending:
        a, b = pending.pop()
        if type(a) is not type(b):
            return False
        if type(a) is float:
            if not ((math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))):
                return False
        elif type(a) is dict:
            if list(a) != list(b):
                return False
            pending += [(a[k], b[k]) for k in a]
        elif type(a) is list:
            if len(a) != len(b):
                return False
            pending += zip(a, b, strict=True)
        elif a != b:
            return False
    return True


def outcome(read: Any, text: str) -> tuple[str, Any]:
    try:
        return "value", read(text)
    except (ValueError, RecursionError) as exc:
        return type(exc).__name__, str(exc)


def assert_read_alike(text: str) -> None:
    mine, theirs = outcome(loads, text), outcome(json.loads, text)
    assert mine[0] == theirs[0], text
    if mine[0] == "value":
        assert same(mine[1], theirs[1]), text
    else:
        assert mine[1] == theirs[1], text  # json.loads' own message: the one a damaged line has always said


# Where JSON readers tend to differ: numbers, escapes, surrogates, whitespace, nesting, repeated keys.
EDGES = [
    '{"a":1,"b":2,"a":3}', "NaN", "Infinity", "-Infinity", "+Infinity", "-NaN", "nan", "{} x", " {}", "\x0c{}",
    "{}\x0c", "\ufeff{}", "\u00a0{}", "01", "1.", ".5", "1e5", "-0", "-0.0", "1e400", "-1e400", "1E+2", "[1e-400]",
    str(2**64 + 1), str(-(2**63) - 1), "123456789012345678901234567890.5", "2.2250738585072011e-308", "4.9e-324",
    "1.7976931348623159e308", "0." + "1" * 800, "1" * 5000 + ".5", "9" * 4300, "9" * 4301, "-" + "9" * 4300,
    '"\\ud800"', '"\\udc00x"', '"\\ud83d\\ude00"', '"\\ud83d"', '"\ud800"', '"a\tb"', '"a\x00b"', '"a\x7fb"',
    '"\\/"', '"\\x"', '"\\u12"', '"\\u00e9 é \u2028 \U0001f600"', '{"\\u0000":1}', "[1,]", '{"a":1,}', "[1 2]",
    "tru", "true ", "null", "", "\n", "[] \r\n\t", '{"a" : 1 }', '"abc', '{"a"}', "-", "--1", "1e", "1e+",
    "[" * 199 + "]" * 199, "[" * 300 + "]" * 300, '{"a":' * 600 + "1" + "}" * 600, "[" * 5000 + "]" * 5000,
]


@pytest.mark.parametrize("text", EDGES, ids=range(len(EDGES)))
def test_an_edge_of_json_reads_as_json_loads_reads_it(text: str) -> None:
    assert_read_alike(text)


def test_jiter_reads_none_of_these_itself() -> None:
    # What makes the edges above pass: jiter refuses what it would read otherwise than json.loads, so the
    # test above checks json.loads' reading of them, not a coincidence of two readings.
    for text in ['"\\ud800"', '"\\udc00x"', "[" * 300 + "]" * 300, "9" * (JITER_INT_DIGITS + 1)]:
        with pytest.raises(ValueError):
            jiter.from_json(text.encode(), allow_inf_nan=True)


def test_a_lower_integer_limit_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    # PYTHONINTMAXSTRDIGITS=640: json.loads refuses a 641-digit integer, which jiter would read.
    before = sys.get_int_max_str_digits()
    try:
        sys.set_int_max_str_digits(640)
        with pytest.raises(ValueError, match="Exceeds the limit"):
            loads('{"n":' + "7" * 641 + "}")
        assert loads('{"n":' + "7" * 640 + "}") == {"n": int("7" * 640)}
        sys.set_int_max_str_digits(0)  # no limit: json.loads reads longer integers than jiter does
        assert loads("7" * 5000) == int("7" * 5000)
    finally:
        sys.set_int_max_str_digits(before)


def test_strings_read_alike_are_plain_str() -> None:
    value = loads('{"k":["x","' + "é" * 100 + '"]}')
    assert type(value) is dict and type(value["k"]) is list
    assert all(type(v) is str for v in value["k"]) and value["k"][1] == "é" * 100


_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**80), max_value=2**80), st.floats(), st.text(max_size=10),
)
_values = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
    st.text(max_size=4), inner, max_size=4), max_leaves=20)


@settings(max_examples=400, deadline=None, derandomize=True, database=None)
@given(_values, st.booleans(), st.sampled_from([None, 1, "\t"]))
def test_any_json_value_reads_as_json_loads_reads_it(value: Any, ascii_only: bool, indent: int | str | None) -> None:
    # Non-finite floats are written as NaN and Infinity, as json.dumps writes them; lone surrogates as escapes.
    assert_read_alike(json.dumps(value, ensure_ascii=ascii_only, indent=indent))


@settings(max_examples=400, deadline=None, derandomize=True, database=None)
@given(st.text(alphabet="0123456789-+.eE", min_size=1, max_size=40))
def test_any_number_reads_as_json_loads_reads_it(text: str) -> None:
    assert_read_alike(text)


def _real_texts() -> Iterator[str]:
    """What a report reads: results lines (a results file's, and traces of the shipped cassettes as a
    results line writes them), and the raw request and response bodies of their exchanges."""
    yield from (REPO / "tests" / "results" / "results-trace-schema-2.jsonl").read_text(encoding="utf-8").splitlines()
    for path in sorted((REPO / "cassettes").glob("*.yaml"))[::4]:
        exchanges, _ = read_exchanges(path)
        yield json.dumps(build_trace(exchanges, path.name).to_dict(), ensure_ascii=False, separators=(",", ":"))
        for exchange in exchanges:
            yield from (text for text in (exchange.raw_request, exchange.raw_response) if text)


GARBLE = [*'{}[]",:\\ \t\n\r0123456789.eE+-', "\ud800", "\\ud800", "\\udc00", "\\u00", "\x00", "\x7f", "é", "\u2028",
          "NaN", "Infinity", "\ufeff", "\x0c", "true", "null"]


def test_damaged_real_lines_and_bodies_read_as_json_loads_reads_them() -> None:
    texts = list(_real_texts())
    assert len(texts) > 20, "no results lines nor recordings found to start from"
    rng = random.Random(13)
    for text in texts:
        assert_read_alike(text)
    for _ in range(3000):
        text = rng.choice(texts)[:4000]
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(text) + 1)
            cut = rng.choice([0, 1, 1, 3])
            text = text[:at] + rng.choice(GARBLE) * (cut != 3) + text[at + cut:]
        assert_read_alike(text)
