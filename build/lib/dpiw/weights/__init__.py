"""Importance weight estimators (log density ratios at the synthetic rows)."""

from dpiw.weights.estimators import (
    BetaDebiased,
    BetaNoised,
    LogReg,
    NoWeights,
    TrueToyWeights,
    laplace_bias_correction,
    log_prior_odds,
    make_estimator,
)

__all__ = ["BetaDebiased", "BetaNoised", "LogReg", "NoWeights", "TrueToyWeights", "laplace_bias_correction",
           "log_prior_odds", "make_estimator"]
