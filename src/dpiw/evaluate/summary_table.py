"""The one-page summary: per dataset, epsilon and SDGP, the None row (no weights) and the best DP weight method,
with the paired change over the seeds and whether it lies beyond 2 standard errors.

The candidates are the DP weight methods other than the unit-weight controls (``none``, ``none_split``): the
oracle (``true``) and the non-private references (``logreg``, ``mlp``) are never candidates, so never bold;
neither is a method with any seed whose raw weights fail the PSIS release gate. The metric is the
Wasserstein distance to the real rows (WST, lower is better), defined for every dataset; post chain none.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from dpiw import registry

METRIC = "wst"
#: unit weights: the None row and its paired control, never a "weight method" to pick
CONTROLS = ("none", "none_split")


def candidates() -> tuple[str, ...]:
    """The weight methods the summary may pick: DP, not a control, not an oracle."""
    from dpiw.evaluate.aggregate import ORACLE_WEIGHTS

    return tuple(w for w in registry.weight_names(dp=True) if w not in CONTROLS and w not in ORACLE_WEIGHTS)


def summary_rows(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per (dataset, eps, sdgp) with a None row: its WST, the best candidate's, the paired change."""
    runs = runs[runs.post == "none"]
    pick = set(candidates())
    out = []
    for (dataset, eps, sdgp), cell in runs.groupby(["dataset", "eps", "sdgp"], sort=True):
        none = cell[cell.weights == "none"].set_index("seed")[METRIC]
        if none.empty:
            continue
        best = None
        for method, g in cell[cell.weights.isin(pick)].groupby("weights"):
            if not g.fit_to_release.all() or not g.dp.all():
                continue
            mean = float(g[METRIC].mean())
            if best is None or mean < best[1]:
                best = (method, mean, g.set_index("seed")[METRIC])
        row = {"dataset": dataset, "eps": eps, "sdgp": sdgp, "none": float(none.mean()),
               "none_se": float(none.std(ddof=1) / math.sqrt(len(none))) if len(none) > 1 else float("nan"),
               "best": None, "best_mean": float("nan"), "change": float("nan"), "change_se": float("nan"),
               "seeds": 0}
        if best is not None:
            diff = (best[2] - none).dropna()  # paired on the seeds
            row.update({"best": best[0], "best_mean": best[1], "change": float(diff.mean()), "seeds": len(diff),
                        "change_se": float(diff.std(ddof=1) / math.sqrt(len(diff))) if len(diff) > 1
                        else float("nan")})
        out.append(row)
    return pd.DataFrame(out)


def verdict(change: float, se: float) -> str:
    if not np.isfinite(change):
        return "–"
    if not np.isfinite(se) or abs(change) <= 2 * se:
        return "within 2 SE"
    return "better, beyond 2 SE" if change < 0 else "worse, beyond 2 SE"


def markdown(rows: pd.DataFrame) -> str:
    lines = ["## Summary: does weighting help?", "",
             "Per dataset, ε and SDGP (post chain none): the Wasserstein distance to the real rows (WST, lower is "
             "better) without weights, the DP weight method with the lowest mean WST among those fit to release "
             "(never the oracle `true` or a non-DP reference), and the change it makes, paired on the seeds. "
             "**Bold**: better beyond 2 standard errors of the paired change.", "",
             "| dataset | ε | SDGP | no weights | best DP weights | its WST | change (paired) | verdict |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows.itertuples():
        none = f"{r.none:.3f} ± {r.none_se:.3f}" if np.isfinite(r.none_se) else f"{r.none:.3f}"
        if not isinstance(r.best, str):  # no DP weight method fit to release in this cell
            lines.append(f"| {r.dataset} | {float(r.eps):g} | {r.sdgp} | {none} | – | – | – | – |")
            continue
        v = verdict(r.change, r.change_se)
        name = f"**{r.best}**" if v.startswith("better") else r.best
        change = f"{r.change:+.3f} ± {r.change_se:.3f}" if np.isfinite(r.change_se) else f"{r.change:+.3f}"
        lines.append(f"| {r.dataset} | {float(r.eps):g} | {r.sdgp} | {none} | {name} | {r.best_mean:.3f} | {change} "
                     f"| {v} |")
    return "\n".join(lines) + "\n"
