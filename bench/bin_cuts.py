"""How a numeric column's coarse bins are cut from its fine DP histogram, and what each rule does to its means.

Simulated populations only (bench/interval_coverage.py's: the skewed one, whose target depends on a lognormal-like
column, and clinic's jittered rows). Each release is the default `dpiw release` in process (MST, the advisor's
weights, delta N^-1.5, epsilon 1) with one rule for the cut points, the same random streams for every rule:

- ``equal_mass``: ``bins`` runs of about equal mass (dpiw's rule before 2026-11-26);
- ``floor=F``: the runs of least mass-weighted spread (dpiw.sdgp.binning.cut_points), each holding at least
  F of the rows (dpiw's default: F = MIN_BIN_SHARE / bins).

Printed: the mean error and its spread over the releases of each numeric mean, overall and within a class of
the target (point estimates: no bootstrap). This chose the floor (bench/README.md).

    python bench/bin_cuts.py [--releases 12] [--rows 20000 200000] [--floors 0 0.01 0.015625 0.02]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
#: (population, estimand, column, subgroup)
TARGETS = (
    ("skewed", "mean kappa", "kappa", None),
    ("skewed", "mean kappa | death", "kappa", {"death": "yes"}),
    ("skewed", "mean age", "age", None),
    ("skewed", "mean age | M", "age", {"sex": "M"}),
    ("clinic", "mean bmi", "bmi", None),
    ("clinic", "mean bmi | ill", "bmi", {"outcome": "ill"}),
    ("clinic", "mean age", "age", None),
)


def equal_mass(fine: np.ndarray, bins: int, support: int) -> np.ndarray:
    """``bins`` runs of consecutive fine cells of about equal mass (strictly increasing, at most ``support``)."""
    bins = min(bins, support)
    mass = np.asarray(fine[:support], float)
    total = mass.sum()
    cum = np.cumsum(mass) / total if total > 0 else np.arange(1, support + 1) / support
    inner = np.searchsorted(cum, np.arange(1, bins) / bins, side="left") + 1
    cuts = np.concatenate([[0], inner, [support]]).astype(np.int64)
    for b in range(1, bins):
        cuts[b] = min(max(cuts[b], cuts[b - 1] + 1), support - (bins - b))
    return cuts


def one(job: tuple) -> list[dict]:
    pop, n, r, arm = job
    sys.path.insert(0, str(ROOT / "bench"))
    sys.path.insert(0, str(ROOT / "src"))
    import interval_coverage as coverage

    import dpiw.sdgp.binning as binning

    if not hasattr(binning, "least_spread"):
        binning.least_spread = binning.cut_points  # this worker's first job: keep dpiw's rule
    binning.cut_points = equal_mass if arm == "equal_mass" else binning.least_spread
    if arm != "equal_mass":
        binning.MIN_BIN_SHARE = float(arm.split("=")[1]) * 8  # a share of the rows, for 8 bins
    schema, draw_rows, _, _ = coverage.population(pop)
    rng = np.random.default_rng([20261125, n, r] if pop == "clinic" else [20261126, n, r])
    bundle, _ = coverage.default_release(draw_rows(n, rng), schema, 1.0, rng)
    return [{"population": pop, "rows": n, "release": r, "arm": arm, "estimand": name,
             "value": bundle.mean(column, where, interval="sampling").value}
            for p, name, column, where in TARGETS if p == pop]


def truths() -> dict:
    sys.path.insert(0, str(ROOT / "bench"))
    import interval_coverage as coverage

    out = {("skewed", k): v for k, v in coverage.skewed_truth().items()}
    out.update({("clinic", k): v for k, v in coverage.truth().items()})
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--releases", type=int, default=12)
    p.add_argument("--rows", nargs="+", type=int, default=[20000, 200000])
    p.add_argument("--floors", nargs="+", type=float, default=[0.0, 0.01, 0.015625, 0.02])
    p.add_argument("--populations", nargs="+", default=["skewed", "clinic"])
    p.add_argument("--jobs", type=int, default=2)
    args = p.parse_args()
    t0 = time.perf_counter()
    arms = ["equal_mass", *(f"floor={f:g}" for f in args.floors)]
    jobs = [(pop, n, r, arm) for pop in args.populations for n in args.rows for r in range(args.releases)
            for arm in arms]
    with mp.get_context("spawn").Pool(args.jobs) as pool:
        df = pd.DataFrame([row for part in pool.imap_unordered(one, jobs) for row in part])
    truth = truths()
    df["error"] = df.value - [truth[(p, e)] for p, e in zip(df.population, df.estimand, strict=True)]
    print(f"{len(jobs)} releases, {time.perf_counter() - t0:.0f} s\n")
    print("| population | N | estimand | " + " | ".join(arms) + " |")
    print("|---|---|---|" + "---|" * len(arms))
    for (pop, n, name), g in df.groupby(["population", "rows", "estimand"], sort=False):
        cells = []
        for arm in arms:
            e = g[g.arm == arm].error
            cells.append(f"{e.mean():+.3f} ± {e.std(ddof=1) / np.sqrt(len(e)):.3f} (sd {e.std(ddof=1):.3f})")
        print(f"| {pop} | {n:,} | {name.replace('|', chr(92) + '|')} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
