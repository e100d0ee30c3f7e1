"""Empirical privacy audits: a statistically valid LOWER bound on epsilon from a distinguishing test.

Run the mechanism many times on D and on a neighbour D'; a scalar score and a threshold t make the test
"say D' when score > t". For any (eps, delta)-DP mechanism FPR + e^eps FNR >= 1 - delta (and with the roles
swapped), so with Clopper-Pearson upper bounds on FPR and FNR (each at 1 - alpha/2, a union bound over
both) eps >= max(log((1 - delta - FPR_hi) / FNR_hi), log((1 - delta - FNR_hi) / FPR_hi)) with probability
>= 1 - alpha (Jagielski et al. 2020; Nasr et al. 2021). The threshold is chosen on a first batch of runs
and the bound computed on a second, independent batch, so the choice does not void the confidence.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy import stats


def cp_upper(k: int, n: int, alpha: float) -> float:
    """One-sided Clopper-Pearson upper bound of a binomial rate at level 1 - alpha."""
    return 1.0 if k >= n else float(stats.beta.ppf(1 - alpha, k + 1, n - k))


def epsilon_lower_bound(s0: np.ndarray, s1: np.ndarray, t: float, *, delta: float = 0.0,
                        alpha: float = 0.05) -> float:
    """Lower bound on epsilon from scores s0 (runs on D) and s1 (runs on D') at threshold t."""
    fp_hi = cp_upper(int(np.sum(s0 > t)), len(s0), alpha / 2)
    fn_hi = cp_upper(int(np.sum(s1 <= t)), len(s1), alpha / 2)
    bounds = [0.0]
    for a, b in ((fp_hi, fn_hi), (fn_hi, fp_hi)):
        if 1 - delta - a > 0 and b > 0:
            bounds.append(math.log((1 - delta - a) / b))
    return max(bounds)


def _point_estimate(s0, s1, t, delta):
    fp = max(np.mean(s0 > t), 1.0 / len(s0))
    fn = max(np.mean(s1 <= t), 1.0 / len(s1))
    return max(math.log(max(1 - delta - fp, 1e-12) / fn), math.log(max(1 - delta - fn, 1e-12) / fp))


def audit(score: Callable[[bool, np.random.Generator], float], *, n_choose: int, n_test: int, seed: int,
          delta: float = 0.0, alpha: float = 0.05, select: str = "point") -> float:
    """epsilon lower bound; ``score(neighbour, rng)`` runs the mechanism once on D (False) or D' (True).
    The score may be flipped (D' scoring lower): both orientations are tried on the first batch. The threshold
    is the first batch's best by ``select``: "point", the point estimate of epsilon; "bound", the Clopper-Pearson
    lower bound itself (it prefers thresholds with enough runs on either side: the second batch's bound then
    falls less short of the first's)."""
    rng = np.random.default_rng(seed)
    c0 = np.array([score(False, rng) for _ in range(n_choose)])
    c1 = np.array([score(True, rng) for _ in range(n_choose)])
    sign = 1.0 if np.median(c1) >= np.median(c0) else -1.0
    c0, c1 = sign * c0, sign * c1
    candidates = np.unique(np.quantile(np.concatenate([c0, c1]), np.linspace(0.01, 0.99, 99)))
    if select == "bound":
        t = max(candidates, key=lambda t: epsilon_lower_bound(c0, c1, t, delta=delta, alpha=alpha))
    else:
        t = max(candidates, key=lambda t: _point_estimate(c0, c1, t, delta))
    s0 = sign * np.array([score(False, rng) for _ in range(n_test)])
    s1 = sign * np.array([score(True, rng) for _ in range(n_test)])
    return epsilon_lower_bound(s0, s1, t, delta=delta, alpha=alpha)


def replaced_row_counts(bins: int, *, n: int = 30, seed: int = 5):
    """Neighbouring two-column datasets for auditing noisy marginal counts: D holds n rows in [0, 1/2)^2, D' moves
    its first row to (0.99, 0.99). Returns D, D' and ``score(measurements)``: over (clique, noisy counts) pairs,
    the counts at the moved row's new cells minus those at its old cells (the Gaussian likelihood ratio's linear
    statistic)."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    d = pd.DataFrame({"x1": rng.uniform(0, 0.5, n), "x2": rng.uniform(0, 0.5, n)})
    d_prime = d.copy()
    d_prime.iloc[0] = [0.99, 0.99]
    old, new = (np.minimum((f.iloc[0].to_numpy() * bins).astype(int), bins - 1) for f in (d, d_prime))

    def cell(clique, v):
        return int(np.ravel_multi_index(tuple(v[list(clique)]), (bins,) * len(clique)))

    def score(measurements):
        return sum(y[cell(cl, new)] - y[cell(cl, old)] for cl, y in measurements)

    return d, d_prime, score
