"""Synthetic data generating processes (SDGPs).

Each SDGP is an estimator with ``fit(train, schema, epsilon=, delta=, rng=)`` that sets ``privacy_``
and ``sample(n, rng=)`` that returns a scaled frame with the schema's columns. The GAN family also
answers ``models()`` (the kept generators and discriminators). Torch is imported only when a GAN is
made, so the other stages start fast.
"""

from __future__ import annotations

from dpiw import DpiwError
from dpiw.sdgp.marginals import DPMarginals
from dpiw.sdgp.privbayes import PrivBayes
from dpiw.sdgp.uniform import UniformBox

#: GAN variants (see dpiw.sdgp.gan.VARIANTS); they write a model file next to their rows.
GAN_SDGPS = ("dpgan", "dpcgan", "gan", "cgan")
#: SDGPs that are not differentially private (benchmark baselines).
NON_DP_SDGPS = ("gan", "cgan")


def _gan(variant):
    def make(**params):
        from dpiw.sdgp.gan import GanSDGP

        return GanSDGP(variant=variant, **params)

    return make


REGISTRY = {"marginals": DPMarginals, "privbayes": PrivBayes, "uniform": UniformBox, **{v: _gan(v) for v in GAN_SDGPS}}


def make_sdgp(name: str, **params):
    if name not in REGISTRY:
        raise DpiwError(f"unknown SDGP {name!r}; known: {sorted(REGISTRY)}")
    try:
        return REGISTRY[name](**params)
    except TypeError as exc:
        raise DpiwError(f"SDGP {name!r}: bad parameters {sorted(params)} ({exc})") from exc


__all__ = ["GAN_SDGPS", "NON_DP_SDGPS", "REGISTRY", "DPMarginals", "PrivBayes", "UniformBox", "make_sdgp"]
