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

    python bench/fit_check.py [--rows 20000] [--releases 20] [--first 0]
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


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=20000)
    p.add_argument("--releases", type=int, default=20)
    p.add_argument("--first", type=int, default=0, help="the first release's number (other releases: other seeds)")
    args = p.parse_args()
    os.environ["DPIW_CACHE"] = "off"
    from dpiw.analysis.fit import _feature_of, fit_gaps, short_of_marginals

    rows, t0 = [], time.perf_counter()
    for pop in ("clinic", "skewed"):
        schema, draw_rows, _, _ = population(pop)
        truth = truths(pop, draw_rows, schema)
        for r in range(args.first, args.first + args.releases):
            rng = np.random.default_rng([20261128, 4, args.rows, r, pop == "clinic"])
            bundle, method = default_release(draw_rows(args.rows, rng), schema, 1.0, rng)
            for kind, features, target in FITS[pop]:
                with warnings.catch_warnings():
                    warnings.simplefilter("always")
                    fit = bundle.fit(estimator(kind), features, target)
                t = fit.table
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    found = short_of_marginals(bundle, features, target, list(fit.classes_) if kind == "logistic"
                                               else [])
                for rule in ("subgroup", "family"):
                    gaps = fit_gaps(*found, rule=rule)
                    for name, v in truth[(kind, target)].items():
                        if name not in t.index or name.endswith("(intercept)"):
                            continue
                        rows.append({"population": pop, "release": r, "fit": f"{kind} {target}", "rule": rule,
                                     "weights": method, "marked_fit": bool(gaps), "coefficient": name,
                                     "marked": _feature_of(name, features) in gaps,
                                     "covered": bool(t.lo[name] <= v <= t.hi[name])})
            print(f"  {pop} release {r}: weights {method}, {time.perf_counter() - t0:.0f} s", flush=True)
    df = pd.DataFrame(rows)
    print(f"\n{args.releases} releases per population at {args.rows:,} rows, epsilon 1\n")
    print("| rule | fit | releases marked | coefficients of marked features: covered | of the others: covered |")
    print("|---|---|---|---|---|")
    for (rule, fit), g in df.groupby(["rule", "fit"], sort=False):
        marked = g.groupby("release").marked_fit.first().sum()
        m, o = g[g.marked], g[~g.marked]
        print(f"| {rule} | {fit} | {marked} of {g.release.nunique()} | {m.covered.sum()} of {len(m)} | "
              f"{o.covered.sum()} of {len(o)} |")


if __name__ == "__main__":
    main()
