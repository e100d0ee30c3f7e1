"""Weight methods that reuse a fitted GAN's kept discriminators: `discriminator`, `pgb`, `drs`.

They take a ``discriminators`` object with ``loss`` ("wgan" | "cgan"), ``len()`` and
``outputs(frame) -> (K, n)`` raw outputs (oldest first; :class:`dpiw.sdgp.gan.Discriminators`), so this
module needs no torch. Each sets ``privacy_`` and ``log_ratio_`` (one value per synthetic row).
"""

from __future__ import annotations

import math

import numpy as np

from dpiw import DpiwError
from dpiw._docs import GAN_WEIGHTS_FIT, shared_doc
from dpiw.privacy.neighbours import RowCount
from dpiw.privacy.spend import PrivacySpend, no_spend
from dpiw.weights import boosting


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


class DiscriminatorWeights:
    """Paper Section 3.5: log w(x) = the last discriminator's output at x, free (post-processing).

    Sigmoid discriminator (cgan): the output is logit D(x); batches were balanced (expected real batch
    = fake batch = L), so logit D estimates log p_D/p_G with no prior-odds shift. WGAN critic: the
    output is unbounded and only defined up to an additive constant; it is used as a log ratio up to a
    constant and self-normalised downstream.
    """

    @shared_doc(GAN_WEIGHTS_FIT)
    def fit_gan(self, discriminators, real, synth, *, epsilon, delta, rng, rows=None):
        out = discriminators.outputs(synth)[-1]
        self.discriminators_ = discriminators
        self.shift_ = float(out.max()) if discriminators.loss == "wgan" else 0.0
        self.log_ratio_ = out - self.shift_
        basis = ("logit of the last kept (DP) discriminator, balanced batches, no prior-odds shift"
                 if discriminators.loss == "cgan" else
                 "last kept (DP) WGAN critic output as a log ratio up to a constant, self-normalised")
        self.privacy_ = no_spend("fit_weights", basis="post-processing of the GAN's released discriminator: "
                                 + basis, method="discriminator", reads_private=(), loss=discriminators.loss)
        return self

    def log_ratio_at(self, frame) -> np.ndarray:
        """The same map at other rows (e.g. the public slice, for calibration)."""
        return self.discriminators_.outputs(frame)[-1] - self.shift_


class DRSWeights:
    """Discriminator rejection sampling (Azadi et al. 2019), free: row b is kept with probability
    min(1, exp(o_b - M)), o the last discriminator's log-ratio output and M its ``percentile``-th
    percentile over the synthetic rows (M = max is exact rejection sampling; a lower M keeps more rows
    and caps the ratio). Kept rows get weight 1, the rest 0 (log weight -inf)."""

    def __init__(self, *, percentile: float = 95.0):
        if not (0 < percentile <= 100):
            raise DpiwError(f"weights.drs.percentile must lie in (0, 100], got {percentile}")
        self.percentile = percentile

    @shared_doc(GAN_WEIGHTS_FIT)
    def fit_gan(self, discriminators, real, synth, *, epsilon, delta, rng, rows=None):
        o = discriminators.outputs(synth)[-1]
        M = float(np.percentile(o, self.percentile))
        accept = rng.uniform(size=len(o)) < np.exp(np.minimum(o - M, 0.0))
        self.accept_rate_ = float(accept.mean())
        self.log_ratio_ = np.where(accept, 0.0, -np.inf)
        self.privacy_ = no_spend("fit_weights", basis="rejection sampling with the GAN's released discriminator "
                                 "(post-processing)", method="drs", reads_private=(), percentile=self.percentile,
                                 accepted=int(accept.sum()), loss=discriminators.loss)
        return self


class PGBWeights:
    """Private Post-GAN Boosting over the kept discriminators; weights |B| phi_bar (see boosting)."""

    def __init__(self, *, rounds: int = 50, eta: float | str = "auto"):
        if not (isinstance(rounds, int) and rounds >= 1):
            raise DpiwError(f"weights.pgb.rounds must be an integer >= 1, got {rounds!r}")
        if eta != "auto" and not (isinstance(eta, int | float) and eta > 0):
            raise DpiwError(f"weights.pgb.eta must be 'auto' or a positive number, got {eta!r}")
        self.rounds, self.eta = rounds, eta

    @shared_doc(GAN_WEIGHTS_FIT)
    def fit_gan(self, discriminators, real, synth, *, epsilon, delta, rng, rows=None):
        if not (epsilon > 0):
            raise DpiwError("pgb needs a positive weight budget (privacy.weights_epsilon_fraction)")
        rows = rows or RowCount.exact(len(real))
        n, B = rows.n, len(synth)  # N_D: public under replace-one, the noisy count under add/remove
        # probabilities in [0, 1]: sigmoid of the logit (cgan) or of the critic value (wgan; a fixed public map).
        # The real rows' term is their sum over the public n (the mean when n = N_D): one row added, removed or
        # replaced moves it by at most 1/n. Capping it at 1 (a noisy count below N_D) is 1-Lipschitz: the same.
        d_real_mean = np.minimum(_sigmoid(discriminators.outputs(real)).sum(axis=1) / n, 1.0)
        d_synth = _sigmoid(discriminators.outputs(synth))
        sens = boosting.score_sensitivity(n)
        eps0, comp = boosting.per_round_epsilon(epsilon, delta, self.rounds)
        eta = boosting.default_eta(B, self.rounds) if self.eta == "auto" else float(self.eta)
        phi_bar, picks = boosting.post_gan_boosting(d_real_mean, d_synth, rounds=self.rounds, eps0=eps0,
                                                    sensitivity=sens, eta=eta, rng=rng)
        self.phi_bar_, self.picks_ = phi_bar, picks
        self.log_ratio_ = np.log(B) + np.log(phi_bar)
        eps_basic = self.rounds * eps0
        eps_adv = boosting.advanced_composition(eps0, self.rounds, delta) if 0 < delta < 1 else math.inf
        claimed_eps, claimed_delta = (eps_adv, delta) if comp == "advanced" else (eps_basic, 0.0)
        self.privacy_ = PrivacySpend(
            stage="fit_weights", mechanism="exponential mechanism x T (Private Post-GAN Boosting)",
            epsilon=float(min(claimed_eps, epsilon)), delta=float(claimed_delta),
            sensitivity={"score": "U(phi, D_j) = mean_i D_j(x_i) + sum_b phi(b)(1 - D_j(b)), D_j in [0, 1]",
                         "delta_U": sens}, neighbours=rows.neighbours,
            noise={"distribution": "exponential mechanism", "epsilon_per_round": eps0, "rounds": self.rounds},
            accountant=f"{comp} composition of T exponential mechanisms",
            reads_private=("train",), basis="",
            details={"method": "pgb", "basic_composition_epsilon": eps_basic,
                     "advanced_composition_epsilon": eps_adv, "advanced_composition_delta": delta,
                     "eta": eta, "n_discriminators": len(discriminators), "n_synthetic": B,
                     "selections": [int(c) for c in picks], "loss": discriminators.loss,
                     "budget_epsilon": float(epsilon), "budget_delta": float(delta)},
            rdp=({"kind": "pure", "epsilon": eps0, "count": self.rounds, "about": "exponential mechanism"},))
        return self


def make_gan_weights(method: str, **params):
    from dpiw import registry

    entry = registry.weight_method(method)
    if entry.family != "gan":
        known = ", ".join(registry.weight_names(family="gan"))
        raise DpiwError(f"{method!r} is not a GAN weight method; GAN ones: {known}")
    return registry.load(entry.estimator)(**params)


