"""Run results: the typed record, and the JSONL file they are appended to."""

from ._diff import ResultsDiff, RunDiff, diff_results
from ._frame import COLUMNS, to_frame
from ._merge import merge_results, parse_shard, select_shard, shard_of
from ._model import ExpectationResult, RunResult, Usage
from ._store import ResultsWriteError, ResultsWriter, iter_results, read_results, write_results

__all__ = [
    "COLUMNS", "ExpectationResult", "ResultsDiff", "ResultsWriteError", "ResultsWriter", "RunDiff",
    "RunResult", "Usage", "diff_results",
    "iter_results", "merge_results", "parse_shard", "read_results", "select_shard", "shard_of",
    "to_frame", "write_results",
]
