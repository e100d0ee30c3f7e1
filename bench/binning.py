"""How well a numeric column's fine DP tree histogram (dpiw.sdgp.binning) keeps its mean, by pruning rule.

Simulated columns only (no table the project evaluates on): lognormal (two shapes, and one on bounds 170 times
its median), exponential, uniform and bimodal, each with wide public bounds, at 1e3, 5e3, 2e4 and 2e5 rows and
each ``--epsilons``. The histogram takes ``fine_fraction`` of the rho MST gets (delta N^-1.5, after
marginal_match's 30%), shared by two numeric columns, on 256 cells. Every rule sees the same rows and the same
noise (common random numbers). Printed: for each rule, the root mean square of the fine histogram's mean (cell
midpoints) relative to the column's mean over ``--reps`` measurements, with rows per noise std (N / sigma);
then each rule's geometric mean and largest ratio to the first rule's root mean square.

Rules: ``--thresholds`` (hard, in noise stds: a node below t sigma holds no row, the others share their
parent's mass in proportion to their estimates; dpiw's rule) and ``--soft`` (a node's share in proportion to
its estimate less t sigma). This chose dpiw's THRESHOLD = 1.

    python bench/binning.py [--reps 30] [--thresholds 1 1.5 2] [--soft 0.5] [--epsilons 0.3 1 3]
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from dpiw.privacy.accounting import zcdp_rho
from dpiw.sdgp.binning import consistent, prune, tree_levels

COLUMNS = {  # name: (draw(rng, n), lower, upper)
    "lognormal s=0.78": (lambda r, n: r.lognormal(0, 0.78, n), 0, 50),
    "lognormal s=1.2": (lambda r, n: r.lognormal(1, 1.2, n), 0, 200),
    "exponential": (lambda r, n: r.exponential(10, n), 0, 500),
    "uniform": (lambda r, n: r.uniform(20, 80, n), 0, 100),
    "bimodal": (lambda r, n: np.where(r.uniform(size=n) < 0.3, r.normal(30, 3, n), r.normal(70, 8, n)), 0, 120),
    # bounds far wider than the rows (a trial's assets: median about 3,000 on public bounds 0 to 500,000)
    "lognormal s=1, bounds 170x": (lambda r, n: r.lognormal(0, 1.0, n), 0, 170),
}
CELLS = 256


def noisy_tree(x01: np.ndarray, sigma: float, rng: np.random.Generator) -> list[np.ndarray]:
    """The consistent estimates of a tree over CELLS cells of the scaled rows, every level with noise sigma."""
    leaves = np.bincount(np.minimum((x01 * CELLS).astype(int), CELLS - 1), minlength=CELLS).astype(float)
    true = tree_levels(leaves)
    noisy = [true[0]] + [lv + rng.normal(0, sigma, lv.size) for lv in true[1:]]
    return consistent(noisy, len(x01))


def rule_mean(est: list[np.ndarray], total: float, sigma: float, kind: str, t: float) -> float:
    """The scaled mean of the fine histogram one rule makes of the estimates."""
    if kind == "hard":
        mass = prune(est, total, t * sigma, CELLS)
    else:  # soft: the hard rule at 0 on the estimates less t sigma
        mass = prune([e - t * sigma for e in est], total, 0.0, CELLS)
    return float(mass @ ((np.arange(CELLS) + 0.5) / CELLS) / mass.sum())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reps", type=int, default=30)
    p.add_argument("--thresholds", type=float, nargs="+", default=[1.0, 1.5, 2.0])
    p.add_argument("--soft", type=float, nargs="*", default=[])
    p.add_argument("--epsilons", type=float, nargs="+", default=[1.0])
    p.add_argument("--fraction", type=float, default=0.2)
    args = p.parse_args()
    rules = [("hard", t) for t in args.thresholds] + [("soft", t) for t in args.soft]
    names = [f"{k} {t:g}" for k, t in rules]
    rng = np.random.default_rng(2)
    print("| rows | ε | N/σ | column | " + " | ".join(names) + " |\n|" + "---|" * (4 + len(rules)))
    ratios = []
    for n in (1_000, 5_000, 20_000, 200_000):
        for eps in args.epsilons:
            rho = 0.7 * zcdp_rho(eps, n**-1.5) * args.fraction / 2
            sigma = math.sqrt(8 * 2 / (2 * rho))  # 8 levels, replace-one: sqrt(2) per level
            for name, (draw, lo, hi) in COLUMNS.items():
                errs = np.zeros((args.reps, len(rules)))
                for r in range(args.reps):
                    x = np.clip(draw(rng, n), lo, hi)
                    est = noisy_tree((x - lo) / (hi - lo), sigma, rng)
                    for j, (kind, t) in enumerate(rules):
                        errs[r, j] = (lo + (hi - lo) * rule_mean(est, n, sigma, kind, t)) / x.mean() - 1
                rmse = np.sqrt((errs**2).mean(axis=0))
                ratios.append(rmse / rmse[0])
                print(f"| {n:,} | {eps:g} | {n / sigma:.0f} | {name} | "
                      + " | ".join(f"{v:.2%}" for v in rmse) + " |", flush=True)
    a = np.log(np.array(ratios))
    print("\nroot mean square against the first rule's, over every row above: "
          + "; ".join(f"{nm}: geometric mean {math.exp(a[:, j].mean()):.2f}, largest {math.exp(a[:, j].max()):.2f}"
                      for j, nm in enumerate(names)))


if __name__ == "__main__":
    main()
