"""Split runs across CI shards, and join the result files they write back into one.

`select_shard` picks a run by a hash of its run id alone, so adding a scenario never moves the
others to another shard; `merge_results` joins shard and xdist-worker files, refusing conflicts.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import os
import re
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from .._output import why_not_written, write_with
from ..errors import InputError, UsageError
from ._model import RunResult
from ._store import ResultsWriter, iter_results, read_results

T = TypeVar("T")

_SHARD = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")


def parse_shard(spec: str) -> tuple[int, int]:
    """Read `K/N` (1-based K, 1 <= K <= N) as `(k, n)`; anything else is an error that shows the form."""
    match = _SHARD.fullmatch(spec)
    if match is None:
        raise UsageError(
            f"--shard {spec!r}: expected K/N with whole numbers, e.g. --shard 2/4 for the second of four shards")
    k, n = int(match.group(1)), int(match.group(2))
    if n < 1:
        raise UsageError(f"--shard {spec!r}: the number of shards N must be at least 1")
    if not 1 <= k <= n:
        raise UsageError(f"--shard {spec!r}: K counts from 1 and must be at most N={n}, e.g. --shard 1/{n} .. {n}/{n}")
    return k, n


def shard_of(run_id: str, n: int) -> int:
    """The 1-based shard a run id belongs to among `n`.

    sha256 rather than `hash()`, which is salted per process and would send a run to different
    shards on different CI machines.
    """
    if n < 1:
        raise UsageError(f"the number of shards must be at least 1, got {n}")
    digest = hashlib.sha256(run_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % n + 1


def select_shard(run_ids: Iterable[T], k: int, n: int, *, key: Callable[[T], str] | None = None) -> list[T]:
    """The items of shard `k` of `n` (1-based), in their given order.

    Items are run ids, or anything else with `key` giving the run id (a matrix cell, for instance).
    """
    if n < 1 or not 1 <= k <= n:
        raise UsageError(f"shard {k}/{n}: K counts from 1 and must be at most N (N >= 1)")
    pick = key if key is not None else str
    return [item for item in run_ids if shard_of(pick(item), n) == k]


def run_id_order(run_id: str) -> tuple[object, ...]:
    """Sort key that reads digit runs as numbers, so `...-r10]` comes after `...-r9]`."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", run_id))


def expand_result_paths(paths: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """Files as given; a directory stands for every `*.jsonl` below it (a downloaded CI artifact)."""
    files: list[Path] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*.jsonl") if p.is_file())
            if not found:
                raise InputError(str(path),
                                 "directory holds no *.jsonl results files; pass the results files themselves")
            files.extend(found)
        elif path.is_file():
            files.append(path)
        else:
            raise InputError(str(path),
                             "no such results file; check the path (shards write e.g. results.shard-1.jsonl)")
    return files


SPILL_BYTES = 32 * 1024 * 1024
"""Lines of results held before they are sorted and set aside in a temporary file: what bounds the
memory of a merge, whatever the number of runs or the size of their traces."""


@dataclass
class MergeCount:
    """What a merge wrote: runs, and of them the ones that did not pass."""

    runs: int = 0
    not_passed: int = 0


def merge_results(
    paths: Sequence[str | os.PathLike[str]], *, warnings: list[str] | None = None
) -> list[RunResult]:
    """Join results files (CI shards, xdist workers) into one list ordered by run id.

    The same run id twice is kept once when both records are identical (a file merged twice) and is
    an error naming both places otherwise. A torn last line is skipped and noted in `warnings`.
    `merge_files` writes the same merge to a file without holding it.
    """
    with tempfile.TemporaryDirectory(prefix="harness-merge-") as folder:
        merged = Path(folder) / "merged.jsonl"
        merge_files(paths, merged, warnings=warnings)
        return read_results(merged)


def merge_files(paths: Sequence[str | os.PathLike[str]], output: str | os.PathLike[str], *,
                warnings: list[str] | None = None) -> MergeCount:
    """`merge_results` written to `output` (atomically) in bounded memory: the results are read one at a
    time and set aside as their lines, sorted, in temporary files of at most SPILL_BYTES, which are then
    read back together in run id order. What is held is a digest per run id (to find the same run
    twice), never the runs."""
    files = expand_result_paths(paths)
    # Beside the output, not in /tmp: the runs may be gigabytes, and a tmpfs holds them in memory.
    try:
        folder = Path(output).resolve().parent
        folder.mkdir(parents=True, exist_ok=True)
        spill = tempfile.TemporaryDirectory(prefix=".harness-merge-", dir=folder)
    except OSError as exc:
        why = why_not_written(exc, Path(output))
        raise InputError(str(output), f"cannot be written ({why}); nothing was merged") from None
    with spill:
        spilled, count = _set_aside(files, Path(spill.name), warnings)
        # The lines are the writer's own (ResultsWriter.line), written whole as write_results writes them.
        write_with(output, lambda out: out.writelines(line.decode("utf-8") for line in _in_order(spilled)))
    return count


def _order(run_id: str) -> tuple[tuple[object, ...], str]:
    # The id itself breaks ties: "r01" and "r1" read as the same number but are different runs.
    return run_id_order(run_id), run_id


def _set_aside(files: list[Path], spill: Path, warnings: list[str] | None) -> tuple[list[Path], MergeCount]:
    """Every result of `files` once, as its line, into sorted temporary files; a run id whose records
    differ is an error naming both files. Each line there follows its run id (JSON) and a tab."""
    seen: dict[str, tuple[bytes, str]] = {}
    pending: list[tuple[tuple[tuple[object, ...], str], bytes]] = []
    held = 0
    spilled: list[Path] = []
    count = MergeCount()

    def set_aside() -> None:
        nonlocal held
        pending.sort(key=lambda item: item[0])
        path = spill / f"{len(spilled)}.tsv"
        with path.open("wb") as out:
            out.writelines(json.dumps(key[1]).encode("utf-8") + b"\t" + line for key, line in pending)
        spilled.append(path)
        pending.clear()
        held = 0

    for path in files:
        where = str(path)
        for result in iter_results(path, warnings=warnings):
            line = ResultsWriter.line(result)  # as the merged file will hold it: compact, redacted
            digest = hashlib.blake2b(line, digest_size=16).digest()
            earlier = seen.get(result.run_id)
            if earlier is not None:
                if earlier[0] != digest:
                    raise InputError(
                        where,
                        f"run id {result.run_id!r} is also in {earlier[1]} with a different result; "
                        "the same run was executed twice (overlapping shards, or an old file left in the "
                        "results directory) — merge only one of them",
                    )
                continue
            seen[result.run_id] = (digest, where)
            count.runs += 1
            count.not_passed += result.status != "passed"
            pending.append((_order(result.run_id), line))
            held += len(line)
            if held >= SPILL_BYTES:
                set_aside()
    if pending or not spilled:
        set_aside()
    return spilled, count


def _in_order(spilled: list[Path]) -> Iterator[bytes]:
    """The lines of the sorted temporary files, merged into one run id order."""

    def keyed(path: Path) -> Iterator[tuple[tuple[tuple[object, ...], str], bytes]]:
        with path.open("rb") as lines:
            for entry in lines:
                run_id, line = entry.split(b"\t", 1)
                yield _order(json.loads(run_id)), line

    for _, line in heapq.merge(*(keyed(path) for path in spilled), key=lambda item: item[0]):
        yield line
