"""Private Post-GAN Boosting (Neunhoeffer et al., ICLR 2021, Algorithm 1) on discriminator outputs.

Inputs are numbers, not networks: ``d_real[j, i] = D_j(x_i)`` on the n private rows and
``d_synth[j, b] = D_j(b)`` on the synthetic set B, all in [0, 1]. Torch-free.

Score. U(phi, D_j) = mean_i D_j(x_i) + sum_b phi(b) (1 - D_j(b)). Only the first term reads private
rows. Under replace-one neighbours (n = N_D fixed) one row moves it by |D_j(x) - D_j(x')| / n <= 1/n; under
add/remove the sum is divided by the public noisy count n and one row moves it by D_j(x) / n <= 1/n. The
second term does not move (phi_t depends on the data only through the earlier, already private,
selections), so the score's sensitivity is Delta = 1/n. (The paper's footnote states 1, which is
n times too conservative; its main text says 1/n.)

Privacy. Each round is one exponential mechanism with eps0: P(j) ~ exp(eps0 U_j / (2 Delta)). T rounds
compose to T eps0 (basic, delta 0) or sqrt(2 T ln(1/delta')) eps0 + T eps0 (e^eps0 - 1) (advanced,
delta'). :func:`per_round_epsilon` picks the largest eps0 that either composition allows within the
budget and the record carries both.
"""

from __future__ import annotations

import math

import numpy as np

from dpiw import DpiwError
from dpiw.numerics import logsumexp


def score_sensitivity(n: int) -> float:
    """Sensitivity of U(phi, D_j) (replace-one or add/remove) when every D_j maps into [0, 1] and the real
    rows' sum is divided by the public n."""
    return 1.0 / n


def scores(d_real_mean: np.ndarray, d_synth: np.ndarray, phi: np.ndarray) -> np.ndarray:
    """U(phi, D_j) for every j: the real rows' mean output plus the expected (1 - D_j) under phi."""
    return d_real_mean + (1.0 - d_synth) @ phi


def exponential_mechanism(score: np.ndarray, *, epsilon: float, sensitivity: float,
                          rng: np.random.Generator) -> int:
    """Index j drawn with probability proportional to exp(epsilon * score_j / (2 sensitivity))."""
    logits = epsilon * np.asarray(score, float) / (2.0 * sensitivity)
    p = np.exp(logits - logits.max())
    return int(rng.choice(len(p), p=p / p.sum()))


def advanced_composition(eps0: float, rounds: int, delta: float) -> float:
    """Dwork-Rothblum-Vadhan: T eps0-DP mechanisms are (this, delta)-DP.

    >>> round(advanced_composition(0.01, 100, 1e-5), 6)
    0.489903
    """
    return math.sqrt(2.0 * rounds * math.log(1.0 / delta)) * eps0 + rounds * eps0 * math.expm1(eps0)


def per_round_epsilon(epsilon: float, delta: float, rounds: int) -> tuple[float, str]:
    """(eps0, composition) with the largest eps0 whose T-fold composition stays within (epsilon, delta)."""
    if not (epsilon > 0 and rounds >= 1):
        raise DpiwError(f"PGB needs a positive epsilon and at least one round, got epsilon={epsilon}, T={rounds}")
    basic = epsilon / rounds
    if not (0 < delta < 1):
        return basic, "basic"
    lo, hi = 0.0, epsilon  # advanced_composition is increasing in eps0 and exceeds epsilon at eps0 = epsilon
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if advanced_composition(mid, rounds, delta) <= epsilon else (lo, mid)
    return (lo, "advanced") if lo > basic else (basic, "basic")


def post_gan_boosting(d_real_mean: np.ndarray, d_synth: np.ndarray, *, rounds: int, eps0: float | None,
                      sensitivity: float, eta: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Algorithm 1. Returns (phi_bar over B, how often each discriminator was selected).

    ``eps0=None`` is the non-private variant (exact best response each round).
    """
    K, B = d_synth.shape
    if d_real_mean.shape != (K,):
        raise DpiwError(f"PGB: {K} discriminators on B but {d_real_mean.shape} real means")
    if np.any((d_synth < 0) | (d_synth > 1)) or np.any((d_real_mean < 0) | (d_real_mean > 1)):
        raise DpiwError("PGB: discriminator outputs must lie in [0, 1]")
    log_phi = np.full(B, -math.log(B))
    phi_sum = np.zeros(B)
    picks = np.zeros(K, dtype=np.int64)
    for _ in range(rounds):
        phi = np.exp(log_phi)
        phi_sum += phi
        u = scores(d_real_mean, d_synth, phi)
        j = int(np.argmax(u)) if eps0 is None else exponential_mechanism(u, epsilon=eps0, sensitivity=sensitivity,
                                                                         rng=rng)
        picks[j] += 1
        log_phi = log_phi + eta * d_synth[j]  # phi_{t+1}(b) ~ phi_t(b) exp(eta D_t(b))
        log_phi -= logsumexp(log_phi)
    return phi_sum / rounds, picks


def default_eta(n_synth: int, rounds: int) -> float:
    """The paper's learning rate eta = 2 sqrt(log|B| / T)."""
    return 2.0 * math.sqrt(math.log(max(n_synth, 2)) / rounds)
