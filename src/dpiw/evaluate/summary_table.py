"""The one-page summary: does weighting help? Per dataset, epsilon and SDGP, every DP weight method against its
matched control (unit weights on exactly its own rows) and against None on the whole epsilon, under the rules of
dpiw.evaluate.compare: paired on the seeds, a win beyond 2 SE and the practical margin, Holm-adjusted over the
cell's methods. No method is picked as "best" by its mean on the rows it is scored on.

The methods are the DP weight methods other than the unit-weight controls (``none``, ``none_split``), on runs
that are DP; the oracle (``true``), the non-private references (``logreg``, ``mlp``) and the runs of a non-private
SDGP are never among them. A method with a seed whose
raw weights fail the PSIS release gate is listed and marked, and tested like the rest. The metric is the
Wasserstein distance to the real rows (WST, lower is better), defined for every dataset; post chain none.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from dpiw import registry
from dpiw.evaluate.compare import ALPHA, CONTROLS, MARGIN, holm, matched_control, paired_in, seed_table

METRIC = "wst"
RULE = (f"paired on the seeds; a win or loss is beyond 2 SE and beyond {MARGIN:.0%} of the control's WST, "
        f"Holm-adjusted over the cell's DP methods (one-sided paired t-tests, family-wise level {ALPHA}); no method "
        "is chosen by its WST")


def candidates() -> tuple[str, ...]:
    """The weight methods the summary tests: DP, not a control, not an oracle."""
    from dpiw.evaluate.aggregate import ORACLE_WEIGHTS

    return tuple(w for w in registry.weight_names(dp=True) if w not in CONTROLS and w not in ORACLE_WEIGHTS)


def verdict(win: bool, loss: bool, n: int) -> str:
    if n < 2:
        return "–"
    return "better" if win else "worse" if loss else "no clear difference"


def summary_rows(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per (dataset, eps, sdgp, DP weight method) of cells with a None row: the method's WST and its paired
    change against its matched control and against None on the whole epsilon, with Holm-adjusted verdicts."""
    runs = runs[runs.post == "none"]
    allowed = set(candidates())
    out = []
    for (dataset, eps, sdgp), cell in runs.groupby(["dataset", "eps", "sdgp"], sort=True):
        table = seed_table(cell, METRIC)
        if "none" not in table.columns:
            continue
        none = table["none"].dropna()
        dp_runs = set(cell[cell.dp.astype(bool)].weights)  # a non-private SDGP's runs (gan, cgan) are references
        methods = [m for m in registry.weight_names() if m in allowed and m in table.columns and m in dp_runs]
        vs = {c: {m: paired_in(table, metric=METRIC, method=m, control=matched_control(m) if c == "matched" else c)
                  for m in methods} for c in ("matched", "none")}
        wins = {c: holm(vs[c]) for c in vs}
        losses = {c: holm(vs[c], side=-1) for c in vs}
        for m in methods:
            g = cell[cell.weights == m]
            row = {"dataset": dataset, "eps": eps, "sdgp": sdgp, "none": float(none.mean()),
                   "none_se": float(none.std(ddof=1) / math.sqrt(len(none))) if len(none) > 1 else math.nan,
                   "weights": m, "control": matched_control(m), "mean": float(g[METRIC].mean()),
                   "fit_to_release": bool(g.fit_to_release.all()), "seeds": vs["matched"][m].n}
            for c in ("matched", "none"):
                r = vs[c][m]
                row.update({f"vs_{c}_change": -r.mean if math.isfinite(r.mean) else math.nan, f"vs_{c}_se": r.se,
                            f"vs_{c}_verdict": verdict(m in wins[c], m in losses[c], r.n)})
            out.append(row)
    return pd.DataFrame(out)


def headline(rows: pd.DataFrame) -> str:
    """How many cells have a DP method that is better (Holm) than its matched control, and than None."""
    if rows.empty:
        return "No cell has both a None row and a DP weight method."
    cells = rows.groupby(["dataset", "eps", "sdgp"])
    n = len(cells)
    count = {c: sum((g[f"vs_{c}_verdict"] == "better").any() for _, g in cells) for c in ("matched", "none")}
    worse = {c: sum((g[f"vs_{c}_verdict"] == "worse").any() for _, g in cells) for c in ("matched", "none")}
    return (f"Does weighting help? Against unit weights on the same synthetic rows, some DP weight method was "
            f"clearly better in {count['matched']} of {n} cells (dataset, ε, generator) and clearly worse in "
            f"{worse['matched']}; against giving the whole ε to the generator, what a curator gives up by spending "
            f"budget on weights, clearly better in {count['none']} of {n} and clearly worse in {worse['none']}.")


def change_text(change: float, se: float) -> str:
    if not np.isfinite(change):
        return "–"
    return f"{change:+.3f} ± {se:.3f}" if np.isfinite(se) else f"{change:+.3f}"


def markdown(rows: pd.DataFrame) -> str:
    lines = ["## Summary: does weighting help?", "",
             "Per dataset, ε and SDGP (post chain none): the Wasserstein distance to the real rows (WST, lower is "
             "better) without weights, and every DP weight method (never the oracle `true` or a non-DP reference) "
             "against its matched control (unit weights on exactly its own rows: `none_split` for a method with a "
             "budget share of its own, `none` for one that spends nothing) and against None on the whole ε. "
             f"Rule: {RULE}. **Bold**: better than its control. ‡: a seed's weights fail the PSIS release gate.", "",
             headline(rows), "",
             "| dataset | ε | SDGP | no weights | DP weights | its WST | vs matched control | verdict | "
             "vs None on the whole ε | verdict |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows.itertuples():
        none = f"{r.none:.3f} ± {r.none_se:.3f}" if np.isfinite(r.none_se) else f"{r.none:.3f}"
        name = f"**{r.weights}**" if r.vs_matched_verdict == "better" else r.weights
        name += "" if r.fit_to_release else " ‡"
        lines.append(f"| {r.dataset} | {float(r.eps):g} | {r.sdgp} | {none} | {name} | {r.mean:.3f} | "
                     f"{change_text(r.vs_matched_change, r.vs_matched_se)} (vs {r.control}) | {r.vs_matched_verdict} | "
                     f"{change_text(r.vs_none_change, r.vs_none_se)} | {r.vs_none_verdict} |")
    return "\n".join(lines) + "\n"
