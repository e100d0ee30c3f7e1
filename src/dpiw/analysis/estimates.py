"""Importance-weighted estimates and their standard errors: Kish's effective sample size, a weighted mean, and
the :class:`Estimate` every analysis call returns."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from dpiw import DpiwError

#: below this share of the rows, Kish's ESS says the weights are too concentrated to trust
MIN_ESS_FRACTION = 0.1


class UnreliableWeightsWarning(UserWarning):
    """The bundle's weights rest on a few rows (heavy tail or small effective sample size)."""


def kish_ess(weights) -> float:
    """Kish's effective sample size (sum w)^2 / sum w^2.

    Parameters
    ----------
    weights : array_like
        Non-negative weights, not all zero.

    Returns
    -------
    float
        Between 1 and the number of weights; equal to it for constant weights.

    >>> kish_ess([1, 1, 1, 1]), kish_ess([2, 0, 0, 0])
    (4.0, 1.0)
    """
    w = _check_weights(weights)
    return float(w.sum() ** 2 / (w * w).sum())


def _check_weights(weights) -> np.ndarray:
    w = np.asarray(weights, dtype=float)
    if w.ndim != 1 or w.size == 0:
        raise DpiwError("weights must be a non-empty 1-D array")
    if not np.all(np.isfinite(w)) or np.any(w < 0) or not w.sum() > 0:
        raise DpiwError("weights must be finite, >= 0 and not all 0")
    return w


#: what an interval from the synthetic rows alone covers
SAMPLING_ONLY = ("the synthetic rows' sampling only: NOT the mechanisms' DP noise nor the sampling of the private "
                 "rows (too narrow for the population)")
#: what a noise-aware interval covers (dpiw.analysis.noise_aware)
NOISE_AWARE = ("the private rows' sampling, the mechanisms' DP noise (a parametric bootstrap from the published "
               "measurements), the synthetic rows' sampling, how far the weights fall short of the private rows' "
               "marginals and, for a numeric mean or share within a subgroup, how far the values drawn inside each "
               "bin put it off (the interval reaches the estimate corrected for both; a share reaches over the rows "
               "its fine histogram's pruning moved across the threshold, and whose threshold splits a fine cell "
               "where rows pile up, over that cell's rows), and, where a published marginal holds a subgroup's "
               "columns, the estimate without the rows in bins it measured within its noise of nothing there, and "
               "its reading where that lies beyond both their noise from the released rows'; NOT the generator's "
               "bias")
#: what a fitted model's noise-aware intervals cover (dpiw.analysis.fit: no correction for the bins)
NOISE_AWARE_FIT = ("the private rows' sampling, the mechanisms' DP noise (a parametric bootstrap from the published "
                   "measurements), the synthetic rows' sampling and how far the weights fall short of the private "
                   "rows' marginals (the interval reaches the estimate corrected for it); NOT the generator's bias, "
                   "nor how far the values drawn inside each numeric bin put a coefficient off")


def interval_digits(lo: float, hi: float) -> int | None:
    """The decimals to print an interval and its estimate with: its half-width to one significant digit, or to
    two where its leading digits are below 355 (the Particle Data Group's rule), and no fewer than 0 decimals (a
    half-width of 40 prints as a whole number); None for an interval of no width or not finite."""
    half = hi / 2 - lo / 2  # no overflow at the largest floats
    if not (np.isfinite(half) and half > max(1e-300, 1e-12 * max(abs(lo), abs(hi)))):  # none, or rounding's
        return None
    first = math.floor(math.log10(half))
    lead = half / 10.0**first  # in [1, 10)
    return min(max(0, -first + (1 if lead < 3.55 else 0)), 300)  # 950-999 round up to 1.0: two digits too


def fixed(value: float, digits: int | None) -> str:
    """``value`` to ``digits`` decimals, without the sign of a value that rounds to zero ("0.00", not "-0.00");
    four significant digits where there is no interval to set them (``digits`` None)."""
    if digits is None:
        return f"{value:.4g}"
    text = f"{value:.{digits}f}"
    return text.lstrip("-") if text.startswith("-") and float(text) == 0 else text


@dataclass(frozen=True)
class Estimate:
    """A weighted mean with its standard error.

    Attributes
    ----------
    value : float
        The self-normalised weighted mean sum w h / sum w.
    se : float
        Its standard error: sqrt(weighted variance / ESS) from the synthetic rows alone, or, noise-aware, the
        square root of the sum of ``parts``.
    ess : float
        Kish's effective sample size of the weights used.
    parts : dict
        The variance's parts by source (noise-aware estimates): ``private_rows``, ``noise``, ``synthetic_rows``.
    covers : str
        What the interval accounts for, in words.
    limits : tuple or None
        What the estimand can be (a rate: 0 to 1; a mean: the column's public bounds); the interval stays inside.
    bias : float
        Noise-aware estimates: the estimated bias that the interval reaches over, the sum of ``biases``;
        ``value - bias`` is the estimate corrected for it, and the interval reaches from the interval about
        ``value`` to the one about ``value - bias``. 0 otherwise.
    reach : tuple
        How far below and above the value the estimand may be for a reason no standard error describes, which
        the interval reaches over: for a share (:meth:`dpiw.analysis.Bundle.share`, and so a quantile's), the
        rows the pruning of the column's fine histogram moved across the threshold (by the tree's measured cells,
        :func:`dpiw.analysis.bin_bias.pruning_reach`), and where the threshold splits a fine cell where rows pile
        up, that cell's rows on either side of it; for a mean or a share, the rows far out that may be the noise's
        (:meth:`dpiw.analysis.Bundle.mean`'s TailWarning: the interval reaches the estimate without them).
        (0, 0) otherwise.
    biases : dict or None
        Noise-aware estimates: ``bias`` by source. ``weights``: how far marginal-matching weights fall short of
        the private rows, towards the generator (:func:`dpiw.analysis.noise_aware.weights_bias`; 0 without
        them); ``bins`` (a mean of a numeric column, or its share above a value): how far the values drawn
        inside each bin from the column's own histogram put a subgroup's estimate off
        (:mod:`dpiw.analysis.bin_bias`).
    measured : tuple or None
        Noise-aware means, rates and shares within a subgroup: where one published noisy marginal holds the
        subgroup's columns and the estimated one, and the estimate read off it (:mod:`dpiw.analysis.measured`)
        lies beyond the noise of their difference from ``value``, that reading, its standard error (with the
        private rows' sampling) and how many standard errors of the difference apart the two lie: the interval
        reaches over ``measured[0]`` +- z ``measured[1]``. None otherwise.
    """

    value: float
    se: float
    ess: float
    parts: dict | None = None
    covers: str = SAMPLING_ONLY
    limits: tuple[float, float] | None = None
    bias: float = 0.0
    biases: dict | None = None
    reach: tuple[float, float] = (0.0, 0.0)
    measured: tuple[float, float, float] | None = None

    def ci(self, level: float = 0.95) -> tuple[float, float]:
        """The normal interval value +- z se at ``level`` (e.g. 0.95), widened on one side to reach
        ``value - bias`` +- z se (a noise-aware estimate with weights: :attr:`bias`), by :attr:`reach`
        below and above, and over a published marginal's reading +- z its se (:attr:`measured`)."""
        from scipy.stats import norm

        if not 0 < level < 1:
            raise DpiwError(f"level must lie in (0, 1), got {level}")
        z = float(norm.ppf(0.5 + level / 2))
        corrected = self.value - self.bias
        lo = min(self.value, corrected) - z * self.se - self.reach[0]
        hi = max(self.value, corrected) + z * self.se + self.reach[1]
        if self.measured is not None:
            lo, hi = min(lo, self.measured[0] - z * self.measured[1]), max(hi, self.measured[0] + z * self.measured[1])
        if self.limits is not None:  # nothing outside what the estimand can be
            lo, hi = max(lo, self.limits[0]), min(hi, self.limits[1])
        return lo, hi

    def __str__(self) -> str:
        """``65.5 (95% interval 65.1 to 66.0)``: the interval's half-width to one significant digit, or to two
        where its leading digits are below 355 (the Particle Data Group's rule: ``2.6 (95% interval 1.4 to
        3.6)``, not ``3 (1 to 4)``), and the value and limits to the same decimal."""
        lo, hi = self.ci(0.95)
        digits = interval_digits(lo, hi)
        return f"{fixed(self.value, digits)} (95% interval {fixed(lo, digits)} to {fixed(hi, digits)})"


def weighted_mean(values, weights) -> Estimate:
    """Importance-weighted mean of ``values`` with a Kish-ESS standard error.

    Parameters
    ----------
    values : array_like
        One value per synthetic row (a column, or any function of the rows).
    weights : array_like
        The bundle's weights, same length (any scale: they are normalised).

    Returns
    -------
    Estimate
        value, se and ess; ``Estimate.ci(level)`` gives the interval.
    """
    h = np.asarray(values, dtype=float)
    w = _check_weights(weights)
    if h.shape != w.shape:
        raise DpiwError(f"values ({h.shape}) and weights ({w.shape}) differ in length")
    p = w / w.sum()
    mean = float(p @ h)
    var = float(p @ (h - mean) ** 2)
    ess = kish_ess(w)
    return Estimate(mean, math.sqrt(var / ess), ess)




def weighted_quantile(values, weights, p: float) -> float:
    """The smallest value whose weighted share of the rows at or below it is at least ``p`` (the inverse of the
    weighted distribution function; numpy's ``method="inverted_cdf"``), for ``p`` in (0, 1].

    >>> weighted_quantile([3, 1, 2], [1, 1, 2], 0.5), weighted_quantile([3, 1, 2], [1, 1, 2], 0.8)
    (2.0, 3.0)
    """
    v = np.asarray(values, float)
    w = _check_weights(weights)
    order = np.argsort(v, kind="stable")
    cdf = np.cumsum(w[order]) / w.sum()
    k = min(int(np.searchsorted(cdf, p * (1 - 1e-12), side="left")), v.size - 1)  # a cdf's last bit of rounding
    return float(v[order][k])


@dataclass(frozen=True)
class Quantile:
    """A weighted quantile with its interval by Woodruff's method (1952): the interval of the share of rows at or
    below the estimate (an :class:`Estimate`, noise-aware where the bundle allows it) carried back through the
    rows' weighted distribution function.

    If the released distribution function is off by e near the quantile (the share's error, which its interval
    covers: ``value - share.ci()``), the table's q-quantile is where the released one reaches q + e; so the
    interval runs from the released (q + v - hi)-quantile to the (q + v - lo)-quantile, where v is the released
    share at or below the estimate and (lo, hi) its interval; past 0 or 1, to the column's public bound. The
    share's standard error is at least the rows' binomial one at q, sqrt(q (1 - q) / ESS): at the rows' largest
    value the share is 1 and its spread from the rows 0, though the table's quantile may lie above it.

    Attributes
    ----------
    value : float
        The weighted q-quantile of the rows (:func:`weighted_quantile`).
    q : float
        The probability asked for.
    share : Estimate
        The weighted share of rows at or below ``value``, with its interval (as :meth:`Bundle.share` gives it);
        below it where ``value`` is the rows' largest value (at or below, every row is, and its spread is 0).
    limits : tuple
        The column's public bounds (the rows' least and largest value for a bundle without a schema): an
        interval running past the rows reaches them.
    """

    value: float
    q: float
    share: Estimate
    limits: tuple[float, float]
    _values: np.ndarray = field(repr=False, compare=False)
    _weights: np.ndarray = field(repr=False, compare=False)
    #: the fine cell the estimate lies in, where rows pile up (its share reaches over them): the interval holds it
    cell: tuple[float, float] | None = None
    #: the quantile of the rows without those far out that may be the noise's (Bundle.quantile): the interval holds it
    also: float | None = None
    #: the values and weights of the rows with the estimate's bin as the tree measured it before the pruning, where
    #: the pruning moved rows across the estimate (Bundle.quantile, bin_bias.measured_shape): the interval also
    #: holds Woodruff's interval carried back through them, at the same level
    pruned: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False, compare=False)
    #: noise-aware, with bundle.INVERT: (t, share of rows at or below t) at released values near the estimate
    #: (Bundle._inverted), and the values the window of them ran from and to: the interval at tested_at also holds
    #: every value whose share's interval holds q
    tests: tuple[tuple[float, Estimate], ...] | None = field(default=None, repr=False, compare=False)
    window: tuple[float, float] | None = field(default=None, repr=False, compare=False)
    #: the level the tested values were found at (an interval at another level is Woodruff's alone)
    tested_at: float = field(default=0.95, repr=False, compare=False)

    @property
    def covers(self) -> str:
        """What the interval accounts for: what the share's does."""
        return self.share.covers

    def __getattr__(self, name: str):
        if name in ("se", "bias", "biases", "parts", "ess", "reach"):
            raise AttributeError(f"a Quantile has no {name!r}: its interval is Woodruff's (q.ci()); the share of rows "
                                 f"at or below the estimate, q.share, has its {name}")
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def at(self, p: float) -> float:
        """The rows' weighted p-quantile, the public lower bound for p <= 0 and the upper one for p > 1."""
        if p <= 0:
            return float(self.limits[0])
        if p > 1 + 1e-12:
            return float(self.limits[1])
        return weighted_quantile(self._values, self._weights, min(p, 1.0))

    def ci(self, level: float = 0.95) -> tuple[float, float]:
        """Woodruff's interval at ``level`` (the class's text): from the share's interval before it is kept
        inside [0, 1] (clipped, one end would fall back to the estimate near q = 0 or 1), with the share's
        standard error at least the binomial one at q."""
        lo, hi = self.floored(self.share).ci(level)
        v = self.share.value
        lo, hi = self.at(self.q + v - hi), self.at(self.q + v - lo)
        if self.cell is not None:  # a pile's cell: its rows may sit anywhere in it, beyond any released value
            lo, hi = min(lo, self.cell[0]), max(hi, self.cell[1])
        if self.also is not None:
            lo, hi = min(lo, self.also), max(hi, self.also)
        if self.pruned is not None:
            a, b = replace(self, _values=self.pruned[0], _weights=self.pruned[1], pruned=None, tests=None).ci(level)
            lo, hi = min(lo, a), max(hi, b)
        if self.tests and level == self.tested_at:
            a, b = self.inverted(level)
            lo, hi = min(lo, a), max(hi, b)
        return lo, hi

    def floored(self, share: Estimate) -> Estimate:
        """A share at or below a value with its standard error at least the rows' binomial one at q,
        sqrt(q (1 - q) / ESS) (the estimate's share's ESS), and no limits: what Woodruff's interval and the
        inversion's tests take their intervals from."""
        floor = math.sqrt(self.q * (1 - self.q) / self.share.ess)
        return replace(share, se=max(share.se, floor), limits=None)

    def inverted(self, level: float = 0.95) -> tuple[float, float]:
        """The values t whose share at or below t has an interval at ``level`` that holds q, from :attr:`tests`
        (sorted by t): from the first whose interval's upper end reaches q to the first whose lower end passes q.
        Between two released values the share, and so the test, is the lower one's: the set runs from a released
        value up to the next one not in it. Where the first tested value already reaches q or none passes it, the
        window's end (the public bound where the window runs past the rows); where every tested share's interval
        lies below q, from the last to the upper bound, and where every one lies above, from the lower bound to
        the first. Exact at the level the values were tested at (:attr:`tested_at`), where the bisection put
        tested values on both sides of each end."""
        ts = [t for t, _ in self.tests]
        ends = [s.ci(level) for _, s in self.tests]
        reach = [i for i, (_, b) in enumerate(ends) if b >= self.q]
        past = [i for i, (a, _) in enumerate(ends) if a > self.q]
        if not reach:  # every tested share's interval lies below q: the quantile lies above them
            return ts[-1], float(self.limits[1])
        if past and past[0] == 0:  # every one lies above q: the quantile lies below them
            return float(self.limits[0]), ts[0]
        lo = ts[reach[0]] if reach[0] > 0 else min(self.window[0], ts[0])
        hi = ts[past[0]] if past else max(self.window[1], ts[-1])
        return lo, hi

    def __str__(self) -> str:
        """As :class:`Estimate` prints: ``34.1 (95% interval 31.2 to 38.0)``; whole numbers (an integer column's
        quantile and interval) without decimals: ``61 (95% interval 60 to 64)``. An interval of no width says why: so
        many rows hold that one value that however far the share moves the quantile stays on it (``35 (95% interval
        35 to 35: 14% of these rows hold 35)``), lest it read as certainty."""
        lo, hi = self.ci(0.95)
        digits = interval_digits(lo, hi)
        if digits is not None and all(float(v).is_integer() for v in (self.value, lo, hi)):
            digits = 0
        text = f"{fixed(self.value, digits)} (95% interval {fixed(lo, digits)} to {fixed(hi, digits)}"
        if lo == hi == self.value:
            held = float(self._weights[self._values == self.value].sum() / self._weights.sum())
            text += f": {held:.0%} of these rows hold {fixed(self.value, digits)}"
        return text + ")"
