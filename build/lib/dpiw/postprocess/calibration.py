"""Beta calibration (Kull, Silva Filho and Flach 2017) of a real-vs-synthetic classifier.

The classifier's probability s of "real" is mapped by a logistic model on the two features
(ln s, -ln(1 - s)): logit s_cal = a ln s - b ln(1 - s) + c with a, b >= 0 (when the joint fit gives a
negative a or b, that feature is dropped and the other refitted, as in the authors' ``betacal``).
a = b = 1, c = 0 is the identity, so calibrated scores are left as they are.

dpiw works in log ratios: the weight stage's log ratio r serves as the score through s = sigmoid(r)
(a constant prior-odds shift in r is absorbed exactly by c when a = b), and the calibrated log ratio
is logit s_cal - log(n_real / n_synth), the calibration set's own prior odds removed.

Calibration needs labelled data from the DGP. The pipeline uses a slice of the private data declared
public in params (``scale.public_fraction``, excluded from D and recorded in the manifest): the fit
then reads only public rows and DP outputs and spends nothing. ``fit_dp`` is the alternative that
reads private rows and spends budget (output perturbation of the three coefficients).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpiw import DpiwError

#: betacal clips s to [eps, 1 - eps]: logit(1 - eps) for float64
_LOGIT_CLIP = math.log((1 - np.finfo(float).eps) / np.finfo(float).eps)
#: betacal's LogisticRegression(C=1e11): the penalty 0.5/C ||(a, b)||^2 keeps separable data finite
_C = 99999999999.0


def score_features(log_ratio: np.ndarray) -> np.ndarray:
    """(ln s, -ln(1 - s)) for s = sigmoid(r), computed from r without cancellation."""
    r = np.clip(np.asarray(log_ratio, float), -_LOGIT_CLIP, _LOGIT_CLIP)
    return np.column_stack([-np.logaddexp(0.0, -r), np.logaddexp(0.0, r)])


def _logistic_newton(F: np.ndarray, y: np.ndarray, *, penalty: float) -> np.ndarray:
    """Minimise sum_i softplus(z_i) - y_i z_i + penalty/2 ||coef||^2, z = F coef + c (c unpenalised),
    by Newton's method with backtracking; returns (coef..., c)."""
    A = np.column_stack([F, np.ones(len(F))])
    pen = np.full(A.shape[1], penalty)
    pen[-1] = 0.0
    theta = np.zeros(A.shape[1])

    def objective(t):
        z = A @ t
        return float(np.sum(np.logaddexp(0.0, z) - y * z) + 0.5 * np.sum(pen * t * t))

    f = objective(theta)
    for _ in range(200):
        z = A @ theta
        p = 0.5 * (1.0 + np.tanh(0.5 * z))
        g = A.T @ (p - y) + pen * theta
        H = (A * (p * (1 - p))[:, None]).T @ A + np.diag(pen) + 1e-12 * np.eye(A.shape[1])
        step = np.linalg.solve(H, g)
        t = 1.0
        while t > 1e-10:
            cand = theta - t * step
            f_new = objective(cand)
            if f_new <= f - 1e-4 * t * float(g @ step):
                break
            t *= 0.5
        else:
            break
        theta, f_old, f = cand, f, f_new
        if abs(f_old - f) <= 1e-13 * max(1.0, abs(f)) and np.max(np.abs(g)) < 1e-8 * max(1.0, len(y)):
            break
    return theta


@dataclass(frozen=True)
class BetaMap:
    """logit s_cal = a ln s - b ln(1 - s) + c."""
    a: float
    b: float
    c: float

    @property
    def midpoint(self) -> float:
        """m with a ln m - b ln(1 - m) + c = 0: the score that maps to 1/2 (betacal's third parameter)."""
        lo, hi = 1e-300, 1.0 - 1e-16
        f = lambda m: self.a * math.log(m) - self.b * math.log1p(-m) + self.c  # noqa: E731
        if f(lo) > 0 or f(hi) < 0:
            return math.nan
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if f(mid) < 0 else (lo, mid)
        return 0.5 * (lo + hi)

    def logit(self, log_ratio: np.ndarray) -> np.ndarray:
        F = score_features(log_ratio)
        return self.a * F[:, 0] + self.b * F[:, 1] + self.c

    def predict(self, s: np.ndarray) -> np.ndarray:
        """Calibrated probabilities for scores s in [0, 1] (betacal's ``predict``)."""
        s = np.clip(np.asarray(s, float), np.finfo(float).eps, 1 - np.finfo(float).eps)
        z = self.logit(np.log(s) - np.log1p(-s))
        return 0.5 * (1.0 + np.tanh(0.5 * z))

    def to_dict(self) -> dict:
        return {"a": self.a, "b": self.b, "c": self.c, "midpoint": self.midpoint}


def fit_beta_map(log_ratio: np.ndarray, y: np.ndarray) -> BetaMap:
    """Fit the three-parameter beta calibration map (betacal's "abm") to scores s = sigmoid(log_ratio)
    with labels y in {0, 1}."""
    y = np.asarray(y, float)
    r = np.asarray(log_ratio, float)
    if r.shape != y.shape or r.ndim != 1:
        raise DpiwError("beta calibration: scores and labels must be vectors of one length")
    if not np.isfinite(r).all():
        raise DpiwError("beta calibration: the classifier's scores must be finite")
    if not set(np.unique(y)) <= {0.0, 1.0}:
        raise DpiwError("beta calibration: labels must be 0 or 1")
    if y.min() == y.max():
        raise DpiwError("beta calibration needs rows of both labels (real and synthetic)")
    F = score_features(r)
    a, b, c = _logistic_newton(F, y, penalty=1.0 / _C)
    if a < 0:
        b, c = _logistic_newton(F[:, 1:], y, penalty=1.0 / _C)
        a = 0.0
    elif b < 0:
        a, c = _logistic_newton(F[:, :1], y, penalty=1.0 / _C)
        b = 0.0
    return BetaMap(float(a), float(b), float(c))


def calibrate_log_ratios(synth_log_ratio: np.ndarray, public_log_ratio: np.ndarray) -> tuple[np.ndarray, BetaMap]:
    """Calibrate the weight classifier on public real rows (label 1) against the synthetic rows (label 0)
    and return the calibrated log ratios of the synthetic rows, and the map."""
    synth = np.asarray(synth_log_ratio, float)
    public = np.asarray(public_log_ratio, float)
    if public.size < 2:
        raise DpiwError(f"beta calibration needs public real rows, got {public.size}: set "
                        "scale.public_fraction > 0 (a slice of the data declared public and excluded from D)")
    finite = np.isfinite(synth)
    r = np.concatenate([public, synth[finite]])
    y = np.concatenate([np.ones(public.size), np.zeros(int(finite.sum()))])
    bmap = fit_beta_map(r, y)
    out = np.full_like(synth, -np.inf)
    out[finite] = bmap.logit(synth[finite]) - math.log(public.size / finite.sum())
    return out, bmap
