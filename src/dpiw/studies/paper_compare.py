"""dpiw's results beside the paper's Tables 1-3, and the paper's claims counted the way its tables count.

Inputs: the workflow's one-row-per-run table (``tables/runs.csv`` of a config such as configs/paper.yaml)
and the paper's numbers (``data/paper/ghalebikesabi2022_tables.csv``, transcribed once). Every
comparison of two weight methods is **paired**: the same dataset, epsilon, SDGP and seed, hence the same
private split, and the per-seed differences give the mean and its standard error. Two controls:
``none`` (unit weights on rows of the SDGP fitted with the whole epsilon) and ``none_split`` (unit
weights on the rows of the SDGP fitted with the split share, the very rows the methods with a budget of
their own weight), so that "IW helps" is not confused with "the SDGP got less budget". Each method is set
against its matched control (dpiw.evaluate.compare.matched_control) and against None on the whole epsilon; a
win is beyond 2 SE and a practical margin, and where a claim tests several methods of a cell at once the wins
are Holm-adjusted instead of picking a best by its mean on the rows it is scored on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dpiw.evaluate.compare import (
    LOWER_IS_BETTER,
    Paired,
    Tally,
    better,
    cell_runs,
    matched_control,
    paired,
    paired_in,
    seed_table,
)

__all__ = ["LOWER_IS_BETTER", "Paired", "better", "count_claims", "mean_se", "paired", "read_paper"]

#: the weight methods of the paper's tables, in their order (the six IW methods follow None)
PAPER_METHODS = ("none", "beta_noised", "beta_debiased", "dp_mlp", "discriminator", "logreg", "mlp")
PAPER_IW = PAPER_METHODS[1:]
#: the paper's DP weight methods ("best score out of the private methods is marked in bold"), each also a claim
#: of its own, named before any dpiw number was seen
PAPER_DP = ("beta_noised", "beta_debiased", "dp_mlp", "discriminator")
GAN_SDGPS = ("dpgan", "dpcgan")
#: the methods' names on the page
NAMES = {"none": "None", "none_split": "None (split share)", "beta_noised": "BetaNoised",
         "beta_debiased": "BetaDebiased", "dp_mlp": "DP-MLP", "discriminator": "Discriminator", "logreg": "LogReg †",
         "mlp": "MLP †"}
#: the two comparisons of a claim against None: unit weights on the method's own rows, and None on the whole epsilon
VS_MATCHED, VS_NONE = "matched", "none"


def read_paper(path) -> pd.DataFrame:
    return pd.read_csv(path, comment="#")


def mean_se(runs: pd.DataFrame, *, dataset: str, eps: float, sdgp: str, metric: str, method: str) -> tuple:
    if metric not in runs.columns:
        return math.nan, math.nan, 0
    cell = cell_runs(runs, dataset=dataset, eps=eps, sdgp=sdgp)
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
    #: per comparison (VS_MATCHED, VS_NONE, or the name of another method): dpiw's counts
    tallies: dict[str, Tally] = field(default_factory=dict)

    def tally(self, comparison: str) -> Tally:
        return self.tallies.setdefault(comparison, Tally())


def _cells(paper: pd.DataFrame, tables=(1, 2)) -> pd.DataFrame:
    """(table, dataset, sdgp, epsilon, metric) of the paper's Tables, one row per cell of a table column."""
    return paper[paper.table.isin(tables)][["table", "dataset", "sdgp", "epsilon", "metric"]].drop_duplicates()


def _paper_values(paper: pd.DataFrame) -> dict:
    """The paper's printed means by (table, dataset, sdgp, metric, weights)."""
    keys = zip(paper.table, paper.dataset, paper.sdgp, paper.metric, paper.weights, strict=True)
    return {k: float(v) for k, v in zip(keys, paper["mean"], strict=True)}


def count_claims(runs: pd.DataFrame, paper: pd.DataFrame) -> list[Claim]:
    """The paper's claims on Tables 1-2 (epsilon 1), counted in the paper's printed means and, paired under the
    rules of dpiw.evaluate.compare, in dpiw's runs: each method against unit weights on its own rows (its matched
    control) and against None on the whole epsilon."""
    claims = {"iw_beats_none": Claim("iw_beats_none", "an IW method beats None (each of the six, per cell)")}
    for m in PAPER_DP:
        claims[f"named:{m}"] = Claim(f"named:{m}", f"{NAMES[m]} beats None")
    claims["some_dp_beats_none"] = Claim(
        "some_dp_beats_none", "some DP method beats None (the paper: its best DP method; dpiw: Holm over the "
        "cell's DP methods, none picked)")
    claims["debiased_beats_noised"] = Claim("debiased_beats_noised", "BetaDebiased beats BetaNoised")
    claims["housing_privbayes"] = Claim(
        "housing_privbayes", "housing × PrivBayes: IW does not help (cells where IW beats None; few expected)")

    def both(table: pd.DataFrame, method: str, metric: str) -> dict[str, Paired]:
        return {VS_MATCHED: paired_in(table, metric=metric, method=method, control=matched_control(method)),
                VS_NONE: paired_in(table, metric=metric, method=method, control="none")}

    def tally(claim: Claim, paper_ok: bool, results: dict[str, Paired]) -> None:
        claim.total += 1
        claim.paper_holds += bool(paper_ok)
        for comparison, r in results.items():
            claim.tally(comparison).add(r)

    values = _paper_values(paper)
    for cell in _cells(paper).itertuples():
        def pv(method, cell=cell):  # the paper's printed mean of ``method`` in this cell (None: not printed)
            return values.get((cell.table, cell.dataset, cell.sdgp, cell.metric, method))

        table = seed_table(cell_runs(runs, dataset=cell.dataset, eps=cell.epsilon, sdgp=cell.sdgp), cell.metric)
        p_none = pv("none")
        present = [m for m in PAPER_IW if pv(m) is not None]
        for m in present:
            paper_ok = better(cell.metric, pv(m), p_none)
            res = both(table, m, cell.metric)
            tally(claims["iw_beats_none"], paper_ok, res)
            if m in PAPER_DP:
                tally(claims[f"named:{m}"], paper_ok, res)
            if cell.dataset == "housing" and cell.sdgp == "privbayes":
                tally(claims["housing_privbayes"], paper_ok, res)
        dp = [m for m in PAPER_DP if m in present]
        p_best = min(dp, key=lambda m: pv(m) * (1 if cell.metric in LOWER_IS_BETTER else -1))
        some = claims["some_dp_beats_none"]
        some.total += 1
        some.paper_holds += better(cell.metric, pv(p_best), p_none)
        per_method = {m: both(table, m, cell.metric) for m in dp}
        for comparison in (VS_MATCHED, VS_NONE):
            some.tally(comparison).add_family({m: r[comparison] for m, r in per_method.items()})
        tally(claims["debiased_beats_noised"],
              better(cell.metric, pv("beta_debiased"), pv("beta_noised")),
              {"beta_noised": paired_in(table, metric=cell.metric, method="beta_debiased",
                                             control="beta_noised")})
    return list(claims.values())


def weight_flatness(runs: pd.DataFrame, *, datasets, eps: float) -> pd.Series:
    """Median Kish ESS / N of each weight method's weights (post none) on ``datasets``: near 1 = flat
    weights, which can change nothing."""
    sel = runs[runs.dataset.isin(datasets) & np.isclose(runs.eps, eps) & (runs.post == "none")]
    return sel.groupby("weights")["ess_fraction"].median()
