"""dpiw's results beside the paper's Tables 1-3, and the paper's claims counted the way its tables count.

Inputs: the workflow's one-row-per-run table (``tables/runs.csv`` of a config such as configs/paper.yaml)
and the paper's numbers (``data/paper/ghalebikesabi2022_tables.csv``, transcribed once). Every
comparison of two weight methods is **paired**: the same dataset, epsilon, SDGP and seed, hence the same
private split, and the per-seed differences give the mean and its standard error. Two controls:
``none`` (unit weights on rows of the SDGP fitted with the whole epsilon) and ``none_split`` (unit
weights on the rows of the SDGP fitted with the split share, the very rows the methods with a budget of
their own weight), so that "IW helps" is not confused with "the SDGP got less budget".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

#: smaller is better for these, larger for the rest
LOWER_IS_BETTER = {"wst", "beta_mse", "mlp_mse", "bayes_mse", "pmse"}
#: the weight methods of the paper's tables, in their order (the six IW methods follow None)
PAPER_METHODS = ("none", "beta_noised", "beta_debiased", "dp_mlp", "discriminator", "logreg", "mlp")
PAPER_IW = PAPER_METHODS[1:]
#: the paper's DP weight methods ("best score out of the private methods is marked in bold")
PAPER_DP = ("beta_noised", "beta_debiased", "dp_mlp", "discriminator")
GAN_SDGPS = ("dpgan", "dpcgan")


def read_paper(path) -> pd.DataFrame:
    return pd.read_csv(path, comment="#")


def better(metric: str, a: float, b: float) -> bool:
    """a is better than b on ``metric``."""
    return a < b if metric in LOWER_IS_BETTER else a > b


@dataclass(frozen=True)
class Paired:
    """method minus control over the shared seeds, signed so that > 0 means the method is better."""
    n: int
    mean: float
    se: float

    @property
    def beats(self) -> bool:
        return self.n > 0 and self.mean > 0

    @property
    def beyond_2se(self) -> bool:
        return self.n > 1 and self.mean > 2 * self.se


def _cell(runs: pd.DataFrame, dataset: str, eps: float, sdgp: str) -> pd.DataFrame:
    """The post-none runs of one (dataset, eps, SDGP) cell."""
    return runs[(runs.dataset == dataset) & np.isclose(runs.eps, eps) & (runs.sdgp == sdgp) & (runs.post == "none")]


def paired(runs: pd.DataFrame, *, dataset: str, eps: float, sdgp: str, metric: str, method: str,
           control: str) -> Paired:
    """Paired comparison of ``method`` against ``control`` on one (dataset, eps, SDGP) cell, post none."""
    if metric not in runs.columns:
        return Paired(0, math.nan, math.nan)
    cell = _cell(runs, dataset, eps, sdgp)
    a = cell[cell.weights == method].set_index("seed")[metric]
    b = cell[cell.weights == control].set_index("seed")[metric]
    d = (a - b).dropna()
    if metric in LOWER_IS_BETTER:
        d = -d
    if d.empty:
        return Paired(0, math.nan, math.nan)
    se = float(d.std(ddof=1) / math.sqrt(len(d))) if len(d) > 1 else math.nan
    return Paired(len(d), float(d.mean()), se)


def mean_se(runs: pd.DataFrame, *, dataset: str, eps: float, sdgp: str, metric: str, method: str) -> tuple:
    if metric not in runs.columns:
        return math.nan, math.nan, 0
    cell = _cell(runs, dataset, eps, sdgp)
    cell = cell[cell.weights == method][metric].dropna()
    if cell.empty:
        return math.nan, math.nan, 0
    se = float(cell.std(ddof=1) / math.sqrt(len(cell))) if len(cell) > 1 else math.nan
    return float(cell.mean()), se, len(cell)


@dataclass
class Claim:
    key: str
    text: str
    paper_holds: int = 0
    total: int = 0
    #: per control: cells where the claim holds in dpiw (paired), and where it holds beyond 2 SE
    holds: dict | None = None
    beyond: dict | None = None
    #: per control: cells with dpiw runs of both sides
    compared: dict | None = None


def _cells(paper: pd.DataFrame, tables=(1, 2)) -> pd.DataFrame:
    """(table, dataset, sdgp, epsilon, metric) of the paper's Tables, one row per cell of a table column."""
    return paper[paper.table.isin(tables)][["table", "dataset", "sdgp", "epsilon", "metric"]].drop_duplicates()


def _paper_value(paper: pd.DataFrame, cell, method: str) -> float | None:
    hit = paper[(paper.table == cell.table) & (paper.dataset == cell.dataset) & (paper.sdgp == cell.sdgp)
                & (paper.metric == cell.metric) & (paper.weights == method)]
    return float(hit["mean"].iloc[0]) if len(hit) else None


def count_claims(runs: pd.DataFrame, paper: pd.DataFrame, *, controls=("none", "none_split")) -> list[Claim]:
    """The paper's claims on Tables 1-2 (epsilon 1), counted in the paper's numbers and, paired, in dpiw's."""
    claims = {
        "iw_beats_none": Claim("iw_beats_none", "an IW method (any of the six) beats None"),
        "best_dp_beats_none": Claim("best_dp_beats_none", "the best DP IW method beats None"),
        "debiased_beats_noised": Claim("debiased_beats_noised", "BetaDebiased beats BetaNoised"),
        "discriminator_beats_none": Claim("discriminator_beats_none", "discriminator weights beat None on GAN data"),
        "housing_privbayes": Claim("housing_privbayes",
                                   "housing x PrivBayes: IW does not help (cells where IW beats None; few expected)"),
    }
    for c in claims.values():
        c.holds, c.beyond, c.compared = {}, {}, {}

    def tally(claim: Claim, paper_ok: bool, results: dict[str, Paired]):
        claim.total += 1
        claim.paper_holds += bool(paper_ok)
        for control, r in results.items():
            claim.holds[control] = claim.holds.get(control, 0) + r.beats
            claim.beyond[control] = claim.beyond.get(control, 0) + r.beyond_2se
            claim.compared[control] = claim.compared.get(control, 0) + (r.n > 0)

    for cell in _cells(paper).itertuples():
        key = dict(dataset=cell.dataset, eps=cell.epsilon, sdgp=cell.sdgp, metric=cell.metric)
        p_none = _paper_value(paper, cell, "none")
        present = [m for m in PAPER_IW if _paper_value(paper, cell, m) is not None]
        for m in present:
            res = {c: paired(runs, method=m, control=c, **key) for c in controls}
            tally(claims["iw_beats_none"], better(cell.metric, _paper_value(paper, cell, m), p_none), res)
            if cell.dataset == "housing" and cell.sdgp == "privbayes":
                tally(claims["housing_privbayes"], better(cell.metric, _paper_value(paper, cell, m), p_none), res)
        # best DP method by its mean (the paper's bold), compared with None
        dp = [m for m in PAPER_DP if m in present]
        p_best = min(dp, key=lambda m: _paper_value(paper, cell, m) * (1 if cell.metric in LOWER_IS_BETTER else -1))
        ours = {m: mean_se(runs, method=m, **key)[0] for m in dp}
        ours = {m: v for m, v in ours.items() if not math.isnan(v)}
        o_best = (min(ours, key=lambda m: ours[m] * (1 if cell.metric in LOWER_IS_BETTER else -1)) if ours else None)
        tally(claims["best_dp_beats_none"], better(cell.metric, _paper_value(paper, cell, p_best), p_none),
              {c: (paired(runs, method=o_best, control=c, **key) if o_best else Paired(0, math.nan, math.nan))
               for c in controls})
        tally(claims["debiased_beats_noised"],
              better(cell.metric, _paper_value(paper, cell, "beta_debiased"), _paper_value(paper, cell, "beta_noised")),
              {"beta_noised": paired(runs, method="beta_debiased", control="beta_noised", **key)})
        if cell.sdgp in GAN_SDGPS and "discriminator" in present:
            tally(claims["discriminator_beats_none"],
                  better(cell.metric, _paper_value(paper, cell, "discriminator"), p_none),
                  {"none": paired(runs, method="discriminator", control="none", **key)})
    return list(claims.values())


def weight_flatness(runs: pd.DataFrame, *, datasets, eps: float) -> pd.Series:
    """Median Kish ESS / N of each weight method's weights (post none) on ``datasets``: near 1 = flat
    weights, which can change nothing."""
    sel = runs[runs.dataset.isin(datasets) & np.isclose(runs.eps, eps) & (runs.post == "none")]
    return sel.groupby("weights")["ess_fraction"].median()
