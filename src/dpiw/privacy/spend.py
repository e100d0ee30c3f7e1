"""Privacy spend records, the budget split and the run ledger (basic composition, else RDP).

Every stage writes one :class:`PrivacySpend` next to its artifact, with the neighbouring relation its
sensitivities hold for (``neighbours``: replace-one by default, or add/remove; dpiw.privacy.neighbours). A
mechanism that is not differentially private at all (a non-private baseline, data-dependent scaling)
sets ``dp=False`` and carries no epsilon.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from dpiw import DpiwError, registry
from dpiw.io import read_json, write_json
from dpiw.privacy.neighbours import NEIGHBOURS, RowCount

# The weight methods' privacy classes, from the registry (dpiw.registry).
#: every weight method, in table order
WEIGHT_METHODS = registry.weight_names()
#: those that need the L2 logistic regression's parameters (weights.beta)
LOGISTIC_WEIGHT_METHODS = frozenset(registry.weight_names(family="logistic") + registry.weight_names(family="output"))
#: the MLP classifier weights (weights.mlp); ``mlp`` is dp_mlp's non-private twin
MLP_WEIGHT_METHODS = frozenset(registry.weight_names(family="mlp"))
#: those that spend a share of the run's epsilon of their own (the SDGP then gets the rest). ``logreg``
#: and ``mlp``, the non-private twins, use the same split so that they weight the same synthetic rows.
WEIGHT_METHODS_WITH_OWN_BUDGET = frozenset(registry.weight_names(own_budget=True))
#: those that reuse a GAN's kept discriminators (GAN SDGPs only)
GAN_WEIGHT_METHODS = registry.weight_names(applies_to="gan")
#: those whose fitted classifier scores any row, so that post `calibrate` can score the public slice
CALIBRATABLE_WEIGHT_METHODS = frozenset(registry.weight_names(scores_any_row=True))
#: those that are not differentially private (benchmark references; never released)
NON_DP_WEIGHT_METHODS = registry.weight_names(dp=False)


@dataclass(frozen=True)
class PrivacySpend:
    """What one stage spent, and why.

    ``epsilon``/``delta`` are None exactly when ``dp`` is False (the stage is not DP).
    """

    stage: str
    mechanism: str
    epsilon: float | None
    delta: float | None
    dp: bool = True
    sensitivity: dict[str, Any] = field(default_factory=dict)
    noise: dict[str, Any] = field(default_factory=dict)
    accountant: str = "none"
    reads_private: tuple[str, ...] = ()
    basis: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    #: the record's elementary mechanisms as RDP events (dpiw.privacy.accounting), for the composed accountant
    rdp: tuple[dict[str, Any], ...] = ()
    #: how the stage's noise was seeded (dpiw.privacy.seeding.Noise.record): mode, source, stream ids
    seeding: dict[str, Any] = field(default_factory=dict)
    #: the neighbouring relation the sensitivities and the accounting hold for (dpiw.privacy.neighbours.NEIGHBOURS)
    neighbours: str = "replace_one"

    def __post_init__(self):
        if self.neighbours not in NEIGHBOURS:
            raise ValueError(f"{self.stage}: neighbours must be one of {NEIGHBOURS}, got {self.neighbours!r}")
        if self.dp:
            if self.epsilon is None or self.delta is None:
                raise ValueError(f"{self.stage}: a DP record needs epsilon and delta")
            if not (self.epsilon >= 0 and math.isfinite(self.epsilon)):
                raise ValueError(f"{self.stage}: epsilon must be finite and >= 0, got {self.epsilon}")
            if not (0 <= self.delta < 1):
                raise ValueError(f"{self.stage}: delta must be in [0, 1), got {self.delta}")
            if self.reads_private and self.epsilon == 0 and self.delta == 0 and not self.basis:
                raise ValueError(f"{self.stage}: reads private data, spends 0, and gives no basis")
        else:
            if self.epsilon is not None or self.delta is not None:
                raise ValueError(f"{self.stage}: a non-DP record carries no epsilon/delta")
            if not self.basis:
                raise ValueError(f"{self.stage}: a non-DP record must say why (basis)")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["reads_private"] = list(self.reads_private)
        d["rdp"] = list(self.rdp)
        return d

    def write(self, path: str | Path) -> None:
        write_json(self.to_dict(), path)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PrivacySpend:
        known = {f for f in cls.__dataclass_fields__}
        unknown = set(d) - known
        if unknown:
            raise DpiwError(f"privacy record has unknown field(s) {sorted(unknown)}")
        d = dict(d)
        d["reads_private"] = tuple(d.get("reads_private", ()))
        d["rdp"] = tuple(d.get("rdp", ()))
        try:
            return cls(**d)
        except (TypeError, ValueError) as exc:
            raise DpiwError(f"malformed privacy record: {exc}") from exc

    @classmethod
    def read(cls, path: str | Path) -> PrivacySpend:
        return cls.from_dict(read_json(path))


#: privacy.accounting: dpiw's (correct, replace-one) or the paper's noise scales (an ablation, NOT DP)
ACCOUNTINGS = ("dpiw", "paper")
#: what `paper` changes, in words (records, docs and the results page say it the same way)
PAPER_ACCOUNTING = ("the paper's noise scales: BetaNoised/BetaDebiased Laplace rho = 2 sqrt(p)/(N_D lambda eps) "
                    "(the L1 sensitivity only for rows of norm <= 1; about sqrt(p) too little noise here) and "
                    "DP-SGD (GANs, DP-MLP) calibrated for add/remove-one neighbours without the replace-one "
                    "conversion")


def dpsgd_neighbours(accounting: str, neighbours: str = "replace_one") -> str:
    """The neighbouring relation DP-SGD is calibrated for (dpiw.sdgp.dpsgd): ``privacy.neighbours``, except
    that the paper-accounting ablation calibrates for add/remove while claiming replace-one."""
    return "add_remove" if accounting == "paper" else neighbours


def with_row_count(record: PrivacySpend, rows: RowCount) -> PrivacySpend:
    """The record of a stage whose mechanism ran on ``rows`` (dpiw.privacy.neighbours): the relation, and under
    add/remove the noisy count's epsilon and RDP event added to the mechanism's own."""
    details = {**record.details, "row_count": rows.describe()}
    if not record.dp:
        return replace(record, neighbours=rows.neighbours, details=details)
    if not rows.noisy:
        return replace(record, neighbours=rows.neighbours, details=details)
    reads = record.reads_private if "train" in record.reads_private else (*record.reads_private, "train")
    return replace(record, neighbours=rows.neighbours, epsilon=float(record.epsilon + rows.epsilon),
                   rdp=(*record.rdp, *rows.events()) if (record.rdp or record.epsilon == 0) else record.rdp,
                   reads_private=reads,
                   mechanism=record.mechanism + " + noisy row count (Laplace)",
                   details={**details, "mechanism_epsilon": record.epsilon})


def paper_ablation(record: PrivacySpend) -> PrivacySpend:
    """A DP record whose noise followed the paper's accounting, marked NOT DP (never releasable); the
    epsilon and delta it would claim stay in ``details``. Records that spend nothing are returned as they are."""
    if not record.dp or (record.epsilon == 0 and record.delta == 0):
        return record
    return replace(record, epsilon=None, delta=None, dp=False, rdp=(),
                   basis="paper-accounting ablation, NOT DP: " + PAPER_ACCOUNTING,
                   details={**record.details, "paper_claimed_epsilon": record.epsilon,
                            "paper_claimed_delta": record.delta})


def no_spend(stage: str, *, basis: str, reads_private: tuple[str, ...] = (), **details) -> PrivacySpend:
    """A record for a stage that spends nothing, with the reason."""
    return PrivacySpend(stage=stage, mechanism="none", epsilon=0.0, delta=0.0, reads_private=reads_private,
                        basis=basis, details=details)


def paper_delta(n_private: int) -> float:
    """The paper's delta = 1/N_D - 1e-6 (Section 4.2): 0 or less from N_D = 10^6 on, where it is refused."""
    if n_private < 1:
        raise DpiwError("the private training split is empty")
    delta = 1.0 / n_private - 1e-6
    if delta <= 0:
        raise DpiwError(f"privacy.delta: paper is 1/N_D - 1e-6 = {delta:.3g} at N_D = {n_private} rows (the paper's "
                        "rule is positive below a million rows only); set privacy.delta: auto (N_D^-1.5) or a "
                        f"number below {1 / n_private:.3g} (dpiw release: --delta)")
    return delta


def auto_delta(n_private: int) -> float:
    """The release rule, N_D^-1.5: below 1/N_D by a factor sqrt(N_D) at every size, and never 0 (the default of
    SmartNoise's synthesizers too).

    >>> auto_delta(400), auto_delta(10**6)
    (0.000125, 1e-09)
    """
    if n_private < 1:
        raise DpiwError("the private training split is empty")
    return float(n_private) ** -1.5


def run_delta(delta: str | float, n_private: int | None, neighbours: str = "replace_one", *,
              flag: str | None = None) -> float:
    """The run's delta: 'auto' (:func:`auto_delta`), 'paper' (1/N_D - 1e-6) or a number, which must lie below
    1/N_D - a delta of 1/N_D or more allows mechanisms that publish a whole private row. Under add/remove
    neighbours N_D is private, so the delta must be a number and nothing here compares it with N_D
    (``n_private`` unused). ``flag``: the command-line flag that gave the delta (``--delta``), named in the
    refusal instead of the config key.

    >>> run_delta(1e-4, 1000)
    0.0001
    >>> run_delta(0.01, 280)
    Traceback (most recent call last):
    ...
    dpiw.DpiwError: privacy.delta = 0.01 is not below 1/N_D = 1/280 = 0.00357143: ...
    """
    if neighbours == "add_remove":
        if delta in ("paper", "auto"):
            raise DpiwError(f"privacy.delta: {delta} is computed from N_D, and N_D is private under privacy."
                            "neighbours: add_remove; set privacy.delta to a number well below 1/N_D (e.g. 1e-6)")
        return float(delta)
    if delta == "paper":
        return paper_delta(n_private)
    if delta == "auto":
        return auto_delta(n_private)
    if n_private < 1:
        raise DpiwError("the private training split is empty")
    if not float(delta) < 1.0 / n_private:
        said, fix = ((f"{flag} {delta:g}", f"pass {flag} auto (the default, N_D^-1.5), {flag} paper") if flag else
                     (f"privacy.delta = {delta:g}", "set privacy.delta: paper"))
        raise DpiwError(f"{said} is not below 1/N_D = 1/{n_private} = {1 / n_private:.6g}: a delta that large lets "
                        f"a mechanism publish a whole private row; {fix} (1/N_D - 1e-6) or a number below "
                        f"{1 / n_private:.6g}")
    return float(delta)


@dataclass(frozen=True)
class BudgetSplit:
    sdgp_epsilon: float
    sdgp_delta: float
    weights_epsilon: float
    weights_delta: float
    #: "epsilon": the two shares add up to the budget (basic composition); "zcdp": both are zCDP and the
    #: weights get the rest of the budget's rho, so only the RDP composition of the two stays within it
    rule: str = "epsilon"


#: how the budget splits between two zCDP mechanisms
SPLIT_RULES = ("epsilon", "zcdp")


def split_budget(epsilon: float, delta: float, *, weights_method: str, weights_epsilon_fraction: float,
                 weights_delta_fraction: float, rule: str = "epsilon") -> BudgetSplit:
    """Split a run's (epsilon, delta) between the SDGP and the weight estimator (docs/method.md, budget split).

    Methods that need no budget of their own leave all of it to the SDGP. The SDGP's share is always
    (1 - f) of epsilon and delta. With ``rule="zcdp"`` (a zCDP weight method after a zCDP SDGP: both spend one
    rho each) the weights get the rest of the budget's rho, rho(eps, delta) - rho((1 - f) eps, (1 - f) delta),
    stated as the epsilon that rho converts to at the whole delta: the two records then add up to more than the
    budget, and their RDP composition to at most it (the ledger admits a run by either statement).

    >>> s = split_budget(1.0, 1e-3, weights_method="beta_debiased", weights_epsilon_fraction=0.1,
    ...                  weights_delta_fraction=0.3)
    >>> s.sdgp_epsilon, round(s.sdgp_delta, 12), s.weights_epsilon, s.weights_delta
    (0.9, 0.0007, 0.1, 0.0003)
    >>> split_budget(1.0, 1e-3, weights_method="none", weights_epsilon_fraction=0.1,
    ...              weights_delta_fraction=0.3).sdgp_epsilon
    1.0
    >>> z = split_budget(1.0, 1e-6, weights_method="marginal_match", weights_epsilon_fraction=0.3,
    ...                  weights_delta_fraction=0.3, rule="zcdp")
    >>> z.sdgp_epsilon, round(z.weights_epsilon, 3), z.weights_delta
    (0.7, 0.693, 1e-06)
    """
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise DpiwError(f"epsilon must be a positive finite number, got {epsilon}")
    if not (0 <= delta < 1):
        raise DpiwError(f"delta must be in [0, 1), got {delta}")
    for name, frac in (("weights_epsilon_fraction", weights_epsilon_fraction),
                       ("weights_delta_fraction", weights_delta_fraction)):
        if not (0 < frac < 1):
            raise DpiwError(f"privacy.{name} must lie strictly between 0 and 1, got {frac}")
    if rule not in SPLIT_RULES:
        raise ValueError(f"split rule must be one of {SPLIT_RULES}, got {rule!r}")
    if weights_method not in WEIGHT_METHODS_WITH_OWN_BUDGET:
        return BudgetSplit(epsilon, delta, 0.0, 0.0)
    w_eps = round(epsilon * weights_epsilon_fraction, 12)
    w_delta = delta * weights_delta_fraction
    s_eps, s_delta = round(epsilon - w_eps, 12), delta - w_delta
    if rule == "zcdp":
        from dpiw.privacy.accounting import zcdp_rho, zcdp_to_dp

        rho_w = zcdp_rho(epsilon, delta) - zcdp_rho(s_eps, s_delta)
        return BudgetSplit(s_eps, s_delta, float(zcdp_to_dp(rho_w, delta)), delta, rule)
    return BudgetSplit(s_eps, s_delta, w_eps, w_delta)


def split_rule(sdgp: str, weights_method: str, neighbours: str, accounting: str = "dpiw") -> str:
    """"zcdp" where a zCDP weight method follows a zCDP SDGP under replace-one neighbours (under add/remove each
    stage also spends a Laplace count, which is not zCDP), else "epsilon"."""
    both = registry.sdgp(sdgp).zcdp and registry.weight_method(weights_method).zcdp
    return "zcdp" if both and neighbours == "replace_one" and accounting == "dpiw" else "epsilon"


def budget_share(weights_method: str) -> str:
    """Name of the SDGP's budget share for a weight method: 'full' or 'split'."""
    return "split" if weights_method in WEIGHT_METHODS_WITH_OWN_BUDGET else "full"


def exceeds(spent: float, budget: float, *, absolute: float) -> bool:
    """Whether a spend is over its budget; a relative tolerance of 1e-9 (plus ``absolute``) absorbs the
    rounding of the budget split."""
    return spent > budget * (1 + 1e-9) + absolute


@dataclass(frozen=True)
class Ledger:
    records: tuple[PrivacySpend, ...]

    @property
    def dp(self) -> bool:
        return all(r.dp for r in self.records)

    @property
    def epsilon(self) -> float | None:
        """Basic (sequential) composition: the sum of the epsilons; None if any stage is not DP."""
        return math.fsum(r.epsilon for r in self.records) if self.dp else None

    @property
    def delta(self) -> float | None:
        return math.fsum(r.delta for r in self.records) if self.dp else None

    @property
    def neighbours(self) -> str:
        """The one neighbouring relation of every record that spends budget (a run that mixes them has no
        guarantee to state; a record that spends nothing holds under either)."""
        relations = sorted({r.neighbours for r in self.records if r.dp and (r.epsilon or r.delta)})
        if not relations:  # nothing spends (a non-DP benchmark): the relation its stages ran under
            relations = sorted({r.neighbours for r in self.records} - {NEIGHBOURS[0]})[:1]
        if len(relations) > 1:
            raise DpiwError("the run's records hold for different neighbouring relations: " + ", ".join(
                f"{r.stage}={r.neighbours}" for r in self.records if r.dp and (r.epsilon or r.delta))
                + "; rerun every stage with one "
                "privacy.neighbours")
        return relations[0] if relations else NEIGHBOURS[0]

    def check(self, *, budget_epsilon: float, budget_delta: float, allow_non_dp: bool) -> str:
        """Return the verdict, or raise DpiwError if the run breaks its budget (:func:`exceeds`) or mixes
        neighbouring relations."""
        self.neighbours  # noqa: B018 - raises on a mix
        if not self.dp:
            culprits = [f"{r.stage} ({r.basis})" for r in self.records if not r.dp]
            if not allow_non_dp:
                raise DpiwError("run is not differentially private: " + "; ".join(culprits)
                                + ". Set privacy.allow_non_dp_baselines: true to run it as a benchmark")
            return "NOT DP - benchmark baseline, never release: " + "; ".join(culprits)
        eps, delta = self.epsilon, self.delta
        if not (exceeds(eps, budget_epsilon, absolute=1e-12) or exceeds(delta, budget_delta, absolute=1e-15)):
            return "within budget"
        # the basic sum is over: the RDP composition at the budget's delta may still be within it (a split
        # made in zCDP is, by construction)
        from dpiw.privacy.accounting import composed_spend

        rdp = composed_spend(self.records, budget_delta) if 0 < budget_delta < 1 else {"epsilon": None}
        if rdp["epsilon"] is not None and not exceeds(rdp["epsilon"], budget_epsilon, absolute=1e-12):
            return f"within budget (RDP composition: epsilon={rdp['epsilon']:.6g} at delta={budget_delta:.3g})"
        composed = "" if rdp["epsilon"] is None else f", RDP composition {rdp['epsilon']:.6g} at that delta"
        raise DpiwError(f"privacy budget exceeded: the stages spend epsilon={eps:.6g}, delta={delta:.6g} "
                        f"(basic composition{composed}) > budget epsilon={budget_epsilon:.6g}, "
                        f"delta={budget_delta:.6g}; " + ", ".join(f"{r.stage}={r.epsilon:.6g}" for r in self.records))
