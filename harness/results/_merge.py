"""Split runs across CI shards, and join the result files they write back into one.

`select_shard` picks a run by a hash of its run id alone, so adding a scenario never moves the
others to another shard; `merge_results` joins shard and xdist-worker files, refusing conflicts.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TypeVar

from ..errors import InputError, UsageError
from ._model import RunResult
from ._store import read_results

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


def merge_results(
    paths: Sequence[str | os.PathLike[str]], *, warnings: list[str] | None = None
) -> list[RunResult]:
    """Join results files (CI shards, xdist workers) into one list ordered by run id.

    The same run id twice is kept once when both records are identical (a file merged twice) and is
    an error naming both places otherwise. A torn last line is skipped and noted in `warnings`.
    """
    seen: dict[str, tuple[RunResult, str]] = {}
    for path in expand_result_paths(paths):
        for result in read_results(path, warnings=warnings):
            earlier = seen.get(result.run_id)
            if earlier is None:
                seen[result.run_id] = (result, str(path))
                continue
            kept, where = earlier
            if kept.to_dict() != result.to_dict():
                raise InputError(
                    str(path),
                    f"run id {result.run_id!r} is also in {where} with a different result; "
                    "the same run was executed twice (overlapping shards, or an old file left in the "
                    "results directory) — merge only one of them",
                )
    return [seen[run_id][0] for run_id in sorted(seen, key=run_id_order)]

