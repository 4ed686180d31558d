"""The statistics every comparison rests on: exact tests on pass/fail counts and a seeded bootstrap.

One module for the baseline diff (did a cell's pass rate really drop, or is it one flaky repeat?)
and the paired comparison of two cells on the same cases (is one better, and by how much?). Exact
tests, because evals run a handful of repeats, where normal approximations are wrong; the bootstrap
is seeded, so a report built twice from the same results says the same thing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Literal

Z_95 = 1.959963984540054
"""Two-sided 95% normal quantile."""

DEFAULT_SEED = 0
DEFAULT_RESAMPLES = 2000


def wilson_interval(passed: int, n: int, z: float = Z_95) -> tuple[float, float]:
    """Wilson score interval of a pass rate, honest for few runs; (0, 1) when there is no run."""
    if n <= 0:
        return (0.0, 1.0)
    p = passed / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def _hypergeometric(k: int, draws: int, successes: int, total: int) -> Fraction:
    """P(X = k) for X the successes among `draws` taken without replacement from `total` items."""
    return Fraction(math.comb(successes, k) * math.comb(total - successes, draws - k), math.comb(total, draws))


def fisher_exact(a_passed: int, a_runs: int, b_passed: int, b_runs: int,
                 alternative: Literal["less", "greater", "two-sided"] = "two-sided") -> float:
    """Fisher's exact test on two pass counts: the p-value that B's pass rate differs from A's.

    `less`: B passes less often than A (a drop); `greater`: more often; `two-sided`: either, summing
    the tables no more likely than the one observed. Conditional on the total passes, so exact for
    any number of runs. 1.0 when either side has no run.
    """
    if not (0 <= a_passed <= a_runs and 0 <= b_passed <= b_runs):
        raise ValueError(f"pass counts out of range: {a_passed}/{a_runs}, {b_passed}/{b_runs}")
    if a_runs == 0 or b_runs == 0:
        return 1.0
    total, successes, draws = a_runs + b_runs, a_passed + b_passed, b_runs
    low, high = max(0, draws - (total - successes)), min(draws, successes)
    probs = {k: _hypergeometric(k, draws, successes, total) for k in range(low, high + 1)}
    if alternative == "less":
        p = sum((probs[k] for k in range(low, b_passed + 1)), Fraction(0))
    elif alternative == "greater":
        p = sum((probs[k] for k in range(b_passed, high + 1)), Fraction(0))
    else:
        observed = probs[b_passed]
        p = sum((q for q in probs.values() if q <= observed), Fraction(0))
    return min(1.0, float(p))


def mcnemar(only_a: int, only_b: int) -> float:
    """McNemar's exact test on paired pass/fail: the two-sided p-value that the cases only A passes
    (`only_a`) and those only B passes (`only_b`) are not a fair coin's split. Cases both pass or
    both fail say nothing about which is better and are not counted. 1.0 when no case differs."""
    if only_a < 0 or only_b < 0:
        raise ValueError(f"counts must be non-negative: {only_a}, {only_b}")
    n = only_a + only_b
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(only_a, only_b) + 1))
    return min(1.0, float(Fraction(2 * tail, 2**n)))


def bootstrap_mean_ci(values: Sequence[float], *, seed: int = DEFAULT_SEED, resamples: int = DEFAULT_RESAMPLES,
                      level: float = 0.95) -> tuple[float, float] | None:
    """Percentile bootstrap interval of the mean of `values` (per-case differences, for a paired
    comparison): resample the cases with replacement `resamples` times, seeded. None for no value."""
    return bootstrap_mean_cis([values], seed=seed, resamples=resamples, level=level)[0]


def bootstrap_mean_cis(samples: Sequence[Sequence[float] | None], *, seed: int = DEFAULT_SEED,
                       resamples: int = DEFAULT_RESAMPLES, level: float = 0.95) -> list[tuple[float, float] | None]:
    """`bootstrap_mean_ci` of each of `samples` (None for None). Samples of one length share their
    resamples' indexes, drawn once: seeded alike, each would draw the very same ones (a paired comparison's
    score, cost and latency differences are one per shared case), and drawing them was half the work."""
    intervals: list[tuple[float, float] | None] = [None] * len(samples)
    by_length: dict[int, list[tuple[int, Sequence[float]]]] = {}
    for i, sample in enumerate(samples):
        if sample:
            by_length.setdefault(len(sample), []).append((i, sample))
    if not by_length:
        return intervals
    import numpy as np  # only the comparison pays for numpy, not every command that imports this module

    tail = (1 - level) / 2 * 100
    for length, these in by_length.items():
        which = [i for i, _ in these]
        data = [np.asarray(sample, dtype=float) for _, sample in these]
        rng = np.random.default_rng(seed)
        means = [np.empty(resamples) for _ in which]
        # In blocks, so 10,000 cases x 2,000 resamples never hold 20 million indexes at once.
        block = max(1, 2_000_000 // length)
        for start in range(0, resamples, block):
            stop = min(resamples, start + block)
            drawn = rng.integers(0, length, size=(stop - start, length))
            for array, sample_means in zip(data, means, strict=True):
                sample_means[start:stop] = array[drawn].mean(axis=1)
        for i, sample_means in zip(which, means, strict=True):
            low, high = np.percentile(sample_means, [tail, 100 - tail])
            intervals[i] = (float(low), float(high))
    return intervals
