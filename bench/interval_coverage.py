"""Coverage of the default release's 95% intervals over repeated releases of a table with known truth.

The population: the clinic example's 400 rows, drawn with replacement, age jittered by a uniform integer in
[-3, 3] (clipped to [18, 90]) and bmi by N(0, 1) rounded to 0.1 (clipped to [12, 60]), as
bench/release_scale.py writes its tables; its means and subgroup rates are known exactly (bmi's by a
Monte Carlo of 4e6 draws). Each release draws a fresh private table of N rows from it and releases it as
`dpiw release` does by default (MST, the budget advisor's weights with their zCDP split and MST's
measurements matched too, post none, delta N^-1.5, N_G = min(N, sdgp.max_rows)), then asks the bundle for
means and subgroup rates with their 95% intervals: noise-aware (dpiw.analysis.noise_aware, the default) and from the
synthetic rows alone (interval="sampling", what dpiw gave before).

The skewed population (``--populations skewed``): a lognormal-like column (bounds 0 to 50, 98% below 5), an
integer age, a sex and an outcome that depends on both; its values known by a Monte Carlo of 4e6 draws.

``--estimands quantiles`` asks for medians, a 90th percentile and shares above a threshold instead
(``b.quantile``: Woodruff's interval from the share at or below the estimate; ``b.share``).

``--inverted``: a quantile's interval also by test inversion (dpiw.analysis.bundle.INVERT, off by default since
2026-11-29's twenty-fourth session); the CSV keeps Woodruff's alone beside it (lo_woodruff, hi_woodruff), paired.

``--total``: marginal_match's discrepancy principle on the total chi^2 alone, as before 2026-11-29 (each marginal
within its noise too since: dpiw.weights.marginal_match.PER_MARGINAL), for a paired run. ``--signal-total``: the
weights' do-no-harm test on the totals alone, as before 2026-11-29's twenty-third session (SIGNAL_EACH off).

    python bench/interval_coverage.py [--populations clinic skewed] [--rows 1000 20000] [--releases 50] [--jobs 2]
                                      [--estimands means|quantiles] [--total] [--signal-total] [--inverted]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import time
from dataclasses import replace
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


#: the skewed population: a lognormal-like column with wide public bounds (98% of it below 5 of 50), an integer
#: age, a sex and a binary outcome that depends on both numeric columns (parameters fixed before any run)
SKEWED_SCHEMA = {"name": "skewed", "task": "classification", "target": "death", "columns": [
    {"name": "kappa", "type": "numeric", "lower": 0, "upper": 50},
    {"name": "age", "type": "numeric", "lower": 0, "upper": 120, "integer": True},
    {"name": "sex", "type": "categorical", "categories": ["F", "M"]},
    {"name": "death", "type": "categorical", "categories": ["no", "yes"]}]}
SKEWED_ESTIMANDS = (
    ("mean kappa", "mean", "kappa", None, None),
    ("mean age", "mean", "age", None, None),
    ("mean kappa | death", "mean", "kappa", None, {"death": "yes"}),
    ("mean age | M", "mean", "age", None, {"sex": "M"}),
    ("P(death)", "rate", "death", "yes", None),
    ("P(death | M)", "rate", "death", "yes", {"sex": "M"}),
    ("P(M | death)", "rate", "sex", "M", {"death": "yes"}),
)


def skewed_draw(n: int, rng: np.random.Generator) -> pd.DataFrame:
    male = rng.uniform(size=n) < 0.45
    kappa = np.clip(rng.lognormal(0.1 * male, 0.75, n), 0, 50).round(2)
    age = np.clip(np.rint(rng.normal(60 + 3 * male, 11, n)), 0, 120).astype(int)
    logit = -2.5 + 0.5 * kappa + 0.04 * (age - 60) + 0.3 * male
    death = rng.uniform(size=n) < 1 / (1 + np.exp(-logit))
    return pd.DataFrame({"kappa": kappa, "age": age, "sex": np.where(male, "M", "F"),
                         "death": np.where(death, "yes", "no")})


def skewed_truth() -> dict[str, float]:
    """Every estimand of the skewed population, by a Monte Carlo of 4e6 draws (standard errors below 1e-3 of
    each value)."""
    d = skewed_draw(4_000_000, np.random.default_rng(0))
    dead, male = d.death == "yes", d.sex == "M"
    return {"mean kappa": d.kappa.mean(), "mean age": d.age.mean(), "mean kappa | death": d.kappa[dead].mean(),
            "mean age | M": d.age[male].mean(), "P(death)": dead.mean(), "P(death | M)": dead[male].mean(),
            "P(M | death)": male[dead].mean()}


#: ``--estimands quantiles``: quantiles (label: q) and shares above a threshold (label: (op, value)), per population
#: (named before any run: the medians, a tail quantile, a clinical threshold)
QUANTILES = {
    "clinic": (
        ("median bmi", "quantile", "bmi", 0.5, None),
        ("median age", "quantile", "age", 0.5, None),
        ("90th pct bmi", "quantile", "bmi", 0.9, None),
        ("median bmi | ill", "quantile", "bmi", 0.5, {"outcome": "ill"}),
        ("P(bmi > 30)", "share", "bmi", (">", 30), None),
        ("P(bmi > 30 | ill)", "share", "bmi", (">", 30), {"outcome": "ill"}),
        ("P(age >= 65)", "share", "age", (">=", 65), None),
    ),
    "skewed": (
        ("median kappa", "quantile", "kappa", 0.5, None),
        ("90th pct kappa", "quantile", "kappa", 0.9, None),
        ("median kappa | death", "quantile", "kappa", 0.5, {"death": "yes"}),
        ("median age", "quantile", "age", 0.5, None),
        ("P(kappa > 3)", "share", "kappa", (">", 3), None),
        ("P(kappa > 3 | death)", "share", "kappa", (">", 3), {"death": "yes"}),
        ("P(age >= 70)", "share", "age", (">=", 70), None),
    ),
}

def quantile_truth(draw_rows, estimands, seed: int) -> dict[str, float]:
    """Every quantile and share of ``estimands`` by a Monte Carlo of 4e6 draws (numpy's inverted-cdf quantile,
    the estimator's own definition)."""
    from dpiw.analysis.bundle import COMPARISONS

    d = draw_rows(4_000_000, np.random.default_rng(seed))
    out = {}
    for name, kind, column, label, where in estimands:
        m = np.ones(len(d), bool) if where is None else np.logical_and.reduce(
            [(d[k] == v).to_numpy() for k, v in where.items()])
        x = d[column].to_numpy(float)[m]
        out[name] = (float(np.quantile(x, label, method="inverted_cdf")) if kind == "quantile"
                     else float(COMPARISONS[label[0]](x, label[1]).mean()))
    return out


def population(name: str, estimands: str = "means"):
    """(schema, draw(n, rng), truth(), estimands) of a population; ``estimands`` "quantiles": :data:`QUANTILES`."""
    from dpiw.data.schema import load_schema, parse_schema

    if name == "clinic":
        schema, draw_rows, true, listed = load_schema(ROOT / "data/schemas/clinic.yaml"), draw, truth, ESTIMANDS
    else:
        schema, draw_rows, true, listed = parse_schema(SKEWED_SCHEMA), skewed_draw, skewed_truth, SKEWED_ESTIMANDS
    if estimands == "quantiles":
        listed = QUANTILES[name]
        true = lambda: quantile_truth(draw_rows, listed, 1)  # noqa: E731
    return schema, draw_rows, true, listed


def estimate(bundle, kind: str, column: str, label, where, interval: str):
    """One estimand's estimate from a bundle (an Estimate, or a Quantile for a quantile)."""
    if kind == "mean":
        return bundle.mean(column, where, interval=interval)
    if kind == "rate":
        return bundle.rate(column, label, where, interval=interval)
    if kind == "quantile":
        return bundle.quantile(column, label, where, interval=interval)
    return bundle.share(column, label[0], label[1], where, interval=interval)


def default_release(table: pd.DataFrame, schema, epsilon: float, rng: np.random.Generator, mst: dict | None = None):
    """What `dpiw release` makes with its defaults, in process: a Bundle (no files); ``mst`` overrides
    sdgp.mst's settings (bench/numeric_fidelity.py: equal-width bins against the fine histograms)."""
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
    gen = make_sdgp("mst", **{**params["sdgp"]["mst"], **(mst or {})}).fit(train, schema, epsilon=eps_g,
                                                                           delta=delta_g, rng=rng)
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
    # the record's reuse and tau, as the fit_weights stage writes them (the noise-aware bootstrap reads both)
    details = ({"reused": {}} if reused else {}) | (
        {"tau": mm.privacy_.details.get("tau")} if advice.method == "marginal_match" else {})
    manifest = {"records": [{"stage": "fit_weights", "details": details}]}
    return Bundle(decode_frame(synth, schema), weights * len(weights) / weights.sum(), manifest, synth, schema,
                  measured), advice.method


#: the environment variable that carries --total to the spawned workers
TOTAL = "DPIW_BENCH_TOTAL_CHI2"
#: and --signal-total
SIGNAL_TOTAL = "DPIW_BENCH_SIGNAL_TOTAL"
#: and --inverted
INVERTED = "DPIW_BENCH_INVERTED"


def one(job: tuple[str, int, int, float, str]) -> list[dict]:
    pop, n, r, epsilon, which = job
    import os

    os.environ["DPIW_CACHE"] = "off"  # every release's replicates are used once
    sys.path.insert(0, str(ROOT / "src"))
    import warnings

    from dpiw.analysis import UnmeasuredWarning
    from dpiw.analysis import bundle as bundle_module
    from dpiw.weights import marginal_match

    if os.environ.get(TOTAL) == "1":  # --total (a spawned worker reads it)
        marginal_match.PER_MARGINAL = False
    if os.environ.get(SIGNAL_TOTAL) == "1":  # --signal-total
        marginal_match.SIGNAL_EACH = False
    bundle_module.INVERT = os.environ.get(INVERTED) == "1"  # --inverted

    schema, draw_rows, _, estimands = population(pop, which)
    rng = np.random.default_rng([20261125, n, r] if pop == "clinic" else [20261126, n, r])
    t0 = time.perf_counter()
    bundle, method = default_release(draw_rows(n, rng), schema, epsilon, rng)
    rows = []
    for name, kind, column, label, where in estimands:
        for interval in ("noise", "sampling"):
            with warnings.catch_warnings(record=True) as said:  # counted, not printed once a release
                warnings.simplefilter("always", UnmeasuredWarning)
                est = estimate(bundle, kind, column, label, where, interval)
            warned = any(issubclass(w.category, UnmeasuredWarning) for w in said)
            lo, hi = est.ci(0.95)
            # a quantile's interval without the shares near it (Woodruff's alone, as before 2026-11-29), paired
            lo_w, hi_w = replace(est, tests=None).ci(0.95) if kind == "quantile" else (lo, hi)
            of = est.share if kind == "quantile" else est  # a quantile's parts: its share's
            parts = {**{f"var_{k}": v for k, v in (of.parts or {}).items()},
                     **{f"bias_{k}": v for k, v in (of.biases or {}).items()}}
            rows.append({"population": pop, "rows": n, "release": r, "weights": method, "estimand": name,
                         "interval": interval, "unmeasured": warned,
                         "marginal": getattr(of, "measured", None) is not None,
                         "reach": float(sum(getattr(of, "reach", (0, 0)))),
                         "value": est.value, "lo": lo, "hi": hi, "lo_woodruff": lo_w, "hi_woodruff": hi_w, **parts})
    print(f"  {pop} N={n:,} release {r}: weights {method}, {time.perf_counter() - t0:.1f} s", flush=True)
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--populations", nargs="+", choices=["clinic", "skewed"], default=["clinic", "skewed"])
    p.add_argument("--rows", nargs="+", type=int, default=[1000, 20000])
    p.add_argument("--releases", type=int, default=50)
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--estimands", choices=["means", "quantiles"], default="means",
                   help="means and rates (docs/analysis.md's table), or quantiles and shares above a threshold")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--csv", help="write every interval here")
    p.add_argument("--from-csv", nargs="+", help="summarise (and plot) the intervals of earlier runs instead")
    p.add_argument("--plot", help="a PNG of the coverage per estimand, interval and N")
    p.add_argument("--total", action="store_true", help="marginal_match's discrepancy principle on the total "
                   "chi^2 alone, as before 2026-11-29 (dpiw.weights.marginal_match.PER_MARGINAL off)")
    p.add_argument("--signal-total", action="store_true", help="marginal_match's do-no-harm test on the totals "
                   "alone, as before 2026-11-29's twenty-third session (SIGNAL_EACH off)")
    p.add_argument("--inverted", action="store_true", help="quantile intervals by test inversion as well "
                   "(dpiw.analysis.bundle.INVERT); Woodruff's alone kept beside them in the CSV")
    args = p.parse_args()
    import os

    os.environ[TOTAL] = "1" if args.total else "0"
    os.environ[SIGNAL_TOTAL] = "1" if args.signal_total else "0"
    os.environ[INVERTED] = "1" if args.inverted else "0"
    t0 = time.perf_counter()
    if args.from_csv:
        df = pd.concat([pd.read_csv(f) for f in args.from_csv], ignore_index=True)
        if "population" not in df:
            df["population"] = "clinic"
        jobs = df.drop_duplicates(["population", "rows", "release"])
    else:
        jobs = [(pop, n, r, args.epsilon, args.estimands) for pop in args.populations for n in args.rows
                for r in range(args.releases)]
        df = run_jobs(one, jobs, args.jobs)
    which = "quantiles" if df.estimand.isin([e[0] for q in QUANTILES.values() for e in q]).any() else "means"
    truths = {pop: population(pop, which)[2]() for pop in df.population.unique()}
    df = scored(df, truths, args.csv)
    print(f"\n{len(jobs)} releases, epsilon {args.epsilon:g}, {time.perf_counter() - t0:.0f} s; weights chosen: "
          + ", ".join(f"{p} N={n:,}: {dict(g.drop_duplicates('release').weights.value_counts())}"
                      for (p, n), g in df.groupby(["population", "rows"])))
    if "unmeasured" not in df:  # an earlier run's CSV
        df["unmeasured"] = False
    print("\n| population | N | estimand | truth | noise-aware coverage | its mean width | width / (2 x 1.96 sd "
          "of the error) | sampling-only coverage | mean error | sd of the estimates | noise share of the "
          "noise-aware variance | warned unmeasured (coverage there) | reached a marginal's reading (coverage "
          "there) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for (pop, n, name), g in df.groupby(["population", "rows", "estimand"], sort=False):
        a, s = g[g.interval == "noise"], g[g.interval == "sampling"]
        var = a[[c for c in a.columns if c.startswith("var_")]].mean()
        share = var.get("var_noise", np.nan) / var.sum()
        err = a.value - a.truth
        spread = float(np.sqrt((err**2).mean()))  # the error's spread about the truth (bias included)
        label = name.replace("|", "\\|")  # a markdown table's cell
        print(f"| {pop} | {n:,} | {label} | {truths[pop][name]:.4g} | {a.covered.mean():.0%} | {a.width.mean():.3g} "
              f"| {a.width.mean() / (2 * 1.96 * spread):.2f} | {s.covered.mean():.0%} | {err.mean():+.3g} | "
              f"{a.value.std():.3g} | {share:.0%} | {_warned(a)} | {_warned(a, 'marginal')} |")
    for interval in ("noise", "sampling"):
        g = df[df.interval == interval]
        print(f"\nall estimands, {interval}: coverage {g.covered.mean():.1%} of {len(g)} intervals")
    _paired_inversion(df)
    if args.plot:
        plot(df, args.plot)


def run_jobs(one, jobs: list, workers: int) -> pd.DataFrame:
    """Every job's rows (``one(job) -> list[dict]``) from ``workers`` fresh processes."""
    with mp.get_context("spawn").Pool(workers) as pool:
        return pd.DataFrame([row for part in pool.imap_unordered(one, jobs) for row in part])


def scored(df: pd.DataFrame, truths: dict, csv: str | None = None) -> pd.DataFrame:
    """The intervals with their population's truth (``truths[population][estimand]``), whether they cover it and
    their width; written to ``csv`` if given."""
    df["truth"] = [truths[p][e] for p, e in zip(df.population, df.estimand, strict=True)]
    df["covered"] = (df.lo <= df.truth) & (df.truth <= df.hi)
    df["width"] = df.hi - df.lo
    if csv:
        df.to_csv(csv, index=False)
    return df


def _warned(a: pd.DataFrame, flag: str = "unmeasured") -> str:
    """In how many releases the estimate warned that its pair was never measured (``flag`` "marginal": that a
    published marginal read it beyond both their noise, dpiw.analysis.measured), and its coverage there."""
    w = a[a[flag].astype(bool)] if flag in a else a.iloc[:0]
    return f"{len(w)} of {len(a)}" + (f" ({w.covered.mean():.0%})" if len(w) else "")


def _paired_inversion(df: pd.DataFrame) -> None:
    """Where the run inverted quantiles' intervals (--inverted): per estimand, noise-aware coverage with Woodruff's
    interval alone and with the inversion, and the width ratio (median, 90th percentile), paired."""
    if "lo_woodruff" not in df:
        return
    q = df[(df.interval == "noise") & ((df.lo != df.lo_woodruff) | (df.hi != df.hi_woodruff))]
    if q.empty:
        return
    a = df[(df.interval == "noise") & df.estimand.isin(q.estimand.unique())].copy()
    a["woodruff"] = (a.lo_woodruff <= a.truth) & (a.truth <= a.hi_woodruff)
    a["ratio"] = (a.hi - a.lo) / (a.hi_woodruff - a.lo_woodruff).where(a.hi_woodruff > a.lo_woodruff)
    print("\n| population | N | quantile | Woodruff's coverage | inverted | moved | width ratio: median | 90th pct |")
    print("|---|---|---|---|---|---|---|---|")
    for (pop, n, name), g in a.groupby(["population", "rows", "estimand"], sort=False):
        print(f"| {pop} | {n:,} | {name} | {g.woodruff.mean():.0%} | {g.covered.mean():.0%} | "
              f"{int((g.ratio > 1.0001).sum())} of {len(g)} | {g.ratio.median():.2f} | {g.ratio.quantile(0.9):.2f} |")
    print(f"all: median ratio {a.ratio.median():.3f}, 90th percentile {a.ratio.quantile(0.9):.3f}; coverage "
          f"{a.woodruff.mean():.1%} -> {a.covered.mean():.1%} of {len(a)}")


def plot(df: pd.DataFrame, path: str) -> None:
    """Coverage per estimand: noise-aware and sampling-only bars side by side, one panel per population and N,
    the 95% line and the 90% goal."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = sorted({(p, n) for p, n in zip(df.population, df.rows, strict=True)})
    cols = min(3, len(panels))
    rows = -(-len(panels) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 4.4 * rows), sharey=True, squeeze=False,
                             constrained_layout=True)
    for ax, (pop, n) in zip(axes.ravel(), panels, strict=False):
        sub = df[(df.population == pop) & (df.rows == n)]
        names = list(dict.fromkeys(sub.estimand))
        method = sub.weights.mode().iloc[0]
        x = np.arange(len(names))
        for k, (interval, label, colour) in enumerate((("noise", "noise-aware (default)", "#2ca02c"),
                                                       ("sampling", "synthetic rows only", "#bbbbbb"))):
            cov = [sub[(sub.estimand == e) & (sub.interval == interval)].covered.mean() for e in names]
            ax.bar(x + (k - 0.5) * 0.38, cov, 0.38, label=label, color=colour, edgecolor="black", linewidth=0.4)
        ax.axhline(0.95, color="black", lw=0.8, ls="--")
        ax.axhline(0.90, color="#d62728", lw=0.8, ls=":")
        ax.set_xticks(x)
        ax.set_xticklabels(names, rotation=35, ha="right", fontsize=8)
        ax.set_ylim(0, 1.05)
        ax.set_title(f"{pop}, N = {n:,}\n(weights: {method}, {sub.release.nunique()} releases)", fontsize=9)
    for ax in axes.ravel()[len(panels):]:
        ax.axis("off")
    for ax in axes[:, 0]:
        ax.set_ylabel("coverage of the 95% interval")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=2, fontsize=8,
               title="95% interval (dashed line: 95%, dotted: the 90% goal)", title_fontsize=8)
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
