"""Aggregation over seeds: mean +- standard error per (dataset, eps, sdgp, weights, post, metric),
and Markdown tables shaped like the paper's Tables 1-3."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

METRICS = {"wst": "WST ↓", "beta_mse": "βMSE ↓", "ess_fraction": "ESS/N"}
RANKED = ("wst", "beta_mse")  # lower is better; ESS is a diagnostic, not a score
KEYS = ["dataset", "eps", "sdgp", "weights", "post"]
WEIGHT_ORDER = ["none", "true", "beta_noised", "beta_debiased", "logreg", "discriminator", "pgb", "drs"]


def long_table(rows: list[dict]) -> pd.DataFrame:
    """rows: one dict per run with the run keys, 'dp' and the metric values."""
    df = pd.DataFrame(rows)
    out = []
    for keys, grp in df.groupby(KEYS, sort=True):
        for metric in METRICS:
            v = grp[metric].to_numpy(float)
            v = v[np.isfinite(v)]
            n = v.size
            out.append(dict(zip(KEYS, keys, strict=True), metric=metric, n_seeds=n,
                            mean=float(v.mean()) if n else math.nan,
                            se=float(v.std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan,
                            dp=bool(grp["dp"].all())))
    return pd.DataFrame(out)


def _cell(mean, se) -> str:
    if not math.isfinite(mean):
        return "–"
    return f"{mean:.4f} ± {se:.4f}" if math.isfinite(se) else f"{mean:.4f}"


def markdown(long: pd.DataFrame) -> str:
    """One table per (dataset, eps, post): rows metric x weights, columns SDGPs; the best DP method per
    metric and SDGP in bold; non-DP cells (baseline weights or SDGP) marked with a dagger."""
    lines = ["# dpiw results: mean ± standard error over seeds", "",
             "† not differentially private (benchmark baseline). Bold: best DP weighting per metric and SDGP.",
             ""]
    order = {w: i for i, w in enumerate(WEIGHT_ORDER)}
    for (dataset, eps, post), grp in long.groupby(["dataset", "eps", "post"], sort=True):
        sdgps = sorted(grp["sdgp"].unique())
        lines += [f"## {dataset}, ε = {eps}, post = {post}", "",
                  "| metric | weights | " + " | ".join(sdgps) + " |",
                  "|---|---|" + "---|" * len(sdgps)]
        for metric, label in METRICS.items():
            m = grp[grp.metric == metric]
            best = {}
            for sdgp in sdgps if metric in RANKED else []:
                cand = m[(m.sdgp == sdgp) & m.dp & np.isfinite(m["mean"])]
                if len(cand):
                    best[sdgp] = cand.loc[cand["mean"].idxmin(), "weights"]
            weights = sorted(m["weights"].unique(), key=lambda w: order.get(w, 99))
            for w in weights:
                cells = []
                for sdgp in sdgps:
                    r = m[(m.sdgp == sdgp) & (m.weights == w)]
                    if r.empty:
                        cells.append("")
                        continue
                    text = _cell(r["mean"].iloc[0], r["se"].iloc[0])
                    text = f"**{text}**" if best.get(sdgp) == w else text
                    cells.append(text if r["dp"].iloc[0] else text + " †")
                lines.append(f"| {label} | {w} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)
