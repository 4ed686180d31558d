"""A results file damaged anywhere is one clear line naming the file, the line and the key, exit 2.

The lines are made by a real run (findings, expectations, scores, a trace), then broken the ways a
hand edit, another tool or a disk breaks them: every key given every wrong JSON type, numbers too
large for the readers' tables, deep nesting, Latin-1 bytes, a BOM, a line cut short. Every reader
(`harness report`, `merge`, `diff`, `run --resume` and `--baseline`) must say what is wrong, never
raise from deep inside the report or the diff.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from harness.errors import InputError
from harness.results import RunResult, read_results
from harness.results._shape import _compile, _passes, read_checked, shape_problem
from harness.results._store import _line

SCENARIOS = Path(__file__).parents[2] / "scenarios"
WRONG = {"a number": 1, "a string": "x", "a list of scalars": [1, "x"], "an object": {}, "null": None,
         "true": True, "a negative number": -1, "a list of lists": [[1]]}
# Written into the line's text as they are: JSON a reader may take for valid.
RAW = {"a 100-digit number": "9" * 100, "a 5000-digit number": "9" * 5000, "1e999": "1e999", "NaN": "NaN"}


@pytest.fixture(scope="module")
def lines(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """Result lines of real runs: one with a finding and expectations, one with scores."""
    root = tmp_path_factory.mktemp("made")
    for name in ("buggy-drops-parallel-results", "eval-refunds"):
        text = (SCENARIOS / f"{name}.yaml").read_text().replace("mode: replay", "mode: scripted")
        (root / f"{name}.yaml").write_text(text)
    (root / "eval-refunds.csv").write_text((SCENARIOS / "eval-refunds.csv").read_text())
    results = root / "results.jsonl"
    assert main(["run", str(root), "--results", str(results), "--no-report", "--fresh"]) == 0
    made = [json.loads(line) for line in results.read_text().splitlines()]
    return [next(r for r in made if r["findings"]), next(r for r in made if r["scores"])]


def key_paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every key of a record, and the first item of every list, to a depth of six."""
    if len(path) > 5:
        return
    items = value.items() if isinstance(value, dict) else [(0, value[0])] if isinstance(value, list) and value else []
    for key, inner in items:
        yield (*path, key)
        yield from key_paths(inner, (*path, key))


def broken(record: dict[str, Any], path: tuple[Any, ...], marker: Any) -> dict[str, Any]:
    copied = copy.deepcopy(record)
    holder = copied
    for key in path[:-1]:
        holder = holder[key]
    holder[path[-1]] = marker
    return copied


def named(path: tuple[Any, ...]) -> str:
    return "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in path).lstrip(".")


def damaged(lines: list[dict[str, Any]]) -> Iterator[tuple[str, str]]:
    """(what was broken, the damaged line) for every key of every line, given every wrong value."""
    seen: set[tuple[tuple[Any, ...], str]] = set()
    for record in lines:
        for path in key_paths(record):
            for what, value in WRONG.items():
                if (path, what) not in seen:
                    seen.add((path, what))
                    yield f"{named(path)} = {what}", json.dumps(broken(record, path, value))
            for what, raw in RAW.items():
                if (path, what) not in seen:
                    seen.add((path, what))
                    yield f"{named(path)} = {what}", json.dumps(broken(record, path, "@@")).replace('"@@"', raw)


def test_every_key_given_a_wrong_value_is_named_or_read_whole(lines: list[dict[str, Any]], tmp_path: Path) -> None:
    """Reading either names the key (or one inside it) with the file and line, or gives records every
    reader can use: those go through report, merge and diff to show it."""
    path = tmp_path / "bad.jsonl"
    read_whole = []
    for what, line in damaged(lines):
        path.write_text(line + "\n", encoding="utf-8")
        try:
            read_results(path)
        except InputError as exc:
            message = str(exc)
            assert message.startswith(f"{path}:1: not a harness result record ("), (what, message)
            assert "\n" not in message and "__init__" not in message, (what, message)
            assert "argument after" not in message, (what, message)
            said = message.split(" record (", 1)[1]
            # the key itself, one inside it, or a reference of its record the change broke (an index, an id)
            top = what.split(" = ")[0].split(".")[0].split("[")[0]
            assert said.startswith(top) or said == "a number too long to read)", (what, message)
        else:
            read_whole.append((what, line))
    for what, line in read_whole:
        path.write_text(line + "\n", encoding="utf-8")
        assert main(["report", str(path), "-o", str(tmp_path / "report"), "--junit", str(tmp_path / "junit.xml"),
                     "--markdown", str(tmp_path / "summary.md")]) in (0, 1), (what, "report")
        assert main(["merge", str(path), "-o", str(tmp_path / "merged.jsonl")]) in (0, 1), (what, "merge")
        assert main(["diff", str(path), str(path)]) in (0, 1), (what, "diff")


@pytest.mark.parametrize("command", ["report", "merge", "diff", "resume", "baseline"])
def test_findings_that_are_not_objects_are_one_line_and_exit_2(
    lines: list[dict[str, Any]], tmp_path: Path, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "results.jsonl"
    path.write_text(json.dumps(lines[1]) + "\n" + json.dumps({**lines[0], "findings": [1, "x"]}) + "\n")
    scenario = tmp_path / "s.yaml"
    scenario.write_text("name: s\nprompt: hi\nmode: scripted\nscript:\n- text: Hi.\n")
    capsys.readouterr()
    # Each argv literal, so that tests/test_tests_write_under_tmp.py can see where it writes.
    if command == "report":
        status = main(["report", str(path), "-o", str(tmp_path / "report")])
    elif command == "merge":
        status = main(["merge", str(path), "-o", str(tmp_path / "merged.jsonl")])
    elif command == "diff":
        status = main(["diff", str(path), str(path)])
    elif command == "resume":
        status = main(["run", str(scenario), "--results", str(path), "--resume", "--no-report"])
    else:
        status = main(["run", str(scenario), "--results", str(tmp_path / "new.jsonl"), "--fresh", "--no-report",
                       "--baseline", str(path)])
    assert status == 2
    said = [line for line in capsys.readouterr().err.splitlines() if not line.startswith("[")]
    why = "findings[0]: expected an object, got a number (1)"
    assert said == [f"harness: {path}:2: not a harness result record ({why})"]


@pytest.mark.parametrize(("what", "data", "expected"), [
    # With its newline: a last line without one, cut inside a character, is a torn line (test_store).
    ("Latin-1", "café\n".encode("latin-1"), "1: not UTF-8"),
    ("a 5000-digit number", b'{"run_id": ' + b"9" * 5000 + b"}\n",
     "1: not a harness result record (a number too long to read)"),
    ("deep nesting", b"[" * 100_000 + b"]" * 100_000 + b"\n",
     "1: not a harness result record (nested too deeply to read)"),
    # a whole line (it has its newline) that is not JSON is damage, not a run cut short: not skipped
    ("a whole last line that is not JSON", b"\x00" * 10 + b"\n", "1: not a JSON results line"),
    # the run ids are read first, to find a run written twice: a bad one is the line's damage, named as such
    ("a run id with an escape JSON has not", b'{"run_id":"a\\x","scenario":"s"}\n', "1: not a JSON results line"),
    # json says where a control character is after its message ("... at"): the column is said instead
    ("a raw tab in a string", b'{"run_id":"a\tb"}\n',
     "1: not a JSON results line (Invalid control character, column 13)"),
    ("a missing comma", b'{"run_id":"a" "scenario":"s"}\n',
     "1: not a JSON results line (Expecting ',' delimiter, column 15)"),
    # JSON that is no object is named as JSON names it: Python's type said "(a JSON NoneType)"
    ("null", b"null\n", "1: not a harness result record (expected a JSON object, got null)"),
    ("a list", b"[1]\n", "1: not a harness result record (expected a JSON object, got a list)"),
])
def test_damage_the_parser_meets_is_named_by_line(tmp_path: Path, what: str, data: bytes, expected: str) -> None:
    path = tmp_path / "results.jsonl"
    path.write_bytes(data)
    with pytest.raises(InputError) as caught:
        read_results(path)
    assert str(caught.value).startswith(f"{path}:{expected}"), what


def test_a_bom_is_read_past_and_a_line_cut_before_its_newline_is_skipped(
    lines: list[dict[str, Any]], tmp_path: Path
) -> None:
    path = tmp_path / "results.jsonl"
    first, second = (json.dumps(record) for record in lines)
    path.write_bytes(b"\xef\xbb\xbf" + first.encode() + b"\n" + second[: len(second) // 2].encode())
    warnings: list[str] = []
    assert [r.run_id for r in read_results(path, warnings=warnings)] == [lines[0]["run_id"]]
    assert warnings == [f"{path}:2: last line is incomplete (interrupted run?); skipped"]


def test_the_fast_pass_of_a_whole_line_agrees_with_the_checkers_on_every_damaged_line(
    lines: list[dict[str, Any]]
) -> None:
    """A line the fast pass lets through is not checked again: it must refuse every line the checkers
    name a key of (and, for the speed it is there for, pass every line they pass)."""
    fast, checked = _passes(RunResult), _compile(RunResult)
    told = 0
    for what, line in damaged(lines):
        try:
            data = json.loads(line)
        except ValueError:
            continue  # a number too long to read: no record to check
        assert fast(data) == (checked(data) is None), what
        told += checked(data) is not None
    assert told > 500  # the damage reached the checkers, not only the JSON reader
    assert all(fast(line) for line in lines)


def test_the_one_pass_reading_gives_what_the_two_steps_give_or_leaves_the_line_to_them(
    lines: list[dict[str, Any]]
) -> None:
    """A line `read_checked` reads is neither checked nor read again: on every damaged line it must give
    None (the line is read the two-step way, which says what is wrong) or the very record the two steps
    give, written back as the same line; and it must read the undamaged lines (it is there for them)."""
    read = refused = 0
    for what, line in damaged(lines):
        try:
            data = json.loads(line)
        except ValueError:
            continue  # a number too long to read: no record to read
        result = read_checked(data)
        if result is None:
            refused += 1
            continue
        assert shape_problem(data) is None, what
        expected = RunResult.from_dict(data)
        assert result == expected and _line(result) == _line(expected), what
        read += 1
    assert refused > 500 and read > 50  # both ways met: damage refused, damage a record may hold read
    for line in lines:
        result = read_checked(line)
        assert result is not None and _line(result) == _line(RunResult.from_dict(line))


@pytest.mark.parametrize("value", [2.0**63, math.nextafter(2.0**63, 0), -(2.0**63), -math.nextafter(2.0**63, 0),
                                   2**63 - 1, 2**63, 1e308, 0.5])
def test_the_fast_pass_and_the_checkers_agree_on_numbers_at_the_int64_limit(
    lines: list[dict[str, Any]], value: float
) -> None:
    """The fast pass bounds a float by 2**63 as a float (no float lies between 2**63 - 1 and 2**63); the
    checkers by the integer 2**63 - 1: the same verdicts, on a number of the run and one of its trace."""
    for path in (("duration_s",), ("trace", "exchanges", 0, "duration_s")):
        data = broken(lines[0], path, value)
        fits = -(2**63 - 1) <= value <= 2**63 - 1
        assert _passes(RunResult)(data) is fits and (_compile(RunResult)(data) is None) is fits, (path, value)
        assert (read_checked(data) is not None) is fits, (path, value)


@pytest.mark.parametrize(("key", "raw", "said"), [
    ("duration_s", "1e20", "duration_s: expected a number, got a number too large for 64 bits (1e+20)"),
    ("steps", "NaN", "steps: expected a whole number, got NaN, which is no finite number"),
    ("duration_s", "-Infinity", "duration_s: expected a number, got -Infinity, which is no finite number"),
])
def test_a_number_out_of_range_says_why_it_is_refused(
        lines: list[dict[str, Any]], tmp_path: Path, key: str, raw: str, said: str) -> None:
    # "expected a number, got a number (1e+20)" gave no reason: the number is refused for its size.
    path = tmp_path / "results.jsonl"
    path.write_text(json.dumps({**lines[0], key: "@@"}).replace('"@@"', raw) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as caught:
        read_results(path)
    assert str(caught.value) == f"{path}:1: not a harness result record ({said})"
