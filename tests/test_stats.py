"""The statistics behind the diff and the comparison, against values worked out by hand."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness._stats import bootstrap_mean_ci, bootstrap_mean_cis, fisher_exact, mcnemar, wilson_interval


def test_fisher_exact_matches_the_lady_tasting_tea() -> None:
    # Fisher's own table: 3 of 4 cups right against 1 of 4. One-sided p = 17/70, two-sided 34/70.
    assert fisher_exact(1, 4, 3, 4, "greater") == pytest.approx(17 / 70)
    assert fisher_exact(3, 4, 1, 4, "less") == pytest.approx(17 / 70)
    assert fisher_exact(3, 4, 1, 4) == pytest.approx(34 / 70)


def test_fisher_exact_on_the_repeats_a_ci_runs() -> None:
    assert fisher_exact(5, 5, 4, 5, "less") == pytest.approx(0.5)  # one flaky repeat: chance
    assert fisher_exact(5, 5, 1, 5, "less") == pytest.approx(6 / 252)  # C(6,1)/C(10,5)
    assert fisher_exact(5, 5, 0, 5, "less") == pytest.approx(1 / 252)
    assert fisher_exact(3, 3, 0, 3, "less") == pytest.approx(0.05)
    assert fisher_exact(5, 5, 5, 5, "less") == 1.0
    assert fisher_exact(0, 0, 3, 5, "less") == 1.0  # no baseline: nothing to compare


def test_fisher_exact_refuses_counts_that_cannot_be() -> None:
    with pytest.raises(ValueError, match="pass counts out of range: 6/5"):
        fisher_exact(6, 5, 1, 5)


@given(st.integers(0, 30), st.integers(0, 30), st.integers(0, 30), st.integers(0, 30))
def test_fisher_exact_is_a_probability_and_its_tails_cover_everything(a: int, an: int, b: int, bn: int) -> None:
    a, b = min(a, an), min(b, bn)
    less, greater, both = (fisher_exact(a, an, b, bn, alt) for alt in ("less", "greater", "two-sided"))
    assert all(0 <= p <= 1 for p in (less, greater, both))
    assert less + greater >= 1 - 1e-9  # the observed table is in both tails
    assert both == pytest.approx(fisher_exact(b, bn, a, an))  # two-sided does not care which is A


def test_mcnemar_exact() -> None:
    assert mcnemar(1, 6) == pytest.approx(2 * (1 + 7) / 2**7)
    assert mcnemar(0, 5) == pytest.approx(2 / 32)
    assert mcnemar(3, 3) == 1.0 and mcnemar(0, 0) == 1.0
    assert mcnemar(0, 2000) < 1e-300 or mcnemar(0, 2000) == 0.0  # big counts do not overflow
    with pytest.raises(ValueError):
        mcnemar(-1, 2)


def test_the_bootstrap_is_seeded_and_brackets_the_mean() -> None:
    values = [0.0, 0.1, 0.2, 0.3, 0.5, 0.2, 0.1, 0.0, 0.4, 0.2] * 5
    first = bootstrap_mean_ci(values)
    assert first == bootstrap_mean_ci(values)  # same results, same report
    assert first is not None
    low, high = first
    mean = sum(values) / len(values)
    assert low < mean < high and high - low < 0.15
    assert bootstrap_mean_ci(values, seed=1) != first
    assert bootstrap_mean_ci([]) is None
    assert bootstrap_mean_ci([0.25] * 7) == (0.25, 0.25)


def _bootstrap_alone(values: list[float], seed: int) -> tuple[float, float]:
    """The percentile bootstrap of one sample drawing its own resamples, in blocks of 2,000,000 indexes."""
    data = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    means = np.empty(2000)
    block = max(1, 2_000_000 // len(data))
    for start in range(0, 2000, block):
        stop = min(2000, start + block)
        means[start:stop] = data[rng.integers(0, len(data), size=(stop - start, len(data)))].mean(axis=1)
    tail = (1 - 0.95) / 2 * 100  # 2.5000000000000018, as the level gives it
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(low), float(high)


def test_samples_bootstrapped_together_get_what_each_gets_alone() -> None:
    # A paired comparison's score, cost and latency differences share their resamples' indexes when
    # they are as long: the intervals must be exactly those of each sample drawing its own.
    rnd = random.Random(7)
    short = [[rnd.uniform(-1, 1) for _ in range(12)] for _ in range(3)]
    other = [rnd.uniform(-1, 1) for _ in range(5)]
    long = [[rnd.gauss(0, 1) for _ in range(2500)] for _ in range(2)]  # 800 resamples a block: three blocks
    samples: list[list[float] | None] = [short[0], None, other, short[1], [], long[0], short[2], long[1]]
    for seed in (0, 3):
        got = bootstrap_mean_cis(samples, seed=seed)
        assert got == [None if not sample else _bootstrap_alone(sample, seed) for sample in samples]
        assert got[0] != got[3] != got[6]
    assert bootstrap_mean_cis([]) == [] and bootstrap_mean_cis([None, []]) == [None, None]


def test_wilson_interval() -> None:
    low, high = wilson_interval(5, 5)
    assert high == 1.0 and low == pytest.approx(0.5655, abs=1e-4)
    assert wilson_interval(0, 0) == (0.0, 1.0)
    assert not math.isnan(wilson_interval(0, 3)[0])
