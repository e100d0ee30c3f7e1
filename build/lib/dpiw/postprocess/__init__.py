"""Post-processing of log weights (paper Supplement A.2).

A run's ``post`` is one step or a chain joined by '+', applied left to right, e.g. ``calibrate+psis``
or ``truncate``: none, normalise, temper, truncate, psis, calibrate (first only), resample (last only).
Everything here reads only DP outputs (and, for calibrate, rows declared public), so it spends no
budget.
"""

from __future__ import annotations

import math

import numpy as np

from dpiw import DpiwError
from dpiw.numerics import logsumexp
from dpiw.registry import POST_STEPS

STEPS = POST_STEPS


def parse_post(post: str) -> tuple[str, ...]:
    """The steps of a post chain, checked: known steps, each at most once, `none` alone, `calibrate`
    first (it needs the classifier's raw scores) and `resample` last (its output is counts).

    >>> parse_post("calibrate+psis")
    ('calibrate', 'psis')
    """
    steps = tuple(post.split("+"))
    for s in steps:
        if s not in STEPS:
            raise DpiwError(f"post '{post}': unknown step '{s}'; known: {', '.join(STEPS)} (chain with '+')")
    if len(set(steps)) != len(steps):
        raise DpiwError(f"post '{post}': a step appears twice")
    if "none" in steps and len(steps) > 1:
        raise DpiwError(f"post '{post}': 'none' cannot be chained")
    if "calibrate" in steps[1:]:
        raise DpiwError(f"post '{post}': 'calibrate' must come first (it maps the classifier's raw scores)")
    if "resample" in steps[:-1]:
        raise DpiwError(f"post '{post}': 'resample' must come last (it turns weights into counts)")
    return steps


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


def truncation_tau(tau: float | str, n: int) -> float:
    """tau as a number; "sqrt_n" is the common default sqrt(N).

    >>> truncation_tau("sqrt_n", 400), truncation_tau(5, 400)
    (20.0, 5.0)
    """
    if tau == "sqrt_n":
        return math.sqrt(n)
    tau = float(tau)
    if not (tau >= 1 and math.isfinite(tau)):
        raise DpiwError(f"post.truncate.tau must be 'sqrt_n' or a number >= 1 (a cap below the mean weight "
                        f"would flatten every weight), got {tau}")
    return tau


def truncate(log_w: np.ndarray, tau: float | str = "sqrt_n") -> np.ndarray:
    """min(w, tau * mean(w)) (Ionides 2008), mean over the N weights; never raises a weight. Not
    normalised: chain `normalise` or let the consumer normalise.

    >>> np.exp(truncate(np.log([1.0, 1.0, 1.0, 9.0]), 2.0)).round(12).tolist()
    [1.0, 1.0, 1.0, 6.0]
    """
    log_w = np.asarray(log_w, float)
    cap = math.log(truncation_tau(tau, log_w.size)) + logsumexp(log_w) - math.log(log_w.size)
    return np.minimum(log_w, cap)


def apply_step(step: str, log_w: np.ndarray, *, alpha: float = 1.0, tau: float | str = "sqrt_n") -> np.ndarray:
    """One weight-to-weight step (psis, calibrate and resample need more; see the stage)."""
    if step == "none":
        return np.asarray(log_w, float)
    if step == "normalise":
        return self_normalise(log_w)
    if step == "temper":
        return temper(log_w, alpha)
    if step == "truncate":
        return truncate(log_w, tau)
    if step == "psis":
        from dpiw.postprocess.psis import psis

        return psis(log_w).log_weights
    raise DpiwError(f"post step '{step}' needs more than the log weights; known: {STEPS}")
