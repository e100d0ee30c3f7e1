"""beta-MSE's reference line: what the real training split itself scores against the test split, beside every
SDGP's None row (unit weights on its synthetic rows). A metric of bias should give the real rows, which have
none, the lowest score.

For breast, banknote and housing and seeds 0-9 the script makes the benchmark split as the pipeline does (the
scale stage, public slice included) and scores the real training rows (unit weights) against the test rows
twice: with dpiw's beta-MSE (mean loss, one penalty for both fits) and with the paper's fit (scikit-learn's
default C = 1 on the summed loss, which penalises the 270-row test fit four times more than the 1,000-row
one). `--runs` adds each SDGP's None row at epsilon 1 from a runs table (results/paper/tables/runs.csv).

    python bench/beta_mse_reference.py [--runs results/paper/tables/runs.csv] [--seeds 10]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from _workdir import ROOT
from sklearn.linear_model import LinearRegression, LogisticRegression

from dpiw.data import load_schema
from dpiw.data.encode import encode_features
from dpiw.evaluate.metrics import beta_mse
from dpiw.stages import scale

DATASETS = ("breast", "banknote", "housing")


def split(dataset: str, seed: int, wd: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    d = wd / f"{dataset}_{seed}"
    with contextlib.redirect_stdout(io.StringIO()):
        scale.main(["--schema", str(ROOT / f"data/schemas/{dataset}.yaml"), "--dataset", dataset, "--seed", str(seed),
                    "--test-fraction", "0.2", "--public-fraction", "0.1", "--bounds", "schema",
                    "--train-out", str(d / "train.parquet"), "--test-out", str(d / "test.parquet"),
                    "--public-out", str(d / "public.parquet"), "--privacy-out", str(d / "scale.json")])
    return pd.read_parquet(d / "train.parquet"), pd.read_parquet(d / "test.parquet")


def summed_loss_beta_mse(Xa, ya, Xb, yb, task: str) -> float:
    """The paper's beta-MSE: scikit-learn's defaults (C = 1 on the summed loss) for both fits."""
    def coef(X, y):
        if task == "regression":
            m = LinearRegression().fit(X, y)
            return np.r_[m.coef_, m.intercept_]
        m = LogisticRegression(max_iter=10_000).fit(X, y)
        return np.hstack([m.coef_, m.intercept_[:, None]]).ravel()

    return float(np.mean((coef(Xa, ya) - coef(Xb, yb)) ** 2))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", help="a runs table with the None rows of the SDGPs (e.g. results/paper/tables/runs.csv)")
    ap.add_argument("--seeds", type=int, default=10)
    args = ap.parse_args()
    runs = pd.read_csv(args.runs) if args.runs else None
    sdgps = sorted(runs[(runs.weights == "none") & runs.dataset.isin(DATASETS)].sdgp.unique()) if runs is not None \
        else []
    print("| " + " | ".join(["dataset", "real train split, dpiw's β-MSE",
                             "real train split, the paper's fit (C = 1, summed)", *(f"{s} None, ε = 1" for s in sdgps)])
          + " |")
    print("|---|---|---|" + "---|" * len(sdgps))
    with tempfile.TemporaryDirectory() as tmp:
        for dataset in DATASETS:
            schema = load_schema(ROOT / f"data/schemas/{dataset}.yaml")
            ours, paper = [], []
            for seed in range(args.seeds):
                train, test = split(dataset, seed, Path(tmp))
                Xa, ya = encode_features(train, schema), train[schema.target].to_numpy()
                Xb, yb = encode_features(test, schema), test[schema.target].to_numpy()
                ours.append(beta_mse(Xa, ya, np.ones(len(Xa)), Xb, yb, task=schema.task, n_classes=schema.n_classes))
                paper.append(summed_loss_beta_mse(Xa, ya, Xb, yb, schema.task))
            cells = [f"{np.mean(v):.3f} ± {np.std(v, ddof=1) / np.sqrt(len(v)):.3f}" for v in (ours, paper)]
            for sdgp in sdgps:
                sel = runs[(runs.dataset == dataset) & (runs.sdgp == sdgp) & (runs.weights == "none")
                           & np.isclose(runs.eps, 1.0) & (runs.post == "none")].beta_mse.dropna()
                cells.append(f"{sel.mean():.3f} ± {sel.std(ddof=1) / np.sqrt(len(sel)):.3f}" if len(sel) else "–")
            print(f"| {dataset} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
