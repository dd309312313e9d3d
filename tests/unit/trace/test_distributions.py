"""The generator's distributions: analytical values, and 200k draws against them.

Every statistical check has a tolerance of five standard errors computed from the distribution's
own analytical variance, with a fixed seed: a correct implementation passes always, and a wrong
shape, a wrong mean solver or a biased sampler fails by many more standard errors than that.
"""

from __future__ import annotations

import bisect
import math
import random

import pytest

from opsche_daemon.trace.distributions import TruncatedGeometric, TruncatedPareto

DRAWS = 200_000
SIGMAS = 5.0

# (mean, lo, hi) of every truncated Pareto of Table 1, plus means that need alpha <= 0.
TABLE_1 = [
    pytest.param(8.0, 0.0001, 128.0, id="inter-arrival 8 s"),
    pytest.param(4.0, 0.0001, 64.0, id="inter-arrival 4 s"),
    pytest.param(16.0, 0.0001, 256.0, id="inter-arrival 16 s"),
    pytest.param(0.125, 0.05, 0.5, id="request 0.125"),
    pytest.param(350.0, 2.0, 86400.0, id="lifetime 350 s"),
    pytest.param(0.3, 0.05, 0.5, id="request 0.3 (alpha < 0)"),
]
SAMPLED = [p for p in TABLE_1 if p.id not in ("inter-arrival 4 s", "inter-arrival 16 s")]


def _draws(dist: TruncatedPareto, n: int = DRAWS, seed: int = 7) -> list[float]:
    rng = random.Random(seed)
    return [dist.sample(rng) for _ in range(n)]


@pytest.mark.parametrize(("mean", "lo", "hi"), TABLE_1)
def test_from_mean_has_the_requested_analytical_mean(mean: float, lo: float, hi: float) -> None:
    dist = TruncatedPareto.from_mean(mean, lo, hi)
    assert dist.mean == pytest.approx(mean, rel=1e-9)
    assert (dist.lo, dist.hi) == (lo, hi)


@pytest.mark.parametrize(("mean", "lo", "hi"), SAMPLED)
def test_draws_stay_in_bounds_and_match_the_mean_and_the_cdf(
    mean: float, lo: float, hi: float
) -> None:
    dist = TruncatedPareto.from_mean(mean, lo, hi)
    draws = sorted(_draws(dist))
    assert lo <= draws[0]
    assert draws[-1] <= hi
    standard_error = math.sqrt(dist.variance / DRAWS)
    assert abs(sum(draws) / DRAWS - mean) <= SIGMAS * standard_error
    # The shape, not only the mean: the share of draws below several quantiles.
    for p in (0.1, 0.25, 0.5, 0.75, 0.9, 0.99):
        x = dist.quantile(p)
        assert dist.cdf(x) == pytest.approx(p, abs=1e-9)
        share = bisect.bisect_right(draws, x) / DRAWS
        assert abs(share - p) <= SIGMAS * math.sqrt(p * (1 - p) / DRAWS)


def test_closed_forms_and_the_log_limits() -> None:
    lo, hi = 1.0, 100.0
    # alpha = 0 is pdf ~ 1/x (log-uniform); alpha = 1 is pdf ~ x^-2; alpha = 2 is pdf ~ x^-3.
    log_uniform = (hi - lo) / math.log(hi / lo)
    inverse_square = math.log(hi / lo) * lo * hi / (hi - lo)
    assert TruncatedPareto(0.0, lo, hi).mean == pytest.approx(log_uniform, rel=1e-12)
    assert TruncatedPareto(1.0, lo, hi).mean == pytest.approx(inverse_square, rel=1e-12)
    assert TruncatedPareto(2.0, lo, hi).mean == pytest.approx(2 * lo * hi / (lo + hi), rel=1e-12)
    # The log-uniform's median is the geometric mean of its bounds.
    assert TruncatedPareto(0.0, lo, hi).quantile(0.5) == pytest.approx(10.0, rel=1e-12)
    # Uniform on [lo, hi] is alpha = -1.
    assert TruncatedPareto(-1.0, lo, hi).mean == pytest.approx((lo + hi) / 2, rel=1e-12)
    # Continuous through the limits where the power formulas divide by zero.
    for limit, value in ((0.0, log_uniform), (1.0, inverse_square)):
        for eps in (1e-12, -1e-12, 1e-7, -1e-7):
            assert TruncatedPareto(limit + eps, lo, hi).mean == pytest.approx(value, rel=1e-5)


def test_mean_decreases_with_alpha_and_means_near_the_bounds_are_reachable() -> None:
    means = [TruncatedPareto(a, 2.0, 86400.0).mean for a in (-50, -5, -1, 0, 0.5, 1, 2, 50)]
    assert means == sorted(means, reverse=True)
    for mean in (2.001, 86399.0):
        assert TruncatedPareto.from_mean(mean, 2.0, 86400.0).mean == pytest.approx(mean, rel=1e-6)


@pytest.mark.parametrize(
    ("mean", "lo", "hi", "message"),
    [
        (0.05, 0.05, 0.5, "strictly between its bounds"),
        (0.6, 0.05, 0.5, "strictly between its bounds"),
        (math.nan, 0.05, 0.5, "strictly between its bounds"),
        (1.0, 0.0, 2.0, "0 < lo < hi"),
        (1.0, 2.0, 1.5, "0 < lo < hi"),
    ],
)
def test_from_mean_rejects_impossible_means(
    mean: float, lo: float, hi: float, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        TruncatedPareto.from_mean(mean, lo, hi)


def test_quantile_is_the_inverse_cdf_and_grows_with_the_mean() -> None:
    dist = TruncatedPareto.from_mean(350.0, 2.0, 86400.0)
    assert dist.quantile(0.0) == 2.0
    assert dist.quantile(1.0) == 86400.0
    for x in (2.5, 10.0, 350.0, 5000.0, 80000.0):
        assert dist.quantile(dist.cdf(x)) == pytest.approx(x, rel=1e-9)
    with pytest.raises(ValueError, match="0 <= u <= 1"):
        dist.quantile(1.5)
    # Calibration maps fixed uniforms through the quantile of each candidate mean: every
    # quantile must grow with the mean, or the measured demand would not be monotone in it.
    shapes = [TruncatedPareto.from_mean(m, 2.0, 86400.0) for m in (50.0, 350.0, 3000.0, 60000.0)]
    for u in (0.01, 0.3, 0.5, 0.9, 0.999):
        values = [d.quantile(u) for d in shapes]
        assert values == sorted(values)
        assert len(set(values)) == len(values)


def test_length_biased_is_alpha_minus_one_with_the_size_biased_mean() -> None:
    dist = TruncatedPareto.from_mean(350.0, 2.0, 86400.0)
    biased = dist.length_biased()
    assert biased.alpha == pytest.approx(dist.alpha - 1.0)
    # E*[X] = E[X^2] / E[X], far above E[X] for a heavy tail.
    assert biased.mean == pytest.approx(dist.moment(2) / dist.mean, rel=1e-9)
    assert biased.mean > 10 * dist.mean
    draws = _draws(biased, seed=3)
    assert abs(sum(draws) / DRAWS - biased.mean) <= SIGMAS * math.sqrt(biased.variance / DRAWS)
    # alpha = 1 becomes the log-uniform x^-1.
    assert TruncatedPareto(1.0, 1.0, 100.0).length_biased().mean == pytest.approx(
        99 / math.log(100), rel=1e-12
    )


def test_geometric_pmf_and_mean() -> None:
    geo = TruncatedGeometric(3, 0.8)
    weights = [1.0, 0.8, 0.64]
    assert [geo.pmf(k) for k in (0, 1, 2, 3, 4)] == pytest.approx(
        [0.0] + [w / sum(weights) for w in weights] + [0.0]
    )
    assert geo.mean == pytest.approx(sum(k * w for k, w in enumerate(weights, 1)) / sum(weights))
    assert TruncatedGeometric(1, 0.8).pmf(1) == 1.0
    assert TruncatedGeometric(1, 0.8).sample(random.Random(1)) == 1


@pytest.mark.parametrize("levels", [3, 4])
def test_geometric_ratios_empirically(levels: int) -> None:
    geo = TruncatedGeometric(levels, 0.8)
    rng = random.Random(5)
    counts = [0] * (levels + 1)
    for _ in range(DRAWS):
        counts[geo.sample(rng)] += 1
    assert counts[0] == 0
    for k in range(1, levels):
        # The log of a ratio of two counts has variance about 1/n_k + 1/n_(k+1).
        spread = math.sqrt(1 / counts[k] + 1 / counts[k + 1])
        assert abs(math.log(counts[k + 1] / counts[k]) - math.log(0.8)) <= SIGMAS * spread
    empirical_mean = sum(k * c for k, c in enumerate(counts)) / DRAWS
    variance = sum(k * k * geo.pmf(k) for k in range(1, levels + 1)) - geo.mean**2
    assert abs(empirical_mean - geo.mean) <= SIGMAS * math.sqrt(variance / DRAWS)


@pytest.mark.parametrize(("levels", "ratio"), [(0, 0.8), (3, 0.0), (3, -1.0), (3, math.inf)])
def test_geometric_rejects_bad_parameters(levels: int, ratio: float) -> None:
    with pytest.raises(ValueError, match="truncated geometric"):
        TruncatedGeometric(levels, ratio)
