"""Rows in a bin the fine histogram measured empty, on a real table no one tuned on: Ecdat's VietNamI (27,765
people; counts of pharmacy visits, illnesses, days ill and days of limited activity on public bounds far wider than
their values, e.g. 0-365 days where the largest is 30), released as `dpiw release` does by default at epsilon 1
(bench/interval_coverage.py's `default_release`), twice per seed from the same random numbers: with the sampler's
move of rows out of void bins (dpiw.sdgp.binning.Binning.rows, NumericBins.void) and without it.

Scored like bench/numeric_fidelity.py: every numeric column's mean and its mean within each category of every
categorical column, relative error against the table. The rule, fixed before the run: the move stays only if
neither family is worse beyond 2 SE of the paired difference of errors (and bench/numeric_fidelity.py --void finds
no family worse on CPS1988 and Fertility).

    python bench/void_bins.py [--seeds 10]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _jobs import family_verdicts, real_table  # noqa: E402
from interval_coverage import ROOT, default_release  # noqa: E402
from numeric_fidelity import numeric_targets  # noqa: E402

sys.path.insert(0, str(ROOT / "src"))

SCHEMA = {"name": "vietnam", "task": "regression", "target": "pharvis", "columns": [
    {"name": "pharvis", "type": "numeric", "lower": 0, "upper": 100, "integer": True, "spikes": [0]},
    {"name": "lnhhexp", "type": "numeric", "lower": 0, "upper": 8},
    {"name": "age", "type": "numeric", "lower": 0, "upper": 4.7},
    {"name": "sex", "type": "categorical", "categories": ["female", "male"]},
    {"name": "married", "type": "categorical", "categories": [0, 1]},
    {"name": "educ", "type": "numeric", "lower": 0, "upper": 12, "integer": True, "spikes": [0]},
    {"name": "illness", "type": "numeric", "lower": 0, "upper": 20, "integer": True, "spikes": [0]},
    {"name": "injury", "type": "categorical", "categories": [0, 1]},
    {"name": "illdays", "type": "numeric", "lower": 0, "upper": 365, "integer": True, "spikes": [0]},
    {"name": "actdays", "type": "numeric", "lower": 0, "upper": 365, "integer": True, "spikes": [0]},
    {"name": "insurance", "type": "categorical", "categories": [0, 1]}]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", type=int, default=10)
    args = p.parse_args()
    from dpiw.sdgp.binning import NumericBins

    schema, typed = real_table("Ecdat", "VietNamI", SCHEMA)
    truth = numeric_targets(typed, schema, np.ones(len(typed)))
    void, rows, t0 = NumericBins.void, [], time.perf_counter()
    for seed in range(args.seeds):
        for arm in ("move", "none"):
            NumericBins.void = void if arm == "move" else (lambda self: np.zeros(self.card, bool))
            bundle, method = default_release(typed, schema, 1.0, np.random.default_rng([20261128, 2, seed]))
            for name, v in numeric_targets(bundle.data, schema, bundle.weights).items():
                rows.append({"seed": seed, "arm": arm, "target": name, "value": v,
                             "family": "numeric means" if " | " not in name else "within-class numeric means",
                             "error": abs(v / truth[name] - 1) if truth[name] else abs(v)})
        print(f"  seed {seed}: {time.perf_counter() - t0:.0f} s", flush=True)
    NumericBins.void = void
    df = pd.DataFrame(rows)
    print(f"\n{args.seeds} paired releases of VietNamI at epsilon 1\n")
    family_verdicts(df, "move", "none")
    means = df[df.family == "numeric means"].pivot_table(index="target", columns="arm", values="value")
    print("\n| column | truth | mean over releases, move | none |\n|---|---|---|---|")
    for name, r in means.iterrows():
        print(f"| {name} | {truth[name]:.4g} | {r['move']:.4g} | {r['none']:.4g} |")


if __name__ == "__main__":
    main()
