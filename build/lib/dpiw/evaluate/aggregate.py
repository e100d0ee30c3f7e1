"""Aggregation over seeds: mean +- standard error per (dataset, eps, sdgp, weights, post, metric),
and Markdown tables shaped like the paper's Tables 1-3."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from dpiw import registry

METRICS = {"wst": "WST ↓", "beta_mse": "βMSE ↓", "mlp_auc": "MLP AUC ↑", "mlp_mse": "MLP MSE ↓",
           "bayes_auc": "Bayes AUC ↑", "bayes_mse": "Bayes MSE ↓", "pmse_ratio": "pMSE ratio ↓",
           "logreg_log_weight_mse": "log w MSE vs LogReg ↓", "ess_fraction": "ESS/N",
           "ess_synthetic_fraction": "ESS₁₆/N", "pareto_k": "k̂"}
#: scores (dpiw.evaluate.compare.LOWER_IS_BETTER says which way); ESS and k-hat are diagnostics, not scores
RANKED = ("wst", "beta_mse", "mlp_auc", "mlp_mse", "bayes_auc", "bayes_mse", "pmse_ratio", "logreg_log_weight_mse")
KEYS = ["dataset", "eps", "sdgp", "weights", "post"]
WEIGHT_ORDER = list(registry.weight_names())  # table order (dpiw.registry)
#: oracle weights (the known density ratio of the toy setting): a reference no curator has, never bold
ORACLE_WEIGHTS = registry.weight_names(applies_to="toy_uniform")


def long_table(rows: list[dict]) -> pd.DataFrame:
    """rows: one dict per run with the run keys, 'dp', 'fit_to_release' (the PSIS k-hat gate alone; 'dp'
    is the other half of the manifest's release verdict) and the metric values."""
    df = pd.DataFrame(rows)
    for metric in METRICS:
        if metric not in df:
            df[metric] = math.nan
    if "fit_to_release" not in df:
        df["fit_to_release"] = True
    out = []
    for keys, grp in df.groupby(KEYS, sort=True):
        for metric in METRICS:
            v = grp[metric].to_numpy(float)
            v = v[np.isfinite(v)]
            n = v.size
            out.append(dict(zip(KEYS, keys, strict=True), metric=metric, n_seeds=n,
                            mean=float(v.mean()) if n else math.nan,
                            se=float(v.std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan,
                            dp=bool(grp["dp"].all()), fit_to_release=bool(grp["fit_to_release"].all())))
    return pd.DataFrame(out)


def _cell(mean, se) -> str:
    if not math.isfinite(mean):
        return "–"
    return f"{mean:.4f} ± {se:.4f}" if math.isfinite(se) else f"{mean:.4f}"


def better_than_control(runs: pd.DataFrame) -> set[tuple]:
    """(dataset, eps, post, sdgp, metric, weights) of every DP weighting fit to release that is better than its
    matched control under the rules of dpiw.evaluate.compare (paired, 2 SE and the margin, Holm over the DP
    methods of one SDGP, metric and post chain). The controls are unit weights at post none on the same rows."""
    from dpiw.evaluate.compare import CONTROLS, holm, matched_control, paired_in, seed_table

    if runs is None or runs.empty:
        return set()
    allowed = set(registry.weight_names(dp=True)) - set(CONTROLS) - set(ORACLE_WEIGHTS)
    out = set()
    for (dataset, eps, sdgp), cell in runs.groupby(["dataset", "eps", "sdgp"], sort=False):
        controls = cell[(cell.post == "none") & cell.weights.isin(CONTROLS)]
        ok = cell[cell.weights.isin(allowed) & cell.dp.astype(bool)]
        ok = ok[ok.groupby(["weights", "post"]).fit_to_release.transform("all").astype(bool)]
        for post, sub in ok.groupby("post", sort=False):
            both = pd.concat([sub, controls])
            for metric in RANKED:
                table = seed_table(both, metric)
                tested = {m: paired_in(table, metric=metric, method=m, control=matched_control(m))
                          for m in sub.weights.unique()}
                out |= {(dataset, str(eps), post, sdgp, metric, m) for m in holm(tested)}
    return out


def markdown(long: pd.DataFrame, summary_page: str = "", runs: pd.DataFrame | None = None) -> str:
    """One table per (dataset, eps, post): rows metric x weights, columns SDGPs; in bold the DP methods better
    than their matched control (:func:`better_than_control`, from the per-seed ``runs``); non-DP cells (baseline
    weights or SDGP) marked with a dagger. ``summary_page`` (dpiw.evaluate.summary_table) comes first."""
    lines = ["# dpiw results: mean ± standard error over seeds", ""]
    if summary_page:
        lines += [summary_page, "## Full tables", ""]
    lines += [
             "† not differentially private (benchmark baseline). ‡ not fit to release: the raw weights' Pareto "
             "k̂ exceeds min(1 − 1/log10 S, 0.7) in at least one seed (PSIS gate). § oracle (the known density "
             "ratio, a reference). Bold: a DP weighting fit to release that is better than its matched control "
             "(unit weights on its own rows), paired on the seeds, beyond 2 SE and 1% of the control's mean, "
             "Holm-adjusted over the DP methods of the column (never an oracle or a † row; no best is picked).",
             ""]
    order = {w: i for i, w in enumerate(WEIGHT_ORDER)}
    bold = better_than_control(runs)
    for (dataset, eps, post), grp in long.groupby(["dataset", "eps", "post"], sort=True):
        sdgps = sorted(grp["sdgp"].unique())
        lines += [f"## {dataset}, ε = {eps}, post = {post}", "",
                  "| metric | weights | " + " | ".join(sdgps) + " |",
                  "|---|---|" + "---|" * len(sdgps)]
        for metric, label in METRICS.items():
            m = grp[(grp.metric == metric) & (grp.n_seeds > 0)]
            if m.empty:
                continue
            weights = sorted(m["weights"].unique(), key=lambda w: order.get(w, 99))
            for w in weights:
                cells = []
                for sdgp in sdgps:
                    r = m[(m.sdgp == sdgp) & (m.weights == w)]
                    if r.empty:
                        cells.append("")
                        continue
                    text = _cell(r["mean"].iloc[0], r["se"].iloc[0])
                    text = f"**{text}**" if (dataset, str(eps), post, sdgp, metric, w) in bold else text
                    text = text if r["dp"].iloc[0] else text + " †"
                    text = text + " §" if w in ORACLE_WEIGHTS else text
                    cells.append(text if r["fit_to_release"].iloc[0] else text + " ‡")
                lines.append(f"| {label} | {w} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


#: the metrics `dvc metrics show` and `dvc exp show` get: the summary table's, and each task's downstream one
SUMMARY_METRICS = ("wst", "mlp_auc", "mlp_mse")


def summary(long: pd.DataFrame) -> dict:
    """{dataset: {weights: {metric: mean}}} over the dataset's (eps, SDGP) cells with post ``none``, for
    :data:`SUMMARY_METRICS`: a few numbers per dataset for `dvc metrics show` and `dvc exp show` (the tables
    hold the rest). Never averaged across datasets, whose scales differ."""
    base = long[(long.post == "none") & long.metric.isin(SUMMARY_METRICS) & (long.n_seeds > 0)]
    out: dict = {}
    for dataset in sorted(base.dataset.unique()):
        per = base[base.dataset == dataset]
        out[str(dataset)] = {
            str(weights): {m: round(float(grp[grp.metric == m]["mean"].mean()), 6)
                           for m in SUMMARY_METRICS if (grp.metric == m).any()}
            for weights in sorted(per.weights.unique(), key=lambda w: (WEIGHT_ORDER + [w]).index(w))
            for grp in [per[per.weights == weights]]}
    return out
