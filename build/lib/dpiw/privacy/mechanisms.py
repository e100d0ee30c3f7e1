"""Noise scales of the Gaussian mechanism.

The classical bound (Dwork and Roth 2014, Theorem A.1), sigma = Delta sqrt(2 ln(1.25/delta)) / eps, holds
only for eps < 1 and over-noises. The *analytic* Gaussian mechanism (Balle and Wang 2018, Theorem 8)
uses the exact condition: a Gaussian mechanism with L2 sensitivity Delta and noise sd sigma is
(eps, delta)-DP if and only if

    Phi(Delta / (2 sigma) - eps sigma / Delta) - e^eps Phi(-Delta / (2 sigma) - eps sigma / Delta) <= delta,

and :func:`analytic_gaussian_sigma` returns the smallest such sigma, for any eps > 0, by the paper's
Algorithm 1. numpy-free (``math.erfc``), so it costs nothing to import.
"""

from __future__ import annotations

import math

from dpiw import DpiwError


def _phi(x: float) -> float:
    """Standard normal CDF."""
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def gaussian_delta(sigma: float, epsilon: float, sensitivity: float = 1.0) -> float:
    """The smallest delta for which N(0, sigma^2) noise on a query of L2 sensitivity ``sensitivity`` is
    (epsilon, delta)-DP (Balle and Wang 2018, Theorem 8)."""
    a, b = sensitivity / (2.0 * sigma), epsilon * sigma / sensitivity
    return _phi(a - b) - math.exp(epsilon) * _phi(-a - b)


def _bisect(f, lo: float, hi: float, *, increasing: bool, tol: float = 1e-14) -> float:
    """The point where the monotone f crosses 0, to relative tolerance ``tol`` (hi doubled until f changes
    sign)."""
    sign = 1.0 if increasing else -1.0
    while sign * f(hi) <= 0:
        lo, hi = hi, 2.0 * hi
    for _ in range(2000):
        mid = 0.5 * (lo + hi)
        if sign * f(mid) <= 0:
            lo = mid
        else:
            hi = mid
        if hi - lo <= tol * max(1.0, hi):
            break
    return lo, hi


def analytic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """The smallest noise sd sigma that makes the Gaussian mechanism (epsilon, delta)-DP for a query of L2
    sensitivity ``sensitivity`` (Balle and Wang 2018, Algorithm 1).

    Parameters
    ----------
    epsilon : float
        > 0 (no upper limit, unlike the classical bound).
    delta : float
        In (0, 1).
    sensitivity : float
        The query's L2 sensitivity under the run's neighbouring relation, > 0.

    Returns
    -------
    float
        sigma, never above the classical bound where that one holds (eps < 1).

    >>> round(analytic_gaussian_sigma(1.0, 1e-5), 4)
    3.7306
    """
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise DpiwError(f"the Gaussian mechanism needs a finite epsilon > 0, got {epsilon!r}")
    if not (0 < delta < 1):
        raise DpiwError(f"the Gaussian mechanism needs 0 < delta < 1, got {delta!r}")
    if not sensitivity > 0:
        raise DpiwError(f"the Gaussian mechanism needs a sensitivity > 0, got {sensitivity!r}")
    e = math.exp(epsilon)
    delta0 = _phi(0.0) - e * _phi(-math.sqrt(2.0 * epsilon))
    if delta >= delta0:
        # B+(v) = Phi(sqrt(eps v)) - e^eps Phi(-sqrt(eps (v + 2))), increasing in v; v* = sup{v: B+(v) <= delta}
        def b_plus(v):
            return _phi(math.sqrt(epsilon * v)) - e * _phi(-math.sqrt(epsilon * (v + 2.0))) - delta
        lo, _ = _bisect(b_plus, 0.0, 1.0, increasing=True)
        alpha = math.sqrt(1.0 + lo / 2.0) - math.sqrt(lo / 2.0)  # the sup: the largest v found feasible
    else:
        # B-(u) = Phi(-sqrt(eps u)) - e^eps Phi(-sqrt(eps (u + 2))), decreasing in u; u* = inf{u: B-(u) <= delta}
        def b_minus(u):
            return _phi(-math.sqrt(epsilon * u)) - e * _phi(-math.sqrt(epsilon * (u + 2.0))) - delta
        _, hi = _bisect(b_minus, 0.0, 1.0, increasing=False)
        alpha = math.sqrt(1.0 + hi / 2.0) + math.sqrt(hi / 2.0)  # the inf: the smallest u found feasible
    return alpha * sensitivity / math.sqrt(2.0 * epsilon)


def classical_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """Dwork and Roth's bound Delta sqrt(2 ln(1.25/delta)) / eps (valid for eps < 1): kept for comparison and
    for the paper-accounting ablation."""
    return sensitivity * math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon
