"""`harness diff BASE NEW`: compare results against a baseline; exit 1 when anything regressed, 2 when
an input cannot be read or NEW holds none of BASE's run ids (nothing was compared).

Runs are judged by cell (the run id without its repeat), over all their repeats: a pass count that
dropped (every run passed before and none passes now, or one-sided Fisher's exact p <= --alpha), a
rule's error findings that became more frequent the same way, median cost or steps grown beyond the
thresholds.
The text, Markdown or JSON goes to stdout; `-o DIR` also writes an HTML page with the two traces
side by side from the first step where they diverge.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from ..errors import UsageError
from ..report._diffpage import build_diff_page
from ..results._diff import DEFAULT_ALPHA, DEFAULT_THRESHOLD_COST_PCT, DEFAULT_THRESHOLD_STEPS, diff_results
from .report import read_results_files

N = TypeVar("N", int, float)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "diff",
        help="compare results against a baseline; exit 1 on regression",
        description="Compare NEW results against BASE, run id by run id, and judge each cell (scenario, case, "
        "model, effort) over its repeats. Exit status 1 when anything regressed; 2 when an input cannot be read "
        "or NEW holds none of BASE's run ids (nothing was compared).",
    )
    parser.add_argument("base", metavar="BASE", help="baseline results file")
    parser.add_argument("new", metavar="NEW", help="new results file")
    parser.add_argument("--threshold-cost", type=_percentage, default=DEFAULT_THRESHOLD_COST_PCT, metavar="PCT",
                        help="a run's cost growing by more than PCT percent is a regression (default "
                             f"{DEFAULT_THRESHOLD_COST_PCT:g})")
    parser.add_argument("--threshold-steps", type=_steps, default=DEFAULT_THRESHOLD_STEPS, metavar="N",
                        help="a run taking more than N extra steps is a regression "
                             f"(default {DEFAULT_THRESHOLD_STEPS})")
    parser.add_argument("--alpha", type=_probability, default=DEFAULT_ALPHA, metavar="P",
                        help="with repeats, a cell's pass count that dropped regresses when one-sided Fisher's exact "
                        f"p <= P (default {DEFAULT_ALPHA:g}); a cell whose every run passed before and none passes now "
                        "regresses whatever P")
    parser.add_argument("--format", choices=["text", "markdown", "json"], default="text", help="stdout format")
    parser.add_argument("-o", "--output", metavar="DIR", help="also write DIR/index.html with side-by-side traces")
    parser.set_defaults(func=run)


def _probability(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1, got {text!r}") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1, got {text}")
    return value


def _zero_or_more(convert: Callable[[str], N], what: str) -> Callable[[str], N]:
    """An argparse type for a threshold: below 0 (or NaN) every unchanged run, or none, would regress.

    A cost threshold of inf is allowed: cost then never regresses.
    """

    def parse(text: str) -> N:
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what} of 0 or more, got {text!r}") from None
        if not value >= 0:
            raise argparse.ArgumentTypeError(f"expected {what} of 0 or more, got {text}")
        return value

    return parse


_percentage = _zero_or_more(float, "a percentage")
_steps = _zero_or_more(int, "a number of steps")


def run(args: argparse.Namespace) -> int:
    if args.output:  # said before anything is read: `-o .` in a site's folder keeps its own index.html
        from .._output import PAGE_START, refuse_foreign

        refuse_foreign(Path(args.output) / "index.html", "a harness diff page", PAGE_START)
    base, new = read_results_files([args.base]), read_results_files([args.new])
    if base and not {r.run_id for r in base} & {r.run_id for r in new}:
        # Every baseline run would be listed as removed, which is no regression: "OK", exit 0, for a
        # gate that compared nothing (a run that wrote no result, or the wrong file).
        raise UsageError(f"{args.new} holds none of the {len(base)} run(s) of {args.base} ({len(new)} run(s), "
                         "none with the same run id): nothing to compare")
    diff = diff_results(base, new,
                        threshold_cost_pct=args.threshold_cost, threshold_steps=args.threshold_steps, alpha=args.alpha)
    text = {"text": diff.to_text, "markdown": diff.to_markdown, "json": diff.to_json}[args.format]()
    print(text, end="")
    if args.output:
        print(f"diff page: {build_diff_page(diff, args.output)}")
    return 1 if diff.regressed else 0
