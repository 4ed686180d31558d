"""The one YAML loader: line index, errors as InputError, and bounded work on hostile files.

Each loader of a user's file (scenario, script, prices, recording) goes through `harness._yaml`,
so each hostile case is shown through the loader a user would hit it with.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from harness import _yaml
from harness._yaml import (
    MAX_DEPTH,
    MAX_FILE_BYTES,
    MAX_NODES,
    _RecordingLoader,
    load_recording,
    parse_yaml,
    read_bytes,
)
from harness.cost import load_prices
from harness.errors import CassetteError, InputError, ScenarioError, ScriptError
from harness.scenario import load_scenario
from harness.trace import read_exchanges
from harness.transport.scripted import load_script


def billion_laughs(levels: int = 12, under: str = "") -> str:
    """About 1 KB that expands to 10**levels nodes if every alias is followed."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, levels):
        refs = ", ".join([f"*a{i - 1}"] * 10)
        lines.append(f"a{i}: &a{i} [{refs}]")
    lines.append(f"{under}bomb: *a{levels - 1}")
    return "\n".join(lines) + "\n"


def test_the_line_index_points_at_keys_and_items() -> None:
    document = parse_yaml("a:\n  b: 1\n  c:\n    - x\n    - y\n", "f.yaml")
    assert document.line_of(("a", "c", 1)) == 5
    assert document.line_of(("a", "missing")) == 1  # the nearest entry the file spells out
    assert document.index()[("a", "b")] == 2


def test_an_alias_bomb_is_refused_by_counting_nodes_not_by_expanding_them() -> None:
    with pytest.raises(InputError, match=f"more than {MAX_NODES:,} nodes through its aliases"):
        parse_yaml(billion_laughs(), "bomb.yaml")
    # A few aliases, as PyYAML and Psych write for a shared object, read as before.
    document = parse_yaml("base: &h {a: 1}\none: *h\ntwo: *h\n", "ok.yaml")
    assert document.data["two"] == {"a": 1}


def test_an_alias_inside_its_own_anchor_is_refused() -> None:
    with pytest.raises(InputError, match="cycle") as caught:
        parse_yaml("x: 1\nloop: &a [1, *a]\n", "loop.yaml")
    assert caught.value.line == 2


def test_nesting_beyond_the_cap_is_refused() -> None:
    deep = "".join("  " * i + "- \n" for i in range(MAX_DEPTH + 5))
    with pytest.raises(InputError, match="nested"):
        parse_yaml(deep, "deep.yaml")


def test_an_integer_too_long_for_python_is_an_error_with_its_line() -> None:
    with pytest.raises(InputError, match="integer of 5,000 digits") as caught:
        parse_yaml("a: 1\nb: " + "9" * 5000 + "\n", "big.yaml")
    assert caught.value.line == 2


def test_an_impossible_timestamp_is_kept_as_text() -> None:
    data = parse_yaml("good: 2024-02-28T00:00:00Z\nbad: 2024-02-30T00:00:00Z\n", "t.yaml", recording=True).data
    assert data["bad"] == "2024-02-30T00:00:00Z"
    assert data["good"].day == 28


def test_a_key_given_twice_is_refused_in_users_files_only() -> None:
    with pytest.raises(InputError, match="duplicate key") as caught:
        parse_yaml("a:\n  b: 1\n  b: 2\n", "dup.yaml")
    assert (caught.value.line, caught.value.key) == (3, "a.b")
    assert parse_yaml("b: 1\nb: 2\n", "rec.yaml", recording=True, unique_keys=False).data == {"b": 2}


def test_only_regular_files_are_read(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="FIFO"):
        read_bytes(fifo)  # returns at once, though nothing ever writes to the pipe
    with pytest.raises(InputError, match="character device"):
        read_bytes("/dev/zero")
    with pytest.raises(InputError, match="folder"):
        read_bytes(tmp_path)
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(tmp_path / "s.yaml"))
        with pytest.raises(InputError, match="cannot read|socket"):
            read_bytes(tmp_path / "s.yaml")


def test_a_file_over_the_size_cap_is_not_read(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    with big.open("wb") as handle:
        handle.truncate(MAX_FILE_BYTES + 1)  # sparse: no disk used
    with pytest.raises(InputError, match="MB limit; not read"):
        read_bytes(big)


@pytest.mark.parametrize("kind", ["scenario", "script", "prices", "recording"])
def test_every_users_file_goes_through_the_caps(tmp_path: Path, kind: str) -> None:
    path = tmp_path / f"{kind}.yaml"
    path.write_text(billion_laughs(), encoding="utf-8")
    load, error = {
        "scenario": (load_scenario, ScenarioError),
        "script": (load_script, ScriptError),
        "prices": (load_prices, InputError),
        "recording": (read_exchanges, CassetteError),
    }[kind]
    with pytest.raises(error, match="aliases") as caught:
        load(path)
    assert caught.value.path == str(path) and caught.value.line is not None


HOSTILE = {
    "alias bomb": billion_laughs(),
    "cycle": "x: 1\nloop: &a [1, *a]\n",
    "deep": "interactions:\n" + "".join("  " * i + "- \n" for i in range(MAX_DEPTH + 5)),
    "long integer": "a: 1\nb: " + "9" * 5000 + "\n",
    "two documents": "a: 1\n---\nb: 2\n",
    "broken": "a: [1, 2\nb: 3\n",
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_recording_read_in_one_pass_meets_every_cap_as_the_node_path_does(case: str) -> None:
    text = HOSTILE[case]
    with pytest.raises(InputError) as by_nodes:
        parse_yaml(text, "r.yaml", recording=True, unique_keys=False)
    with pytest.raises(InputError) as in_one_pass:
        load_recording(text.encode(), "r.yaml")
    assert (str(in_one_pass.value), in_one_pass.value.line) == (str(by_nodes.value), by_nodes.value.line)


def test_a_recording_read_in_one_pass_is_the_data_the_node_path_gives() -> None:
    text = (
        "interactions:\n"
        "- &first\n"
        "  request: {method: POST, uri: 'https://x/v1/messages', body: !binary aGk=}\n"
        "  response: {status: {code: 200}, at: 2024-02-30T00:00:00Z, ok: yes, n: 0x1f, f: 1.5, none: ~}\n"
        "  recorded_at: 2024-02-28T00:00:00Z\n"
        "- *first\n"
        "- request: !ruby/hash {method: GET}\n"  # a tagged collection: read by the node path
        "  ? !!python/object/apply:multidict._multidict.istr [Accept]\n"
        "  : json\n"
        "version: 1\n"
    )
    data, lines = load_recording(text.encode(), "r.yaml")
    assert data == parse_yaml(text, "r.yaml", recording=True, unique_keys=False).data
    assert data["interactions"][2]["Accept"] == "json" and data["interactions"][0]["request"]["body"] == b"hi"
    assert data["interactions"][0]["response"]["at"] == "2024-02-30T00:00:00Z"
    assert lines[("interactions", 2)] == 7 and lines[("version",)] == 10
    plain = "interactions:\n- {a: 1}\n- &x {b: 2}\n- *x\nversion: 1\n"
    data, lines = load_recording(plain.encode(), "p.yaml")  # no tag: the one pass keeps every line
    assert data == {"interactions": [{"a": 1}, {"b": 2}, {"b": 2}], "version": 1}
    assert data["interactions"][1] is data["interactions"][2]
    assert [lines[("interactions", i)] for i in range(3)] == [2, 3, 4]


def test_every_implicit_tag_of_a_recording_is_found_by_its_first_character() -> None:
    # load_recording takes a plain scalar whose first character no resolver is keyed by for a string,
    # without asking the loader: a resolver for every text (keyed None) would go unasked.
    resolvers = _RecordingLoader.yaml_implicit_resolvers
    assert None not in resolvers and {"", "1", "t", "~", "."} <= resolvers.keys()
    assert load_recording(b"a: request\nb: 12\nc: true\nd: ~\ne: .5\nf: ''\ng:\n", "r.yaml")[0] == {
        "a": "request", "b": 12, "c": True, "d": None, "e": 0.5, "f": "", "g": None}


def test_what_one_recording_resolved_is_kept_for_the_next_only_as_immutable_values(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # `_resolved` keeps what a plain text resolves to for the whole process, so that each recording does
    # not resolve its `200` and `1` again: only str, int, float, bool and None are kept (a timestamp is
    # made anew for each file), and the table stops growing at its limit.
    kept: dict[str, object] = {}
    monkeypatch.setattr(_yaml, "_RESOLVED", kept)
    monkeypatch.setattr(_yaml, "_RESOLVED_LIMIT", 6)
    text = b"code: 200\nmessage: OK\nagreed: yes\nat: 2024-02-28 10:00:00\nshare: .5\nwhat: ~\n"
    first, _ = load_recording(text, "a.yaml")
    second, _ = load_recording(text, "b.yaml")
    assert first == second == {"code": 200, "message": "OK", "agreed": True, "at": first["at"], "share": 0.5,
                               "what": None}
    assert first["at"] is not second["at"] and kept == {"200": 200, "OK": "OK", "yes": True, ".5": 0.5, "~": None}
    load_recording(b"a: 1\nb: 2\nc: 3\n", "c.yaml")
    assert list(kept)[-1] == "1" and len(kept) == 6
