"""Shares and quantiles at a threshold where respondents heap their answers: how many sds the pile test of a
share's own threshold should ask for.

A share whose threshold splits a fine cell reaches over that cell's rows only where the cell is a pile
(`dpiw.analysis.bin_bias.cell_reach`): the released values are drawn evenly across a cell, the table's may all
sit on the threshold. The test was the datasheet's, a search over every cell of every column (at least 5% of the
rows, over twice the median of the cells around it plus 4 noise sds). A trial on Ecdat's HI (22,272 rows,
epsilon 1): P(husby > 50) read 0.163 (0.144 to 0.179) and 0.153 (0.143 to 0.162) against 0.133, where 2.1% of the
rows hold exactly 50.0, at about 3.5 noise sds of the fine cell.

The populations (fixed before any run): an income in thousands, lognormal about 25 (log sd 0.6; 0.3 more in
logs for the 40% in group g = yes), public bounds 0 to 250, two decimals; in ``heaped`` 30% of the rows report it
rounded to the nearest 10 (a pile of about 2% at 50, 6% at 30, 0.7% at 70), in ``smooth`` none do. Each release
is the default one at epsilon 1 (bench/interval_coverage.py's `default_release`), and every estimand's
noise-aware interval is computed once per arm on the same bundle (common random numbers): ``before`` (the
datasheet's test) and ``sds=K`` (the test of one threshold: at least PILE_SHARE of the rows, over twice the
cells around it plus K noise sds).

The first rule, named before the first run (seed 20261128): the smallest K in (2, 3) is adopted as the test of a
share's own threshold if (1) on ``heaped`` the coverage of a share at a heaped threshold it splits (P(x > 50),
P(x > 50 | g), P(x > 70), P(x <= 30)) rises by at least 10 points at one size or more, and (2) on ``smooth`` and
for the thresholds with no pile on ``heaped`` (P(x > 37.3), P(x >= 50) and both quantiles) no estimand's mean
width grows by more than 10%. That run (bench/README.md) found P(x >= 50) misfiled: on 256 cells of 0-250, 50
lies inside the cell 49.80-50.78, so ``>=`` splits the pile as ``>`` does; and the 90th percentile lands in the
cell of the pile at 60 in some releases, where the interval holds the cell by design.

The confirmatory rule, named before its run on fresh seeds (``--seed 20261129``): K = 2 is adopted if (1) on
``heaped`` the coverage of no share whose threshold splits a pile's cell (P(x > 50), P(x > 50 | g), P(x > 70),
P(x <= 30), P(x >= 50)) falls, and one of them rises by at least 10 points at one size or more; (2) on ``smooth``
no estimand's mean width grows by more than 10%, nor on ``heaped`` that of a share whose threshold's cell holds
no pile (P(x > 37.3), P(x > 44.5), P(x <= 25.5)). The quantiles are reported, not judged.

``--weeks`` (2026-11-29, twenty-third session): a column where every whole number heaps, so no cell is twice its
neighbours and the pile test of a share's own threshold never fired (a trial's weeks off work on 0-200: 15.6% of
the rows at exactly 1.0 in the fine cell 0.78-1.56, 7-14% in the cells around it; P(weeks > 1) read 0.88-0.90 in 3
releases of 3 against 0.77, unwarned). Populations (fixed before any run): weeks off work, lognormal with median 5
(log sd 1.1; 0.3 more in logs for the 40% with g = yes), public bounds 0 to 200, two decimals; in
``weeks_heaped`` 85% of the rows report whole weeks (under half a week coded 0.25), in ``weeks_smooth`` none do.
Arms: ``now`` (REACH_HEAVY off: the cells around only, as before that session) and ``heavy`` (also a cell holding
5% of the rows, reached over: bin_bias.HEAVY_REACHES). The rule,
named before the run (seed 20261130): ``heavy`` reaches and warns if (1) on ``weeks_heaped`` no estimand's coverage
falls and one share at a whole-number threshold (P(w > 1), P(w > 2 | g), P(w <= 4), P(w > 12)) rises by 10 points
or more at one size, and (2) on ``weeks_smooth`` no share's mean width grows by more than 25% and on the income
populations none by more than 10%; if only (1) holds, it warns without reaching. The run (bench/README.md): (1)
held, (2) did not (smooth widths 2.3 to 8 times): params warn without reaching (REACH_HEAVY 0.05, HEAVY_REACHES off).

    python bench/heaped_shares.py [--rows 5000 20000] [--releases 30] [--jobs 2] [--seed N] [--csv out.csv] [--weeks]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent
SCHEMA = {"name": "heaped", "task": "classification", "target": "g", "columns": [
    {"name": "x", "type": "numeric", "lower": 0, "upper": 250},
    {"name": "g", "type": "categorical", "categories": ["no", "yes"]}]}
#: (name, kind, label, subgroup, whether a heaped table has a pile that the threshold splits)
ESTIMANDS = (
    ("P(x > 50)", "share", (">", 50), None, True),
    ("P(x > 50 | g)", "share", (">", 50), {"g": "yes"}, True),
    ("P(x > 70)", "share", (">", 70), None, True),
    ("P(x <= 30)", "share", ("<=", 30), None, True),
    ("P(x >= 50)", "share", (">=", 50), None, True),  # 50 lies inside the cell 49.80-50.78
    ("P(x > 37.3)", "share", (">", 37.3), None, False),
    ("P(x > 44.5)", "share", (">", 44.5), None, False),
    ("P(x <= 25.5)", "share", ("<=", 25.5), None, False),
    ("median x", "quantile", 0.5, None, False),
    ("90th pct x", "quantile", 0.9, None, False),
)
ARMS = ("before", "sds=3", "sds=2")
WEEKS_SCHEMA = {"name": "weeks", "task": "classification", "target": "g", "columns": [
    {"name": "x", "type": "numeric", "lower": 0, "upper": 200},
    {"name": "g", "type": "categorical", "categories": ["no", "yes"]}]}
#: --weeks (the column is still called x): (name, kind, label, subgroup, whether the threshold splits a whole week)
WEEKS = (
    ("P(x > 1)", "share", (">", 1), None, True),
    ("P(x > 2 | g)", "share", (">", 2), {"g": "yes"}, True),
    ("P(x <= 4)", "share", ("<=", 4), None, True),
    ("P(x > 12)", "share", (">", 12), None, True),
    ("P(x > 1.3)", "share", (">", 1.3), None, False),
    ("median x", "quantile", 0.5, None, False),
    ("90th pct x", "quantile", 0.9, None, False),
)
WEEKS_ARMS = ("now", "heavy")


def draw_weeks(n: int, rng: np.random.Generator, heaped: bool) -> pd.DataFrame:
    g = rng.uniform(size=n) < 0.4
    x = np.clip(rng.lognormal(np.log(5) + 0.3 * g, 1.1, n), 0, 200).round(2)
    if heaped:
        r = rng.uniform(size=n) < 0.85
        x[r] = np.where(x[r] < 0.5, 0.25, np.round(x[r]))
    return pd.DataFrame({"x": x, "g": np.where(g, "yes", "no")})


def population(pop: str):
    """(schema, draw(n, rng), estimands, arms) of a population."""
    if pop.startswith("weeks"):
        return WEEKS_SCHEMA, lambda n, rng: draw_weeks(n, rng, pop == "weeks_heaped"), WEEKS, WEEKS_ARMS
    return SCHEMA, lambda n, rng: draw(n, rng, pop == "heaped"), ESTIMANDS, ARMS


def draw(n: int, rng: np.random.Generator, heaped: bool) -> pd.DataFrame:
    g = rng.uniform(size=n) < 0.4
    x = np.clip(rng.lognormal(np.log(25) + 0.3 * g, 0.6, n), 0, 250).round(2)
    if heaped:
        r = rng.uniform(size=n) < 0.3
        x[r] = np.clip(np.round(x[r], -1), 0, 250)
    return pd.DataFrame({"x": x, "g": np.where(g, "yes", "no")})


def truth(pop: str) -> dict[str, float]:
    from dpiw.analysis.bundle import COMPARISONS

    _, drawn, estimands, _ = population(pop)
    d = drawn(4_000_000, np.random.default_rng(7))
    out = {}
    for name, kind, label, where, _ in estimands:
        x = d.x.to_numpy(float)[(d.g == "yes").to_numpy() if where else slice(None)]
        out[name] = (float(np.quantile(x, label, method="inverted_cdf")) if kind == "quantile"
                     else float(COMPARISONS[label[0]](x, label[1]).mean()))
    return out


def one(job: tuple) -> list[dict]:
    pop, n, r, seed, arms = job
    import os

    os.environ["DPIW_CACHE"] = "off"
    sys.path.insert(0, str(ROOT.parent / "src"))
    sys.path.insert(0, str(ROOT))
    from interval_coverage import default_release

    from dpiw.analysis import bin_bias
    from dpiw.data.schema import parse_schema

    rng = np.random.default_rng([seed, n, r, int(pop in ("heaped", "weeks_heaped"))])
    schema, drawn, estimands, _ = population(pop)
    t0 = time.perf_counter()
    bundle, method = default_release(drawn(n, rng), parse_schema(schema), 1.0, rng)
    kept = bin_bias.REACH_HEAVY, bin_bias.HEAVY_REACHES, bin_bias.REACH_NAMED, bin_bias.REACH_SDS
    try:
        rows = _arms(bundle, pop, n, r, arms, estimands)
    finally:  # a worker runs many jobs: no arm's patch may become the next job's params
        bin_bias.REACH_HEAVY, bin_bias.HEAVY_REACHES, bin_bias.REACH_NAMED, bin_bias.REACH_SDS = kept
    print(f"  {pop} N={n:,} release {r}: weights {method}, {time.perf_counter() - t0:.1f} s", flush=True)
    return rows


def _arms(bundle, pop: str, n: int, r: int, arms, estimands) -> list[dict]:
    """Every arm's estimates on one bundle (:func:`one`)."""
    import warnings

    from dpiw.analysis import bin_bias

    rows = []
    for arm in arms:
        if arm in WEEKS_ARMS:
            bin_bias.REACH_HEAVY = 0.05 if arm == "heavy" else None
            bin_bias.HEAVY_REACHES = arm == "heavy"
        else:  # the earlier arms, with params' REACH_HEAVY
            bin_bias.REACH_NAMED, bin_bias.REACH_SDS = ((bin_bias.PILE_NAMED, bin_bias.PILE_SDS) if arm == "before"
                                                        else (bin_bias.PILE_SHARE, float(arm.split("=")[1])))
        for name, kind, label, where, _ in estimands:
            with warnings.catch_warnings(record=True) as said:
                warnings.simplefilter("always")
                est = (bundle.quantile("x", label, where) if kind == "quantile"
                       else bundle.share("x", label[0], label[1], where))
            lo, hi = est.ci(0.95)
            rows.append({"population": pop, "rows": n, "release": r, "arm": arm, "estimand": name,
                         "value": est.value, "lo": lo, "hi": hi,
                         "pile": any(w.category.__name__ == "CellWarning" for w in said)})
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", nargs="+", type=int, default=[5000, 20000])
    p.add_argument("--releases", type=int, default=30)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--seed", type=int, default=20261128, help="the releases' seed (20261129: the confirmatory run)")
    p.add_argument("--csv")
    p.add_argument("--from-csv")
    p.add_argument("--weeks", action="store_true", help="the weeks populations (every whole number heaps)")
    p.add_argument("--heavy", action="store_true", help="the arms now and heavy (REACH_HEAVY off and on), not the "
                   "pile test's sds (--weeks always)")
    args = p.parse_args()
    pops = ("weeks_heaped", "weeks_smooth") if args.weeks else ("heaped", "smooth")
    arms = WEEKS_ARMS if args.weeks or args.heavy else ARMS
    sys.path.insert(0, str(ROOT.parent / "src"))
    sys.path.insert(0, str(ROOT))
    from interval_coverage import run_jobs, scored

    t0 = time.perf_counter()
    if args.from_csv:
        df = pd.read_csv(args.from_csv)
    else:
        jobs = [(pop, n, r, args.seed, arms) for pop in pops for n in args.rows for r in range(args.releases)]
        df = run_jobs(one, jobs, args.jobs)
    truths = {pop: truth(pop) for pop in pops}
    df = scored(df, truths, args.csv)
    print(f"\n{df.drop_duplicates(['population', 'rows', 'release']).shape[0]} releases, epsilon 1, "
          f"{time.perf_counter() - t0:.0f} s\n")
    print("| population | N | estimand | truth | " + " | ".join(f"{a}: coverage, width (pile named)" for a in arms)
          + " |")
    print("|---|---|---|---|" + "---|" * len(arms))
    for (pop, n, name), g in df.groupby(["population", "rows", "estimand"], sort=False):
        cells = []
        for arm in arms:
            a = g[g.arm == arm]
            cells.append(f"{a.covered.mean():.0%}, {a.width.mean():.4g} ({a.pile.sum()})")
        print(f"| {pop} | {n:,} | {name.replace('|', chr(92) + '|')} | {truths[pop][name]:.4g} | "
              + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
