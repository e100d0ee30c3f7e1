import numpy as np
import pytest
from sklearn.linear_model import LinearRegression, LogisticRegression

from dpiw.evaluate import kish_ess, weighted_wasserstein
from dpiw.evaluate.metrics import BETA_MSE_L2, beta_mse, fit_linear_model
from dpiw.postprocess import apply_step, self_normalise, temper


def test_tempering_limits_and_normalisation(rng):
    lw = rng.normal(size=50)
    assert np.allclose(temper(lw, 0.0), 0.0)  # uniform
    assert np.allclose(np.exp(temper(lw, 1.0)), np.exp(self_normalise(lw)))
    assert np.exp(self_normalise(lw)).mean() == pytest.approx(1.0)
    assert np.allclose(apply_step("none", lw), lw)
    half = np.exp(temper(lw, 0.5))
    assert kish_ess(half) > kish_ess(np.exp(lw))  # tempering raises the ESS
    assert np.isneginf(temper(np.array([0.0, -np.inf]), 0.5)[1])  # zero weights stay zero


def test_kish_ess_of_equal_weights_is_n():
    assert kish_ess(np.full(123, 0.3)) == pytest.approx(123)
    assert kish_ess(np.r_[1.0, np.zeros(9)]) == pytest.approx(1)


def test_wasserstein_closed_forms(rng):
    X = rng.uniform(size=(30, 2))
    assert weighted_wasserstein(X, np.ones(30), X) == pytest.approx(0.0, abs=1e-7)
    # all mass on one point at distance 1 from a point mass
    Xs = np.array([[0.0, 0.0], [5.0, 5.0]])
    assert weighted_wasserstein(Xs, np.array([1.0, 0.0]), np.array([[1.0, 0.0]])) == pytest.approx(1.0)
    # 1-D: W1 between two uniform samples equals the mean absolute difference of sorted values
    a, b = np.sort(rng.uniform(size=40)), np.sort(rng.uniform(size=40) + 0.3)
    assert weighted_wasserstein(a[:, None], np.ones(40), b[:, None]) == pytest.approx(np.abs(a - b).mean())


@pytest.mark.parametrize("k", [2, 3])
def test_downstream_logistic_matches_scikit_learn(rng, k):
    X = rng.uniform(size=(300, 4))
    y = rng.integers(k, size=300)
    y[X[:, 0] > 0.7] = 0
    w = rng.exponential(size=300)
    ours = fit_linear_model(X, y, w, task="classification", n_classes=k)
    # the mean loss with penalty l2 is scikit-learn's summed loss with C = 1 / (l2 * sum(w))
    m = LogisticRegression(C=1 / (BETA_MSE_L2 * w.sum()), max_iter=10_000, tol=1e-10).fit(X, y, sample_weight=w)
    assert np.allclose(ours, np.hstack([m.coef_, m.intercept_[:, None]]).ravel(), atol=1e-4)


def test_beta_mse_measures_bias_not_sample_size(rng):
    """One distribution, samples of 1,000 and 250 rows: with the mean loss both fits estimate the same
    coefficients, so beta-MSE is sampling noise only, (1/1000 + 1/250) / (2/1000) = 2.5 times that of two samples
    of 1,000 (over 12 replicates: 1.5-3.9 over seeds 1-11); with the summed loss (scikit-learn's C = 1) the penalty
    weighs four times more on the small sample and beta-MSE grows with the size gap instead (over 5 times)."""
    def sample(n):
        X = rng.uniform(size=(n, 3))
        y = (X @ [6.0, -6.0, 3.0] - 1.5 + rng.logistic(size=n) > 0).astype(int)
        return X, y

    ours, same_size = [], []
    for _ in range(12):
        (Xa, ya), (Xb, yb), (Xc, yc) = sample(1000), sample(250), sample(1000)
        ours.append(beta_mse(Xa, ya, np.ones(1000), Xb, yb, task="classification", n_classes=2))
        same_size.append(beta_mse(Xa, ya, np.ones(1000), Xc, yc, task="classification", n_classes=2))
    summed = [LogisticRegression(max_iter=10_000).fit(X, y) for X, y in ((Xa, ya), (Xb, yb))]
    old = np.mean((np.r_[summed[0].coef_[0], summed[0].intercept_] - np.r_[summed[1].coef_[0],
                                                                           summed[1].intercept_]) ** 2)
    assert 1.2 < np.mean(ours) / np.mean(same_size) < 5
    assert old > 5 * np.mean(ours)


def test_weighted_least_squares_and_beta_mse(rng):
    X = rng.uniform(size=(200, 2))
    y = X @ [1.0, -2.0] + 0.5 + 0.1 * rng.normal(size=200)
    w = rng.exponential(size=200)
    m = LinearRegression().fit(X, y, sample_weight=w)
    assert np.allclose(fit_linear_model(X, y, w, task="regression"), np.r_[m.coef_, m.intercept_])
    assert beta_mse(X, y, np.ones(200), X, y, task="regression") == pytest.approx(0.0, abs=1e-20)
