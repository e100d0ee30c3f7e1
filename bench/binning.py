"""How well a numeric column's fine DP tree histogram (dpiw.sdgp.binning) keeps its mean, by pruning threshold.

Simulated columns only (no table the project evaluates on): lognormal (two shapes), exponential, uniform and
bimodal, each with wide public bounds, at 1e3, 2e4 and 2e5 rows. The histogram takes ``fine_fraction`` of the
rho MST gets at epsilon 1 (delta N^-1.5, after marginal_match's 30%), shared by two numeric columns, on 256
cells. Printed: the bias and spread of the mean of the fine histogram (cell midpoints) relative to the column's
mean, over ``--reps`` measurements, for each threshold (in noise stds). This chose dpiw's THRESHOLD = 1.

    python bench/binning.py [--reps 30] [--thresholds 0.5 1 1.5] [--fraction 0.2]
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


def fine_mean(x01: np.ndarray, rho: float, threshold: float, rng: np.random.Generator, cells: int = 256) -> float:
    leaves = np.bincount(np.minimum((x01 * cells).astype(int), cells - 1), minlength=cells).astype(float)
    true = tree_levels(leaves)
    sigma = math.sqrt((len(true) - 1) * 2 / (2 * rho))  # replace-one: sqrt(2) per level
    noisy = [true[0]] + [lv + rng.normal(0, sigma, lv.size) for lv in true[1:]]
    mass = prune(consistent(noisy, len(x01)), len(x01), threshold * sigma, cells)
    return float(mass @ ((np.arange(cells) + 0.5) / cells) / mass.sum())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reps", type=int, default=30)
    p.add_argument("--thresholds", type=float, nargs="+", default=[0.5, 1.0, 1.5])
    p.add_argument("--fraction", type=float, default=0.2)
    args = p.parse_args()
    rng = np.random.default_rng(2)
    print("| rows | column | threshold | bias of the mean | sd | rmse |\n|---|---|---|---|---|---|")
    for n in (1_000, 20_000, 200_000):
        rho = 0.7 * zcdp_rho(1.0, n**-1.5) * args.fraction / 2
        for name, (draw, lo, hi) in COLUMNS.items():
            for t in args.thresholds:
                errs = []
                for _ in range(args.reps):
                    x = np.clip(draw(rng, n), lo, hi)
                    m = lo + (hi - lo) * fine_mean((x - lo) / (hi - lo), rho, t, rng)
                    errs.append(m / x.mean() - 1)
                e = np.array(errs)
                print(f"| {n:,} | {name} | {t:g} | {e.mean():+.2%} | {e.std():.2%} | {np.sqrt((e**2).mean()):.2%} |")


if __name__ == "__main__":
    main()
