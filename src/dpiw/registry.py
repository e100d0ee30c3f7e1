"""The one list of SDGPs, weight methods and post-processing steps.

Everything else is derived from here: the privacy classes (dpiw.privacy.spend), the grid's validity rules and
each stage's flags (dpiw.planning.grid), the choices of the stages' command lines, the enums of params.yaml's
schema (dpiw.planning.config), the order of the tables and figures (dpiw.evaluate). Adding a weight method is one
module with its estimator and one entry below (docs/development.md, "Adding a weight method").

This module imports nothing heavy: the estimators are named as ``module:attribute`` and imported only
when a stage makes one.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from dpiw import DpiwError


@dataclass(frozen=True)
class SDGP:
    name: str
    #: differentially private (False: a non-private reference, never released)
    dp: bool
    #: a GAN: writes its kept generators and discriminators (weights `discriminator`, `pgb`, `drs` use them)
    gan: bool
    #: ``module:attribute`` of the factory ``make(**params)``
    factory: str
    summary: str
    #: a zCDP mechanism whose whole spend is one rho (its RDP curve alpha * rho) that writes its noisy
    #: measurements for reuse: a zCDP weight method after it gets the rest of the run's rho (dpiw.privacy.spend,
    #: split_budget) and may match those measurements too, at no further cost
    zcdp: bool = False


@dataclass(frozen=True)
class WeightMethod:
    name: str
    #: differentially private (False: a non-private benchmark reference, never released)
    dp: bool
    #: spends a share of the run's epsilon of its own (privacy.weights_epsilon_fraction); the SDGP then
    #: gets the rest ("split" synthetic rows), else the SDGP gets all of it ("full")
    own_budget: bool
    #: which flags it takes: "logistic" (weights.beta), "output" (weights.beta + weights.output), "mlp"
    #: (weights.mlp), "gan" (the GAN's kept networks), "marginal" (weights.marginal_match), or "" (none)
    family: str
    #: which SDGPs it applies to: "any", "gan" (needs the kept networks), "toy_uniform" (known truth)
    applies_to: str
    #: its classifier scores any row, so post `calibrate` can score the public rows
    scores_any_row: bool
    #: ``module:attribute`` of the estimator class or factory (called with the method's params)
    estimator: str
    summary: str
    #: a zCDP mechanism (one rho): after a zCDP SDGP it takes the rest of the run's rho
    zcdp: bool = False


SDGPS: tuple[SDGP, ...] = (
    SDGP("marginals", True, False, "dpiw.sdgp.marginals:DPMarginals",
         "Laplace-noised 1-way marginals (independent or naive Bayes around the target)"),
    SDGP("privbayes", True, False, "dpiw.sdgp.privbayes:PrivBayes", "DP Bayesian network (Zhang et al. 2017)"),
    SDGP("mst", True, False, "dpiw.sdgp.mst:MST",
         "MST on Private-PGM: Gaussian 1- and 2-way marginals of a private spanning tree (McKenna et al. 2021)",
         zcdp=True),
    SDGP("aim", True, False, "dpiw.sdgp.aim:AIM",
         "AIM on Private-PGM: Gaussian marginals chosen round by round for a workload, budget annealing "
         "(McKenna et al. 2022)", zcdp=True),
    SDGP("uniform", True, False, "dpiw.sdgp.uniform:UniformBox",
         "uniform on the public bounds: reads no data (the paper's toy setting)"),
    SDGP("dpgan", True, True, "dpiw.sdgp.gan:dpgan", "WGAN with a DP-SGD critic (opacus accountant)"),
    SDGP("dpcgan", True, True, "dpiw.sdgp.gan:dpcgan", "conditional GAN with a DP-SGD discriminator"),
    SDGP("gan", False, True, "dpiw.sdgp.gan:gan", "dpgan's non-private twin (reference)"),
    SDGP("cgan", False, True, "dpiw.sdgp.gan:cgan", "dpcgan's non-private twin (reference)"),
)

#: in the order of the tables
WEIGHT_METHODS: tuple[WeightMethod, ...] = (
    WeightMethod("none", True, False, "", "any", False, "dpiw.weights.estimators:NoWeights", "unit weights"),
    WeightMethod("none_split", True, True, "", "any", False, "dpiw.weights.estimators:SplitControl",
                 "unit weights on the split-share rows: the paired control of the methods with a budget of their own"),
    WeightMethod("true", True, False, "", "toy_uniform", False, "dpiw.weights.estimators:TrueToyWeights",
                 "the known density ratio (toy data, uniform SDGP)"),
    WeightMethod("beta_noised", True, True, "logistic", "any", True, "dpiw.weights.estimators:BetaNoised",
                 "objective-perturbed L2 logistic regression (Laplace), plugged in"),
    WeightMethod("beta_debiased", True, True, "logistic", "any", True, "dpiw.weights.estimators:BetaDebiased",
                 "the same, with the Laplace noise's bias corrected (the paper's method)"),
    WeightMethod("beta_debiased_gauss", True, True, "logistic", "any", True,
                 "dpiw.weights.output_perturbation:BetaDebiasedGauss", "Gaussian noise, bias corrected"),
    WeightMethod("output_laplace", True, True, "output", "any", False,
                 "dpiw.weights.output_perturbation:OutputLaplace", "output perturbation, Laplace"),
    WeightMethod("output_gauss", True, True, "output", "any", False,
                 "dpiw.weights.output_perturbation:OutputGauss", "output perturbation, Gaussian"),
    WeightMethod("logreg", False, True, "logistic", "any", True, "dpiw.weights.estimators:LogReg",
                 "non-private L2 logistic regression (reference)"),
    WeightMethod("dp_mlp", True, True, "mlp", "any", True, "dpiw.weights.mlp:dp_mlp",
                 "MLP classifier trained with DP-SGD"),
    WeightMethod("mlp", False, True, "mlp", "any", True, "dpiw.weights.mlp:mlp",
                 "non-private MLP classifier (reference)"),
    WeightMethod("marginal_match", True, True, "marginal", "any", False,
                 "dpiw.weights.marginal_match:MarginalMatch",
                 "weights fitted so the weighted synthetic marginals match Gaussian-noised marginals of D (zCDP)",
                 zcdp=True),
    WeightMethod("discriminator", True, False, "gan", "gan", True, "dpiw.weights.gan_weights:DiscriminatorWeights",
                 "the GAN's own discriminators (free: post-processing)"),
    WeightMethod("pgb", True, True, "gan", "gan", False, "dpiw.weights.gan_weights:PGBWeights",
                 "Private Post-GAN Boosting (exponential mechanisms)"),
    WeightMethod("drs", True, False, "gan", "gan", False, "dpiw.weights.gan_weights:DRSWeights",
                 "discriminator rejection sampling"),
)

#: post-processing steps (dpiw.postprocess): a run's post is one step or a '+' chain of them
POST_STEPS = ("none", "normalise", "temper", "truncate", "psis", "calibrate", "resample")

#: MST's trees (sdgp.mst.tree, `dpiw release --tree`): its own, chosen from the rows, or a public star on the target
MST_TREES = ("chosen", "target")

SDGP_BY_NAME = {s.name: s for s in SDGPS}
WEIGHTS_BY_NAME = {w.name: w for w in WEIGHT_METHODS}


def sdgp_names(**where) -> tuple[str, ...]:
    """Names of the SDGPs whose fields equal ``where``: sdgp_names(gan=True)."""
    return tuple(s.name for s in SDGPS if all(getattr(s, k) == v for k, v in where.items()))


def weight_names(**where) -> tuple[str, ...]:
    """Names of the weight methods whose fields equal ``where`` (table order): weight_names(dp=False)."""
    return tuple(w.name for w in WEIGHT_METHODS if all(getattr(w, k) == v for k, v in where.items()))


def load(path: str):
    """The object named ``module:attribute``."""
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)


def weight_method(name: str) -> WeightMethod:
    if name not in WEIGHTS_BY_NAME:
        raise DpiwError(f"unknown weight method {name!r}; known: {', '.join(WEIGHTS_BY_NAME)}")
    return WEIGHTS_BY_NAME[name]


def sdgp(name: str) -> SDGP:
    if name not in SDGP_BY_NAME:
        raise DpiwError(f"unknown SDGP {name!r}; known: {', '.join(SDGP_BY_NAME)}")
    return SDGP_BY_NAME[name]
