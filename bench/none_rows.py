"""The None rows (issue: synthetic data worth weighting): what each DP SDGP gives WITHOUT weights, on the test
split, beside the paper's None rows at eps = 1.

Runs the real workflow in a temporary copy (`snakemake --cores 2`): breast, banknote, housing x every DP SDGP of
the grid (dpgan, dpcgan, privbayes, mst) x eps 1 and 6 x 5 seeds, weights none, post none. Prints per cell the
MLP ROC-AUC (classification) or MLP MSE (housing) and WST, mean +- SE over the seeds, the paper's None row where
it has one, and the seeds whose label relation came out inverted (MLP ROC-AUC below 0.4 on the test split).
`--runs FILE` only prints the table of an existing runs table (e.g. results/paper/tables/runs.csv).

    python bench/none_rows.py [--seeds 5] [--sdgps dpcgan ...] [--runs results/paper/tables/runs.csv]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from _workdir import ROOT, copy_repo, run_grid

DATASETS = ("breast", "banknote", "housing")
SDGPS = ("dpgan", "dpcgan", "privbayes", "mst")
INVERTED_AUC = 0.4


def config(seeds: list[int], sdgps=SDGPS) -> dict:
    return {"out": "results/none_rows", "grid": {"datasets": list(DATASETS), "epsilons": [1, 6], "seeds": seeds,
                                                "sdgps": list(sdgps), "weights": ["none"], "posts": ["none"],
                                                "exclude": []}}


def table(runs: pd.DataFrame) -> list[str]:
    paper = pd.read_csv(ROOT / "data/paper/ghalebikesabi2022_tables.csv", comment="#")
    paper = paper[(paper.weights == "none") & (paper.table.isin([1, 2]))]
    runs = runs[(runs.weights == "none") & (runs.post == "none")]
    out = ["| dataset | ε | SDGP | seeds | MLP AUC ↑ / MSE ↓ | paper (ε = 1) | WST ↓ | paper WST (ε = 1) | "
           f"inverted seeds (AUC < {INVERTED_AUC}) |", "|---|---|---|---|---|---|---|---|---|"]

    def ms(v):
        v = v.dropna()
        return f"{v.mean():.3f} ± {v.std(ddof=1) / np.sqrt(len(v)):.3f}" if len(v) > 1 else "–"

    for ds in DATASETS:
        metric = "mlp_mse" if ds == "housing" else "mlp_auc"
        for eps in sorted(runs.eps.unique()):
            for sdgp in SDGPS:
                g = runs[(runs.dataset == ds) & (runs.eps == eps) & (runs.sdgp == sdgp)]
                if g.empty:
                    continue
                p = paper[(paper.dataset == ds) & (paper.sdgp == sdgp)] if float(eps) == 1 else paper.iloc[:0]
                pm = p[p.metric == metric]
                pw = p[p.metric == "wst"]
                inverted = int((g[metric] < INVERTED_AUC).sum()) if metric == "mlp_auc" else "–"
                out.append(f"| {ds} | {eps:g} | {sdgp} | {len(g)} | {ms(g[metric])} | "
                           f"{pm['mean'].iloc[0]:.3f} | " if len(pm) else
                           f"| {ds} | {eps:g} | {sdgp} | {len(g)} | {ms(g[metric])} | – | ")
                out[-1] += f"{ms(g.wst)} | {pw['mean'].iloc[0]:.3f} | {inverted} |" if len(pw) else \
                    f"{ms(g.wst)} | – | {inverted} |"
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--runs", help="print the table of this runs.csv instead of running the grid")
    p.add_argument("--sdgps", nargs="+", default=list(SDGPS), choices=list(SDGPS), help="only these SDGPs")
    args = p.parse_args()
    if args.runs:
        print("\n".join(table(pd.read_csv(args.runs))))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        wd = copy_repo(Path(tmp))
        t = time.perf_counter()
        runs = pd.read_csv(run_grid(wd, "none_rows", config(list(range(args.seeds)), args.sdgps)))
        print(f"{time.perf_counter() - t:.0f} s on 2 cores")
        print("\n".join(table(runs)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
