"""Every recording of real traffic in tests/corpus/recordings reads without a crash and gets a verdict.

The MANIFEST says how many Messages calls each file holds; the reader must find exactly those. It
also says where each file came from: the copies must stay byte-identical, with their licence beside them.
"""

from __future__ import annotations

import csv
import hashlib
from pathlib import Path
from typing import Any

import pytest

from harness.trace import load_trace

CORPUS = Path(__file__).resolve().parent / "recordings"
NOT_RECORDINGS = {"README.md", "MANIFEST.tsv", "LICENSE"}


def manifest() -> dict[str, dict[str, str]]:
    with (CORPUS / "MANIFEST.tsv").open(newline="", encoding="utf-8") as handle:
        return {row["local_path"]: row for row in csv.DictReader(handle, delimiter="\t")}


def recordings() -> list[Any]:
    return [pytest.param(CORPUS / name, id=name) for name in sorted(manifest())]


def test_the_manifest_lists_exactly_the_files_kept() -> None:
    on_disk = {str(path.relative_to(CORPUS)) for path in CORPUS.rglob("*")
               if path.is_file() and path.name not in NOT_RECORDINGS}
    assert on_disk == set(manifest())
    assert len(on_disk) == 92


@pytest.mark.parametrize("path", recordings())
def test_each_recording_is_the_unmodified_file_of_its_source(path: Path) -> None:
    row = manifest()[str(path.relative_to(CORPUS))]
    data = path.read_bytes()
    # The git blob id of the file at the recorded commit: a copy edited here would no longer be theirs.
    assert hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest() == row["git_blob_sha1"]
    assert row["license"] in {"MIT", "Apache-2.0"}
    notice = (path.parent / "LICENSE").read_text(encoding="utf-8")
    assert ("Apache License" in notice) if row["license"] == "Apache-2.0" else ("MIT License" in notice)


@pytest.mark.parametrize("path", recordings())
def test_recording_reads_and_gets_a_verdict(path: Path) -> None:
    trace = load_trace(path)
    assert trace.calls or any("no Messages API traffic" in note for note in trace.notes), trace.notes
    expected = manifest().get(str(path.relative_to(CORPUS)))
    assert expected is not None, "every corpus file is listed in MANIFEST.tsv"
    assert len(trace.exchanges) == int(expected["n_interactions"])
    assert sum(e.is_messages_call for e in trace.exchanges) == int(expected["n_messages_calls"])
    for exchange in trace.exchanges:
        if exchange.streamed:
            assert exchange.stream_complete, f"exchange {exchange.index}: stream cut short"
        if exchange.is_messages_call and exchange.ok:
            assert isinstance(exchange.response_body.get("content"), list)
    stop_reasons = expected["stop_reasons"]
    if stop_reasons:
        seen: dict[str, int] = {}
        for exchange in trace.exchanges:
            if exchange.is_messages_call and exchange.ok:
                reason = exchange.response_body.get("stop_reason")
                seen[reason] = seen.get(reason, 0) + 1
        assert seen == {k: int(v) for k, v in (part.split(":") for part in stop_reasons.split(","))}


@pytest.mark.parametrize("path", recordings())
def test_response_blocks_match_the_manifest(path: Path) -> None:
    expected = manifest()[str(path.relative_to(CORPUS))]["response_block_types"]
    seen: dict[str, int] = {}
    for exchange in load_trace(path).exchanges:
        if exchange.is_messages_call and exchange.ok:
            for block in exchange.response_body["content"]:
                seen[block["type"]] = seen.get(block["type"], 0) + 1
    assert seen == ({k: int(v) for k, v in (part.split(":") for part in expected.split(","))} if expected else {})
