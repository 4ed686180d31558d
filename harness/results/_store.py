"""The results file: JSON Lines, one `RunResult` a line, appended the moment a run finishes.

Each line is flushed and synced as it is written, so an interrupted run keeps every finished result;
a reader skips a torn last line and says so instead of failing. Every line is redacted as it is
made (`_line`): a run's trace holds what the model said, which may be the API key.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import IO

from ..errors import InputError
from ..trace._scrub import default_secrets, redact_json
from ._model import RunResult


class ResultsWriter:
    """Appends results to a JSONL file, durably, one line per run."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[str] = self.path.open("a", encoding="utf-8")

    def write(self, result: RunResult) -> None:
        self._file.write(_line(result))
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> ResultsWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_results(path: str | os.PathLike[str], *, warnings: list[str] | None = None) -> list[RunResult]:
    """Read a results file. A torn last line (interrupted run) is skipped and noted in `warnings`."""
    results: list[RunResult] = []
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            if number == len(lines):
                if warnings is not None:
                    warnings.append(f"{path}:{number}: last line is incomplete (interrupted run?); skipped")
                continue
            raise InputError(str(path), f"not a JSON results line ({exc.msg})", line=number) from exc
        try:
            results.append(RunResult.from_dict(data))
        except (TypeError, KeyError) as exc:
            raise InputError(str(path), f"not a harness result record ({exc})", line=number) from exc
    return results


def write_results(path: str | os.PathLike[str], results: Iterable[RunResult]) -> None:
    """Write a whole results file atomically (used by merge)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as out:
        for result in results:
            out.write(_line(result))
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, target)


def _line(result: RunResult) -> str:
    """One result as its line of the file: compact JSON, non-ASCII kept as is, secrets redacted.

    A lone surrogate (valid in JSON, e.g. a model's cut emoji) cannot be written as UTF-8; such a
    line is escaped to ASCII instead, which reads back the same.

    The line is redacted after it is serialized, whichever way it was, so that no string of the
    record (final text, tool output, request and response bodies, error messages) can carry the key
    to disk, and every report built from the file is clean as well. The environment is read on
    every line: a long-lived writer sees the key a test or a caller sets later.
    """
    data = result.to_dict()
    line = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        line = json.dumps(data, ensure_ascii=True, separators=(",", ":"))
    return redact_json(line, default_secrets()) + "\n"
