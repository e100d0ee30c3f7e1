"""Composed RDP accounting (dpiw.privacy.accounting) against Google's dp-accounting and closed forms."""

import math

import dp_accounting
import numpy as np
import pytest
from dp_accounting import rdp as dp_rdp
from opacus.accountants.analysis.rdp import compute_rdp

from dpiw import DpiwError
from dpiw.privacy import accounting as A
from dpiw.privacy.spend import PrivacySpend
from dpiw.stages.privacy_ledger import build_manifest

ORDERS = list(A.ORDERS)  # a computed curve's (DP-SGD)
ALL = list(A.ALL_ORDERS)  # the composed curve's: ORDERS and larger ones, for small epsilons


def reference(event) -> np.ndarray:
    acc = dp_rdp.RdpAccountant(orders=ALL)
    acc.compose(event)
    return np.asarray(acc._rdp)


@pytest.mark.parametrize("eps", [0.01, 0.3, 1.0, 4.0])
def test_laplace_curve_equals_dp_accounting(eps):
    assert np.allclose(A.laplace_rdp(eps), reference(dp_accounting.LaplaceDpEvent(1.0 / eps)), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("z", [0.5, 1.0, 3.0])
def test_gaussian_curve_equals_dp_accounting(z):
    assert np.allclose(A.gaussian_rdp(z), reference(dp_accounting.GaussianDpEvent(z)), rtol=1e-12)


def test_pure_curve_is_zcdp_capped_by_epsilon():
    eps = 0.2
    zcdp = reference(dp_accounting.ZCDpEvent(eps**2 / 2))
    ours = A.pure_rdp(eps)
    assert np.all(ours <= zcdp + 1e-15) and np.all(ours <= eps)
    assert np.allclose(ours, np.minimum(zcdp, eps))


def test_laplace_rdp_is_superadditive():
    """Vector Laplace with L1 sensitivity: the product's divergence, sum_i f(e_i) with sum e_i = e, is at
    most f(e) when f is superadditive (convex with f(0) = 0) - so one event of epsilon e is valid."""
    grid = np.linspace(0.0, 3.0, 61)
    for a in grid[1:]:
        for b in grid[1:]:
            assert np.all(A.laplace_rdp(a) + A.laplace_rdp(b) <= A.laplace_rdp(a + b) + 1e-12)


def _sgd_ref(q, z, steps):
    return dp_accounting.SelfComposedDpEvent(dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(z)),
                                             steps)


INTEGER_ORDERS = [o for o in ORDERS if float(o).is_integer()]


def test_poisson_gaussian_add_remove_curve_equals_dp_accounting_at_integer_orders():
    q, z, steps = 0.02, 1.1, 300
    acc = dp_rdp.RdpAccountant(orders=INTEGER_ORDERS)
    acc.compose(_sgd_ref(q, z, steps))
    assert np.allclose(compute_rdp(q=q, noise_multiplier=z, steps=steps, orders=INTEGER_ORDERS), acc._rdp, rtol=1e-6)


@pytest.mark.parametrize("alpha", [1.1, 1.5, 2.5, 7.3])
def test_opacus_fractional_orders_equal_the_integral(alpha):
    """At fractional orders dp-accounting sums |terms| of the series (an upper bound); opacus keeps the
    signs. Both directions by numerical integration: opacus equals the larger one to 1e-6."""
    from scipy import integrate

    q, s = 0.02, 1.1

    def moment(power):
        def f(z):
            return (np.exp(-z * z / (2 * s * s)) / math.sqrt(2 * math.pi * s * s)
                    * (1 - q + q * np.exp((2 * z - 1) / (2 * s * s))) ** power)
        return integrate.quad(f, -60, 60, limit=500, epsabs=0, epsrel=1e-12)[0]

    exact = max(math.log(moment(alpha)), math.log(moment(1 - alpha))) / (alpha - 1)
    assert compute_rdp(q=q, noise_multiplier=s, steps=1, orders=[alpha])[0] == pytest.approx(exact, rel=1e-6)


def test_replace_one_curve_bounds_the_exact_unsampled_case():
    """With q = 1 DP-SGD is the Gaussian mechanism; replace-one moves the clipped sum by 2C, so the exact
    curve is a (2)^2 / (2 z^2) per step. The weak-triangle bound must lie above it, within a factor 2 from
    order 2 on (its (a - 1/2)/(a - 1) factor loosens it near 1)."""
    z, steps = 2.0, 5
    exact = steps * A.gaussian_rdp(z / 2.0, ORDERS)
    bound = np.asarray(A.poisson_gaussian_replace_one(1.0, z, steps))
    assert np.all(bound >= exact * (1 - 1e-9))
    assert np.all((bound <= 2 * exact)[np.asarray(ORDERS) >= 2])
    # and it is never below the add/remove curve
    assert np.all(bound >= np.asarray(compute_rdp(q=0.05, noise_multiplier=z, steps=steps, orders=ORDERS)) - 1e-12)


MIXED = [
    ([{"kind": "laplace", "epsilon": 0.1, "count": 12}, {"kind": "gaussian", "noise_multiplier": 4.0}],
     dp_accounting.ComposedDpEvent([dp_accounting.SelfComposedDpEvent(dp_accounting.LaplaceDpEvent(10.0), 12),
                                    dp_accounting.GaussianDpEvent(4.0)])),
    ([{"kind": "laplace", "epsilon": 0.5}, {"kind": "gaussian", "noise_multiplier": 2.0, "count": 3},
      "sgd"],
     dp_accounting.ComposedDpEvent([dp_accounting.LaplaceDpEvent(2.0),
                                    dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(2.0), 3),
                                    "sgd"])),
    ([{"kind": "laplace", "epsilon": 0.05, "count": 40}, "sgd"],
     dp_accounting.ComposedDpEvent([dp_accounting.SelfComposedDpEvent(dp_accounting.LaplaceDpEvent(20.0), 40),
                                    "sgd"])),
]


@pytest.mark.parametrize("ours, ref", MIXED)
@pytest.mark.parametrize("delta", [1e-5, 1e-3])
def test_mixed_compositions_equal_dp_accounting(ours, ref, delta):
    q, z, steps = 0.01, 1.0, 500
    sgd_curve = compute_rdp(q=q, noise_multiplier=z, steps=steps, orders=INTEGER_ORDERS)  # exact at integers
    events = [A.curve_event(sgd_curve, INTEGER_ORDERS) if e == "sgd" else e for e in ours]
    ref = dp_accounting.ComposedDpEvent([_sgd_ref(q, z, steps) if e == "sgd" else e for e in ref.events])
    acc = dp_rdp.RdpAccountant(orders=INTEGER_ORDERS)
    acc.compose(ref)
    eps, _ = A.rdp_to_dp(A.compose(events, INTEGER_ORDERS), delta, INTEGER_ORDERS)
    assert eps == pytest.approx(acc.get_epsilon(delta), rel=1e-6)


def test_many_exponential_mechanisms_compose_below_the_sum():
    """PGB-like: T = 100 rounds of an 0.01-DP exponential mechanism. Basic: 1.0; RDP (zCDP) is tighter and
    no larger than dp-accounting's zCDP result."""
    events = [{"kind": "pure", "epsilon": 0.01, "count": 100}]
    eps, _ = A.rdp_to_dp(A.compose(events), 1e-5)
    acc = dp_rdp.RdpAccountant(orders=ALL)
    acc.compose(dp_accounting.ZCDpEvent(100 * 0.01**2 / 2))
    assert eps <= acc.get_epsilon(1e-5) + 1e-12 and eps < 0.6


def _record(stage, eps, delta, rdp):
    return PrivacySpend(stage=stage, mechanism="test", epsilon=eps, delta=delta, reads_private=("train",),
                        rdp=tuple(rdp))


def test_manifest_reports_basic_and_rdp_and_the_tighter():
    scale = PrivacySpend(stage="scale", mechanism="none", epsilon=0.0, delta=0.0, basis="public bounds",
                         details={"n_train": 1000, "n_public": 0})
    synth = _record("synthesize", 0.9, 0.0, [{"kind": "pure", "epsilon": 0.009, "count": 100}])
    weights = _record("fit_weights", 0.1, 0.0, [{"kind": "laplace", "epsilon": 0.1}])
    post = PrivacySpend(stage="postprocess_weights", mechanism="none", epsilon=0.0, delta=0.0, basis="post",
                        details={"release_gate": {"fit_to_release": True, "pareto_k": 0.1,
                                                  "pareto_k_threshold": 0.7, "note": ""}})
    m = build_manifest([scale, synth, weights, post], epsilon=1.0, delta=1e-5, allow_non_dp=False, run_id="r")
    assert m["spent"]["epsilon"] == pytest.approx(1.0) and m["spent"]["composition"] == "basic (sum)"
    expect, _ = A.rdp_to_dp(A.pure_rdp(0.009) * 100 + A.laplace_rdp(0.1), 1e-5)
    assert m["spent"]["rdp"]["epsilon"] == pytest.approx(expect) and expect < 0.9
    assert m["spent"]["tightest"] == {"epsilon": pytest.approx(expect), "delta": 1e-5, "from": "rdp"}
    # a DP record without events: basic only, said so
    bare = _record("fit_weights", 0.1, 0.0, [])
    m = build_manifest([scale, synth, bare, post], epsilon=1.0, delta=1e-5, allow_non_dp=False, run_id="r")
    assert m["spent"]["rdp"]["epsilon"] is None and "fit_weights" in m["spent"]["rdp"]["note"]
    assert m["spent"]["tightest"]["from"] == "basic"


def test_rdp_to_dp_rejects_bad_delta():
    with pytest.raises(Exception, match="0 < delta < 1"):
        A.rdp_to_dp(A.laplace_rdp(1.0), 0.0)
    assert math.isfinite(A.rdp_to_dp(A.laplace_rdp(1.0), 1e-9)[0])


@pytest.mark.parametrize("eps, delta", [(0.02, 9.5e-8), (0.05, 1e-9), (0.005, 1e-6), (1.0, 1e-7)])
def test_a_small_epsilon_gets_a_rho_that_converts_back_to_it(eps, delta):
    """Up to order 256 alone no rho > 0 converts to an epsilon under about log(1/delta) / 255 (0.063 at delta
    9.5e-8: a release at epsilon 0.02 failed); with the larger orders rho is the largest that converts to at most
    epsilon, as dp-accounting converts it on the same orders, and no smaller than the closed form
    (sqrt(eps + log 1/delta) - sqrt(log 1/delta))^2 (Bun and Steinke 2016, Prop. 1.3)."""
    rho = A.zcdp_rho(eps, delta)
    acc = dp_rdp.RdpAccountant(orders=ALL)
    acc.compose(dp_accounting.ZCDpEvent(rho))
    assert acc.get_epsilon(delta) == pytest.approx(eps, rel=1e-6) and A.zcdp_to_dp(rho, delta) <= eps
    log = math.log(1 / delta)
    assert rho >= (math.sqrt(eps + log) - math.sqrt(log)) ** 2
    with pytest.raises(DpiwError, match="below what a zCDP mechanism"):  # past the largest order: said, not 0
        A.zcdp_rho(1e-5, 1e-9)


def test_a_computed_curve_counts_as_unbounded_past_its_orders():
    """A DP-SGD curve known on ORDERS composes with closed-form events on all the orders: at the larger ones it
    claims nothing (infinite), so the conversion uses the orders where every event is known."""
    sgd = A.curve_event(compute_rdp(q=0.01, noise_multiplier=1.0, steps=500, orders=ORDERS), ORDERS)
    curve = A.compose([sgd, {"kind": "zcdp", "rho": 0.01}])
    assert np.isfinite(curve[:len(ORDERS)]).all() and np.isinf(curve[len(ORDERS):]).all()
    eps, order = A.rdp_to_dp(curve, 1e-5)
    assert order <= 256 and eps == pytest.approx(A.rdp_to_dp(curve[:len(ORDERS)], 1e-5, ORDERS)[0])
