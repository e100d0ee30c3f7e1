"""Synthetic data generating processes (SDGPs).

Each SDGP is an estimator with ``fit(train, schema, epsilon=, delta=, rng=)`` that sets ``privacy_``
and ``sample(n, rng=)`` that returns a scaled frame with the schema's columns. New generators (the GAN
family, PrivBayes) register in :data:`REGISTRY`.
"""

from __future__ import annotations

from dpiw import DpiwError
from dpiw.sdgp.marginals import DPMarginals
from dpiw.sdgp.uniform import UniformBox

REGISTRY = {"marginals": DPMarginals, "uniform": UniformBox}


def make_sdgp(name: str, **params):
    if name not in REGISTRY:
        raise DpiwError(f"unknown SDGP {name!r}; known: {sorted(REGISTRY)}")
    try:
        return REGISTRY[name](**params)
    except TypeError as exc:
        raise DpiwError(f"SDGP {name!r}: bad parameters {sorted(params)} ({exc})") from exc


__all__ = ["REGISTRY", "DPMarginals", "UniformBox", "make_sdgp"]
