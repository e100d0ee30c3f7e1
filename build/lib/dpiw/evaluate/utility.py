"""Downstream utility of weighted synthetic data: the MLP metric (paper Tables 1-3), pMSE (Snoke et al.
2018) and the MSE of log weights against the non-private LogReg weights (poster Table 2).

numpy only (the evaluate stage must not pay torch's import); every fit is seeded.
"""

from __future__ import annotations

import math

import numpy as np

from dpiw import DpiwError
from dpiw.evaluate.bayes import multiclass_auc
from dpiw.numerics import logsumexp, softmax_rows


def _normalised_mean_one(w: np.ndarray) -> np.ndarray:
    w = np.asarray(w, float)
    if not (np.isfinite(w).all() and (w >= 0).all() and w.sum() > 0):
        raise DpiwError("weights must be finite, non-negative and not all zero")
    return w * (len(w) / w.sum())


def train_mlp(X: np.ndarray, y: np.ndarray, w: np.ndarray, *, task: str, n_classes: int, rng: np.random.Generator,
              hidden: int = 32, epochs: int = 100, batch_size: int = 128, lr: float = 0.01, l2: float = 1e-4,
              max_steps: int = 20_000):
    """A one-hidden-layer (ReLU) MLP trained by Adam on sum_i w_i loss_i / sum_i w_i (softmax cross-entropy
    or squared error): the weights enter the loss. Returns predict(X) -> P(y=1) (binary), class
    probabilities (multiclass) or the mean (regression). At most ``max_steps`` Adam steps (fewer epochs on
    large synthetic sets, so the cost stops growing with N_G; below ~25k rows all 100 epochs run)."""
    X = np.asarray(X, float)
    w = _normalised_mean_one(w)
    n, d = X.shape
    epochs = max(1, min(epochs, max_steps // max(1, math.ceil(n / batch_size))))
    k = 1 if task == "regression" else n_classes
    params = [rng.normal(0, math.sqrt(2.0 / d), (d, hidden)), np.zeros(hidden),
              rng.normal(0, math.sqrt(1.0 / hidden), (hidden, k)), np.zeros(k)]
    Y = np.asarray(y, float)[:, None] if task == "regression" else np.eye(n_classes)[np.asarray(y).astype(np.int64)]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    b1, b2, t = 0.9, 0.999, 0

    def forward(Xb, P):
        H = np.maximum(Xb @ P[0] + P[1], 0.0)
        return H, H @ P[2] + P[3]

    for _ in range(epochs):
        order = rng.permutation(n)
        for start in range(0, n, batch_size):
            idx = order[start:start + batch_size]
            Xb, Yb, wb = X[idx], Y[idx], w[idx]
            H, out = forward(Xb, params)
            if task == "regression":
                dout = 2.0 * (out - Yb)
            else:
                P_ = softmax_rows(out)[0]
                dout = P_ - Yb
            dout = dout * (wb / wb.sum())[:, None] if wb.sum() > 0 else dout * 0.0
            dH = (dout @ params[2].T) * (H > 0)
            grads = [Xb.T @ dH + l2 * params[0], dH.sum(0), H.T @ dout + l2 * params[2], dout.sum(0)]
            t += 1
            for i, gi in enumerate(grads):
                m[i] = b1 * m[i] + (1 - b1) * gi
                v[i] = b2 * v[i] + (1 - b2) * gi * gi
                params[i] -= lr * (m[i] / (1 - b1**t)) / (np.sqrt(v[i] / (1 - b2**t)) + 1e-8)

    def predict(X_new):
        _, out = forward(np.asarray(X_new, float), params)
        if task == "regression":
            return out[:, 0]
        P_ = softmax_rows(out)[0]
        return P_[:, 1] if n_classes == 2 else P_

    predict.steps = t  # Adam steps taken (for tests and benchmarks)
    return predict


def mlp_metric(X_synth, y_synth, w, X_test, y_test, *, task: str, n_classes: int, rng: np.random.Generator) -> dict:
    """MLP ROC-AUC (classification) or MLP MSE (regression) on the test split, trained on weighted G."""
    predict = train_mlp(X_synth, y_synth, w, task=task, n_classes=n_classes, rng=rng)
    pred = predict(X_test)
    if task == "regression":
        return {"mlp_mse": float(np.mean((pred - np.asarray(y_test, float)) ** 2))}
    return {"mlp_auc": multiclass_auc(y_test, pred)}


def _logistic_fit(A: np.ndarray, t: np.ndarray, s: np.ndarray, l2: float = 1e-6) -> np.ndarray:
    """Weighted logistic regression (labels t, sample weights s) by Newton; A includes the intercept."""
    beta = np.zeros(A.shape[1])
    for _ in range(100):
        p = 0.5 * (1.0 + np.tanh(0.5 * (A @ beta)))
        g = A.T @ (s * (p - t)) + l2 * beta
        H = (A * (s * p * (1 - p))[:, None]).T @ A + l2 * np.eye(A.shape[1])
        step = np.linalg.solve(H, g)
        beta -= step
        if np.max(np.abs(step)) < 1e-10:
            break
    return beta


def pmse(X_real: np.ndarray, X_synth: np.ndarray, w_synth: np.ndarray | None = None) -> dict:
    """Propensity-score mean squared error (Woo et al. 2009; Snoke et al. 2018).

    A logistic model (main effects) separates the synthetic rows (t = 1, weighted by w, scaled to sum
    N_G) from the real rows (t = 0); pMSE = sum_i s_i (p_i - c)^2 / sum_i s_i with c = N_G / N the
    synthetic share and s_i the row weights. ``pmse_ratio`` = pMSE / its null expectation: ~1 when the
    (weighted) synthetic data look like the real data, larger as they differ.

    The null expectation used is (k - 1) c (1 - c) / N for k model parameters (the delta method:
    p_i - c ~ c(1 - c) x_i^T (beta_hat - beta) with Var(beta_hat) = (c(1 - c) X^T X)^-1, k - 1 free
    directions). Snoke et al. print (k - 1)(1 - c)^2 c / N, which simulation (tests) shows is too small
    by the factor 1/(1 - c) (half the null mean at c = 1/2); we follow the simulation.
    """
    X_real, X_synth = np.asarray(X_real, float), np.asarray(X_synth, float)
    n_r, n_s = len(X_real), len(X_synth)
    w = np.ones(n_s) if w_synth is None else _normalised_mean_one(w_synth)
    A = np.hstack([np.vstack([X_real, X_synth]), np.ones((n_r + n_s, 1))])
    t = np.concatenate([np.zeros(n_r), np.ones(n_s)])
    s = np.concatenate([np.ones(n_r), w])
    c = n_s / (n_r + n_s)
    p = 0.5 * (1.0 + np.tanh(0.5 * (A @ _logistic_fit(A, t, s))))
    value = float((s * (p - c) ** 2).sum() / s.sum())
    k = A.shape[1]
    null = (k - 1) * c * (1 - c) / (n_r + n_s)
    return {"pmse": value, "pmse_ratio": value / null}


def log_weight_mse(log_w: np.ndarray, reference_log_w: np.ndarray) -> float:
    """MSE between two sets of log weights on the same rows, each self-normalised to mean weight 1 (log
    weights are defined up to a constant); rows where either weight is zero are left out."""
    a, b = np.asarray(log_w, float), np.asarray(reference_log_w, float)
    if a.shape != b.shape:
        raise DpiwError(f"log weights of {a.size} and {b.size} rows cannot be compared")
    keep = np.isfinite(a) & np.isfinite(b)
    if not keep.any():
        return math.nan
    a, b = a[keep], b[keep]
    a = a - logsumexp(a) + math.log(a.size)
    b = b - logsumexp(b) + math.log(b.size)
    return float(np.mean((a - b) ** 2))
