"""L2-regularised logistic regression with a penalised intercept, and the Chaudhuri et al. (2011)
sensitivity of its minimiser.

Objective, over n rows x-tilde = (x, 1) with labels y in {0, 1} (y~ = 2y - 1):

    J(beta) = (1/n) sum_i log(1 + exp(-y~_i beta^T x~_i)) + (lambda/2) ||beta||^2.

The intercept is an ordinary coefficient and is penalised too: strong convexity in *all* coefficients
is what the sensitivity bound needs (scikit-learn does not penalise its intercept, so it is not used).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import minimize
from scipy.special import log_expit


def add_intercept(X: np.ndarray) -> np.ndarray:
    return np.hstack([X, np.ones((X.shape[0], 1))])


def objective(beta: np.ndarray, X: np.ndarray, y: np.ndarray, lam: float) -> tuple[float, np.ndarray]:
    s = 2.0 * y - 1.0
    m = s * (X @ beta)
    loss = -log_expit(m).mean() + 0.5 * lam * beta @ beta
    # d/dm log(1 + e^{-m}) = -sigmoid(-m)
    g = -(X * (s * np.exp(log_expit(-m)))[:, None]).mean(axis=0) + lam * beta
    return float(loss), g


def fit_l2_logistic(X: np.ndarray, y: np.ndarray, *, lam: float, tol: float = 1e-10) -> np.ndarray:
    """Exact (to ``tol``) minimiser of J; X already holds the intercept column.

    >>> rng = np.random.default_rng(0)
    >>> X = add_intercept(rng.uniform(size=(200, 2))); y = (X[:, 0] > 0.5).astype(float)
    >>> beta = fit_l2_logistic(X, y, lam=0.1)
    >>> bool(np.linalg.norm(objective(beta, X, y, 0.1)[1]) < 1e-8)
    True
    """
    if lam <= 0:
        raise ValueError("lambda must be > 0 (strong convexity)")
    res = minimize(objective, np.zeros(X.shape[1]), args=(X, y, lam), jac=True, method="L-BFGS-B",
                   options={"gtol": tol, "ftol": 1e-15, "maxiter": 10_000})
    return res.x


def l2_sensitivity(*, norm_bound: float, n: int, lam: float, terms: int = 2) -> float:
    """Chaudhuri et al. (2011), Corollary 8 scaled to ||x~||_2 <= R: the logistic loss is 1-Lipschitz in
    the margin, so each row's loss gradient is bounded by R, and a change of ``terms`` loss terms of
    (1/n) sum_i loss_i + (lambda/2) ||beta||^2 (2 for a replaced row, 1 for an added or removed one) moves
    the lambda-strongly convex minimiser by at most terms R/(n lambda) in L2.

    >>> l2_sensitivity(norm_bound=1.0, n=100, lam=0.1), l2_sensitivity(norm_bound=1.0, n=100, lam=0.1, terms=1)
    (0.2, 0.1)
    """
    return terms * norm_bound / (n * lam)


def l1_sensitivity(*, norm_bound: float, n: int, lam: float, n_coef: int, terms: int = 2) -> float:
    """||v||_1 <= sqrt(p) ||v||_2 turns the L2 bound into the L1 bound that coordinate-wise Laplace
    noise needs."""
    return math.sqrt(n_coef) * l2_sensitivity(norm_bound=norm_bound, n=n, lam=lam, terms=terms)
