"""The rules by which dpiw says one weighting is better than another: one module, used by the results page
(dpiw.studies.paper_compare), the summary table of every run (dpiw.evaluate.summary_table) and the report.

- **Paired**: a method and its control are compared on the same (dataset, epsilon, SDGP, seed), hence the same
  private split and, since the evaluation draws common random numbers, the same evaluation draws; the per-seed
  differences give the mean and its standard error.
- **Matched controls** (:func:`matched_control`, derived from the registry): a method that spends a budget share
  of its own weights the rows of the SDGP fitted with the rest, so its control is unit weights on those very
  rows (``none_split``); a method that spends nothing (the discriminator, rejection sampling) weights the rows of
  the SDGP on the whole epsilon, so its control is ``none``. Separately, every method is compared with ``none``
  on the whole epsilon: what a curator gives up by spending budget on weights.
- **A win** is a paired improvement beyond 2 standard errors **and** beyond a practical margin
  (:data:`MARGIN` of the control's mean). A loss is the same the other way.
- **No winner's curse**: when several methods of one cell are tested, the wins are Holm-adjusted
  (:func:`holm`, family-wise one-sided level :data:`ALPHA`, paired t-tests); nothing is picked as "best" by its
  mean on the rows it is scored on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpiw import registry

#: smaller is better for these, larger for the rest
LOWER_IS_BETTER = {"abs_error", "wst", "beta_mse", "mlp_mse", "bayes_mse", "pmse", "pmse_ratio",
                   "logreg_log_weight_mse"}
#: the practical margin: a win must improve on the control by more than this share of the control's mean
MARGIN = 0.01
#: Holm's family-wise level, one-sided (the one-sided half of a two-sided 5% test)
ALPHA = 0.025
#: the unit-weight controls
CONTROLS = ("none", "none_split")


def matched_control(method: str) -> str:
    """Unit weights on exactly the rows ``method`` weights.

    >>> matched_control("beta_debiased"), matched_control("discriminator")
    ('none_split', 'none')
    """
    return "none_split" if registry.weight_method(method).own_budget else "none"


def better(metric: str, a: float, b: float) -> bool:
    """a is better than b on ``metric``."""
    return a < b if metric in LOWER_IS_BETTER else a > b


@dataclass(frozen=True)
class Paired:
    """Method minus control over the shared seeds, signed so that > 0 means the method is better."""
    n: int
    mean: float
    se: float
    #: the control's mean over the same seeds (the margin is relative to it)
    control_mean: float = math.nan

    @property
    def beats(self) -> bool:
        return self.n > 0 and self.mean > 0

    @property
    def beyond_2se(self) -> bool:
        return self.n > 1 and self.mean > 2 * self.se

    @property
    def below_2se(self) -> bool:
        return self.n > 1 and self.mean < -2 * self.se

    def beyond_margin(self, margin: float = MARGIN) -> bool:
        return self.n > 0 and abs(self.mean) > margin * abs(self.control_mean)

    def win(self, margin: float = MARGIN) -> bool:
        """Better beyond 2 SE and beyond the practical margin."""
        return self.beyond_2se and self.beyond_margin(margin)

    def loss(self, margin: float = MARGIN) -> bool:
        """Worse beyond 2 SE and beyond the practical margin."""
        return self.below_2se and self.beyond_margin(margin)

    def p_value(self, side: int = 1) -> float:
        """One-sided paired t-test p-value that the method is better (side 1) or worse (side -1)."""
        if self.n < 2 or not math.isfinite(self.mean):
            return 1.0
        if self.se == 0:
            return 0.0 if side * self.mean > 0 else 1.0
        from scipy.special import stdtr  # Student's t CDF as a ufunc (scipy.stats' t.sf costs ~1 ms a call)

        return float(stdtr(self.n - 1, -side * self.mean / self.se))


NO_DATA = Paired(0, math.nan, math.nan)


def paired_values(a, b, metric: str) -> Paired:
    """Paired comparison of two per-seed arrays (same seed order, NaN where a run is missing): a minus b, signed so
    that > 0 favours a."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    keep = np.isfinite(a) & np.isfinite(b)
    if not keep.any():
        return NO_DATA
    d = a[keep] - b[keep]
    if metric in LOWER_IS_BETTER:
        d = -d
    se = float(d.std(ddof=1) / math.sqrt(d.size)) if d.size > 1 else math.nan
    return Paired(int(d.size), float(d.mean()), se, float(b[keep].mean()))


def cell_runs(runs: pd.DataFrame, *, dataset: str, eps: float, sdgp: str, post: str = "none") -> pd.DataFrame:
    """The runs of one (dataset, eps, SDGP) cell with one post chain."""
    return runs[(runs.dataset == dataset) & np.isclose(runs.eps.astype(float), float(eps)) & (runs.sdgp == sdgp)
                & (runs.post == post)]


def seed_table(cell: pd.DataFrame, metric: str) -> pd.DataFrame:
    """One cell's ``metric`` as seeds x weight methods (NaN where a run is missing): the layout paired
    comparisons read."""
    if metric not in cell.columns or cell.empty:
        return pd.DataFrame()
    return cell.pivot_table(index="seed", columns="weights", values=metric, aggfunc="first", dropna=False)


def paired_in(table: pd.DataFrame, *, metric: str, method: str, control: str) -> Paired:
    """Paired comparison of two columns of a :func:`seed_table`."""
    if method not in table.columns or control not in table.columns:
        return NO_DATA
    return paired_values(table[method].to_numpy(), table[control].to_numpy(), metric)


def paired(runs: pd.DataFrame, *, dataset: str, eps: float, sdgp: str, metric: str, method: str, control: str,
           post: str = "none") -> Paired:
    """Paired comparison of ``method`` against ``control`` on one (dataset, eps, SDGP) cell."""
    cell = cell_runs(runs, dataset=dataset, eps=eps, sdgp=sdgp, post=post)
    return paired_in(seed_table(cell, metric), metric=metric, method=method, control=control)


def holm(results: dict[str, Paired], *, side: int = 1, alpha: float = ALPHA, margin: float = MARGIN) -> set[str]:
    """The methods that win (side 1) or lose (side -1) after Holm's step-down adjustment over ``results``
    (one family: the methods tested in one cell), each also beyond the practical margin.

    A paired t of 2.5 over 10 seeds (one-sided p 0.017) wins alone, but not as one of two such methods:

    >>> r = Paired(10, 0.25, 0.1, 10.0)
    >>> sorted(holm({"a": r})), sorted(holm({"a": r, "b": r}))
    (['a'], [])
    """
    tested = {m: r for m, r in results.items() if r.n > 1}
    order = sorted(tested, key=lambda m: tested[m].p_value(side))
    out = set()
    for i, m in enumerate(order):
        if tested[m].p_value(side) > alpha / (len(order) - i):
            break
        out.add(m)
    return {m for m in out if tested[m].beyond_margin(margin)}


@dataclass
class Tally:
    """Counts of one comparison over many cells: compared, beats (mean), > 2 SE, wins and losses (2 SE and the
    margin; Holm-adjusted where the claim tests several methods at once)."""
    compared: int = 0
    beats: int = 0
    beyond_2se: int = 0
    wins: int = 0
    losses: int = 0

    def add(self, r: Paired, *, win: bool | None = None, loss: bool | None = None, margin: float = MARGIN) -> None:
        if r.n == 0:
            return
        self.compared += 1
        self.beats += r.beats
        self.beyond_2se += r.beyond_2se
        self.wins += r.win(margin) if win is None else win
        self.losses += r.loss(margin) if loss is None else loss

    def add_family(self, results: dict[str, Paired], *, margin: float = MARGIN) -> None:
        """One cell of a claim about several methods at once. 'beats' and '> 2 SE' count whether any method
        does, unadjusted (the winner's curse, shown for contrast); wins and losses are Holm-adjusted."""
        tested = {m: r for m, r in results.items() if r.n > 0}
        if not tested:
            return
        self.compared += 1
        self.beats += any(r.beats for r in tested.values())
        self.beyond_2se += any(r.beyond_2se for r in tested.values())
        self.wins += bool(holm(tested, margin=margin))
        self.losses += bool(holm(tested, side=-1, margin=margin))

    def text(self) -> str:
        """'beats/compared (> 2 SE; wins / losses beyond 2 SE and the margin)'."""
        if not self.compared:
            return "–"
        return f"{self.beats}/{self.compared} ({self.beyond_2se}; **{self.wins}** / {self.losses})"
