"""Choosing `weights.beta.rho_target` (the Laplace scale rho that lambda "auto" aims at) on the toy data.

BetaDebiased's weights are w = exp(beta-bar^T x~) prod_j (1 - rho^2 x~_j^2) with beta-bar = beta-hat + zeta,
zeta_j ~ Laplace(0, rho). E[w^2] holds the factor prod_j 1/(1 - 4 rho^2 x~_j^2): infinite once rho max|x~_j|
reaches 1/2, and the intercept coordinate is always 1, so rho must stay below 1/2. Within (0, 1/2) rho
trades noise (large rho) against regularisation (lambda "auto" = sqrt(p) 2R / (n eps rho): small rho, large
lambda, flat weights).

The bench uses only the toy data (generated; no evaluation dataset's private split): D uniform on the
triangle x1 + x2 < 1 (N_D = 1000), G uniform on the square (N_G = 1000: the `uniform` SDGP), the weight
budget of the default split at eps = 1 and 6 (0.1 and 0.6). For each rho it fits beta_debiased (lambda auto)
on 20 data seeds x 200 noise draws and reports the root-mean-square error of the self-normalised IW estimate
of E_D[x1] = 1/3 (unweighted: 1/2), the mean Kish ESS / N and the PSIS k-hat of the weights over the noise
draws at the corner x~ = (1, 1, 1) (k-hat >= 1/2: infinite variance). The default is the largest rho on the
grid whose k-hat stays at most 0.4: the RMSE falls all the way to 1/2 on this low-dimensional toy
(regularisation dominates), so the tail, not the error, sets the limit.

    python bench/rho_target.py [--seeds 20] [--draws 200] [--plot bench/rho_target.png]
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from dpiw.data.datasets import toy_triangle
from dpiw.postprocess.psis import psis
from dpiw.weights.estimators import BetaDebiased, laplace_bias_correction
from dpiw.weights.logistic import add_intercept

RHOS = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.49)
WEIGHT_EPSILONS = (0.1, 0.6)
TRUTH = 1.0 / 3.0  # E[x1] on the triangle
#: k-hat below 1/2 means finite variance; k-hat over-estimates k (= rho here) at these sample sizes
KHAT_MARGIN = 0.4


def one_setting(rho: float, eps_w: float, seeds: int, draws: int) -> dict:
    errors, ess = [], []
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        X_real = toy_triangle(1000, seed=seed)[["x1", "x2"]].to_numpy()
        X_synth = rng.uniform(size=(1000, 2))
        est = BetaDebiased(lam="auto", sensitivity_n="private", rho_target=rho)
        est.fit(X_real, X_synth, epsilon=eps_w, delta=0.0, rng=rng, norm_bound=math.sqrt(2.0))
        Xt = add_intercept(X_synth)
        base = Xt @ est.coef_ + laplace_bias_correction(Xt, est.rho_)
        zeta = rng.laplace(0.0, est.rho_, size=(draws, Xt.shape[1]))
        log_w = base[None, :] + zeta @ Xt.T                          # (draws, N_G)
        w = np.exp(log_w - log_w.max(axis=1, keepdims=True))
        errors += list((w @ X_synth[:, 0]) / w.sum(axis=1) - TRUTH)
        ess += list(w.sum(axis=1) ** 2 / (w * w).sum(axis=1) / w.shape[1])
    corner = np.ones(3)
    rng = np.random.default_rng(12345)
    z = rng.laplace(0.0, rho, size=(20_000, 3)) @ corner + laplace_bias_correction(corner[None, :], rho)[0]
    return {"rmse": float(np.sqrt(np.mean(np.square(errors)))), "ess": float(np.mean(ess)),
            "khat": float(psis(z).k)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", type=int, default=20)
    p.add_argument("--draws", type=int, default=200)
    p.add_argument("--plot", default="bench/rho_target.png", help="where to draw RMSE against rho ('' for none)")
    args = p.parse_args()
    results = {(rho, e): one_setting(rho, e, args.seeds, args.draws) for e in WEIGHT_EPSILONS for rho in RHOS}
    print(f"| rho | {' | '.join(f'RMSE eps_w={e}' for e in WEIGHT_EPSILONS)} | "
          f"{' | '.join(f'ESS/N eps_w={e}' for e in WEIGHT_EPSILONS)} | k-hat at x~=1 |")
    print("|---" * (2 + 2 * len(WEIGHT_EPSILONS)) + "|")
    for rho in RHOS:
        r = [results[rho, e] for e in WEIGHT_EPSILONS]
        rmse = " | ".join(f"{x['rmse']:.4f}" for x in r)
        ess = " | ".join(f"{x['ess']:.3f}" for x in r)
        print(f"| {rho} | {rmse} | {ess} | {r[0]['khat']:.2f} |")
    for e in WEIGHT_EPSILONS:
        best = min(RHOS, key=lambda rho: results[rho, e]["rmse"])
        print(f"eps_w = {e}: smallest RMSE at rho = {best} ({results[best, e]['rmse']:.4f}; unweighted error "
              f"{0.5 - TRUTH:.4f})")
    safe = max(rho for rho in RHOS if results[rho, WEIGHT_EPSILONS[0]]["khat"] <= KHAT_MARGIN)
    print(f"rule: the largest rho whose k-hat at x~ = 1 is at most {KHAT_MARGIN} (finite variance with a margin "
          f"for the finite-sample bias of k-hat): rho_target = {safe}")
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(1, 2, figsize=(9, 3.6), constrained_layout=True)
        for e in WEIGHT_EPSILONS:
            ax[0].plot(RHOS, [results[rho, e]["rmse"] for rho in RHOS], marker="o", label=f"eps_w = {e}")
            ax[1].plot(RHOS, [results[rho, e]["ess"] for rho in RHOS], marker="o", label=f"eps_w = {e}")
        ax[0].axhline(0.5 - TRUTH, color="grey", ls="--", lw=1, label="no weights")
        ax[0].set(xlabel="rho_target", ylabel="RMSE of the IW mean of x1", title="toy: error of the estimate")
        ax[1].set(xlabel="rho_target", ylabel="Kish ESS / N", title="toy: effective sample size")
        for a in ax:
            a.axvline(0.5, color="red", lw=1)
            a.legend(loc="best", fontsize=8)
        fig.savefig(args.plot, dpi=110)
        print(f"plot: {args.plot}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
