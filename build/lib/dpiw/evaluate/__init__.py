"""Utility metrics of weighted synthetic data against the held-out real test split."""

from dpiw.evaluate.metrics import beta_mse, kish_ess, synthetic_ess, weighted_wasserstein

__all__ = ["beta_mse", "kish_ess", "synthetic_ess", "weighted_wasserstein"]
