"""A column most of whose rows hold exactly its lower bound (no debt), with and without `spikes: [0]`.

Simulated tables only: debt is 0 for 82% of the rows and lognormal (median about $665) for the rest, on public
bounds of 0 to 50,000, beside a category and a target that depends on owing. MST with params.yaml's fine
histograms at epsilon 1 (delta N^-1.5) is fitted on each table twice, with and without the spike, on the same
noise streams; printed: the error of the synthetic mean relative to the table's (bias, sd, root mean square) and
the share of exact zeros.

    python bench/spikes.py [--tables 12] [--rows 5000 20000]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from dpiw.data.schema import parse_schema
from dpiw.scale import decode_frame
from dpiw.sdgp.mst import MST

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = {"name": "debts", "task": "classification", "target": "y", "columns": [
    {"name": "debt", "type": "numeric", "lower": 0, "upper": 50000},
    {"name": "g", "type": "categorical", "categories": ["a", "b", "c"]},
    {"name": "y", "type": "categorical", "categories": ["no", "yes"]}]}


def table(n: int, seed: int) -> tuple[np.ndarray, pd.DataFrame]:
    rng = np.random.default_rng(100 + seed)
    owes = rng.uniform(size=n) < 0.18
    debt = np.where(owes, np.clip(rng.lognormal(6.5, 1.0, n), 1, 50000), 0.0)
    g = rng.integers(0, 3, n)
    y = (rng.uniform(size=n) < np.where(owes, 0.4, 0.15)).astype(int)
    return debt, pd.DataFrame({"debt": debt / 50000, "g": g, "y": y})


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tables", type=int, default=12)
    p.add_argument("--rows", type=int, nargs="+", default=[5000, 20000])
    args = p.parse_args()
    mst = yaml.safe_load((ROOT / "params.yaml").read_text())["sdgp"]["mst"]
    print("| rows | spikes | bias of the mean | sd | root mean square | exact zeros (truth 0.82) |")
    print("|---|---|---|---|---|---|")
    for n in args.rows:
        errors, zeros = {(): [], (0,): []}, {(): [], (0,): []}
        for seed in range(args.tables):
            debt, scaled = table(n, seed)
            for spikes in errors:
                schema = parse_schema({**SCHEMA, "columns": [{**SCHEMA["columns"][0], "spikes": list(spikes)},
                                                              *SCHEMA["columns"][1:]]})
                gen = MST(**mst).fit(scaled, schema, epsilon=1.0, delta=n**-1.5,
                                     rng=np.random.default_rng(1000 + seed))
                d = decode_frame(gen.sample(n, rng=np.random.default_rng(2000 + seed)), schema).debt.to_numpy()
                errors[spikes].append(d.mean() / debt.mean() - 1)
                zeros[spikes].append((d == 0).mean())
        for spikes, e in errors.items():
            e = np.array(e)
            print(f"| {n:,} | {list(spikes) or 'none'} | {e.mean():+.1%} | {e.std(ddof=1):.1%} | "
                  f"{np.sqrt((e**2).mean()):.1%} | {np.mean(zeros[spikes]):.3f} |")


if __name__ == "__main__":
    main()
