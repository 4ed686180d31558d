"""`harness merge`: join results files written by CI shards or pytest-xdist workers into one.

A thin front over `harness.results.merge_results`; the merged file is written atomically.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..results import merge_results, write_results
from ..results._merge import expand_result_paths


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
    warnings: list[str] = []
    # Counted as files, not as arguments: a downloaded artifact folder is one argument holding every
    # shard, and "from 1 input(s)" would hide that a shard's file was missing from it.
    files = expand_result_paths(args.files)
    results = merge_results(files, warnings=warnings)
    for warning in warnings:
        print(f"harness merge: warning: {warning}", file=sys.stderr)
    write_results(args.output, results)
    failed = sum(1 for r in results if r.status != "passed")
    print(f"merged {len(results)} run(s) ({failed} not passed) from {len(files)} file(s) into {args.output}")
    for file in files:
        print(f"  {file}")
    return 0
