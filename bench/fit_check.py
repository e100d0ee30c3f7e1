"""How often `b.fit` says the rows fall short of a published marginal (dpiw.analysis.fit.short_of_marginals), and
whether the coefficients it marks are the ones whose intervals miss, on the simulated populations of
bench/interval_coverage.py (known truth) with `dpiw release`'s defaults at epsilon 1.

Four fits, named before the run: on the clinic population a linear regression of bmi on age, smoker and region and
a logistic regression of the outcome on age, bmi and smoker; on the skewed one a linear regression of kappa on age
and sex and a logistic regression of death on kappa, age and sex. The truth of each coefficient is the same fit on
10^6 rows drawn from the population. Printed per rule and fit: the releases it marked, and among the coefficients
of the marked and the unmarked features, how many intervals covered the truth. Two rules (dpiw.analysis.fit.FIT_RULE):
"subgroup", a fit marked where b.mean's own test (DISAGREE_Z) finds one of its subgroups apart, and "family", the
same test at the two-sided 5% level over all the fit's subgroups (Bonferroni).

The first run (releases 0-9) had "subgroup" alone: it marked 4 of 40 fits, each of whose marked coefficients covered.
The rule for the second run (releases 10-29), named before it: FIT_RULE stays "subgroup" if it marks at most 10% of
the 80 fits there, else it becomes "family".

The third run (releases 30-49, 2026-11-28, sixteenth session) has b.mean's test with the standard error of the
difference (rows - reading) from the noise bootstrap's replicates, each replicate's rows against its own re-noised
marginal (dpiw.analysis.Bundle._difference_variance), where the test before summed the two variances. The rule,
named before it ran: the joint spread stays if, family-wise, it marks at most 10% of the 80 fits there.

The fourth run (releases 50-69, 2026-11-29, twentieth session) adds the check of the features two by two
(dpiw.analysis.fit.pairs_short_of_marginals, family-wise at its own 5%; rules "pairs" alone and "family+pairs", what
b.fit marks with it). The rule, named before it ran: the pair check stays in b.fit if alone it marks at most 10% of
the 80 fits, and on the real fits (``--real`` and a trial's CPSSW8 releases) the coefficients it marks cover less
often than those it leaves.

The fifth run (2026-11-29, twenty-first session) prints the coefficients by whether a published marginal measured
their feature with the target (``table.measured``); the rule, named before a fresh-table trial and this run reported
any fit: the mark ships if on the trial's fits those measured cover at least 15 points more often than those not.

The sixth run (``--bins``, 2026-11-29, twenty-second session) pairs b.fit with each numeric feature entered as its
bin's weighted mean (regression calibration, dpiw.analysis.fit.BIN_MEANS) against its released values, the reach on
in both. The rule, named before it ran: the bins' means become b.fit's default only if, here (releases 70-89) and on
three fresh real tables (RetSchool, GSSvocab, Treatment; 3 releases each), the numeric features' coefficients cover
at least as often, the others lose at most one, and on the real tables their error is smaller in at least half.

``--real``: the two real tables whose fits a trial found missing (their truth: the same fit on the whole table,
which is the curator's private table, released whole at epsilon 1): Ecdat's BudgetFood (23,971 households, food
share on household size, age and town; size came out -0.017 against +0.006) and carData's SLID (3,987 complete
rows, wages on education, age and sex; education missed in two of four releases).

    python bench/fit_check.py [--rows 20000] [--releases 20] [--first 0] [--real] [--bins] [--csv FILE]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from interval_coverage import ROOT, default_release, population  # noqa: E402

sys.path.insert(0, str(ROOT / "src"))

#: "subgroup" and "family": the target within each feature's subgroups (dpiw.analysis.fit.FIT_RULE); "pairs": the
#: features two by two (dpiw.analysis.fit.pairs_short_of_marginals, family-wise) alone; "family+pairs": b.fit's marks
RULES = ("subgroup", "family", "pairs", "family+pairs")

FITS = {"clinic": (("linear", ["age", "smoker", "region"], "bmi"), ("logistic", ["age", "bmi", "smoker"], "outcome")),
        "skewed": (("linear", ["age", "sex"], "kappa"), ("logistic", ["kappa", "age", "sex"], "death"))}


def estimator(kind: str):
    from sklearn.linear_model import LinearRegression, LogisticRegression

    return LinearRegression() if kind == "linear" else LogisticRegression(C=1e6, max_iter=1000)


def truths(pop: str, draw_rows, schema) -> dict:
    """Each fit's coefficients on 10^6 rows of the population (a plain fit: the rows are the population's)."""
    from dpiw.analysis import Bundle

    rows = draw_rows(1_000_000, np.random.default_rng(7))
    for c in schema.columns:
        if not c.is_numeric:
            rows[c.name] = pd.Categorical(rows[c.name], categories=c.labels)
    b = Bundle(rows, np.ones(len(rows)), {}, None, schema, None)
    out = {}
    for kind, features, target in FITS[pop]:
        from dpiw.analysis.fit import coefficients

        model = estimator(kind).fit(b.design(features), rows[target].astype(str) if kind == "logistic" else
                                    rows[target])
        out[(kind, target)] = coefficients(model, list(b.design(features).columns))
    return out


#: --real: (package, item, schema, fits)
REAL = {
    "budgetfood": ("Ecdat", "BudgetFood", {
        "name": "budgetfood", "task": "regression", "target": "wfood", "columns": [
            {"name": "wfood", "type": "numeric", "lower": 0, "upper": 1},
            {"name": "totexp", "type": "numeric", "lower": 0, "upper": 20000000, "scale": "log"},
            {"name": "age", "type": "numeric", "lower": 16, "upper": 100, "integer": True},
            {"name": "size", "type": "numeric", "lower": 1, "upper": 40, "integer": True},
            {"name": "town", "type": "categorical", "categories": [1, 2, 3, 4, 5]},
            {"name": "sex", "type": "categorical", "categories": ["man", "woman"]}]},
        (("linear", ["size", "age", "town"], "wfood"),)),
    "slid": ("carData", "SLID", {
        "name": "slid", "task": "regression", "target": "wages", "columns": [
            {"name": "wages", "type": "numeric", "lower": 0, "upper": 60},
            {"name": "education", "type": "numeric", "lower": 0, "upper": 20},
            {"name": "age", "type": "numeric", "lower": 16, "upper": 95, "integer": True},
            {"name": "sex", "type": "categorical", "categories": ["Female", "Male"]},
            {"name": "language", "type": "categorical", "categories": ["English", "French", "Other"]}]},
        (("linear", ["education", "age", "sex"], "wages"),)),
}


def real(name: str):
    """A --real table, its complete rows, as (schema, rows, fits, truth)."""
    from _jobs import real_table

    from dpiw.analysis import Bundle
    from dpiw.analysis.fit import coefficients

    package, item, spec, fits = REAL[name]
    schema, rows = real_table(package, item, spec, complete=True)
    b = Bundle(rows, np.ones(len(rows)), {}, None, schema, None)  # its design reads the categories by the schema
    truth = {}
    for kind, features, target in fits:
        model = estimator(kind).fit(b.design(features), rows[target])
        truth[(kind, target)] = coefficients(model, list(b.design(features).columns))
    return schema, rows, fits, truth


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=20000)
    p.add_argument("--releases", type=int, default=20)
    p.add_argument("--first", type=int, default=0, help="the first release's number (other releases: other seeds)")
    p.add_argument("--real", action="store_true", help="BudgetFood and SLID instead of the simulated populations")
    p.add_argument("--csv", help="write every coefficient's row (rule, marked, interval, truth) here")
    p.add_argument("--bins", action="store_true", help="pair b.fit with its numeric features as their bins' means "
                   "(dpiw.analysis.fit.BIN_MEANS, the 'after' columns) against their released values ('before'), "
                   "the reach on in both, instead of the reach's pairing")
    args = p.parse_args()
    os.environ["DPIW_CACHE"] = "off"
    from dpiw.analysis import fit as fit_module
    from dpiw.analysis.fit import _feature_of, fit_gaps, pairs_short_of_marginals, short_of_marginals

    rows, t0 = [], time.perf_counter()
    for pop in REAL if args.real else ("clinic", "skewed"):
        if args.real:
            schema, table, fits, truth = real(pop)
        else:
            schema, draw_rows, _, _ = population(pop)
            truth, fits = truths(pop, draw_rows, schema), FITS[pop]
        for r in range(args.first, args.first + args.releases):
            rng = np.random.default_rng([20261128, 4, args.rows, r, pop == "clinic"])
            bundle, method = default_release(table if args.real else draw_rows(args.rows, rng), schema, 1.0, rng)
            for kind, features, target in fits:
                tables = {}
                for arm in (False, True):  # the same bundle and replicates: paired
                    if args.bins:
                        fit_module.BIN_MEANS = arm
                    else:
                        fit_module.REACH = arm
                    with warnings.catch_warnings():
                        warnings.simplefilter("always")
                        fit = bundle.fit(estimator(kind), features, target)
                    tables[arm] = fit.table
                t, t0_ = tables[True], tables[False]
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    found = short_of_marginals(bundle, features, target, list(fit.classes_) if kind == "logistic"
                                               else [])
                    pairs = fit_gaps(*pairs_short_of_marginals(bundle, features))
                for rule in RULES:
                    gaps = {} if rule == "pairs" else fit_gaps(*found, rule="subgroup" if rule == "subgroup" else
                                                              "family")
                    if rule in ("pairs", "family+pairs"):
                        gaps = {**gaps, **{f: True for pair in pairs for f in pair}}
                    for name, v in truth[(kind, target)].items():
                        if name not in t.index or name.endswith("(intercept)"):
                            continue
                        rows.append({"population": pop, "release": r, "fit": f"{kind} {target}", "rule": rule,
                                     "weights": method, "marked_fit": bool(gaps), "coefficient": name,
                                     "marked": _feature_of(name, features) in gaps,
                                     "measured": bool(t.measured[name]),
                                     "covered": bool(t.lo[name] <= v <= t.hi[name]), "truth": v,
                                     "value": t.value[name], "lo": t.lo[name], "hi": t.hi[name],
                                     "covered_before": bool(t0_.lo[name] <= v <= t0_.hi[name]),
                                     "value_before": t0_.value[name], "lo_before": t0_.lo[name],
                                     "hi_before": t0_.hi[name], "numeric": "=" not in name})
            print(f"  {pop} release {r}: weights {method}, {time.perf_counter() - t0:.0f} s", flush=True)
    df = pd.DataFrame(rows)
    if args.csv:
        df.to_csv(args.csv, index=False)
    size = "the whole table" if args.real else f"{args.rows:,} rows"
    print(f"\n{args.releases} releases per {'table' if args.real else 'population'} at {size}, epsilon 1\n")
    print("| rule | fit | releases marked | coefficients of marked features: covered (with b.fit's reach) | "
          "of the others: covered (with the reach) |")
    print("|---|---|---|---|---|")
    for (rule, fit), g in df.groupby(["rule", "fit"], sort=False):
        marked = g.groupby("release").marked_fit.first().sum()
        m, o = g[g.marked], g[~g.marked]
        print(f"| {rule} | {fit} | {marked} of {g.release.nunique()} | {m.covered_before.sum()} ({m.covered.sum()}) "
              f"of {len(m)} | {o.covered_before.sum()} ({o.covered.sum()}) of {len(o)} |")
    one = df[df.rule == RULES[0]]
    if args.bins:
        print("\nNumeric features as their bins' means against their released values (paired; the reach on in both):")
        print("| coefficients | covered, released values | covered, bins' means | |error| smaller with bins' means |")
        print("|---|---|---|---|")
        for flag, g in one.groupby("numeric"):
            closer = ((g.value - g.truth).abs() < (g.value_before - g.truth).abs()).sum()
            print(f"| {'numeric features' if flag else 'categorical features'} | {g.covered_before.sum()} of "
                  f"{len(g)} | {g.covered.sum()} of {len(g)} | {closer} of {len(g)} |")
        return
    print("\nBy whether a published marginal measured the coefficient's feature with the target (table.measured):")
    for flag, g in one.groupby("measured"):
        print(f"  {'measured' if flag else 'not measured'}: covered {g.covered.sum()} of {len(g)}")
    reached = one[(one.lo < one.lo_before) | (one.hi > one.hi_before)]
    widths = (reached.hi - reached.lo) / (reached.hi_before - reached.lo_before)
    print(f"\nThe reach (b.fit's intervals over the refit on the moved rows): {len(reached)} of {len(one)} intervals "
          f"moved, in {reached.groupby(['population', 'release', 'fit']).ngroups} fits; covered "
          f"{reached.covered_before.sum()} -> {reached.covered.sum()}; median width x{widths.median():.2f}"
          if len(reached) else f"\nThe reach moved none of the {len(one)} intervals.")

if __name__ == "__main__":
    main()
