"""DP-SGD for a GAN discriminator (opacus 1.6), with the public fake rows added after the noise.

Only the discriminator touches private rows. One discriminator step:

1. Poisson-sample the private rows with rate q = L / N (the caller does it, :func:`poisson_mask`);
2. per-example gradients of the real rows' loss (opacus ``GradSampleModule``, ``loss_reduction="sum"``),
   clipped to C, summed, plus ONE draw of N(0, sigma^2 C^2 I) (``DPOptimizer.pre_step``), divided by
   the expected batch size L;
3. the gradient of the fake rows' mean loss, computed with the per-sample hooks switched off
   (public rows: neither clipped nor noised) and added to ``p.grad`` AFTER ``pre_step`` -- adding it
   before would let opacus's noise step overwrite it;
4. one step of the wrapped optimiser (``original_optimizer.step``): ``DPOptimizer.step`` is never
   called, so a batch is charged exactly once, and the accountant is stepped once here.

Neighbouring datasets in dpiw are *replace-one* (the Laplace mechanisms, BetaNoised, PGB).
opacus accounts for *add/remove-one*. By group privacy (a replacement is one removal and one
addition), (e', d')-DP under add/remove gives (2e', (1 + e^e') d')-DP under replace-one, so the noise
multiplier is calibrated to e' = eps/2, d' = delta/(1 + e^(eps/2)) and the record states both.
"""

from __future__ import annotations

import contextlib
import functools
import math
import warnings

import numpy as np
import torch
from torch import nn

from dpiw import DpiwError

ACCOUNTANTS = ("rdp", "prv")
#: the neighbouring relations DP-SGD can be calibrated for: dpiw's replace-one (through group privacy), or
#: opacus's own add/remove-one (the paper-accounting ablation: NOT the replace-one guarantee dpiw claims)
NEIGHBOURS = ("replace_one", "add_remove")
#: Noise multipliers above this leave no gradient signal (std 1000x the clip norm per step): refused as a
#: budget too small for the run rather than trained into noise (the default grid reaches 160).
MAX_NOISE_MULTIPLIER = 1000.0
#: RDP orders: opacus's defaults stop at 63, which cannot certify epsilon below ~log(1/delta)/62 (0.15 at
#: delta = 1e-4); the weight share of a run at eps = 1 is 0.1. Larger orders lift that floor.
RDP_ALPHAS = [1 + x / 10.0 for x in range(1, 100)] + list(range(12, 64)) + [round(64 * 2 ** (k / 4)) for k in range(17)]


def add_remove_target(epsilon: float, delta: float) -> tuple[float, float]:
    """The add/remove-one target whose group-privacy image (k=2) is replace-one (epsilon, delta).

    >>> e, d = add_remove_target(2.0, 1e-5)
    >>> e, round(d * (1 + math.exp(1.0)), 12)
    (1.0, 1e-05)
    """
    return epsilon / 2.0, delta / (1.0 + math.exp(epsilon / 2.0))


def replace_one(eps_add_remove: float, delta_add_remove: float) -> tuple[float, float]:
    """Group privacy for a replacement (k = 2): (2e, (1 + e^e) d)."""
    return 2.0 * eps_add_remove, (1.0 + math.exp(eps_add_remove)) * delta_add_remove


def make_accountant(name: str):
    from opacus.accountants import create_accountant

    if name not in ACCOUNTANTS:
        raise DpiwError(f"sdgp.gan.accountant must be one of {ACCOUNTANTS}, got {name!r}")
    return create_accountant(mechanism=name)


def _orders(accountant: str) -> dict:
    return {"alphas": RDP_ALPHAS} if accountant == "rdp" else {}


def _target(epsilon: float, delta: float, neighbours: str) -> tuple[float, float]:
    """The add/remove-one (epsilon, delta) that opacus's accountant is asked for."""
    if neighbours not in NEIGHBOURS:
        raise DpiwError(f"DP-SGD neighbours must be one of {NEIGHBOURS}, got {neighbours!r}")
    return add_remove_target(epsilon, delta) if neighbours == "replace_one" else (epsilon, delta)


def calibrate_noise(*, epsilon: float, delta: float, sample_rate: float, steps: int, accountant: str,
                    hint: str = "lower sdgp.gan.steps", neighbours: str = "replace_one") -> float:
    """Smallest noise multiplier (opacus search, tolerance 0.01) meeting (epsilon, delta) for ``neighbours``
    (replace-one: through :func:`add_remove_target`; add/remove: opacus's target as it is)."""
    if not (epsilon > 0 and 0 < delta < 1):
        raise DpiwError(f"DP-SGD needs epsilon > 0 and 0 < delta < 1, got epsilon={epsilon}, delta={delta}; "
                        "set privacy.delta to a positive number, 'auto' or 'paper'")
    eps_ar, delta_ar = _target(epsilon, delta, neighbours)
    try:
        sigma = _noise_multiplier(eps_ar, delta_ar, float(sample_rate), int(steps), accountant)
    except ValueError as exc:
        raise DpiwError(f"DP-SGD cannot meet epsilon={epsilon:g}, delta={delta:g} with sample rate "
                        f"{sample_rate:.4g} and {steps} steps ({exc}); {hint} or raise the budget") from exc
    if sigma > MAX_NOISE_MULTIPLIER:
        raise DpiwError(f"budget too small for DP-SGD: epsilon={epsilon:g} with sample rate {sample_rate:.4g} and "
                        f"{steps} steps needs noise multiplier {sigma:.4g} > {MAX_NOISE_MULTIPLIER:g} (the noise would "
                        f"drown every gradient); raise the budget or {hint}")
    return sigma


# The accountant's answers are pure functions of their arguments and cost seconds (opacus's RDP series at
# fractional orders is plain Python); a cell job fits every seed of one dataset with the same sample rate,
# steps and budget, so each is computed once per process.
@functools.lru_cache(maxsize=256)
def _noise_multiplier(eps_ar: float, delta_ar: float, sample_rate: float, steps: int, accountant: str) -> float:
    from opacus.accountants.utils import get_noise_multiplier

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(get_noise_multiplier(target_epsilon=eps_ar, target_delta=delta_ar, sample_rate=sample_rate,
                                          steps=steps, accountant=accountant, epsilon_tolerance=0.01,
                                          **_orders(accountant)))


@functools.lru_cache(maxsize=256)
def _history_epsilon(mechanism: str, history: tuple, delta_ar: float) -> float:
    """Add/remove epsilon of an accountant history (opacus's (noise multiplier, sample rate, steps) list)."""
    accountant = make_accountant(mechanism)
    accountant.history = list(history)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # the conversion (Balle et al. 2020) can go below 0 for a nearly flat curve: (0, delta) then holds
        return max(0.0, float(accountant.get_epsilon(delta=delta_ar, **_orders(mechanism))))


def spent(accountant, delta: float, epsilon_target: float, neighbours: str = "replace_one"
          ) -> tuple[float, float, float, float]:
    """(epsilon, delta for ``neighbours``, add/remove epsilon, add/remove delta) of an accountant's history."""
    _, delta_ar = _target(epsilon_target, delta, neighbours)
    eps_ar = _history_epsilon(accountant.mechanism(), tuple(map(tuple, accountant.history)), delta_ar)
    eps, dlt = replace_one(eps_ar, delta_ar) if neighbours == "replace_one" else (eps_ar, delta_ar)
    return eps, dlt, eps_ar, delta_ar


def rdp_event(sample_rate: float, noise_multiplier: float, steps: int, neighbours: str = "replace_one") -> dict:
    """The run's RDP event for ``steps`` DP-SGD steps (dpiw.privacy.accounting), for ``neighbours``."""
    from dpiw.privacy import accounting

    if neighbours == "replace_one":
        curve = accounting.poisson_gaussian_replace_one(sample_rate, noise_multiplier, steps)
        how = "replace-one by the weak triangle inequality"
    else:
        curve = accounting.poisson_gaussian_add_remove(sample_rate, noise_multiplier, steps)
        how = "add/remove-one (opacus's curve)"
    return accounting.curve_event(curve, about=f"DP-SGD: q={sample_rate:.6g}, sigma={noise_multiplier:.6g}, "
                                                f"steps={steps}, {how}")



def accountant_name(accountant: str, neighbours: str) -> str:
    """How a DP-SGD record's epsilon was computed, in words."""
    return (f"opacus {accountant} (add/remove-one)"
            + (" + group privacy k=2" if neighbours == "replace_one" else ", no replace-one conversion"))


def poisson_mask(n: int, q: float, gen: torch.Generator) -> torch.Tensor:
    """Each of n rows independently with probability q (the sampling opacus's accountant assumes)."""
    return torch.rand(n, generator=gen) < q


class DiscriminatorStep:
    """Gradient and step of a discriminator on private real rows + public fake rows.

    ``real_loss(out)`` and ``fake_loss(out)`` map the network's (n, 1) output to per-row losses.
    With ``private=False`` the same objective is minimised with plain autograd:
    sum(real losses) / L + mean(fake losses).
    """

    def __init__(self, module: nn.Module, *, private: bool, lr: float, betas=(0.5, 0.9), expected_batch_size: int,
                 noise_multiplier: float = 0.0, max_grad_norm: float = 1.0, sample_rate: float = 0.0,
                 accountant: str = "rdp", noise_generator: torch.Generator | None = None):
        self.private = private
        self.L = float(expected_batch_size)
        self.sample_rate = sample_rate
        self.noise_multiplier = noise_multiplier
        self.steps = 0
        if private:
            from opacus import GradSampleModule
            from opacus.optimizers import DPOptimizer

            self.module = GradSampleModule(module, loss_reduction="sum")
            base = torch.optim.Adam(self.module.parameters(), lr=lr, betas=betas)
            self.optimizer = DPOptimizer(base, noise_multiplier=noise_multiplier, max_grad_norm=max_grad_norm,
                                         expected_batch_size=expected_batch_size, loss_reduction="sum",
                                         generator=noise_generator)
            self.accountant = make_accountant(accountant)
        else:
            self.module = module
            self.optimizer = torch.optim.Adam(module.parameters(), lr=lr, betas=betas)
            self.accountant = None

    @property
    def network(self) -> nn.Module:
        """The plain network (unwrapped), e.g. for state_dict snapshots."""
        return self.module._module if self.private else self.module

    def parameters(self):
        return [p for p in self.module.parameters() if p.requires_grad]

    @contextlib.contextmanager
    def public(self):
        """Forward passes on public inputs: no per-sample gradients recorded."""
        if not self.private:
            yield self.module
            return
        self.module.disable_hooks()
        try:
            yield self.module
        finally:
            self.module.enable_hooks()

    def _fake_gradient(self, x_fake, fake_loss):
        with self.public() as net, quiet_hooks():
            loss = fake_loss(net(x_fake)).mean()
            return torch.autograd.grad(loss, self.parameters())

    def gradient(self, x_real: torch.Tensor, x_fake: torch.Tensor, real_loss, fake_loss) -> None:
        """Set p.grad of every parameter to this step's (noisy, for private) gradient; no optimiser step."""
        params = self.parameters()
        if not self.private:
            self.optimizer.zero_grad(set_to_none=True)
            loss = real_loss(self.module(x_real)).sum() / self.L + fake_loss(self.module(x_fake)).mean()
            loss.backward()
            return
        self.optimizer.zero_grad(set_to_none=True)  # clears grad, grad_sample and summed_grad
        with quiet_hooks():
            real_loss(self.module(x_real)).sum().backward()  # per-example grads (an empty batch gives 0 rows)
        self.optimizer.pre_step()  # clip, sum, ONE noise draw -> p.grad
        self.accountant.step(noise_multiplier=self.noise_multiplier, sample_rate=self.sample_rate)
        self.steps += 1
        fake = self._fake_gradient(x_fake, fake_loss)
        for p, g in zip(params, fake, strict=True):
            p.grad = p.grad / self.L + g  # public part added after the noise step

    def step(self, x_real, x_fake, real_loss, fake_loss) -> None:
        self.gradient(x_real, x_fake, real_loss, fake_loss)
        (self.optimizer.original_optimizer if self.private else self.optimizer).step()


@contextlib.contextmanager
def quiet_hooks():
    """torch warns that opacus's full backward hooks fire although the inputs need no gradient: expected."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Full backward hook is firing")
        yield


def clamp_(module: nn.Module, c: float) -> None:
    """WGAN weight clipping (post-processing of the released parameters)."""
    with torch.no_grad():
        for p in module.parameters():
            p.clamp_(-c, c)


def as_tensor(x: np.ndarray) -> torch.Tensor:
    return torch.as_tensor(np.ascontiguousarray(x, dtype=np.float32))
