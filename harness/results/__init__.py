"""Run results: the typed record, and the JSONL file they are appended to.

The names are imported on first use: a report reads results and needs neither the baseline diff
(`_diff`: difflib, deepdiff's wrappers) nor the merge of shards.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_dir, lazy_exports

_EXPORTS = {
    "ResultsDiff": "._diff",
    "RunDiff": "._diff",
    "diff_results": "._diff",
    "COLUMNS": "._frame",
    "to_frame": "._frame",
    "merge_results": "._merge",
    "parse_shard": "._merge",
    "select_shard": "._merge",
    "shard_of": "._merge",
    "ExpectationResult": "._model",
    "RunResult": "._model",
    "Usage": "._model",
    "ResultsWriteError": "._store",
    "ResultsWriter": "._store",
    "iter_results": "._store",
    "read_results": "._store",
    "write_results": "._store",
}

# Literal, so that linters and readers see the public names; a test keeps it equal to _EXPORTS.
__all__ = [
    "COLUMNS",
    "ExpectationResult",
    "ResultsDiff",
    "ResultsWriteError",
    "ResultsWriter",
    "RunDiff",
    "RunResult",
    "Usage",
    "diff_results",
    "iter_results",
    "merge_results",
    "parse_shard",
    "read_results",
    "select_shard",
    "shard_of",
    "to_frame",
    "write_results",
]

if TYPE_CHECKING:
    from ._diff import ResultsDiff, RunDiff, diff_results
    from ._frame import COLUMNS, to_frame
    from ._merge import merge_results, parse_shard, select_shard, shard_of
    from ._model import ExpectationResult, RunResult, Usage
    from ._store import ResultsWriteError, ResultsWriter, iter_results, read_results, write_results


__getattr__ = lazy_exports(__name__, _EXPORTS, globals())
__dir__ = lazy_dir(_EXPORTS, globals())
