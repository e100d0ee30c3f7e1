"""Why PrivBayes is weak on breast at epsilon 1, and what its knobs do (on data dpiw never evaluates).

Part 1 needs no data: it is public arithmetic. Under replace-one neighbours every one of the d - k noisy count
tables gets Laplace noise of scale 2 (d - k) / eps2 per count (eps2 = 0.7 eps), while a table of C cells
holds N_D / C rows per cell on average. Their ratio is PrivBayes's own "theta-usefulness" (Zhang et al. 2017,
Section 4.4; the paper's default theta is 4): below 1 a table is mostly noise. The structure's exponential
mechanisms get eps1 / (d - 1) each, against a mutual-information sensitivity of about log2(N_D) / N_D bits.

Part 2 runs the real workflow (temporary copy, `snakemake aggregate --cores 2`) on wine (in no grid dpiw
evaluates; 13 numeric columns and a 3-class target, 124 private training rows): PrivBayes at epsilon 1 and 6, weights
none, 5 seeds, one factor at a time from params.yaml: bins, degree, the structure's share of epsilon, and the
first attribute (`root: target`, the schema's target, instead of a uniform draw). Prints the MLP ROC-AUC on
wine's test split and the WST, mean +- SE.

    python bench/privbayes_study.py [--seeds 5] [--no-runs]
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from _workdir import copy_repo, run_grid

#: (dataset, N_D under the default split: 80% train less a public slice of 10% of all rows, number of columns
#: incl. the target)
DATASETS = (("breast", 398, 31), ("banknote", 960, 5), ("housing", 14448, 9), ("wine", 124, 14))
VARIANTS = {
    "baseline": {},
    "bins_2": {"bins": 2},
    "bins_8": {"bins": 8},
    "degree_2": {"degree": 2},
    "structure_0.1": {"structure_epsilon_fraction": 0.1},
    "root_target": {"root": "target"},
}


def usefulness_table() -> list[str]:
    out = ["| dataset | N_D | d | ε | bins | k | tables | Laplace scale per count | rows per cell | "
           "ratio (θ) | EM ε per step | MI sensitivity (bits) |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, n, d in DATASETS:
        for eps in (1.0, 6.0):
            for bins in (2, 4):
                for k in (1, 2):
                    tables = d - k
                    eps1, eps2 = 0.3 * eps, 0.7 * eps
                    scale = 2 * tables / eps2
                    cells = bins ** (k + 1)
                    sens = (1 / n) * math.log2(n) + ((n - 1) / n) * math.log2(n / (n - 1))
                    out.append(f"| {name} | {n} | {d} | {eps:g} | {bins} | {k} | {tables} | {scale:.1f} | "
                               f"{n / cells:.1f} | {n / cells / scale:.2f} | {eps1 / (d - 1):.4f} | {sens:.4f} |")
    return out


def config(name: str, overrides: dict, seeds: list[int]) -> dict:
    return {"out": f"results/privbayes_study/{name}",
            "grid": {"datasets": ["wine"], "epsilons": [1, 6], "seeds": seeds, "sdgps": ["privbayes"],
                     "weights": ["none"], "posts": ["none"], "exclude": []},
            "sdgp": {"privbayes": overrides}}


def ms(v) -> str:
    v = pd.Series(v).dropna()
    return f"{v.mean():.3f} ± {v.std(ddof=1) / np.sqrt(len(v)):.3f}" if len(v) > 1 else "–"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--no-runs", action="store_true", help="print part 1 only")
    args = p.parse_args()
    print("\n".join(usefulness_table()))
    if args.no_runs:
        return 0
    lines = ["| variant | ε | wine MLP AUC ↑ | wine WST ↓ |", "|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as tmp:
        wd = copy_repo(Path(tmp))
        for name, overrides in VARIANTS.items():
            t = time.perf_counter()
            runs = pd.read_csv(run_grid(wd, f"privbayes_{name}", config(name, overrides, list(range(args.seeds)))))
            runs = runs[(runs.weights == "none") & (runs.post == "none")]
            for eps in sorted(runs.eps.unique()):
                g = runs[runs.eps == eps]
                lines.append(f"| {name} | {eps:g} | {ms(g.mlp_auc)} | {ms(g.wst)} |")
            print(f"{name}: {time.perf_counter() - t:.0f} s", flush=True)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
