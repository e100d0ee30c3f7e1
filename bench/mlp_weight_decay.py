"""Choosing `weights.mlp.weight_decay`, the non-private `mlp` reference's own L2 penalty, on the toy data.

The toy data are generated (no evaluation dataset's private split is read): D uniform on the triangle
x1 + x2 < 1 (N_D = 1000), G uniform on the square (N_G = 1000), so the true weights are known
(2 inside the triangle, 0 outside). For each weight decay the bench fits the MLP weights on 8 data seeds
and reports the RMSE of the self-normalised IW estimates of E_D[x1] = 1/3 and E_D[x1 x2] = 1/12, the mean
Kish ESS / N and the share of the weight mass outside the triangle (true: 0). The default is the decay
with the smallest RMSE.

    python bench/mlp_weight_decay.py [--seeds 8]
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from dpiw.data.datasets import toy_triangle
from dpiw.weights.mlp import MLPWeights

DECAYS = (0.0, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1)


def one_setting(decay: float, seeds: int) -> dict:
    errors, ess, outside = [], [], []
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        X_real = toy_triangle(1000, seed=seed)[["x1", "x2"]].to_numpy()
        X_synth = rng.uniform(size=(1000, 2))
        est = MLPWeights(private=False, weight_decay=decay).fit(X_real, X_synth, epsilon=0.0, delta=0.0, rng=rng)
        log_w = est.log_ratio(X_synth)
        w = np.exp(log_w - log_w.max())
        w = w / w.sum()
        errors += [w @ X_synth[:, 0] - 1 / 3, w @ (X_synth[:, 0] * X_synth[:, 1]) - 1 / 12]
        ess.append(1.0 / (w * w).sum() / len(w))
        outside.append(w[X_synth.sum(axis=1) >= 1].sum())
    return {"rmse": float(np.sqrt(np.mean(np.square(errors)))), "ess": float(np.mean(ess)),
            "outside": float(np.mean(outside))}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", type=int, default=8)
    args = p.parse_args()
    torch.set_num_threads(1)
    results = {d: one_setting(d, args.seeds) for d in DECAYS}
    print("| weight decay | RMSE of the IW means | ESS/N | weight mass outside the triangle |")
    print("|---|---|---|---|")
    for d, r in results.items():
        print(f"| {d:g} | {r['rmse']:.4f} | {r['ess']:.3f} | {r['outside']:.3f} |")
    best = min(DECAYS, key=lambda d: results[d]["rmse"])
    print(f"smallest RMSE at weight_decay = {best:g}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
