"""Post-processing of log weights. All of it reads only DP outputs, so it spends no budget."""

from __future__ import annotations

import math

import numpy as np

from dpiw import DpiwError


def logsumexp(a: np.ndarray) -> float:
    """log(sum(exp(a))) without overflow (numpy only: scipy.special costs 0.2 s to import)."""
    a = np.asarray(a, float)
    m = np.max(a)
    if not np.isfinite(m):
        return float(m)
    return float(m + np.log(np.exp(a - m).sum()))

POSTS = ("none", "normalise", "temper")


def self_normalise(log_w: np.ndarray) -> np.ndarray:
    """log of w~ = N w / sum(w): the weights average 1.

    >>> np.exp(self_normalise(np.log([1.0, 3.0]))).round(6).tolist()
    [0.5, 1.5]
    """
    log_w = np.asarray(log_w, float)
    total = logsumexp(log_w)
    if not np.isfinite(total):
        raise DpiwError("all weights are zero (or one is infinite): cannot normalise")
    return log_w - total + math.log(log_w.size)


def temper(log_w: np.ndarray, alpha: float) -> np.ndarray:
    """w^alpha, then self-normalised; alpha = 0 gives uniform weights, alpha = 1 the original ones.

    Zero weights stay zero for alpha > 0 (0^alpha = 0).
    """
    if not (0 <= alpha <= 1):
        raise DpiwError(f"post.temper.alpha must be in [0, 1], got {alpha}")
    log_w = np.asarray(log_w, float)
    if alpha == 0:
        return np.zeros_like(log_w)
    return self_normalise(np.where(np.isneginf(log_w), -np.inf, alpha * log_w))


def apply(post: str, log_ratios: np.ndarray, *, alpha: float = 1.0) -> np.ndarray:
    if post == "none":
        return np.asarray(log_ratios, float)
    if post == "normalise":
        return self_normalise(log_ratios)
    if post == "temper":
        return temper(log_ratios, alpha)
    raise DpiwError(f"unknown post-processing {post!r}; known: {POSTS}")
