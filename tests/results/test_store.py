"""The results file: one durable line per run, read back the same, torn last lines skipped."""

from __future__ import annotations

import json
import os
import random
import re
from pathlib import Path

import pytest

from harness.errors import InputError
from harness.results import ResultsWriter, RunResult, _store, read_results, write_results
from harness.trace import Outcome


def result(run_id: str, text: str) -> RunResult:
    return RunResult(run_id=run_id, scenario="s", scenario_path="s.yaml", model="claude-sonnet-5", effort=None,
                     repeat=0, mode="scripted", status="passed", outcome=Outcome("completed", final_text=text))


def test_non_ascii_is_kept_and_a_lone_surrogate_is_escaped_not_fatal(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    with ResultsWriter(path) as writer:
        writer.write(result("a", "¿Dónde está? 🦜"))
        writer.write(result("b", "cut emoji \ud83d"))  # valid JSON, not encodable as UTF-8
    assert "¿Dónde está? 🦜" in path.read_text(encoding="utf-8")
    texts = [r.outcome.final_text for r in read_results(path) if r.outcome]
    assert texts == ["¿Dónde está? 🦜", "cut emoji \ud83d"]


def test_a_torn_last_line_is_skipped_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    with ResultsWriter(path) as writer:
        writer.write(result("a", "done"))
    with path.open("a", encoding="utf-8") as out:
        out.write('{"run_id": "b", "scen')  # the run was killed mid-write
    warnings: list[str] = []
    assert [r.run_id for r in read_results(path, warnings=warnings)] == ["a"]
    assert warnings and "incomplete" in warnings[0]


def test_a_torn_last_line_cut_inside_a_character_is_skipped_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    with ResultsWriter(path) as writer:
        writer.write(result("a", "done"))
    whole = ResultsWriter.line(result("b", "¿Dónde está? 🦜"))
    cut = whole.index("🦜".encode()) + 2
    with path.open("ab") as out:
        out.write(whole[:cut])  # killed mid-write, inside a character: the line is cut, not damaged
    warnings: list[str] = []
    assert [r.run_id for r in read_results(path, warnings=warnings)] == ["a"]
    assert warnings == [f"{path}:2: last line is incomplete (interrupted run?); skipped"]
    # The same cut as a size the report read up to, the run being written as it began.
    with path.open("ab") as out:
        out.write(whole[cut:])
    size = path.stat().st_size - len(whole) + cut
    assert [r.run_id for r in _store.read_lines(path, warnings=[], size=size)] == ["a"]
    # A line whose bytes are not UTF-8 before its end is damaged, torn or not.
    with path.open("ab") as out:
        out.write(b'{"run_id":"c\xff"}')
    with pytest.raises(InputError, match=r":3: .*not UTF-8"):
        read_results(path)


def test_a_torn_last_line_supersedes_no_line_unless_it_is_whole(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    first, other, retried = result("a", "error"), result("b", "done"), result("a", "retried")
    retry = ResultsWriter.line(retried)
    for written, read in [(retry[:100], [first, other]), (retry[:-1], [other, retried])]:
        # `--retry-errors` writes run a again: killed mid-line (or being written as the report reads),
        # its line holds no run, and the first stays the run's; written whole, the retry is.
        path.write_bytes(ResultsWriter.line(first) + ResultsWriter.line(other) + written)
        warnings: list[str] = []
        assert read_results(path, warnings=warnings) == read
        assert len(warnings) == (written == retry[:100])


def test_a_pipe_is_refused_not_read_as_no_runs(tmp_path: Path) -> None:
    # `harness report <(zcat results.jsonl.gz)`: a pipe, read once by the pass over run ids, then empty.
    source = tmp_path / "results.jsonl"
    write_results(source, [result("a", "done")])
    read, write = os.pipe()
    try:
        os.write(write, source.read_bytes())
        os.close(write)
        with pytest.raises(InputError, match=rf"^/dev/fd/{read}: is a pipe, not a file"):
            read_results(f"/dev/fd/{read}")
    finally:
        os.close(read)


def test_a_line_that_is_not_a_result_names_the_key_never_our_classes(tmp_path: Path) -> None:
    good = {"run_id": "a[m-high-r0]", "scenario": "a", "scenario_path": "a.yaml", "model": "m", "effort": "high",
            "repeat": 0, "mode": "replay", "status": "passed", "outcome": None}
    cases = [({"run_id": 5}, "missing scenario, scenario_path, model, effort, repeat, mode, status, outcome"),
             ({**good, "zzz": 1}, "unknown key 'zzz'"),
             ({**good, "usage": 5}, "usage: expected an object, got a number (5)"),
             ({**good, "findings": {"code": "T001"}}, "findings: expected a list, got an object")]
    for record, why in cases:
        path = tmp_path / "bad.jsonl"
        path.write_text(json.dumps(record) + "\n", encoding="utf-8")
        with pytest.raises(InputError) as caught:
            read_results(path)
        message = str(caught.value)
        assert f"bad.jsonl:1: not a harness result record ({why})" in message
        assert "RunResult" not in message and "__init__" not in message and "_model" not in message


def superseded(source: Path, size: int | None = None) -> set[int]:
    """The lines `_scan` finds a later line supersedes."""
    with source.open("rb", buffering=0) as file:
        return _store._scan(source, file, size).superseded


def superseded_line_by_line(source: Path) -> set[int]:
    """What the pass over run ids found before it searched the file in blocks: a line at a time."""
    run_id_at_start = re.compile(rb'^\{"run_id":("(?:[^"\\]|\\.)*")')
    last: dict[str, int] = {}
    earlier: set[int] = set()
    with source.open("rb") as lines:
        for number, line in enumerate(lines, start=1):
            found = run_id_at_start.match(line.removeprefix(b"\xef\xbb\xbf") if number == 1 else line)
            if found is None:
                continue
            if not line.endswith(b"\n"):  # the torn last line: only a whole one is a later line
                try:
                    json.loads(line)
                except ValueError:
                    continue
            try:
                run_id = json.loads(found.group(1))
            except ValueError:
                continue
            if run_id in last:
                earlier.add(last[run_id])
            last[run_id] = number
    return earlier


@pytest.mark.parametrize("block", [1, 2, 7, 64, 1 << 22])
def test_the_lines_a_later_line_supersedes_are_found_in_blocks_as_line_by_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: int
) -> None:
    """Block boundaries anywhere (inside a line, at its newline, inside a run id), a BOM, blank and
    damaged lines, escaped and unclosed ids, a torn last line: the same lines as one line at a time."""
    monkeypatch.setattr(_store, "_BLOCK", block)
    ids = [b'"a"', b'"b"', b'"a"', b'"c\\"d"', b'"c\\"d"', b'"\\u0061"', b'"\xc3\xa9"', b'"\xc3\xa9"', b'"x\\q"',
           b'"x\\q"', b'"e\x01"', b'"e\x01"', b'"unclosed', b'"\xed\xa0\x80"', b'"\xed\xa0\x80"', b'"b"']
    rng = random.Random(block)
    path = tmp_path / "results.jsonl"
    for bom in (b"", b"\xef\xbb\xbf"):
        for torn in (False, True):
            for _ in range(20):
                lines = []
                for run_id in rng.sample(ids, k=len(ids)) * 2:
                    lines.append(rng.choice([b'{"run_id":' + run_id + b',"x":"' + b"y" * rng.randrange(20) + b'"}',
                                             b"", b"   ", b'{"scenario":"s","run_id":' + run_id + b"}",
                                             b'{"run_id":' + run_id]))
                text = bom + b"\n".join(lines) + (b"" if torn else b"\n")
                path.write_bytes(text)
                assert superseded(path) == superseded_line_by_line(path), text


def test_a_finding_names_its_run_in_the_line_only_when_it_has_one(tmp_path: Path) -> None:
    # Findings of a single run carry no `run` key: such lines read as they did before findings could
    # name a run of a multi-run recording (an older harness refuses keys it does not know).
    from dataclasses import replace

    from harness.checks import Finding

    plain = Finding("L001", "error", 1, 2, "the loop ended early")
    placed = Finding("X901", "error", None, None, "the run made 1 call(s)", run="run 2 of 2")
    path = tmp_path / "results.jsonl"
    with ResultsWriter(path) as writer:
        writer.write(replace(result("a", "done"), findings=[plain, placed]))
    written = json.loads(path.read_text(encoding="utf-8"))["findings"]
    assert [sorted(f) for f in written] == [
        ["block_index", "call", "code", "message", "message_index", "severity", "step", "thread"],
        ["block_index", "call", "code", "message", "message_index", "run", "severity", "step", "thread"],
    ]
    assert read_results(path)[0].findings == [plain, placed]


@pytest.mark.parametrize("block", [1, 3, 16])
def test_lines_many_blocks_long_and_a_size_limit_find_the_same_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: int
) -> None:
    """Lines tens of blocks long (read again in blocks twice as large until one holds them), with every
    file cut at every few bytes (as a report reads a file still appended to): the same lines as one line
    at a time reads in the bytes kept."""
    monkeypatch.setattr(_store, "_BLOCK", block)
    rng = random.Random(block)
    lines = []
    for _ in range(12):
        run_id = rng.choice([b'"a"', b'"b"', b'"' + b"l" * 40 + b'"', b'"c\\"d"'])
        lines.append(b'{"run_id":' + run_id + b',"x":"' + b"y" * rng.randrange(200) + b'"}\n')
    text = b"".join(lines)
    whole, cut = tmp_path / "results.jsonl", tmp_path / "cut.jsonl"
    whole.write_bytes(text)
    assert superseded(whole) == superseded_line_by_line(whole) != set()
    for size in range(0, len(text) + 1, 7):
        cut.write_bytes(text[:size])
        assert superseded(whole, size) == superseded_line_by_line(cut), size


def lines_line_by_line(source: Path, size: int) -> list[tuple[int, bool, bytes, str | None] | str]:
    """What `result_lines` took of the first `size` bytes before it read its lines from where the pass over run
    ids found them: each line read, in order, past those superseded, its BOM left out, the blank ones of any
    Unicode whitespace skipped, a line not UTF-8 said (then no more). Each with its number, whether torn,
    its bytes and its run id."""
    data = source.read_bytes()[:size]
    cut = source.with_name("cut-" + source.name)
    cut.write_bytes(data)
    later = superseded_line_by_line(cut)
    taken: list[tuple[int, bool, bytes, str | None] | str] = []
    lines = re.findall(rb"[^\n]*\n|[^\n]+$", data)
    for number, line in enumerate(lines, start=1):
        if number in later:
            continue
        torn = number == len(lines) and not line.endswith(b"\n")
        line = line.removeprefix(b"\xef\xbb\xbf") if number == 1 else line
        try:  # a whole line that starts as a run's is taken undecoded, damaged or not (said when read)
            text = "{" if line.startswith(b"{") and not torn else line.decode("utf-8")
        except UnicodeDecodeError as exc:
            if not (torn and exc.end == len(line) and exc.reason == "unexpected end of data"):
                taken.append(f"{cut.name}:{number}: not UTF-8")
                break
            text = line[:exc.start].decode("utf-8")  # cut inside a character: its text ends before it
        if text.strip():
            taken.append((number, torn, line, _store._written_id(line)))
    return taken


@pytest.mark.parametrize("block", [1, 5, 64, 1 << 18])
def test_lines_are_taken_from_where_the_pass_over_run_ids_found_them_as_line_by_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: int
) -> None:
    """Each line is read from where the pass over run ids found it: the same lines, bytes and run ids as
    reading them one at a time, whatever the blocks, a BOM, blank lines of any whitespace, lines not
    UTF-8, superseded, damaged and torn lines, and with every file cut at every few bytes."""
    monkeypatch.setattr(_store, "_BLOCK", block)
    rng = random.Random(block)
    kinds = [b'{"run_id":"a","x":"y"}', b'{"run_id":"b","x":"' + "é".encode() * 30 + b'"}', b"", b"  \t",
             "\u00a0\u3000".encode(), b'{"scenario":"s","run_id":"a"}', b'{"run_id":"c\\"d"}', b"not json",
             b'{"run_id":"a"', b"\xff\xfe", b"{\xff}", b'{"run_id":"' + b"l" * 300 + b'"}']
    for bom in (b"", b"\xef\xbb\xbf"):
        for _ in range(6):
            text = bom + b"\n".join(rng.choices(kinds, k=14)) + rng.choice([b"", b"\n", "\n{\"é".encode()[:-1]])
            path = tmp_path / "results.jsonl"
            path.write_bytes(text)
            for size in range(0, len(text) + 1, 5):
                expected = lines_line_by_line(path, size)
                taken: list[tuple[int, bool, bytes, str | None] | str] = []
                try:
                    for line in _store.result_lines(path, size):
                        taken.append((line.number, line.torn, line.utf8, line.written_id()))
                except InputError as exc:
                    assert exc.problem.startswith("not UTF-8") and exc.line is not None
                    taken.append(f"cut-results.jsonl:{exc.line}: not UTF-8")
                assert taken == expected, (text, size)


def test_a_size_limited_read_reads_the_lines_the_size_holds(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    runs = [result(f"r{n}", "done") for n in range(3)]
    write_results(path, runs)
    text = path.read_bytes()
    second_ends = text.index(b"\n", text.index(b"\n") + 1) + 1
    with path.open("ab") as file:
        file.write(b'{"run_id":"later"')  # appended after the size was taken: never read
    warnings: list[str] = []
    assert [r.run_id for r in _store.read_lines(path, warnings=warnings, size=second_ends)] == [
        runs[0].run_id, runs[1].run_id]
    assert warnings == []
    # Cut inside the third line: its torn last line, as a file a writer is still writing.
    got = list(_store.read_lines(path, warnings=warnings, size=second_ends + 10))
    assert [r.run_id for r in got] == [runs[0].run_id, runs[1].run_id]
    assert warnings == [f"{path}:3: last line is incomplete (interrupted run?); skipped"]


def test_lines_are_parsed_from_the_bytes_read_and_blank_ones_of_any_whitespace_skipped(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    with ResultsWriter(path) as writer:
        writer.write(result("a", "¿Dónde está? 🦜"))
        writer.write(result("b", "cut emoji \ud83d"))  # escaped to ASCII: its bytes are still its text's UTF-8
    whole = path.read_bytes()
    # Lines of Unicode whitespace only (no-break space, ideographic space) are blank, as str.strip says;
    # a torn last line cut inside a character is read from its text, cut before it.
    cut_in_emoji = whole[:whole.index("🦜".encode()) + 2]
    path.write_bytes(b"\xef\xbb\xbf" + whole + "\u00a0\t\n\u3000\r\n\n".encode() + cut_in_emoji)
    # A line's bytes are read as it is taken, before the next.
    lines = [(line.number, line.torn, line.utf8, line.text) for line in _store.result_lines(path)]
    assert [(number, torn) for number, torn, _, _ in lines] == [(1, False), (2, False), (6, True)]
    assert [utf8 for _, _, utf8, _ in lines[:2]] == [text.encode("utf-8") for _, _, _, text in lines[:2]] == (
        whole.splitlines(keepends=True))
    assert lines[2][2] == cut_in_emoji and lines[2][3].endswith("está? ")
    warnings: list[str] = []
    assert [r.outcome.final_text for r in read_results(path, warnings=warnings) if r.outcome] == [
        "¿Dónde está? 🦜", "cut emoji \ud83d"]
    assert warnings == [f"{path}:6: last line is incomplete (interrupted run?); skipped"]
