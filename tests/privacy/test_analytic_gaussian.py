"""The analytic Gaussian mechanism (Balle and Wang 2018): its noise scale is the exact smallest one, checked
three ways: (1) a plain bisection on the closed-form delta(sigma) of Theorem 8, (2) Google's dp-accounting
(privacy-loss-distribution accountant, exact for one Gaussian query), (3) published values; and it is never
above the classical bound where that bound is valid (eps < 1)."""

import math

import pytest
from dp_accounting.pld import accountant, common

from dpiw import DpiwError
from dpiw.privacy.mechanisms import analytic_gaussian_sigma, classical_gaussian_sigma, gaussian_delta

CASES = [(0.01, 0.4), (0.1, 1e-6), (0.5, 1e-3), (0.9, 1e-5), (1.0, 1e-5), (3.0, 0.3), (6.0, 1e-5), (20.0, 1e-9)]


def bisect_sigma(eps, delta, sensitivity):
    """The smallest sigma with delta(sigma) <= delta, by bisection on sigma itself (delta(sigma) decreases)."""
    lo, hi = 1e-6, 1e6
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if gaussian_delta(mid, eps, sensitivity) > delta else (lo, mid)
    return hi


@pytest.mark.parametrize("eps, delta", CASES)
@pytest.mark.parametrize("sensitivity", [1.0, 0.037])
def test_sigma_is_the_smallest_that_meets_delta(eps, delta, sensitivity):
    sigma = analytic_gaussian_sigma(eps, delta, sensitivity)
    assert sigma == pytest.approx(bisect_sigma(eps, delta, sensitivity), rel=1e-9)
    assert gaussian_delta(sigma, eps, sensitivity) <= delta * (1 + 1e-9)
    assert gaussian_delta(sigma * (1 - 1e-6), eps, sensitivity) > delta  # any less noise breaks the claim
    reference = accountant.get_smallest_gaussian_noise(common.DifferentialPrivacyParameters(eps, delta), 1,
                                                       sensitivity)
    assert sigma == pytest.approx(reference, rel=1e-5)  # dp-accounting bisects to its own tolerance


def test_published_values():
    # Balle and Wang (2018), Fig. 2 / Table: eps = 1, delta = 1e-5, Delta = 1 -> sigma ~ 3.73 (classical 4.84)
    assert analytic_gaussian_sigma(1.0, 1e-5) == pytest.approx(3.7306, abs=1e-4)
    assert classical_gaussian_sigma(1.0, 1e-5) == pytest.approx(4.8448, abs=1e-4)


@pytest.mark.parametrize("eps, delta", [c for c in CASES if c[0] < 1])
def test_never_above_the_classical_bound_where_it_holds(eps, delta):
    assert analytic_gaussian_sigma(eps, delta) <= classical_gaussian_sigma(eps, delta)


@pytest.mark.parametrize("eps, delta, sens, field", [(0.0, 1e-5, 1.0, "epsilon"), (1.0, 0.0, 1.0, "delta"),
                                                       (1.0, 1.0, 1.0, "delta"), (1.0, 1e-5, 0.0, "sensitivity")])
def test_bad_parameters_are_refused(eps, delta, sens, field):
    with pytest.raises(DpiwError, match=field):
        analytic_gaussian_sigma(eps, delta, sens)
