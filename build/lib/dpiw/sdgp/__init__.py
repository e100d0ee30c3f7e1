"""Synthetic data generating processes (SDGPs).

Each SDGP is an estimator with ``fit(train, schema, epsilon=, delta=, rng=)`` that sets ``privacy_``
and ``sample(n, rng=)`` that returns a scaled frame with the schema's columns. The GAN family also
answers ``models()`` (the kept generators and discriminators). Torch is imported only when a GAN is
made, so the other stages start fast.
"""

from __future__ import annotations

from dpiw import DpiwError, registry
from dpiw.sdgp.marginals import DPMarginals
from dpiw.sdgp.privbayes import PrivBayes
from dpiw.sdgp.uniform import UniformBox

#: GAN variants (see dpiw.sdgp.gan.VARIANTS); they write a model file next to their rows.
GAN_SDGPS = registry.sdgp_names(gan=True)
#: SDGPs that are not differentially private (benchmark baselines).
NON_DP_SDGPS = registry.sdgp_names(dp=False)
#: every SDGP by name (dpiw.registry), its factory loaded when one is made
REGISTRY = {s.name: s for s in registry.SDGPS}


def make_sdgp(name: str, **params):
    if name not in REGISTRY:
        raise DpiwError(f"unknown SDGP {name!r}; known: {sorted(REGISTRY)}")
    factory = registry.load(REGISTRY[name].factory)
    try:
        return factory(**params)
    except TypeError as exc:
        raise DpiwError(f"SDGP {name!r}: bad parameters {sorted(params)} ({exc})") from exc


__all__ = ["GAN_SDGPS", "NON_DP_SDGPS", "REGISTRY", "DPMarginals", "PrivBayes", "UniformBox", "make_sdgp"]
