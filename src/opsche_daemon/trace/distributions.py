"""The generator's distributions: truncated Pareto (Type I) and truncated geometric.

Seed 000 (Section 4.1, Table 1) specifies every heavy-tailed attribute (inter-arrival time,
lifetime, per-pod cpu and memory) by a target mean and min/max bounds, not by a shape, so
``TruncatedPareto.from_mean`` solves for the shape alpha that gives that mean. On ``[lo, hi]`` the
density ``x^-(alpha+1)`` is normalisable for every real alpha, so the solver searches all of them:
alpha <= 0 (a density rising towards ``hi``) is what a mean above the log-midpoint needs, and
the lifetime's calibration moves the mean anywhere inside ``(lo, hi)``.

Why log-space: with ``y = ln(x / lo)`` the density becomes ``exp(-alpha y)`` on ``[0, ln(hi/lo)]``,
a truncated exponential. Its normaliser, moments and quantile are written with ``expm1`` and
``log1p``, which are exact near alpha = 0 and alpha = 1 (where the textbook formulas divide by
zero and become the log formulas) and never overflow for the large |alpha| that means close to a
bound need (``lo^-alpha`` for lo = 0.1 ms overflows a float long before the shape stops
mattering).

Why inverse-CDF sampling with a public ``quantile``: the calibration draws every lifetime's
uniform once and maps it through the quantile of each candidate mean, so two calibration
iterations differ only by the mean lifetime and the search is deterministic.

The initial state's length-biased lifetime ``x f(x)`` of a Pareto with shape alpha is the Pareto
with shape alpha - 1 on the same bounds, so ``length_biased`` stays in the family (for alpha = 1
it is the log-uniform ``x^-1``).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from functools import cached_property

__all__ = ["TruncatedGeometric", "TruncatedPareto"]

_BISECTIONS = 200
"""Bisection steps for alpha; the bracket stops shrinking in floating point well before."""


def _log_integral(c: float, length: float) -> float:
    """``ln`` of the integral of ``exp(c y)`` over ``[0, length]``, stable for every real ``c``."""
    z = c * length
    if z == 0.0:
        return math.log(length)
    if z > 0.0:
        # exp(z) - 1 = exp(z) (1 - exp(-z)); keeps large positive z from overflowing.
        return z + math.log(-math.expm1(-z)) - math.log(c)
    return math.log(-math.expm1(z)) - math.log(-c)


@dataclass(frozen=True)
class TruncatedPareto:
    """Pareto Type I with shape ``alpha`` truncated to ``[lo, hi]``: pdf ~ ``x^-(alpha+1)``.

    ``alpha`` may be any real number (the truncated density is normalisable for all of them);
    use ``from_mean`` to get the shape that gives a requested mean.
    """

    alpha: float
    lo: float
    hi: float
    # Precomputed for the quantile: ln(hi/lo), and the truncated exponential that is sampled
    # (the density of ln(x/lo) if alpha >= 0, else of ln(hi/x), so its rate is never positive).
    _length: float = field(init=False, repr=False, compare=False)
    _reflect: bool = field(init=False, repr=False, compare=False)
    _rate: float = field(init=False, repr=False, compare=False)
    _span: float = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not (math.isfinite(self.lo) and math.isfinite(self.hi) and 0 < self.lo < self.hi):
            raise ValueError(
                f"truncated Pareto needs 0 < lo < hi (finite), got lo={self.lo!r}, hi={self.hi!r}"
            )
        if not math.isfinite(self.alpha):
            raise ValueError(f"truncated Pareto needs a finite shape, got alpha={self.alpha!r}")
        length = math.log(self.hi / self.lo)
        reflect = self.alpha < 0
        rate = self.alpha if reflect else -self.alpha
        object.__setattr__(self, "_length", length)
        object.__setattr__(self, "_reflect", reflect)
        object.__setattr__(self, "_rate", rate)
        object.__setattr__(self, "_span", math.expm1(rate * length))

    @classmethod
    def from_mean(cls, mean: float, lo: float, hi: float) -> TruncatedPareto:
        """The truncated Pareto on ``[lo, hi]`` whose mean is ``mean`` (``lo < mean < hi``).

        The mean decreases strictly with alpha, from ``hi`` (alpha -> -inf) to ``lo`` (alpha ->
        +inf), so the shape is found by bracketing (doubling) then bisection.
        """
        if not (math.isfinite(lo) and math.isfinite(hi) and 0 < lo < hi):
            raise ValueError(
                f"truncated Pareto needs 0 < lo < hi (finite), got lo={lo!r}, hi={hi!r}"
            )
        if not (math.isfinite(mean) and lo < mean < hi):
            raise ValueError(
                f"a truncated Pareto on [{lo:g}, {hi:g}] has a mean strictly between its bounds, "
                f"got mean={mean!r}"
            )
        bound = 1.0
        while cls(-bound, lo, hi).mean < mean or cls(bound, lo, hi).mean > mean:
            bound *= 2.0
            if bound > 2.0**80:  # pragma: no cover - only for means a few ulps from a bound
                raise ValueError(f"mean {mean!r} is too close to a bound of [{lo:g}, {hi:g}]")
        low, high = -bound, bound  # mean(low) >= mean >= mean(high)
        for _ in range(_BISECTIONS):
            middle = 0.5 * (low + high)
            if middle in (low, high):
                break
            if cls(middle, lo, hi).mean > mean:
                low = middle
            else:
                high = middle
        return cls(0.5 * (low + high), lo, hi)

    def moment(self, k: float) -> float:
        """``E[X^k]``, analytically."""
        length = self._length
        log_ratio = _log_integral(k - self.alpha, length) - _log_integral(-self.alpha, length)
        return float(self.lo**k * math.exp(log_ratio))

    @property
    def mean(self) -> float:
        """The analytical mean."""
        return self.moment(1)

    @property
    def variance(self) -> float:
        """The analytical variance."""
        mean = self.mean
        return max(0.0, self.moment(2) - mean * mean)

    def cdf(self, x: float) -> float:
        """``P(X <= x)``."""
        if x <= self.lo:
            return 0.0
        if x >= self.hi:
            return 1.0
        length, y, c = self._length, math.log(x / self.lo), -self.alpha
        return math.exp(_log_integral(c, y) - _log_integral(c, length))

    def quantile(self, u: float) -> float:
        """The value whose cdf is ``u`` (``0 <= u <= 1``); ``lo`` at 0, ``hi`` at 1."""
        if not 0.0 <= u <= 1.0:
            raise ValueError(f"a quantile needs 0 <= u <= 1, got {u!r}")
        length, rate = self._length, self._rate
        v = 1.0 - u if self._reflect else u
        y = v * length if rate == 0.0 or self._span == 0.0 else math.log1p(v * self._span) / rate
        y = min(length, max(0.0, y))
        if self._reflect:
            y = length - y
        return min(self.hi, max(self.lo, self.lo * math.exp(y)))

    def sample(self, rng: random.Random) -> float:
        """One draw by inverse-CDF sampling (one uniform of ``rng``)."""
        return self.quantile(rng.random())

    def length_biased(self) -> TruncatedPareto:
        """The length-biased distribution, pdf proportional to ``x f(x)``: the shape alpha - 1."""
        return self._length_biased

    @cached_property
    def _length_biased(self) -> TruncatedPareto:
        return TruncatedPareto(self.alpha - 1.0, self.lo, self.hi)


@dataclass(frozen=True)
class TruncatedGeometric:
    """``P(k)`` proportional to ``ratio^(k-1)`` for ``k`` in ``1..levels``.

    Priorities and replica counts: with ``ratio`` < 1 the lowest values are the most common, each
    next one ``ratio`` times as likely as the one before.
    """

    levels: int
    ratio: float

    def __post_init__(self) -> None:
        if isinstance(self.levels, bool) or not isinstance(self.levels, int) or self.levels < 1:
            raise ValueError(f"truncated geometric needs levels >= 1, got {self.levels!r}")
        if not (math.isfinite(self.ratio) and self.ratio > 0):
            raise ValueError(f"truncated geometric needs a positive ratio, got {self.ratio!r}")

    @property
    def _weights(self) -> list[float]:
        return [self.ratio ** (k - 1) for k in range(1, self.levels + 1)]

    def pmf(self, k: int) -> float:
        """``P(K = k)`` (0 outside ``1..levels``)."""
        if not 1 <= k <= self.levels:
            return 0.0
        weights = self._weights
        return weights[k - 1] / sum(weights)

    @property
    def mean(self) -> float:
        """The analytical mean."""
        weights = self._weights
        return sum(k * w for k, w in enumerate(weights, start=1)) / sum(weights)

    def quantile(self, u: float) -> int:
        """The smallest ``k`` whose cdf reaches ``u``."""
        weights = self._weights
        threshold = u * sum(weights)
        total = 0.0
        for k, weight in enumerate(weights, start=1):
            total += weight
            if threshold < total:
                return k
        return self.levels

    def sample(self, rng: random.Random) -> int:
        """One draw (one uniform of ``rng``, whatever ``levels`` is, so streams stay aligned)."""
        return self.quantile(rng.random())
