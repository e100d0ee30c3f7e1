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


def objective(beta: np.ndarray, X: np.ndarray, y: np.ndarray, lam: float,
              counts: np.ndarray | None = None) -> tuple[float, np.ndarray]:
    """J(beta) = (1/n) sum_i loss_i + (lam/2) ||beta||^2 and its gradient; with ``counts``, row i stands for
    counts[i] identical rows (n = counts.sum()): the same function of beta."""
    s = 2.0 * y - 1.0
    m = s * (X @ beta)
    w = np.ones(len(y)) if counts is None else counts
    n = w.sum()
    loss = -(w @ log_expit(m)) / n + 0.5 * lam * beta @ beta
    # d/dm log(1 + e^{-m}) = -sigmoid(-m); X.T @ r needs no n x p temporary
    g = -(X.T @ (w * s * np.exp(log_expit(-m)))) / n + lam * beta
    return float(loss), g


def _mix(z: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser on every element: each input bit moves every output bit."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def distinct_rows(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(X, y, counts) of the distinct (row, label) pairs when they are at most half the rows (tables of coded or
    binned columns repeat rows), else None: the objective on them is the same function, evaluated faster. Rows
    are grouped by a 64-bit hash of their bytes, then every row is compared with its group's first row (a
    collision, however unlikely, gives None), in chunks: the extra memory is a few integers per row.

    >>> X = np.array([[0.0, 1.0], [0.0, 1.0], [1.0, 1.0], [0.0, 1.0]]); y = np.array([1.0, 1.0, 0.0, 1.0])
    >>> [a.tolist() for a in distinct_rows(X, y)]
    [[[0.0, 1.0], [1.0, 1.0]], [1.0, 0.0], [3.0, 1.0]]
    """
    n = len(y)
    if n == 0:
        return None
    h = np.zeros(n, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for col in (*(X[:, j] for j in range(X.shape[1])), y):
            h = _mix(h ^ _mix(np.ascontiguousarray(col, dtype=float).view(np.uint64)))
    _, first, inverse, counts = np.unique(h, return_index=True, return_inverse=True, return_counts=True)
    del h
    if 2 * len(first) > n:
        return None
    step = 1 << 20
    for a in range(0, n, step):  # every row equals its group's first row: no collision
        rep = first[inverse[a:a + step]]
        if not (np.array_equal(X[a:a + step], X[rep]) and np.array_equal(y[a:a + step], y[rep])):
            return None
    order = np.argsort(first)  # groups in order of first appearance
    return X[first[order]], y[first[order]], counts[order].astype(float)


def fit_l2_logistic(X: np.ndarray, y: np.ndarray, *, lam: float, tol: float = 1e-10) -> np.ndarray:
    """Exact (to ``tol``) minimiser of J; X already holds the intercept column. Repeated rows are fitted once
    with their count (:func:`distinct_rows`).

    >>> rng = np.random.default_rng(0)
    >>> X = add_intercept(rng.uniform(size=(200, 2))); y = (X[:, 0] > 0.5).astype(float)
    >>> beta = fit_l2_logistic(X, y, lam=0.1)
    >>> bool(np.linalg.norm(objective(beta, X, y, 0.1)[1]) < 1e-8)
    True
    """
    if lam <= 0:
        raise ValueError("lambda must be > 0 (strong convexity)")
    args = (X, y, lam)
    compressed = distinct_rows(X, y)
    if compressed is not None:
        args = (compressed[0], compressed[1], lam, compressed[2])
    res = minimize(objective, np.zeros(X.shape[1]), args=args, jac=True, method="L-BFGS-B",
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
