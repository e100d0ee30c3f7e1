"""The fine trees' nodes past a column's support counted 0, on a small real table of whole-number columns no one
tuned on: Ecdat's Workinghours (3,382 women; ages, years of schooling, children, the local unemployment rate, hours
worked), released as `dpiw release` does by default at epsilon 1 (bench/interval_coverage.py's `default_release`),
twice per seed from the same random numbers: as params.yaml's release does, and with every fine-tree node past
the column's support (the leaves after its last whole number: ages 16-80 are 65 values on 128 leaves, so the upper
half of the tree holds one value, 80) counted 0 before the least-squares consistency (bench/numeric_fidelity.py's
``known_zeros``; post-processing, nothing else changes). A trial saw 37 released rows at age 80 (the real table's
oldest is 64): the noisy upper half of the tree passed the pruning threshold, and all it held went to its one value.

Scored: every numeric column's mean and its mean within each category of every categorical column (relative
error); every share below, named before the run from the columns' public meaning (absolute error); and the rows
released at a column's upper bound where the table holds none. The rule, fixed before the run: the zeros replace
params.yaml's post-processing only if no family is worse beyond 2 SE of the paired difference here and on CPS1988
and Fertility (`python bench/numeric_fidelity.py --zeros`), and one is better beyond 2 SE.

    python bench/known_zeros.py [--seeds 10]
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
from numeric_fidelity import known_zeros, numeric_targets  # noqa: E402

sys.path.insert(0, str(ROOT / "src"))

SCHEMA = {"name": "workinghours", "task": "regression", "target": "hours", "columns": [
    {"name": "hours", "type": "numeric", "lower": 0, "upper": 8760, "integer": True, "spikes": [0]},
    {"name": "income", "type": "numeric", "lower": -1000, "upper": 10000, "integer": True, "scale": "log"},
    {"name": "age", "type": "numeric", "lower": 16, "upper": 80, "integer": True},
    {"name": "education", "type": "numeric", "lower": 0, "upper": 20, "integer": True},
    {"name": "child5", "type": "numeric", "lower": 0, "upper": 10, "integer": True},
    {"name": "child13", "type": "numeric", "lower": 0, "upper": 10, "integer": True},
    {"name": "child17", "type": "numeric", "lower": 0, "upper": 10, "integer": True},
    {"name": "nonwhite", "type": "categorical", "categories": [0, 1]},
    {"name": "owned", "type": "categorical", "categories": [0, 1]},
    {"name": "mortgage", "type": "categorical", "categories": [0, 1]},
    {"name": "occupation", "type": "categorical", "categories": ["mp", "swcc", "fr", "other"]},
    {"name": "unemp", "type": "numeric", "lower": 0, "upper": 100, "integer": True}]}
#: shares at values named before the run (a decade of age, school years that end a stage, a child at all)
SHARES = (("age", 30), ("age", 45), ("age", 60), ("education", 12), ("education", 16), ("child5", 1),
          ("child13", 1), ("child17", 1), ("unemp", 5), ("unemp", 10), ("hours", 1), ("hours", 2000))


def shares(data: pd.DataFrame, w: np.ndarray) -> dict[str, float]:
    return {f"share {c} >= {v}": float(np.average(data[c].to_numpy(float) >= v, weights=w)) for c, v in SHARES}


def at_bounds(data: pd.DataFrame, schema, truth: pd.DataFrame) -> int:
    """The released rows at an upper bound of a whole-number column that no row of the table holds."""
    out = 0
    for c in schema.columns:
        if c.is_numeric and c.integer and not (truth[c.name] == c.upper).any():
            out += int((data[c.name] == c.upper).sum())
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", type=int, default=10)
    args = p.parse_args()
    from dpiw.sdgp import binning

    schema, typed = real_table("Ecdat", "Workinghours", SCHEMA)
    ones = np.ones(len(typed))
    truth = {**numeric_targets(typed, schema, ones), **shares(typed, ones)}
    shape, rows, bounds, t0 = binning.shape, [], {"zeros": [], "now": []}, time.perf_counter()
    for seed in range(args.seeds):
        for arm in ("zeros", "now"):
            binning.shape = known_zeros(shape) if arm == "zeros" else shape
            bundle, method = default_release(typed, schema, 1.0, np.random.default_rng([20261128, 3, seed]))
            got = {**numeric_targets(bundle.data, schema, bundle.weights), **shares(bundle.data, bundle.weights)}
            for name, v in got.items():
                family = ("shares" if name.startswith("share") else "numeric means" if " | " not in name
                          else "within-class numeric means")
                err = abs(v - truth[name]) if family == "shares" else (abs(v / truth[name] - 1) if truth[name]
                                                                       else abs(v))
                rows.append({"seed": seed, "arm": arm, "target": name, "family": family, "value": v, "error": err})
            bounds[arm].append(at_bounds(bundle.data, schema, typed))
        print(f"  seed {seed}: weights {method}, {time.perf_counter() - t0:.0f} s", flush=True)
    binning.shape = shape
    df = pd.DataFrame(rows)
    print(f"\n{args.seeds} paired releases of Workinghours at epsilon 1\n")
    family_verdicts(df, "zeros", "now")
    print(f"\nrows at an upper bound the table does not hold, per release: zeros {np.mean(bounds['zeros']):.1f} "
          f"(max {max(bounds['zeros'])}), now {np.mean(bounds['now']):.1f} (max {max(bounds['now'])})")


if __name__ == "__main__":
    main()
