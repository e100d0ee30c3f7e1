"""Pareto smoothed importance sampling (Vehtari, Simpson, Gelman, Yao and Gabry 2024, JMLR 25(72)).

The largest M = ceil(min(S/5, 3 sqrt(S))) weights are replaced by the expected order statistics of a
generalised Pareto distribution fitted to them (Zhang and Stephens 2009, with the weakly informative
prior on k of Vehtari et al.), capped at the largest raw weight. k-hat, the fitted shape, is the
diagnostic: above min(1 - 1/log10(S), 0.7) the importance-sampling estimates are unreliable, and for
dpiw the weights (and so the SDGP) are not fit to release.

Written in-house (numpy only); tests compare it with numbers frozen from arviz 0.23.4's ``psislw``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpiw import DpiwError

_TINY_LOG = math.log(np.finfo(float).tiny)


def gpd_fit(x: np.ndarray) -> tuple[float, float]:
    """(k, sigma) of a generalised Pareto fitted to sorted exceedances ``x`` >= 0 (Zhang-Stephens
    empirical Bayes, then k shrunk towards 0.5 by a prior worth 10 observations)."""
    n = x.size
    m = 30 + int(n**0.5)
    b = 1.0 - np.sqrt(m / (np.arange(1, m + 1, dtype=float) - 0.5))
    b /= 3.0 * x[int(n / 4 + 0.5) - 1]
    b += 1.0 / x[-1]
    k = np.log1p(-b[:, None] * x).mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):  # tied exceedances give k = 0 for some b
        len_scale = n * (np.log(-(b / k)) - k - 1.0)
    if not np.isfinite(len_scale).any():  # tied exceedances: no Pareto tail to fit (treated as bounded)
        return math.inf, 0.0
    len_scale = np.where(np.isfinite(len_scale), len_scale, -np.inf)
    w = np.exp(len_scale - len_scale.max())  # 1 / sum_j exp(L_j - L_i), without its overflow at large n
    w /= w.sum()
    keep = w >= 10 * np.finfo(float).eps
    w, b = w[keep], b[keep]
    w /= w.sum()
    b_post = float(np.sum(b * w))
    if b_post == 0.0:
        return math.inf, 0.0
    k_post = float(np.log1p(-b_post * x).mean())
    sigma = -k_post / b_post
    k_post = (n * k_post + 10 * 0.5) / (n + 10)
    return k_post, sigma


def gpd_quantile(p: np.ndarray, k: float, sigma: float) -> np.ndarray:
    """Inverse CDF of the generalised Pareto (location 0) at probabilities 0 < p < 1."""
    if abs(k) < np.finfo(float).eps:
        return -sigma * np.log1p(-p)
    return sigma * np.expm1(-k * np.log1p(-p)) / k


def tail_length(n: int, reff: float = 1.0) -> int:
    """M = ceil(min(S/5, 3 sqrt(S / reff)))."""
    return int(math.ceil(min(n / 5.0, 3.0 * math.sqrt(n / reff))))


def khat_threshold(n: int) -> float:
    """The sample-size dependent threshold min(1 - 1/log10(S), 0.7) (Vehtari et al. 2024, Sec. 3.2.3).

    >>> round(khat_threshold(1000), 4), khat_threshold(10**8)
    (0.6667, 0.7)
    """
    if n <= 10:
        return 0.0  # 1 - 1/log10(S) <= 0: no tail of so few draws can be trusted
    return min(1.0 - 1.0 / math.log10(n), 0.7)


@dataclass(frozen=True)
class PsisResult:
    log_weights: np.ndarray  # smoothed, on the input's scale (not normalised)
    k: float                 # fitted shape k-hat; inf when the tail is too short to fit (arviz's convention)
    tail: int                # number of weights in the fitted tail
    n: int                   # S, the number of finite weights


def psis(log_w: np.ndarray, *, reff: float = 1.0) -> PsisResult:
    """Pareto-smooth log weights (arviz ``psislw(log_w, normalize=False)``); -inf entries (zero
    weights) are kept as they are and do not count in S."""
    x = np.array(log_w, dtype=float)
    if x.ndim != 1:
        raise DpiwError(f"psis: expects a vector of log weights, got shape {x.shape}")
    if np.isnan(x).any() or np.isposinf(x).any():
        raise DpiwError("psis: log weights must not be NaN or +inf")
    finite = np.isfinite(x)
    n = int(finite.sum())
    if n == 0:
        raise DpiwError("psis: every weight is zero")
    max_x = float(np.max(x[finite]))
    x -= max_x
    order = np.argsort(x, kind="stable")
    cutoff_ind = -tail_length(x.size, reff) - 1
    cutoff = max(x[order[cutoff_ind]], _TINY_LOG) if x.size >= -cutoff_ind else _TINY_LOG
    tail_idx = np.flatnonzero(x > cutoff)
    k = math.inf
    # fewer than five distinct values above the cutoff (marginal matching's weights are one per cell, so a tail
    # can hold a hundred rows and two values): nothing heavy to fit, and the fit's likelihood is undefined
    if tail_idx.size > 4 and np.unique(x[tail_idx]).size > 4:
        t_order = np.argsort(x[tail_idx], kind="stable")
        exceed = np.exp(x[tail_idx][t_order]) - math.exp(cutoff)
        k, sigma = gpd_fit(exceed)
        if math.isfinite(k):
            probs = np.arange(0.5, tail_idx.size) / tail_idx.size
            x[tail_idx[t_order]] = np.log(gpd_quantile(probs, k, sigma) + math.exp(cutoff))
            x[x > 0] = 0.0  # cap at the largest raw weight
    return PsisResult(x + max_x, float(k), int(tail_idx.size), n)


@dataclass(frozen=True)
class ParetoDiagnostic:
    k: float | None           # None: the tail is degenerate (tied or too short), nothing heavy to fit
    threshold: float
    n: int
    fit_to_release: bool
    note: str

    def to_dict(self) -> dict:
        return {"pareto_k": self.k, "pareto_k_threshold": self.threshold, "n_weights": self.n,
                "fit_to_release": self.fit_to_release, "note": self.note}


def diagnose(log_w: np.ndarray) -> ParetoDiagnostic:
    """k-hat of the weights and the release verdict: fit to release iff k-hat <= min(1 - 1/log10 S, 0.7).

    A tail with fewer than five distinct values above the cutoff (e.g. constant weights, or the few
    levels of rejection sampling or PGB) is bounded by construction: it has no heavy tail to fit,
    so k-hat is reported as None and the verdict is "fit".
    """
    res = psis(log_w)
    thr = khat_threshold(res.n)
    if not math.isfinite(res.k):
        return ParetoDiagnostic(None, thr, res.n, True, f"tail of {res.tail} values above the cutoff: weights "
                                "take too few distinct large values to fit a Pareto tail (bounded)")
    ok = res.k <= thr
    note = (f"k-hat {res.k:.3f} <= {thr:.3f}" if ok else
            f"k-hat {res.k:.3f} > {thr:.3f}: importance-sampling estimates are unreliable; the weights "
            "(and so the SDGP) are not fit to release")
    return ParetoDiagnostic(res.k, thr, res.n, ok, note)
