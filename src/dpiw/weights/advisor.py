"""The budget advisor: spend a share of epsilon on marginal_match, or give the whole of it to the SDGP?

It decides before anything is spent, from public quantities only: the row count N (public under replace-one
neighbours), the schema's public cells, epsilon, delta and the weights' share. The measured marginals can only
correct what they can see: a marginal of C cells holds about N / C rows a cell, and each count carries Gaussian
noise of std sigma_W (dpiw.weights.marginal_match). The advisor's signal-to-noise ratio is

    snr = median over the workload's marginals of (N / C) / sigma_W,

and it picks marginal_match when snr >= ``SNR_MIN``, else no weights (the whole epsilon to the SDGP).
``SNR_MIN`` was named before the usefulness study (docs/usefulness.md) was run; that page shows, per table, size
and epsilon, whether the choice was right.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dpiw.data.schema import Schema

#: pick the weights when a measured cell's expected count is at least this many noise sds (named in advance)
SNR_MIN = 3.0
#: the weights' share of epsilon and delta when the advisor picks marginal_match (`dpiw release` sets it), the share
#: the usefulness study measured
WEIGHTS_FRACTION = 0.3


@dataclass(frozen=True)
class Advice:
    method: str
    snr: float
    threshold: float
    reason: str


def expected_snr(n_rows: int, schema: Schema, *, epsilon: float, delta: float, fraction: float, bins: int = 8,
                 degree: int = 3, max_marginals: int = 64, neighbours: str = "replace_one") -> tuple[float, float]:
    """(snr, sigma_W) of marginal_match's measurements for a run of ``n_rows`` rows (public quantities only)."""
    from dpiw.privacy.accounting import zcdp_rho
    from dpiw.privacy.neighbours import count_l2
    from dpiw.privacy.spend import split_budget, split_rule
    from dpiw.weights.marginal_match import workload

    cards = [bins if c.is_numeric else len(c.categories) for c in schema.columns]
    cliques = workload(schema, degree=degree, max_marginals=max_marginals)
    split = split_budget(epsilon, delta, weights_method="marginal_match", weights_epsilon_fraction=fraction,
                         weights_delta_fraction=fraction, rule=split_rule("mst", "marginal_match", neighbours))
    rho = zcdp_rho(split.weights_epsilon, split.weights_delta)
    sigma = math.sqrt(len(cliques) * count_l2(neighbours) ** 2 / (2 * rho))
    per_cell = sorted(n_rows / math.prod(cards[j] for j in cl) for cl in cliques)
    mid = len(per_cell) // 2
    median = per_cell[mid] if len(per_cell) % 2 else (per_cell[mid - 1] + per_cell[mid]) / 2
    return median / sigma, sigma


def weights_rho_share(epsilon: float, delta: float, fraction: float) -> float:
    """The share of the budget's zCDP rho that marginal_match gets after MST keeps ``1 - fraction`` of epsilon
    and delta (:func:`dpiw.privacy.spend.split_budget`'s zCDP rule): about half at fraction 0.3.

    >>> round(weights_rho_share(1.0, 1e-6, 0.3), 2)
    0.5
    """
    from dpiw.privacy.accounting import zcdp_rho

    return 1.0 - zcdp_rho((1 - fraction) * epsilon, (1 - fraction) * delta) / zcdp_rho(epsilon, delta)


def advise(n_rows: int, schema: Schema, *, epsilon: float, delta: float, fraction: float, **workload) -> Advice:
    """marginal_match if its measurements are expected to see past their noise, else none (module docstring).

    >>> from dpiw.data import load_schema
    >>> s = load_schema("data/schemas/cps1988.yaml")
    >>> [advise(n, s, epsilon=1.0, delta=1e-6, fraction=0.3).method for n in (2000, 28155)]
    ['none', 'marginal_match']
    """
    snr, sigma = expected_snr(n_rows, schema, epsilon=epsilon, delta=delta, fraction=fraction, **workload)
    detail = (f"a typical cell of the marginals the weights would measure holds about {snr:.2g} times its noise "
              f"(sd {sigma:.3g} rows); weights pay from {SNR_MIN:g} times")
    if snr >= SNR_MIN:
        return Advice("marginal_match", snr, SNR_MIN,
                      f"{n_rows:,} rows at epsilon {epsilon:g} are enough for weights to pay: the generator keeps "
                      f"{1 - fraction:.0%} of epsilon and marginal_match weights get the rest of its zCDP rho "
                      f"({weights_rho_share(epsilon, delta, fraction):.0%} of the rho: rho grows with the square "
                      "of epsilon, so `stages` below shows each stage's own epsilon larger than its share). They "
                      "correct subgroup, cross-tab and regression estimates, but can make a simple mean or share "
                      "worse than the generator alone: `--weights none` if those are all your analysts need "
                      f"({detail})")
    return Advice("none", snr, SNR_MIN,
                  f"{n_rows:,} rows at epsilon {epsilon:g} are too few for weights to pay for their share: the whole "
                  f"budget goes to the generator and every weight is 1 ({detail})")
