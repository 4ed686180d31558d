"""Run results: the typed record, and the JSONL file they are appended to."""

from ._model import ExpectationResult, RunResult, Usage
from ._store import ResultsWriter, read_results, write_results

__all__ = ["ExpectationResult", "ResultsWriter", "RunResult", "Usage", "read_results", "write_results"]
