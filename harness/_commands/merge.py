"""`harness merge`: join results files written by CI shards or pytest-xdist workers into one.

A thin front over `merge_files` (`harness.results.merge_results` written to a file in bounded memory);
the merged file is written atomically.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .._output import refuse_foreign_results
from ..results._merge import expand_result_paths, merge_files


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "merge",
        help="join results files from shards or xdist workers into one",
        description=(
            "Join results files (JSONL) into one, ordered by run id. A directory stands for every *.jsonl "
            "below it. The same run id in two files is an error unless both records are identical; a torn "
            "last line (interrupted run) is skipped with a warning."
        ),
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="results files or directories of them")
    parser.add_argument("-o", "--output", required=True, metavar="PATH", help="merged results file to write")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    refuse_foreign_results(args.output)
    warnings: list[str] = []
    # Counted as files, not as arguments: a downloaded artifact folder is one argument holding every
    # shard, and "from 1 input(s)" would hide that a shard's file was missing from it.
    files = expand_result_paths(args.files)
    # Streamed: a merge of 100,000 runs holds a digest per run, not the runs (see merge_files).
    count = merge_files(files, args.output, warnings=warnings)
    for warning in warnings:
        print(f"harness merge: warning: {warning}", file=sys.stderr)
    print(f"merged {count.runs} run(s) ({count.not_passed} not passed) from {len(files)} file(s) into {args.output}")
    for file in files:
        print(f"  {file}")
    return 0
