"""Where a numeric mean's error comes from in MST's release: the model's bins, or the values inside them.

On one of the usefulness study's tables (a public subset of ``--rows``) at ``--epsilon``, MST is fitted ``--fits``
times (params.yaml's settings, no weights) and its synthetic mean of every numeric column split, in the column's
units, into

- **bins (model)**: sum over bins of (model's share - true share) x the bin's true mean: what the model's coarse
  one-way marginal (its fine histogram's sums fitted together with every two-way measurement) gets wrong;
- **bins (fine tree alone)**: the same with the fine tree's own sums over the bins, before the model;
- **inside the bins**: sum over bins of the model's share x (mean of the values drawn inside the bin - the bin's
  true mean): what the pruned fine histogram puts inside each bin;
- **synthetic**: the released rows' mean minus the table's (the first and third, plus the rows' draws).

Printed: each fit's parts, their mean (bias) and root mean square by column, and for the first column the shares
and means of every bin in the first fits.

    python bench/mean_error_parts.py [--table cps1988] [--rows 2000] [--epsilon 1] [--fits 8]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[1]


def one_way(model, j: int) -> np.ndarray:
    """Column j's coarse one-way marginal from a numpy Private-PGM model's clique marginals."""
    for clique, table in model.mu.items():
        if j in clique:
            out = table.sum(axis=tuple(i for i, a in enumerate(clique) if a != j))
            return out / out.sum()
    raise ValueError(f"column {j} in no clique")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--table", default="cps1988")
    p.add_argument("--rows", default="2000", help="a public subset's size, or 'full'")
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--fits", type=int, default=8)
    p.add_argument("--show-bins", type=int, default=2, help="print the bins of the first column in this many fits")
    args = p.parse_args()
    os.environ["DPIW_CACHE"] = "off"
    sys.path.insert(0, str(ROOT / "src"))
    from dpiw.privacy.spend import run_delta
    from dpiw.sdgp import make_sdgp
    from dpiw.studies.usefulness import _table

    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    schema, scaled = _table(args.table, args.rows if args.rows == "full" else int(args.rows))
    n = len(scaled)
    numeric = [(j, c) for j, c in enumerate(schema.columns) if c.is_numeric]
    rows = []
    for fit in range(args.fits):
        rng = np.random.default_rng([20261127, n, int(args.epsilon * 10), fit])
        gen = make_sdgp("mst", **params["sdgp"]["mst"]).fit(scaled, schema, epsilon=args.epsilon,
                                                            delta=run_delta("auto", n, "replace_one"), rng=rng)
        synth = gen.sample(n, rng=rng)
        for k, (j, c) in enumerate(numeric):
            nb, span = gen.binning_.numeric[c.name], c.upper - c.lower
            v = scaled[c.name].to_numpy(float)
            cell = nb.cells(v)
            share = np.bincount(cell, minlength=nb.card) / n
            mean = np.array([v[cell == b].mean() if (cell == b).any() else 0.0 for b in range(nb.card)])
            model = one_way(gen.model_, j)
            tree = gen.fine_.one_way[c.name][0] / gen.fine_.one_way[c.name][0].sum()
            many = np.repeat(np.arange(nb.card), 20_000)
            drawn = nb.values(many, np.random.default_rng(1))
            inside = np.array([drawn[many == b].mean() for b in range(nb.card)])
            rows.append({"fit": fit, "column": c.name, "bins (model)": (model - share) @ mean * span,
                         "bins (fine tree alone)": (tree - share) @ mean * span,
                         "inside the bins": model @ (inside - mean) * span,
                         "synthetic": (synth[c.name].mean() - v.mean()) * span})
            if k == 0 and fit < args.show_bins:
                upper = c.lower + nb.grid.first()[nb.cuts[1:]] if nb.grid.span is not None else \
                    c.lower + nb.cuts[1:] / nb.grid.cells * span
                print(f"\nfit {fit}, {c.name}'s bins:")
                print(pd.DataFrame({"upper edge": upper, "true share": share, "fine tree's share": tree,
                                    "model's share": model, "true mean": c.lower + mean * span,
                                    "mean drawn inside": c.lower + inside * span}).round(4).to_string())
    df = pd.DataFrame(rows)
    parts = ["bins (model)", "bins (fine tree alone)", "inside the bins", "synthetic"]
    print(f"\n{args.table}, {n:,} rows, epsilon {args.epsilon:g}, {args.fits} fits (units of each column)\n")
    print(df.round(3).to_string(index=False))
    print("\nmean (bias) by column:")
    print(df.groupby("column")[parts].mean().round(3).to_string())
    print("\nroot mean square by column:")
    print(df.groupby("column")[parts].apply(lambda g: np.sqrt((g**2).mean())).round(3).to_string())


if __name__ == "__main__":
    main()
