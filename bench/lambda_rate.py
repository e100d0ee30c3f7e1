"""Noise that shrinks with N (issue: weights that pay for their budget): BetaDebiased's Laplace scale and the
RMSE of the weighted means on the toy data, as N_D grows, under lambda 'auto' (noise scale fixed at rho_target)
and lambda 'rate' (the minimiser of a public error bound, its noise capped at RATE_RHO_MAX = 0.4), beside the
non-private LogReg (scikit-learn's C = 1, lambda = 1/(N_D + N_G)) and no weights.

The toy setting has a known truth: D uniform on the triangle x1 + x2 < 1 (E[x1] = E[x2] = 1/3), G uniform on the
unit square (unweighted means 1/2), N_G = N_D. Per N_D and repetition the script draws D and G afresh, fits the
weights with the run's epsilon split as the pipeline splits it (10% to the weights), and estimates E_D[x1] and
E_D[x2] by self-normalised weighted means of G. RMSE over repetitions and both coordinates.

    python bench/lambda_rate.py [--eps 1] [--reps 20] [--sizes 1000 10000 100000 1000000] [--plot out.png]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from dpiw.weights.estimators import BetaDebiased, LogReg

TRUTH = 1.0 / 3.0
NORM_BOUND = math.sqrt(2.0)  # ||x|| on [0, 1]^2


def draw(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    real = rng.uniform(size=(2 * n + 100, 2))
    real = real[real.sum(axis=1) < 1][:n]
    while len(real) < n:  # rare: top up
        extra = rng.uniform(size=(n, 2))
        real = np.vstack([real, extra[extra.sum(axis=1) < 1]])[:n]
    return real, rng.uniform(size=(n, 2))


def weighted_means(log_w: np.ndarray, X: np.ndarray) -> np.ndarray:
    w = np.exp(log_w - log_w.max())
    return (w[:, None] * X).sum(axis=0) / w.sum()


def run(eps: float, sizes: list[int], reps: int) -> list[dict]:
    eps_w = round(0.1 * eps, 12)
    rows = []
    for n in sizes:
        err = {k: [] for k in ("none", "logreg", "auto", "rate")}
        scale = {}
        t0 = time.perf_counter()
        for rep in range(reps):
            rng = np.random.default_rng([n, rep])
            real, synth = draw(n, rng)
            err["none"].append(synth.mean(axis=0) - TRUTH)
            ref = LogReg(C=1.0).fit(real, synth, epsilon=0.0, delta=0.0, rng=rng, norm_bound=NORM_BOUND)
            err["logreg"].append(weighted_means(ref.log_ratio(synth), synth) - TRUTH)
            for rule in ("auto", "rate"):
                est = BetaDebiased(lam=rule, rho_target=0.3).fit(real, synth, epsilon=eps_w, delta=0.0, rng=rng,
                                                                 norm_bound=NORM_BOUND)
                scale[rule] = est.rho_
                err[rule].append(weighted_means(est.log_ratio(synth), synth) - TRUTH)
        rmse = {k: float(np.sqrt(np.mean(np.square(v)))) for k, v in err.items()}
        rows.append({"n": n, "scale_auto": scale["auto"], "scale_rate": scale["rate"], **rmse,
                     "seconds": time.perf_counter() - t0})
        print(f"| {n:,} | {scale['auto']:.4f} | {scale['rate']:.4f} | {rmse['none']:.4f} | {rmse['auto']:.4f} | "
              f"{rmse['rate']:.4f} | {rmse['logreg']:.4f} |", flush=True)
    return rows


def plot(rows: list[dict], path: str, eps: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = [r["n"] for r in rows]
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    a.loglog(n, [r["scale_auto"] for r in rows], "o-", label="lambda 'auto'")
    a.loglog(n, [r["scale_rate"] for r in rows], "s-", label="lambda 'rate'")
    a.set(xlabel="N_D", ylabel="Laplace scale of the coefficients", title=f"BetaDebiased's noise (ε = {eps:g})")
    for key, label, style in (("none", "no weights", "k:"), ("auto", "BetaDebiased, 'auto'", "o-"),
                              ("rate", "BetaDebiased, 'rate'", "s-"), ("logreg", "LogReg (not DP)", "d--")):
        b.loglog(n, [r[key] for r in rows], style, label=label)
    b.set(xlabel="N_D", ylabel="RMSE of the weighted means", title="toy data: E_D[x] = 1/3")
    for ax in (a, b):
        ax.grid(True, which="both", alpha=0.3)
    a.legend(loc="lower left")
    b.legend(loc="center left", bbox_to_anchor=(1.02, 0.5))
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--eps", type=float, default=1.0, help="the run's epsilon (the weights get 10%%)")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000, 1_000_000])
    ap.add_argument("--plot", help="write a PNG of both panels")
    args = ap.parse_args()
    print(f"ε = {args.eps:g} (weights: {0.1 * args.eps:g}), {args.reps} repetitions per N_D\n")
    print("| N_D | Laplace scale, 'auto' | Laplace scale, 'rate' | RMSE no weights | RMSE 'auto' | RMSE 'rate' | "
          "RMSE LogReg (not DP) |")
    print("|---|---|---|---|---|---|---|")
    rows = run(args.eps, args.sizes, args.reps)
    first = rows[0]
    print("")
    for row in rows[1:]:
        print(f"'rate' noise scale at N_D = {row['n']:,} / at {first['n']:,}: "
              f"{row['scale_rate'] / first['scale_rate']:.3f} ('auto': {row['scale_auto'] / first['scale_auto']:.3f})")
    if args.plot:
        plot(rows, args.plot, args.eps)


if __name__ == "__main__":
    main()
