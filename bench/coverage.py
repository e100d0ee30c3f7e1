"""Coverage of the default release's 95% intervals over repeated releases of a table with known truth.

The population: the clinic example's 400 rows, drawn with replacement, age jittered by a uniform integer in
[-3, 3] (clipped to [18, 90]) and bmi by N(0, 1) rounded to 0.1 (clipped to [12, 60]), as
bench/release_scale.py writes its tables; its means and subgroup rates are known exactly (bmi's by a
Monte Carlo of 4e6 draws). Each release draws a fresh private table of N rows from it and releases it as
`dpiw release` does by default (MST, the budget advisor's weights with their zCDP split and MST's
measurements matched too, post none, delta N^-1.5, N_G = min(N, sdgp.max_rows)), then asks the bundle for
means and subgroup rates with their 95% intervals: noise-aware (dpiw.analysis.noise_aware, the default) and from the
synthetic rows alone (interval="sampling", what dpiw gave before).

    python bench/coverage.py [--rows 1000 20000] [--releases 50] [--epsilon 1] [--jobs 2]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[1]
#: (name, kind, column, label, subgroup)
ESTIMANDS = (
    ("mean age", "mean", "age", None, None),
    ("mean bmi", "mean", "bmi", None, None),
    ("mean bmi | ill", "mean", "bmi", None, {"outcome": "ill"}),
    ("P(ill)", "rate", "outcome", "ill", None),
    ("P(ill | smoker)", "rate", "outcome", "ill", {"smoker": "yes"}),
    ("P(ill | west)", "rate", "outcome", "ill", {"region": "west"}),
    ("P(smoker | ill)", "rate", "smoker", "yes", {"outcome": "ill"}),
)


def base() -> pd.DataFrame:
    return pd.read_csv(ROOT / "data/examples/clinic.csv")


def draw(n: int, rng: np.random.Generator) -> pd.DataFrame:
    b = base()
    df = b.iloc[rng.integers(0, len(b), n)].reset_index(drop=True)
    df["age"] = np.clip(df["age"] + rng.integers(-3, 4, n), 18, 90)
    df["bmi"] = np.clip((df["bmi"] + rng.normal(0, 1, n)).round(1), 12, 60)
    return df


def truth() -> dict[str, float]:
    """The population's value of every estimand: exact, but bmi's (4e6 Monte Carlo draws per estimand)."""
    b = base()
    age = np.mean([np.clip(b.age + j, 18, 90) for j in range(-3, 4)], axis=0)  # E[age | base row]
    rng = np.random.default_rng(0)
    idx = rng.integers(0, len(b), 4_000_000)
    bmi = np.clip((b.bmi.to_numpy()[idx] + rng.normal(0, 1, idx.size)).round(1), 12, 60)
    ill = (b.outcome == "ill").to_numpy()
    out = {"mean age": float(age.mean()), "mean bmi": float(bmi.mean()),
           "mean bmi | ill": float(bmi[ill[idx]].mean()), "P(ill)": float(ill.mean()),
           "P(ill | smoker)": float(ill[b.smoker == "yes"].mean()),
           "P(ill | west)": float(ill[b.region == "west"].mean()),
           "P(smoker | ill)": float((b.smoker == "yes")[ill].mean())}
    return out


def default_release(table: pd.DataFrame, schema, epsilon: float, rng: np.random.Generator):
    """What `dpiw release` makes with its defaults, in process: a Bundle (no files)."""
    from dpiw.analysis import Bundle
    from dpiw.data.datasets import validate_rows
    from dpiw.privacy.spend import run_delta, split_budget, split_rule
    from dpiw.scale import column_bounds, decode_frame, scale_frame
    from dpiw.sdgp import make_sdgp
    from dpiw.weights.advisor import WEIGHTS_FRACTION, advise
    from dpiw.weights.marginal_match import MarginalMatch, measurements_dict

    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    validate_rows(table, schema, out_of_bounds="fail")
    train = scale_frame(table, schema, column_bounds(table, schema, bounds="schema"))
    n = len(train)
    delta = run_delta("auto", n, "replace_one")
    advice = advise(n, schema, epsilon=epsilon, delta=delta, fraction=WEIGHTS_FRACTION)
    eps_g, delta_g = epsilon, delta
    if advice.method == "marginal_match":
        split = split_budget(epsilon, delta, weights_method="marginal_match", weights_epsilon_fraction=WEIGHTS_FRACTION,
                             weights_delta_fraction=WEIGHTS_FRACTION,
                             rule=split_rule("mst", "marginal_match", "replace_one"))
        eps_g, delta_g = split.sdgp_epsilon, split.sdgp_delta
    gen = make_sdgp("mst", **params["sdgp"]["mst"]).fit(train, schema, epsilon=eps_g, delta=delta_g, rng=rng)
    synth = gen.sample(min(n, params["sdgp"]["max_rows"]), rng=rng)
    measured = {"generator": {**measurements_dict(gen), "total": float(n), "iters": gen.iters}}
    weights, reused = np.ones(len(synth)), False
    if advice.method == "marginal_match":
        mm_params = {k: v for k, v in params["weights"]["marginal_match"].items() if k != "reuse_sdgp"}
        mm = MarginalMatch(**mm_params).on_bins_of(gen).measure(train, schema, epsilon=split.weights_epsilon,
                                                delta=split.weights_delta, rng=rng)
        reused = bool(params["weights"]["marginal_match"]["reuse_sdgp"])
        mm.reweight(synth, extra=gen.measurements_ if reused else ())
        weights = np.exp(mm.log_ratio_ - mm.log_ratio_.max())
        measured["weights"] = measurements_dict(mm)
    manifest = {"records": [{"stage": "fit_weights", "details": {"reused": {}} if reused else {}}]}
    return Bundle(decode_frame(synth, schema), weights * len(weights) / weights.sum(), manifest, synth, schema,
                  measured), advice.method


def one(job: tuple[int, int, float]) -> list[dict]:
    n, r, epsilon = job
    sys.path.insert(0, str(ROOT / "src"))
    from dpiw.data.schema import load_schema

    schema = load_schema(ROOT / "data/schemas/clinic.yaml")
    rng = np.random.default_rng([20261125, n, r])
    t0 = time.perf_counter()
    bundle, method = default_release(draw(n, rng), schema, epsilon, rng)
    rows = []
    for name, kind, column, label, where in ESTIMANDS:
        for interval in ("noise", "sampling"):
            est = (bundle.mean(column, where, interval=interval) if kind == "mean" else
                   bundle.rate(column, label, where, interval=interval))
            lo, hi = est.ci(0.95)
            parts = {f"var_{k}": v for k, v in (est.parts or {}).items()}
            rows.append({"rows": n, "release": r, "weights": method, "estimand": name, "interval": interval,
                         "value": est.value, "lo": lo, "hi": hi, **parts})
    print(f"  N={n:,} release {r}: weights {method}, {time.perf_counter() - t0:.1f} s", flush=True)
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", nargs="+", type=int, default=[1000, 20000])
    p.add_argument("--releases", type=int, default=50)
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--csv", help="write every interval here")
    p.add_argument("--from-csv", help="summarise (and plot) the intervals of an earlier run instead of running")
    p.add_argument("--plot", help="a PNG of the coverage per estimand, interval and N")
    args = p.parse_args()
    t0 = time.perf_counter()
    if args.from_csv:
        df = pd.read_csv(args.from_csv)
        jobs = df.drop_duplicates(["rows", "release"])
    else:
        jobs = [(n, r, args.epsilon) for n in args.rows for r in range(args.releases)]
        with mp.get_context("spawn").Pool(args.jobs) as pool:
            df = pd.DataFrame([row for part in pool.imap_unordered(one, jobs) for row in part])
    true = truth()
    df["truth"] = df.estimand.map(true)
    df["covered"] = (df.lo <= df.truth) & (df.truth <= df.hi)
    df["width"] = df.hi - df.lo
    if args.csv:
        df.to_csv(args.csv, index=False)
    print(f"\n{len(jobs)} releases, epsilon {args.epsilon:g}, {time.perf_counter() - t0:.0f} s; weights chosen: "
          + ", ".join(f"N={n:,}: {dict(g.drop_duplicates('release').weights.value_counts())}"
                      for n, g in df.groupby("rows")))
    print("\n| N | estimand | truth | noise-aware coverage | its mean width | sampling-only coverage | its mean "
          "width | mean error | sd of the estimates | noise share of the noise-aware variance |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for (n, name), g in df.groupby(["rows", "estimand"], sort=False):
        a, s = g[g.interval == "noise"], g[g.interval == "sampling"]
        var = a[[c for c in a.columns if c.startswith("var_")]].mean()
        share = var.get("var_noise", np.nan) / var.sum()
        label = name.replace("|", "\\|")  # a markdown table's cell
        print(f"| {n:,} | {label} | {true[name]:.4g} | {a.covered.mean():.0%} | {a.width.mean():.3g} | "
              f"{s.covered.mean():.0%} | {s.width.mean():.3g} | {(a.value - a.truth).mean():+.3g} | "
              f"{a.value.std():.3g} | {share:.0%} |")
    for interval in ("noise", "sampling"):
        g = df[df.interval == interval]
        print(f"\nall estimands, {interval}: coverage {g.covered.mean():.1%} of {len(g)} intervals")
    if args.plot:
        plot(df, args.plot)


def plot(df: pd.DataFrame, path: str) -> None:
    """Coverage per estimand: noise-aware and sampling-only bars side by side, one panel per N, the 95% line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = sorted(df.rows.unique())
    names = [e[0] for e in ESTIMANDS]
    fig, axes = plt.subplots(1, len(sizes), figsize=(5.5 * len(sizes), 4.2), sharey=True, squeeze=False,
                             constrained_layout=True)
    for ax, n in zip(axes[0], sizes, strict=True):
        sub = df[df.rows == n]
        method = sub.weights.mode().iloc[0]
        x = np.arange(len(names))
        for k, (interval, label, colour) in enumerate((("noise", "noise-aware (default)", "#2ca02c"),
                                                       ("sampling", "synthetic rows only", "#bbbbbb"))):
            cov = [sub[(sub.estimand == e) & (sub.interval == interval)].covered.mean() for e in names]
            ax.bar(x + (k - 0.5) * 0.38, cov, 0.38, label=label, color=colour, edgecolor="black", linewidth=0.4)
        ax.axhline(0.95, color="black", lw=0.8, ls="--")
        ax.set_xticks(x)
        ax.set_xticklabels(names, rotation=35, ha="right", fontsize=8)
        ax.set_ylim(0, 1.05)
        ax.set_title(f"N = {n:,} (weights: {method}), {sub.release.nunique()} releases", fontsize=10)
    axes[0][0].set_ylabel("coverage of the 95% interval")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside right upper", fontsize=8, title="95% interval")
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
