"""The GAN family: DPGAN, DPCGAN and their non-private twins GAN and CGAN.

- ``dpgan`` (Xie et al. 2018): a WGAN whose critic is trained with DP-SGD (:mod:`dpiw.sdgp.dpsgd`),
  weight clipping on the critic, ``n_critic`` critic steps per generator step.
- ``dpcgan`` (Torkzadehmahani et al. 2019): a conditional GAN with a sigmoid discriminator trained
  with DP-SGD; the generator's conditions are drawn from a Laplace-noised histogram of the target
  (a numeric target is cut into public bins), which spends ``label_epsilon_fraction`` of the budget.
- ``gan`` / ``cgan``: the same networks, losses and sampling, without clipping or noise (not DP).

The generator never sees a private row: its loss is a function of its own noise, the public
conditions and the (DP) discriminator's parameters. No BatchNorm/GroupNorm anywhere: per-example
gradients need row-independent layers, and GroupNorm collapses tabular outputs.

The last ``keep_last`` generators and discriminators (every ``snapshot_every`` generator steps at the
end of training) are kept: :meth:`GanSDGP.sample` draws N_G rows evenly from them (the set B of
Private Post-GAN Boosting; keep_last=1 is the plain last generator) and :meth:`GanSDGP.models` is
what the `discriminator`, `pgb` and `drs` weight methods load
(:mod:`dpiw.sdgp.gan_models`, numpy only).
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd
import torch
from torch import nn
from torch.nn import functional as F

from dpiw import DpiwError
from dpiw._docs import SDGP_FIT, SDGP_SAMPLE, shared_doc
from dpiw.data.schema import Schema
from dpiw.privacy.neighbours import RowCount, count_l1
from dpiw.privacy.spend import PrivacySpend
from dpiw.sdgp import dpsgd
from dpiw.sdgp.gan_space import GanSpace

#: variant -> (loss, private, conditional)
VARIANTS = {"dpgan": ("wgan", True, False), "gan": ("wgan", False, False),
            "dpcgan": ("cgan", True, True), "cgan": ("cgan", False, True)}


def mlp(d_in: int, hidden: int, d_out: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(d_in, hidden), nn.LeakyReLU(0.2), nn.Linear(hidden, hidden), nn.LeakyReLU(0.2),
                         nn.Linear(hidden, d_out))


class Generator(nn.Module):
    """z (+ one-hot condition) -> blocks: sigmoid for numeric, (Gumbel-)softmax for categorical."""

    def __init__(self, space: GanSpace, noise_dim: int, hidden: int):
        super().__init__()
        self.space, self.noise_dim = space, noise_dim
        self.net = mlp(noise_dim + space.n_conditions, hidden, space.width)

    def forward(self, z: torch.Tensor, cond: torch.Tensor | None, *, tau: float | None = None,
                gen: torch.Generator | None = None) -> torch.Tensor:
        """Generated blocks; ``tau`` set: categorical blocks relaxed by Gumbel-softmax (training),
        else their softmax probabilities (sampled later by the caller)."""
        h = self.net(torch.cat([z, cond], dim=1) if cond is not None else z)
        parts = []
        for b, sl in self.space.slices():
            logits = h[:, sl]
            if b.kind == "numeric":
                parts.append(torch.sigmoid(logits))
            elif tau is None:
                parts.append(F.softmax(logits, dim=1))
            else:
                u = torch.rand(logits.shape, generator=gen).clamp_(1e-10, 1 - 1e-7)
                parts.append(F.softmax((logits - torch.log(-torch.log(u))) / tau, dim=1))
        return torch.cat(parts, dim=1)


def _losses(kind: str):
    """(real per-row loss, fake per-row loss, generator per-row loss) on the discriminator output."""
    if kind == "wgan":  # critic maximises E f(real) - E f(fake)
        return (lambda o: -o[:, 0]), (lambda o: o[:, 0]), (lambda o: -o[:, 0])
    return (lambda o: F.softplus(-o[:, 0])), (lambda o: F.softplus(o[:, 0])), (lambda o: F.softplus(-o[:, 0]))


class GanSDGP:
    """One of :data:`VARIANTS`; see the module docstring. Hyper-parameters are public."""

    def __init__(self, *, variant: str, hidden: int = 64, noise_dim: int = 16, steps: int = 300,
                 batch_size: int = 64, lr: float = 1e-3, n_critic: int = 5, weight_clip: float = 0.1,
                 max_grad_norm: float = 1.0, keep_last: int = 5, snapshot_every: int = 10, accountant: str = "rdp",
                 label_epsilon_fraction: float = 0.05, condition_bins: int = 4, gumbel_tau: float = 0.2,
                 progress: bool = True, neighbours: str = "replace_one"):
        if variant not in VARIANTS:
            raise DpiwError(f"unknown GAN variant {variant!r}; known: {sorted(VARIANTS)}")
        self.variant = variant
        self.kind, self.private, self.conditional = VARIANTS[variant]
        self.hidden, self.noise_dim, self.steps, self.batch_size = hidden, noise_dim, steps, batch_size
        self.lr, self.n_critic, self.weight_clip, self.max_grad_norm = lr, n_critic, weight_clip, max_grad_norm
        self.keep_last, self.snapshot_every, self.accountant = keep_last, snapshot_every, accountant
        self.label_epsilon_fraction, self.condition_bins, self.gumbel_tau = (label_epsilon_fraction, condition_bins,
                                                                             gumbel_tau)
        self.progress = progress
        self.neighbours = neighbours  # DP-SGD's calibration (dpsgd.NEIGHBOURS); add_remove: the paper ablation

    # -- checks ------------------------------------------------------------------------------
    def _check(self, n: int, schema: Schema) -> None:
        for name, v, lo in (("hidden", self.hidden, 1), ("noise_dim", self.noise_dim, 1), ("steps", self.steps, 1),
                            ("batch_size", self.batch_size, 1), ("keep_last", self.keep_last, 1),
                            ("snapshot_every", self.snapshot_every, 1), ("n_critic", self.n_critic, 1)):
            if not (isinstance(v, int) and v >= lo):
                raise DpiwError(f"sdgp.gan.{name} must be an integer >= {lo}, got {v!r}")
        if (self.keep_last - 1) * self.snapshot_every >= self.steps:
            raise DpiwError(f"sdgp.gan: keep_last={self.keep_last} snapshots every {self.snapshot_every} steps need "
                            f"more than {(self.keep_last - 1) * self.snapshot_every} generator steps, got "
                            f"steps={self.steps}")
        if self.accountant not in dpsgd.ACCOUNTANTS:
            raise DpiwError(f"sdgp.gan.accountant must be one of {dpsgd.ACCOUNTANTS}, got {self.accountant!r}")
        if self.private and not (0 < self.label_epsilon_fraction < 1):
            raise DpiwError("sdgp.gan.label_epsilon_fraction must lie strictly between 0 and 1")
        if n < 2:
            raise DpiwError(f"GAN {self.variant}: needs at least 2 training rows, got {n}")
        if self.conditional and schema.target is None:
            raise DpiwError(f"GAN {self.variant} conditions on the target, but schema '{schema.name}' has none")

    def _d_steps(self) -> int:
        return self.steps * (self.n_critic if self.kind == "wgan" else 1)

    # -- fitting -----------------------------------------------------------------------------
    @shared_doc(SDGP_FIT, "``on_generator_step(info)`` (tests) sees each generator step; ``rows.n`` sets the "
                "Poisson sampling rate q = L / n.")
    def fit(self, train: pd.DataFrame, schema: Schema, *, epsilon: float, delta: float,
            rng: np.random.Generator, on_generator_step=None, rows: RowCount | None = None) -> GanSDGP:
        n = len(train)
        self._check(n, schema)
        rows = rows or RowCount.exact(n)
        self.rows_ = rows
        space = GanSpace(schema, conditional=self.conditional, condition_bins=self.condition_bins)
        self.space_, self.schema_ = space, schema
        L = min(self.batch_size, max(1, rows.n // 2))  # public: N_D or, under add/remove, its noisy count
        q = min(1.0, L / rows.n)
        T = self._d_steps()
        seeds = rng.integers(0, 2**62, size=4)
        gen = torch.Generator().manual_seed(int(seeds[0]))
        noise_gen = torch.Generator().manual_seed(int(seeds[1]))

        eps_label, eps_sgd = 0.0, epsilon
        cond_counts = None
        cond_real = space.conditions(train)
        if self.conditional:
            counts = np.bincount(cond_real, minlength=space.n_conditions).astype(float)
            if self.private:  # Laplace histogram of the conditions (L1 sensitivity 2 replace-one, 1 add/remove)
                eps_label = epsilon * self.label_epsilon_fraction
                eps_sgd = epsilon - eps_label
                counts = counts + rng.laplace(0.0, count_l1(rows.neighbours) / eps_label, size=counts.shape)
            cond_counts = counts
            p = np.clip(counts, 0.0, None)
            self.cond_probs_ = p / p.sum() if p.sum() > 0 else np.full(len(p), 1.0 / len(p))
        else:
            self.cond_probs_ = None

        sigma = 0.0
        if self.private:
            sigma = dpsgd.calibrate_noise(epsilon=eps_sgd, delta=delta, sample_rate=q, steps=T,
                                          accountant=self.accountant, neighbours=self.neighbours)
        with torch.random.fork_rng():
            torch.manual_seed(int(seeds[2]))
            G = Generator(space, self.noise_dim, self.hidden)
            D = mlp(space.d_input, self.hidden, 1)
        d_step = dpsgd.DiscriminatorStep(D, private=self.private, lr=self.lr, expected_batch_size=L,
                                         noise_multiplier=sigma, max_grad_norm=self.max_grad_norm, sample_rate=q,
                                         accountant=self.accountant, noise_generator=noise_gen)
        g_opt = torch.optim.Adam(G.parameters(), lr=self.lr, betas=(0.5, 0.9))
        real_loss, fake_loss, gen_loss = _losses(self.kind)
        x_real = dpsgd.as_tensor(space.discriminator_input(train))
        cond_t = torch.as_tensor(self.cond_probs_, dtype=torch.float32) if self.conditional else None

        def fake_batch(m: int, *, tau: float | None):
            z = torch.randn(m, self.noise_dim, generator=gen)
            c = None
            if self.conditional:
                idx = torch.multinomial(cond_t, m, replacement=True, generator=gen)
                c = F.one_hot(idx, space.n_conditions).float()
            x = G(z, c, tau=tau, gen=gen)
            return torch.cat([x, c], dim=1) if c is not None else x

        snapshot_at = {self.steps - i * self.snapshot_every for i in range(self.keep_last)}
        self.generators_, self.discriminators_ = [], []
        n_critic = self.n_critic if self.kind == "wgan" else 1
        bar = _progress(self.steps, f"{self.variant} {schema.name}", self.progress)
        for g_step in range(1, self.steps + 1):
            for _ in range(n_critic):
                batch = x_real[dpsgd.poisson_mask(n, q, gen)]
                with torch.no_grad():
                    x_fake = fake_batch(L, tau=self.gumbel_tau)
                d_step.step(batch, x_fake, real_loss, fake_loss)
                if self.kind == "wgan":
                    dpsgd.clamp_(d_step.network, self.weight_clip)
            # generator step: public noise through the (DP) discriminator, hooks off
            with d_step.public() as net, dpsgd.quiet_hooks():
                x_fake = fake_batch(L, tau=self.gumbel_tau)
                loss_g = gen_loss(net(x_fake)).mean()
                grads = torch.autograd.grad(loss_g, list(G.parameters()))
            if on_generator_step is not None:
                on_generator_step({"step": g_step, "loss": loss_g, "x_real": x_real, "generator": G,
                                   "discriminator": d_step.network})
            for p, g in zip(G.parameters(), grads, strict=True):
                p.grad = g
            g_opt.step()
            if g_step in snapshot_at:
                self.generators_.append({k: v.detach().clone() for k, v in G.state_dict().items()})
                self.discriminators_.append({k: v.detach().clone() for k, v in d_step.network.state_dict().items()})
            bar.update(1)
        bar.close()
        self.discriminator_steps_ = T if self.private else d_step.steps or T
        self.privacy_ = self._record(epsilon=epsilon, delta=delta, eps_label=eps_label, eps_sgd=eps_sgd,
                                     sigma=sigma, q=q, L=L, T=T, d_step=d_step, n=n, cond_counts=cond_counts)
        return self

    def _record(self, *, epsilon, delta, eps_label, eps_sgd, sigma, q, L, T, d_step, n, cond_counts) -> PrivacySpend:
        details = {"generator": self.variant, "loss": self.kind, "n_rows": self.rows_.n, "expected_batch_size": L,
                   "sample_rate": q, "discriminator_steps": T, "generator_steps": self.steps,
                   "keep_last": self.keep_last, "snapshot_every": self.snapshot_every,
                   "hidden": self.hidden, "noise_dim": self.noise_dim, "lr": self.lr}
        if not self.private:
            return PrivacySpend(stage="synthesize", mechanism="non-private GAN training", epsilon=None, delta=None,
                                dp=False, reads_private=("train",), neighbours=self.rows_.neighbours,
                                basis=f"{self.variant} trains its discriminator on the private rows without noise",
                                details=details)
        if d_step.steps != T:
            raise AssertionError(f"discriminator stepped {d_step.steps} times, accounted for {T}")
        eps_ro, delta_ro, eps_ar, delta_ar = dpsgd.spent(d_step.accountant, delta, eps_sgd, self.neighbours)
        mech = "DP-SGD on the discriminator (Poisson-subsampled Gaussian)"
        sens = {"per_example_clip_norm": self.max_grad_norm,
                "dpsgd_accounting": "replace-one, from add/remove-one accounting by group privacy (k=2)"
                if self.neighbours == "replace_one" else "add/remove-one (opacus's accounting as it is)"}
        noise = {"distribution": "gaussian", "noise_multiplier": sigma, "std": sigma * self.max_grad_norm,
                 "per_step": "one draw per discriminator step", "sample_rate": q, "steps": T}
        details.update({"dpsgd_epsilon": eps_ro, "dpsgd_delta": delta_ro, "add_remove_epsilon": eps_ar,
                        "add_remove_delta": delta_ar, "dpsgd_epsilon_target": eps_sgd,
                        "unused_delta": float(delta - delta_ro)})
        if self.conditional:
            mech += " + Laplace histogram of the conditions"
            sens["condition_histogram_l1"] = count_l1(self.rows_.neighbours)
            noise["condition_histogram_laplace_scale"] = count_l1(self.rows_.neighbours) / eps_label
            details.update({"label_epsilon": eps_label, "condition_noisy_counts": [float(c) for c in cond_counts],
                            "n_conditions": self.space_.n_conditions})
        return PrivacySpend(stage="synthesize", mechanism=mech, epsilon=float(eps_ro + eps_label),
                            delta=float(delta_ro), sensitivity=sens, noise=noise, neighbours=self.rows_.neighbours,
                            accountant=dpsgd.accountant_name(self.accountant, self.neighbours)
                            + (" + basic composition with the Laplace histogram" if self.conditional else ""),
                            reads_private=("train",), basis="", details=details,
                            rdp=(dpsgd.rdp_event(q, sigma, T, self.neighbours),
                                 *([{"kind": "laplace", "epsilon": eps_label, "about": "condition histogram"}]
                                   if self.conditional else [])))

    # -- sampling and models -----------------------------------------------------------------
    def _generator(self, state) -> Generator:
        G = Generator(self.space_, self.noise_dim, self.hidden)
        G.load_state_dict(state)
        return G.eval()

    @shared_doc(SDGP_SAMPLE, "The rows come evenly from the last ``keep_last`` generators (oldest first), "
                "shuffled.")
    def sample(self, n: int, *, rng: np.random.Generator) -> pd.DataFrame:
        K = len(self.generators_)
        sizes = np.full(K, n // K)
        sizes[: n % K] += 1
        gen = torch.Generator().manual_seed(int(rng.integers(0, 2**62)))
        frames = []
        for k, m in enumerate(sizes):
            if m == 0:
                continue
            cond = rng.choice(self.space_.n_conditions, size=m, p=self.cond_probs_) if self.conditional else None
            with torch.no_grad():
                c = torch.as_tensor(self.space_.one_hot(cond)) if self.conditional else None
                x = self._generator(self.generators_[k])(torch.randn(int(m), self.noise_dim, generator=gen), c)
            frames.append(self.space_.decode(x.numpy(), cond, probs_rng=rng))
        out = pd.concat(frames, ignore_index=True)
        return out.iloc[rng.permutation(len(out))].reset_index(drop=True)

    def models(self) -> dict:
        """The kept generators and discriminators (numpy) with what is needed to rebuild them
        (:func:`dpiw.sdgp.gan_models.save_models` writes them)."""
        return {"variant": self.variant, "loss": self.kind, "hidden": self.hidden, "noise_dim": self.noise_dim,
                "conditional": self.conditional, "condition_bins": self.condition_bins,
                "cond_probs": None if self.cond_probs_ is None else [float(p) for p in self.cond_probs_],
                "generators": [{k: v.numpy() for k, v in g.items()} for g in self.generators_],
                "discriminators": [{k: v.numpy() for k, v in d.items()} for d in self.discriminators_]}


class _Lines:
    """stderr for tqdm when it is not a terminal (a rule's log): one line per update, no carriage returns."""

    def write(self, text: str) -> None:
        text = text.replace("\r", "").strip()
        if text:
            print(text, file=sys.stderr, flush=True)

    def flush(self) -> None:
        sys.stderr.flush()


def _progress(total: int, desc: str, enabled: bool):
    from tqdm import tqdm

    tty = sys.stderr.isatty()
    return tqdm(total=total, desc=desc, disable=not enabled, file=sys.stderr if tty else _Lines(),
                mininterval=0.1 if tty else 0, miniters=None if tty else max(1, total // 10), ascii=not tty)


def _factory(variant: str):
    def make(**params) -> GanSDGP:
        return GanSDGP(variant=variant, **params)
    make.__name__ = variant
    return make


# the registry's factories (dpiw.registry): one per variant
dpgan, dpcgan, gan, cgan = (_factory(v) for v in ("dpgan", "dpcgan", "gan", "cgan"))
