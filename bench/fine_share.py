"""The fine histograms' share of the budget and their cells, set on simulated populations only.

On bench/interval_coverage.py's populations (clinic: a jittered integer age and a bmi; skewed: a lognormal-like
column with bounds 0 to 50 and an integer age), at ``--rows`` and epsilon 0.3, 1 and 3, ``--releases`` releases
each, the default release (MST, the advisor's weights, delta N^-1.5) is made once per arm with the same private
table and the same random streams. The arms change only sdgp.mst's ``fine_fraction`` and ``fine_cells``.
Scored by the point estimates (the bundle's weighted rows) against the population's known values:

- **numeric means**: every mean, overall and within a class, its error relative to the truth;
- **rates**: every rate and subgroup rate, its absolute error.

The rule, fixed before the first run: an arm replaces params.yaml's setting only if its paired mean error of
numeric means is lower beyond 2 SE and no family is worse beyond 2 SE.

What it found (bench/README.md, 2026-11-27): 0.35 passed here, but on CPS1988 (bench/numeric_fidelity.py
--fractions 0.2) it made subgroups, 3-way cells and regression worse beyond 2 SE for a gain in numeric means
within noise, so params.yaml keeps 0.2.

    python bench/fine_share.py [--rows 2000 20000] [--releases 20] [--jobs 2] [--csv out.csv]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from _jobs import rows_of

ROOT = Path(__file__).resolve().parents[1]
EPSILONS = (0.3, 1.0, 3.0)
#: arm -> sdgp.mst overrides (None: params.yaml's)
ARMS = {"default": None, "share_0.35": {"fine_fraction": 0.35}, "share_0.5": {"fine_fraction": 0.5},
        "cells_64": {"fine_cells": 64}}


def point(data: pd.DataFrame, w: np.ndarray, kind: str, column: str, label, where) -> float:
    m = np.ones(len(data), bool)
    for k, v in (where or {}).items():
        m &= data[k].astype(str).to_numpy() == str(v)
    if not w[m].sum() > 0:
        return np.nan
    x = data[column].to_numpy(float) if kind == "mean" else (data[column].astype(str).to_numpy() == label)
    return float(np.average(x[m], weights=w[m]))


def one(job) -> list[dict]:
    pop, n, eps, r = job
    os.environ["DPIW_CACHE"] = "off"
    sys.path[:0] = [str(ROOT / "src"), str(ROOT / "bench")]
    import interval_coverage as cov

    schema, draw_rows, truth, estimands = cov.population(pop)
    values = truth()
    table = draw_rows(n, np.random.default_rng([20261127, n, r, int(eps * 10)]))
    rows = []
    for arm, mst in ARMS.items():
        rng = np.random.default_rng([20261128, n, r, int(eps * 10)])
        bundle, method = cov.default_release(table, schema, eps, rng, mst=mst)
        w = np.asarray(bundle.weights, float)
        for name, kind, column, label, where in estimands:
            v = point(bundle.data, w, kind, column, label, where)
            err = abs(v / values[name] - 1) if kind == "mean" else abs(v - values[name])
            rows.append({"population": pop, "rows": n, "eps": eps, "release": r, "arm": arm, "weights": method,
                         "family": "numeric means" if kind == "mean" else "rates", "estimand": name, "error": err})
    return rows


def summarise(df: pd.DataFrame) -> None:
    print("\n| arm | family | median error | default's | paired mean difference (arm - default) ± SE | verdict |")
    print("|---|---|---|---|---|---|")
    for arm in [a for a in ARMS if a != "default"]:
        for fam in ("numeric means", "rates"):
            g = df[df.family == fam]
            piv = g.pivot_table(index=["population", "rows", "eps", "release", "estimand"], columns="arm",
                                values="error")
            per = (piv[arm] - piv["default"]).groupby(level=["population", "rows", "eps", "release"]).mean()
            diff, se = per.mean(), per.std(ddof=1) / np.sqrt(len(per))
            verdict = ("worse beyond 2 SE" if diff > 2 * se else "better beyond 2 SE" if diff < -2 * se
                       else "no clear difference")
            print(f"| {arm} | {fam} | {piv[arm].median():.4g} | {piv['default'].median():.4g} | "
                  f"{diff:+.3g} ± {se:.2g} | {verdict} |")
    print("\nmedian error by population, rows and epsilon (numeric means):")
    g = df[df.family == "numeric means"]
    print(g.pivot_table(index=["population", "rows", "eps"], columns="arm", values="error",
                        aggfunc="median").round(4).to_string())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, nargs="+", default=[2000, 20000])
    p.add_argument("--releases", type=int, default=20)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--csv", help="write every error here")
    p.add_argument("--from-csv", help="summarise an earlier run's errors instead of running")
    args = p.parse_args()
    t0 = time.perf_counter()
    jobs = [(pop, n, e, r) for pop in ("clinic", "skewed") for n in args.rows for e in EPSILONS
            for r in range(args.releases)]
    df = rows_of(one, jobs, processes=args.jobs, csv=args.csv, from_csv=args.from_csv)
    print(f"{df.groupby(['population', 'rows', 'eps', 'release']).ngroups} paired releases, "
          f"{time.perf_counter() - t0:.0f} s")
    summarise(df)


if __name__ == "__main__":
    main()
