"""Does marginal_match pay for its budget on a real table? A probe, not the study the weights issue asks for.

On a real table (default AER's CPS1988, every row private, as in a release), at epsilon 1 and delta 1e-6:
  - `mst`: MST on the whole budget, unit weights (what a curator gets without weights: the control);
  - `split`: MST on (1 - f) of epsilon and delta, unit weights;
  - `mm`: the same MST rows weighted by marginal_match on the rest (f of epsilon and delta, converted to zCDP on
    its own, as the pipeline does today; `--rho-split`: what the split made in zCDP would give; `--reuse-mst`:
    MST's own measurements matched too).
Analyst targets (the truth is the table itself): every numeric column's mean, every category's share, and the
target's mean in every subgroup of each categorical column. Per target, the error of each release against the
truth; paired over repetitions (each with its own noise), a win or loss of `mm` against `mst` is beyond 2 SE of
the paired difference of absolute errors. relmed = median over targets of mean |error| / `mst`'s.

    python bench/marginal_match_probe.py [--dataset cps1988] [--reps 5] [--fraction 0.3] [--rows N]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from _workdir import ROOT

from dpiw.data import load_schema
from dpiw.data.datasets import load_raw
from dpiw.scale import column_bounds, scale_frame
from dpiw.sdgp.mst import MST
from dpiw.weights.marginal_match import MarginalMatch


def targets(frame: pd.DataFrame, schema, w: np.ndarray | None = None) -> dict[str, float]:
    """The analyst's estimates from (weighted) scaled rows."""
    w = np.ones(len(frame)) if w is None else w / w.mean()
    out, y = {}, frame[schema.target].to_numpy(float)
    for c in schema.columns:
        v = frame[c.name].to_numpy()
        if c.is_numeric:
            out[f"mean {c.name}"] = float(np.average(v, weights=w))
        else:
            for k, label in enumerate(c.categories):
                share = w * (v == k)
                out[f"share {c.name}={label}"] = float(share.sum() / w.sum())
                if c.name != schema.target and share.sum() > 0:
                    out[f"{schema.target} | {c.name}={label}"] = float((share * y).sum() / share.sum())
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default="cps1988")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--eps", type=float, default=1.0)
    ap.add_argument("--delta", type=float, default=1e-6)
    ap.add_argument("--fraction", type=float, default=0.3, help="the weights' share of epsilon and delta")
    ap.add_argument("--rows", type=int, help="a public random subsample of this many rows (default: all)")
    ap.add_argument("--degree", type=int, default=3)
    ap.add_argument("--rho-split", action="store_true",
                    help="what-if: give the weights rho(eps, delta) - rho of MST's share (the split made in zCDP, "
                         "which the run ledger cannot check yet), by handing marginal_match the epsilon whose rho "
                         "at its delta is that")
    ap.add_argument("--reuse-mst", action="store_true",
                    help="also match MST's own released measurements (free: post-processing)")
    args = ap.parse_args()
    schema = load_schema(ROOT / f"data/schemas/{args.dataset}.yaml")
    raw = load_raw(schema)
    if args.rows:
        raw = raw.sample(n=args.rows, random_state=0)
    real = scale_frame(raw, schema, column_bounds(raw, schema, bounds="schema"))
    truth = targets(real, schema)
    f = args.fraction
    eps_w = f * args.eps
    if args.rho_split:
        from dpiw.sdgp.mst import zcdp_rho, zcdp_to_dp

        rho_w = zcdp_rho(args.eps, args.delta) - zcdp_rho((1 - f) * args.eps, (1 - f) * args.delta)
        eps_w = zcdp_to_dp(rho_w, f * args.delta)
        print(f"zCDP split: rho_W = {rho_w:.5f} (MST: {zcdp_rho((1 - f) * args.eps, (1 - f) * args.delta):.5f}); "
              f"marginal_match as if epsilon {eps_w:.3f}")
    errs = {k: [] for k in ("mst", "split", "mm")}
    t0 = time.perf_counter()
    for rep in range(args.reps):
        rng = np.random.default_rng([rep, 2026])
        full = MST().fit(real, schema, epsilon=args.eps, delta=args.delta, rng=rng).sample(len(real), rng=rng)
        part = MST().fit(real, schema, epsilon=(1 - f) * args.eps, delta=(1 - f) * args.delta, rng=rng)
        rows = part.sample(len(real), rng=rng)
        mm = MarginalMatch(degree=args.degree).measure(real, schema, epsilon=eps_w, delta=f * args.delta, rng=rng)
        mm.reweight(rows, extra=part.measurements_ if args.reuse_mst else ())
        for key, frame, w in (("mst", full, None), ("split", rows, None), ("mm", rows, np.exp(mm.log_ratio_))):
            est = targets(frame, schema, w)
            errs[key].append([est.get(t, np.nan) - truth[t] for t in truth])
        print(f"rep {rep}: tau {mm.tau_}, chi2 {mm.chi2_:.0f} / {mm.n_cells_} cells, sigma {mm.sigma_:.1f}, "
              f"{time.perf_counter() - t0:.0f} s", flush=True)
    a = {k: np.abs(np.array(v)) for k, v in errs.items()}
    base = a["mst"].mean(axis=0)
    print(f"\n{args.dataset}: {len(real):,} rows, ε = {args.eps:g}, δ = {args.delta:g}, weights' share {f:g}, "
          f"{len(truth)} targets, {args.reps} repetitions")
    print("| release | relmed vs MST on the whole ε | wins / losses beyond 2 SE |")
    print("|---|---|---|")
    for key in ("split", "mm"):
        rel = np.nanmedian(a[key].mean(axis=0) / np.where(base > 0, base, np.nan))
        d = a["mst"] - a[key]  # > 0: this release's error is smaller
        se = d.std(axis=0, ddof=1) / np.sqrt(len(d))
        wins, losses = int(np.sum(d.mean(axis=0) > 2 * se)), int(np.sum(d.mean(axis=0) < -2 * se))
        print(f"| {key} | {rel:.2f} | {wins} / {losses} |")


if __name__ == "__main__":
    main()
