"""Gaussian BetaDebiased and output-perturbed weights: closed forms, Monte Carlo unbiasedness, guards."""

import math

import numpy as np
import pytest

from dpiw import DpiwError
from dpiw.privacy.mechanisms import analytic_gaussian_sigma
from dpiw.weights import make_estimator
from dpiw.weights.logistic import add_intercept
from dpiw.weights.output_perturbation import gaussian_log_correction, gaussian_scale


def data(seed=0, n=200):
    r = np.random.default_rng(seed)
    real = np.clip(r.normal(0.4, 0.15, size=(n, 2)), 0, 1)
    synth = r.uniform(size=(n, 2))
    return real, synth


def test_gaussian_b_matches_monte_carlo():
    rng = np.random.default_rng(0)
    s = 0.4
    x = np.array([[0.3, 0.9, 1.0], [1.0, 1.0, 1.0]])
    zeta = rng.normal(0, s, size=(1_000_000, 3))
    for xi, lb in zip(x, gaussian_log_correction(x, s), strict=True):
        m = np.exp(zeta @ xi)
        assert 1 / math.exp(lb) == pytest.approx(m.mean(), abs=4 * m.std() / math.sqrt(m.size))


@pytest.fixture
def one_fit_per_problem(monkeypatch):
    """The non-private logistic fit memoised on its inputs: a Monte Carlo over noise draws refits the same
    problem thousands of times, and only the noise differs between draws (the estimator's own noise path runs
    every time)."""
    import dpiw.weights.estimators as estimators

    fit, cache = estimators.fit_l2_logistic, {}

    def memo(X, y, *, lam, **kw):
        key = (X.shape, X.tobytes(), y.tobytes(), lam, tuple(sorted(kw.items())))
        if key not in cache:
            cache[key] = fit(X, y, lam=lam, **kw)
        return cache[key].copy()

    monkeypatch.setattr(estimators, "fit_l2_logistic", memo)
    return cache


def test_gaussian_debiased_weights_are_unbiased_over_noise_draws(one_fit_per_problem):
    real, synth = data()
    kw = dict(lam="auto", sensitivity_n="private", rho_target=0.5)
    base = make_estimator("logreg", **kw).fit(real, synth, epsilon=0.5, delta=1e-4, rng=None, norm_bound=math.sqrt(2))
    # logreg's auto lambda follows the Laplace rule; refit with the Gaussian one's lambda for the truth
    est = make_estimator("beta_debiased_gauss", **kw).fit(real, synth, epsilon=0.5, delta=1e-4,
                                                          rng=np.random.default_rng(0), norm_bound=math.sqrt(2))
    truth = make_estimator("logreg", **{**kw, "lam": est.lambda_}).fit(real, synth, epsilon=0.5, delta=1e-4,
                                                                       rng=None, norm_bound=math.sqrt(2))
    assert est.s_ == pytest.approx(0.5)  # lambda auto -> s = rho_target
    X = synth[:5]
    draws = np.array([np.exp(make_estimator("beta_debiased_gauss", **kw).fit(
        real, synth, epsilon=0.5, delta=1e-4, rng=np.random.default_rng(i), norm_bound=math.sqrt(2)).log_ratio(X))
        for i in range(3000)])
    target = np.exp(truth.log_ratio(X))
    se = draws.std(axis=0) / math.sqrt(len(draws))
    assert np.all(np.abs(draws.mean(axis=0) - target) < 3.5 * se), (draws.mean(axis=0), target, se)
    noised = np.exp(add_intercept(X) @ (est.coef_ + 0) + est.log_prior_odds_)
    assert noised == pytest.approx(target)
    assert base.lambda_ != est.lambda_
    assert len(one_fit_per_problem) == 2  # base; est, its 3000 redraws and truth (one problem, one lambda)


@pytest.mark.parametrize("method", ["output_laplace", "output_gauss"])
def test_output_perturbed_weights_have_the_unperturbed_mean(method):
    real, synth = data(1)
    est = make_estimator(method, lam="auto", sensitivity_n="private", rho_target=0.25).fit(
        real, synth, epsilon=0.5, delta=1e-4, rng=np.random.default_rng(0), norm_bound=math.sqrt(2))
    assert est.scale_ == pytest.approx(0.25)  # lambda auto hits the target scale
    R2, n, N_S = est.norm_bound_**2, len(real), len(synth)
    per = 2 * R2 / (n * est.lambda_)
    if method == "output_laplace":
        assert est.scale_ == pytest.approx(N_S * per / 0.5)  # L1 over the N_S weights / eps
    else:
        assert est.scale_ == pytest.approx(gaussian_scale(math.sqrt(N_S) * per, 0.5, 1e-4))
    clean = add_intercept(synth) @ est.coef_ + est.log_prior_odds_
    rng = np.random.default_rng(1)
    draws = np.exp(clean + np.array([est._draw(rng, N_S) for _ in range(4000)]))  # (draws, rows)
    se = draws.std(axis=0) / math.sqrt(len(draws))
    z = (draws.mean(axis=0) - np.exp(clean)) / se
    assert np.mean(np.abs(z) < 3) > 0.98 and abs(z.mean()) < 4 / math.sqrt(N_S)  # z.mean(): sd 1/sqrt(N_S)
    assert np.allclose(est.log_ratio(synth) - clean, est.eta_)
    with pytest.raises(DpiwError, match="calibrated"):
        est.log_ratio(real)


def test_output_laplace_refuses_infinite_variance():
    real, synth = data(2)
    with pytest.raises(DpiwError, match="infinite variance|no finite mean"):
        make_estimator("output_laplace", lam=1.0, sensitivity_n="private", rho_target=0.25).fit(
            real, synth, epsilon=0.5, delta=0, rng=np.random.default_rng(0), norm_bound=math.sqrt(2))


def test_gaussian_weights_use_the_analytic_mechanism_at_any_epsilon():
    assert gaussian_scale(2.0, 1.5, 1e-5) == pytest.approx(2.0 * analytic_gaussian_sigma(1.5, 1e-5))
    with pytest.raises(DpiwError, match="0 < delta < 1"):
        gaussian_scale(1.0, 1.5, 0.0)
