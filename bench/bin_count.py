"""How many bins a numeric column gets: fixed counts against the grown rule (sdgp.mst.max_bins).

On bench/interval_coverage.py's simulated populations (clinic; skewed: a lognormal-like and an integer column), at
each N and ``--releases`` releases, the default release (MST with its fine histograms, the advisor's weights, epsilon 1)
is made once per arm with the same private table and the same random streams: ``bins`` fixed at 8, 16 and 32
(max_bins = bins) and ``auto`` (params.yaml: bins 8 grown towards max_bins while a two-way cell of two numeric
columns holds BIN_SNR noise sds). Printed per estimand: the point estimate's mean error and its sd over the
releases (weighted estimates, as a bundle gives them), and the bins the auto arm used. Also the part of a
numeric mean within a class that the bins alone cause: on one private table, sum_b P(b | class) (E[x | b] -
E[x | b, class]), with the cut points the fine histogram gives (``oracle``).

    python bench/bin_count.py [--rows 20000 200000] [--releases 10] [--jobs 2]
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
sys.path.insert(0, str(ROOT / "bench"))
ARMS = ("8", "16", "32", "auto")
#: (population, numeric column, class column, class label) of the within-class mean the oracle splits
WITHIN = {"clinic": ("bmi", "outcome", "ill"), "skewed": ("kappa", "death", "yes")}


def one(job: tuple[str, int, int, str]) -> list[dict]:
    import os

    os.environ["DPIW_CACHE"] = "off"
    sys.path.insert(0, str(ROOT / "src"))
    import interval_coverage as cv

    pop, n, r, arm = job
    schema, draw_rows, _, estimands = cv.population(pop)
    table = draw_rows(n, np.random.default_rng([777, n, r]))
    mst = {} if arm == "auto" else {"bins": int(arm), "max_bins": int(arm)}
    bundle, _ = cv.default_release(table, schema, 1.0, np.random.default_rng([778, n, r]), mst=mst)
    used = bundle.measurements["generator"]["cards"][next(j for j, c in enumerate(schema.columns) if c.is_numeric)]
    out = []
    for name, kind, column, label, where in estimands:
        est = (bundle.mean(column, where, interval="sampling") if kind == "mean"
               else bundle.rate(column, label, where, interval="sampling"))
        out.append({"population": pop, "rows": n, "release": r, "arm": arm, "estimand": name, "value": est.value,
                    "bins_used": used})
    return out


def oracle(pop: str, n: int, bins: int) -> float:
    """The within-class mean's error from the bins alone, on one private table of ``n`` rows."""
    import interval_coverage as cv

    from dpiw.scale import column_bounds, scale_frame
    from dpiw.sdgp.binning import measure_fine
    from dpiw.sdgp.counting import InProcessCounter

    schema, draw_rows, _, _ = cv.population(pop)
    col, cls, label = WITHIN[pop]
    rng = np.random.default_rng(5)
    table = draw_rows(n, rng)
    train = scale_frame(table, schema, column_bounds(table, schema, bounds="schema"))
    fine = measure_fine(InProcessCounter.of(train, schema, 8), schema, fine_cells=256, bins=bins, rho=0.002,
                        l2=1.0, total=float(n), rng=rng)
    cell = fine.binning.numeric[col].cells(train[col].to_numpy())
    x, inside = table[col].to_numpy(float), (table[cls] == label).to_numpy()
    overall = pd.Series(x).groupby(cell).mean()
    within = pd.Series(x[inside]).groupby(cell[inside]).mean()
    share = pd.Series(cell[inside]).value_counts(normalize=True)
    return float(sum(share[b] * (overall[b] - within[b]) for b in share.index))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", nargs="+", type=int, default=[20000, 200000])
    p.add_argument("--releases", type=int, default=10)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--csv", help="write every estimate here")
    args = p.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    import interval_coverage as cv

    t0 = time.perf_counter()
    jobs = [(pop, n, r, arm) for pop in WITHIN for n in args.rows for r in range(args.releases) for arm in ARMS]
    with mp.get_context("spawn").Pool(args.jobs) as pool:
        df = pd.DataFrame([row for part in pool.imap_unordered(one, jobs) for row in part])
    truths = {pop: cv.population(pop)[2]() for pop in WITHIN}
    df["error"] = [v - truths[p][e] for p, e, v in zip(df.population, df.estimand, df.value, strict=True)]
    if args.csv:
        df.to_csv(args.csv, index=False)
    print(f"{len(jobs)} releases, {time.perf_counter() - t0:.0f} s; bins the auto arm used: "
          + ", ".join(f"{p} N={n:,}: {sorted(set(g.bins_used))}"
                      for (p, n), g in df[df.arm == "auto"].groupby(["population", "rows"])))
    print("\n| population | N | estimand | " + " | ".join(f"{a} bins: mean error (sd)" for a in ARMS) + " |")
    print("|---|---|---|" + "---|" * len(ARMS))
    for (pop, n, name), g in df.groupby(["population", "rows", "estimand"], sort=False):
        cells = []
        for arm in ARMS:
            e = g[g.arm == arm].error
            cells.append(f"{e.mean():+.3g} ({e.std():.2g})")
        print(f"| {pop} | {n:,} | {name.replace('|', chr(92) + '|')} | " + " | ".join(cells) + " |")
    print("\n| population | N | within-class mean | " + " | ".join(f"{b} bins" for b in (8, 16, 32)) + " |")
    print("|---|---|---|---|---|---|")
    for pop, (col, cls, label) in WITHIN.items():
        for n in args.rows:
            print(f"| {pop} | {n:,} | mean {col} \\| {cls} {label} | "
                  + " | ".join(f"{oracle(pop, n, b):+.3g}" for b in (8, 16, 32)) + " |")


if __name__ == "__main__":
    main()
