"""The weight estimators against closed forms, Monte Carlo and known true weights."""

import math
from pathlib import Path

import numpy as np
import pytest

from dpiw import DpiwError
from dpiw.data import load_schema
from dpiw.data.datasets import toy_triangle
from dpiw.data.encode import encode, norm_bound
from dpiw.evaluate import weighted_wasserstein
from dpiw.weights import BetaDebiased, BetaNoised, LogReg, laplace_bias_correction, log_prior_odds
from dpiw.weights.estimators import auto_lambda
from dpiw.weights.logistic import add_intercept, fit_l2_logistic, l2_sensitivity


def test_laplace_bias_correction_matches_monte_carlo(rng):
    """b(x) = 1/E[exp(zeta^T x)] for zeta_j ~ Laplace(0, rho), against 10^6 draws."""
    rho = 0.4
    X = np.array([[0.2, 0.9, 1.0], [0.5, 0.5, 1.0], [1.0, 0.0, 1.0]])
    zeta = rng.laplace(0.0, rho, size=(1_000_000, 3))
    mgf = np.exp(zeta @ X.T)  # (draws, rows)
    mc = 1.0 / mgf.mean(axis=0)
    # delta method: sd of 1/mean ~ sd(mgf)/(sqrt(n) mean^2)
    se = mgf.std(axis=0) / math.sqrt(len(zeta)) / mgf.mean(axis=0) ** 2
    b = np.exp(laplace_bias_correction(X, rho))
    assert np.all(np.abs(b - mc) < 4 * se), (b, mc, se)
    assert np.all(b < 1)  # Jensen: E[exp(zeta^T x)] > 1


def test_bias_correction_refuses_when_undefined():
    with pytest.raises(DpiwError, match="1/rho"):
        laplace_bias_correction(np.array([[0.5, 1.0]]), 1.0)


def _fixed_setup(rng, n=400):
    X = add_intercept(rng.uniform(size=(n, 2)))
    beta_hat = np.array([-1.5, 0.8, 0.3])
    h = X[:, 0] ** 2 + X[:, 1]  # any function of x
    return X, beta_hat, h


def test_beta_noised_is_biased_and_beta_debiased_is_not(rng):
    """Propositions 1 and 2: over 4000 noise draws with beta fixed, the mean of I_N(h|w) is off the
    noise-free value for BetaNoised (by the closed-form factor 1/b) and within 3 SE of it for
    BetaDebiased."""
    X, beta_hat, h = _fixed_setup(rng)
    rho = 0.3  # < 1/2: finite variance of exp(zeta^T x) with |x_j| <= 1
    target = np.mean(np.exp(X @ beta_hat) * h)
    log_b = laplace_bias_correction(X, rho)
    draws = 4000
    noised, debiased = np.empty(draws), np.empty(draws)
    for t in range(draws):
        zeta = rng.laplace(0.0, rho, size=3)
        log_w = X @ (beta_hat + zeta)
        noised[t] = np.mean(np.exp(log_w) * h)
        debiased[t] = np.mean(np.exp(log_w + log_b) * h)
    se_n, se_d = noised.std(ddof=1) / math.sqrt(draws), debiased.std(ddof=1) / math.sqrt(draws)
    assert abs(debiased.mean() - target) < 3 * se_d
    assert noised.mean() - target > 5 * se_n  # biased upwards, since E[exp(zeta^T x)] > 1
    expected_noised = np.mean(np.exp(X @ beta_hat - log_b) * h)  # closed form of the bias
    assert abs(noised.mean() - expected_noised) < 3 * se_n
    assert debiased.std() < noised.std()  # Supplement B.2.4: lower variance too


def test_beta_debiased_estimator_adds_log_b_to_the_same_noise(rng):
    Xr, Xs = rng.uniform(size=(300, 2)), rng.uniform(size=(300, 2))
    kw = dict(epsilon=0.5, delta=0.0, norm_bound=math.sqrt(2))
    a = BetaNoised(lam="auto").fit(Xr, Xs, rng=np.random.default_rng(1), **kw)
    b = BetaDebiased(lam="auto").fit(Xr, Xs, rng=np.random.default_rng(1), **kw)
    assert np.allclose(a.noisy_coef_, b.noisy_coef_)
    expected = a.log_ratio(Xs) + laplace_bias_correction(add_intercept(Xs), a.rho_)
    assert np.allclose(b.log_ratio(Xs), expected)


def test_noise_scale_uses_l1_sensitivity():
    """rho = sqrt(p) * 2R/(n lambda) / epsilon, R over x~ = (x, 1), n = N_D."""
    rng = np.random.default_rng(0)
    Xr, Xs = rng.uniform(size=(200, 3)), rng.uniform(size=(250, 3))
    est = BetaNoised(lam=0.7).fit(Xr, Xs, epsilon=0.3, delta=0.0, rng=rng, norm_bound=math.sqrt(3))
    R, p = math.sqrt(3 + 1), 4
    assert est.rho_ == pytest.approx(math.sqrt(p) * 2 * R / (200 * 0.7) / 0.3)
    rec = est.privacy_
    assert rec.sensitivity["l1"] == pytest.approx(math.sqrt(p) * rec.sensitivity["l2"])
    assert rec.noise["scale"] == pytest.approx(est.rho_) and rec.epsilon == 0.3 and rec.delta == 0
    total = BetaNoised(lam=0.7, sensitivity_n="total").fit(Xr, Xs, epsilon=0.3, delta=0.0, rng=rng,
                                                           norm_bound=math.sqrt(3))
    assert total.rho_ == pytest.approx(est.rho_ * 200 / 450)


def test_auto_lambda_hits_the_target_noise_scale():
    rng = np.random.default_rng(0)
    Xr, Xs = rng.uniform(size=(120, 4)), rng.uniform(size=(120, 4))
    est = BetaNoised(lam="auto", rho_target=0.3).fit(Xr, Xs, epsilon=0.1, delta=0.0, rng=rng, norm_bound=2.0)
    assert est.rho_ == pytest.approx(0.3)
    assert est.lambda_ == pytest.approx(auto_lambda(norm_bound=math.sqrt(5), n=120, n_coef=5, epsilon=0.1,
                                                    rho_target=0.3))


def test_minimiser_sensitivity_bound_holds_on_neighbours(rng):
    """Replace one row by an adversarial one: ||beta(D) - beta(D')||_2 <= 2R/(n lambda) (Chaudhuri)."""
    n, lam = 60, 0.5
    worst = 0.0
    for _ in range(25):
        X = add_intercept(rng.uniform(size=(n, 2)))
        y = (rng.uniform(size=n) < 0.5).astype(float)
        b = fit_l2_logistic(X, y, lam=lam)
        X2, y2 = X.copy(), y.copy()
        X2[0, :2] = rng.choice([0.0, 1.0], size=2)  # a corner: largest norm
        y2[0] = 1 - y[0]
        b2 = fit_l2_logistic(X2, y2, lam=lam)
        worst = max(worst, np.linalg.norm(b - b2))
    bound = l2_sensitivity(norm_bound=math.sqrt(3), n=n, lam=lam)
    assert worst <= bound
    assert worst > 0.1 * bound  # the bound is not vacuous for these neighbours


def test_repeated_rows_are_fitted_once_with_their_count_and_give_the_same_minimiser(rng):
    """A table of binned columns repeats rows: the fit on (distinct row, count) is the same objective, so the same
    minimiser (the gradient of the full objective vanishes at it), and the grouping is exact."""
    from dpiw.weights.logistic import distinct_rows, objective

    X = add_intercept(np.floor(rng.uniform(size=(20_000, 3)) * 4) / 4)
    y = (rng.uniform(size=len(X)) < 0.3 + 0.4 * X[:, 0]).astype(float)
    Xu, yu, counts = distinct_rows(X, y)
    expected = np.unique(np.column_stack([X, y]), axis=0)
    assert len(Xu) == len(expected) == 2 * 4**3 and counts.sum() == len(X)
    assert {tuple(r) for r in np.column_stack([Xu, yu])} == {tuple(r) for r in expected}
    for row, label, c in zip(Xu[:5], yu[:5], counts[:5], strict=True):
        assert c == np.sum(np.all(X == row, axis=1) & (y == label))
    beta = fit_l2_logistic(X, y, lam=1e-3)
    assert np.linalg.norm(objective(beta, X, y, 1e-3)[1]) < 1e-8  # stationary for the objective on every row
    assert objective(beta, X, y, 1e-3)[0] == pytest.approx(objective(beta, Xu, yu, 1e-3, counts)[0], rel=1e-12)
    assert distinct_rows(add_intercept(rng.uniform(size=(1000, 3))), y[:1000]) is None  # all distinct: no grouping


def test_prior_odds_direction_on_gaussian_mean_shift(rng):
    """real ~ N(mu1, I), synth ~ N(mu0, I), N_D != N_G: log r(x) = (mu1-mu0).x - (|mu1|^2-|mu0|^2)/2
    once log(N_G/N_D) is added to the logit (a sign error shifts it by 2 log(N_G/N_D) = 1.4)."""
    mu0, mu1 = np.array([0.0, 0.0]), np.array([0.5, -0.3])
    Xr = rng.normal(mu1, 1.0, size=(40_000, 2))
    Xs = rng.normal(mu0, 1.0, size=(80_000, 2))
    est = LogReg(lam=1e-7).fit(Xr, Xs, epsilon=0.0, delta=0.0, rng=rng)
    grid = rng.normal(0.0, 1.0, size=(1000, 2))
    truth = grid @ (mu1 - mu0) - (mu1 @ mu1 - mu0 @ mu0) / 2
    assert np.max(np.abs(est.log_ratio(grid) - truth)) < 0.1
    assert log_prior_odds(100, 100) == 0.0


def test_logreg_on_toy_data_recovers_the_true_weights():
    """N = 5000 from the triangle vs the uniform square: LogReg log weights correlate with the true
    weights 2*1[x1+x2<1] and importance weighting reduces WST against no weights."""
    schema = load_schema(Path(__file__).resolve().parents[2] / "data/schemas/toy.yaml")
    real = toy_triangle(5000, seed=1)
    g = np.random.default_rng(2)
    synth = real.copy()
    synth[["x1", "x2"]] = g.uniform(size=(5000, 2))
    test = toy_triangle(1000, seed=3)
    Xr, Xs, Xt = encode(real, schema), encode(synth, schema), encode(test, schema)
    est = LogReg(lam=1e-3).fit(Xr, Xs, epsilon=0.0, delta=0.0, rng=g, norm_bound=norm_bound(schema))
    log_w = est.log_ratio(Xs)
    true_w = 2.0 * (Xs.sum(axis=1) < 1)
    assert np.corrcoef(log_w, true_w)[0, 1] > 0.75
    w = np.exp(log_w)
    assert weighted_wasserstein(Xs, w, Xt) < 0.7 * weighted_wasserstein(Xs, np.ones(len(Xs)), Xt)


def test_none_split_is_unit_weights_on_the_split_share_and_spends_nothing():
    from dpiw.privacy.spend import budget_share
    from dpiw.weights.estimators import make_estimator

    est = make_estimator("none_split").fit(np.zeros((5, 2)), np.ones((7, 2)), epsilon=0.1, delta=1e-5, rng=None)
    assert np.all(est.log_ratio(np.ones((7, 2))) == 0) and est.privacy_.epsilon == 0
    assert budget_share("none_split") == "split" and budget_share("none") == "full"


def _drawn_noise(method: str, seeds: int, monkeypatch) -> tuple[np.ndarray, str]:
    """Through the estimator's own fit, over many seeds: the noise it drew, standardised by the location and scale
    its record states (the logistic fit is the same for every seed: computed once)."""
    from dpiw.weights import estimators as est_mod
    from dpiw.weights.estimators import make_estimator

    data = np.random.default_rng(8)
    real, synth = data.uniform(size=(200, 10)), data.uniform(size=(30, 10))
    fitted = {}
    real_fit = est_mod.fit_l2_logistic

    def fit_once(X, y, *, lam):
        if (X.shape, lam) not in fitted:
            fitted[X.shape, lam] = real_fit(X, y, lam=lam)
        return fitted[X.shape, lam].copy()

    monkeypatch.setattr(est_mod, "fit_l2_logistic", fit_once)
    eps, delta = 2.0, 1e-5
    z, lam = [], 20.0 if method.startswith("output") else 2.0  # output_laplace needs its scale below 1/2
    for seed in range(seeds):
        e = make_estimator(method, lam=lam).fit(real, synth, epsilon=eps, delta=delta,
                                                rng=np.random.default_rng(seed), norm_bound=math.sqrt(10))
        noise = e.privacy_.noise
        if method.startswith("beta"):
            drawn, loc = e.noisy_coef_ - e.coef_, 0.0
            scale = noise.get("scale", noise.get("std"))
        else:  # every released log weight minus its noiseless value; the noise's mean shift makes E[w] unbiased
            drawn = e.log_ratio(synth) - (add_intercept(synth) @ e.coef_ + e.log_prior_odds_)
            scale = noise["scale"]
            loc = math.log1p(-scale**2) if noise["distribution"] == "laplace" else -scale**2 / 2
        z.append((drawn - loc) / scale)
    return np.concatenate(z), noise["distribution"]


@pytest.mark.parametrize("method", ["beta_noised", "beta_debiased", "beta_debiased_gauss", "output_laplace",
                                    "output_gauss"])
def test_the_drawn_noise_has_the_recorded_law(method, monkeypatch):
    """Kolmogorov-Smirnov of the standardised draws (11 coefficients or 30 log weights a fit, over 800 seeds:
    8800 or 24000 draws) against the recorded law: accepted at the record's scale, and a scale 20% off either way
    is rejected (the test's power at this size: p < 1e-6 required; at 1.2 times the scale p is 2e-11 for the
    Laplace coefficients, 5e-18 for the Gaussian ones, 5e-27 and 2e-43 for the log weights)."""
    from scipy import stats

    z, law = _drawn_noise(method, 800, monkeypatch)
    dist = "laplace" if law == "laplace" else "norm"
    assert stats.kstest(z, dist).pvalue > 1e-3
    for off in (0.8, 1.2):
        assert stats.kstest(z / off, dist).pvalue < 1e-6, off


def test_a_weight_fit_started_from_a_like_problems_dual_point_finds_the_cold_fit():
    """The noise-aware bootstrap starts each replicate's weight fit from the previous replicate's dual point. A
    replicate whose rows left a marginal's cells empty has nothing to weight there, so at the smallest tau its dual
    point holds -y / sigma^2 for them; started from it, the next replicate's fit (those cells full) began at log
    weights of y / (sigma^2 tau), about 170, where e^u was capped and the dual went flat, and it never came back:
    all the weight on one group (on a 5,000-row release, a share of 1.0 in 15 of 30 replicates, its interval 0 to
    1). The fit from there is now the cold fit's."""
    import pandas as pd

    from dpiw.data.schema import parse_schema
    from dpiw.weights.marginal_match import EXP_CAP, MarginalMatch, measurements_dict

    schema = parse_schema({"name": "t", "task": "classification", "target": "b", "columns": [
        {"name": "a", "type": "categorical", "categories": ["p", "q", "r", "s"]},
        {"name": "b", "type": "categorical", "categories": ["w", "x", "y", "z"]}]})
    rng = np.random.default_rng(5)
    real = pd.DataFrame({"a": rng.choice(4, 4000, p=[0.4, 0.3, 0.2, 0.1]), "b": rng.choice(4, 4000)})
    mm = MarginalMatch(degree=2).measure(real, schema, epsilon=1.0, delta=1e-6, rng=rng)
    empty = real[real.a != 3].reset_index(drop=True)  # the first problem: no row with a = s
    first = MarginalMatch.from_published(measurements_dict(mm), schema).reweight(empty)
    assert first.tau_ == min(first.taus) and first.chi2_ > first.n_cells_  # the cells it cannot fill: misfit
    skewed = pd.DataFrame({"a": rng.choice(4, 4000, p=[0.25, 0.25, 0.25, 0.25]),
                           "b": rng.choice(4, 4000, p=[0.4, 0.2, 0.2, 0.2])})
    cold = MarginalMatch.from_published(measurements_dict(mm), schema).reweight(skewed)
    warm = MarginalMatch.from_published(measurements_dict(mm), schema).reweight(skewed, warm=first.duals_,
                                                                              start_tau=first.tau_)
    assert cold.chi2_ <= cold.n_cells_ and np.ptp(cold.log_ratio_) < 3  # a fit within the noise, sane weights
    assert warm.tau_ == cold.tau_ and warm.log_ratio_.max() < EXP_CAP
    np.testing.assert_allclose(warm.log_ratio_, cold.log_ratio_, atol=1e-4)
