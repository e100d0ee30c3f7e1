"""MLP and DP-MLP weights: a small real-vs-synthetic classifier, log w = logit + log(N_G/N_D).

DP-MLP is the paper's Algorithm 1 ("relaxed DP-SGD"), as docs/method.md describes it: every step Poisson-samples
each of the N_D + N_G rows with q = L / (N_D + N_G); every sampled row's per-example gradient (synthetic
rows too) is clipped to C; ONE draw of N(0, sigma^2 C^2 I) is added to the sum, always (not per
private row); the result is divided by L. Only the private rows make it a privacy question, and the
sample rate the accountant sees is q over all rows, which is why it is cheaper than DP-SGD on D alone.
sigma comes from opacus's accountant (rdp | prv) for (q, T = ceil(epochs / q)) and the weight budget,
with the add/remove -> replace-one conversion of :mod:`dpiw.sdgp.dpsgd`.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from dpiw import DpiwError
from dpiw._docs import WEIGHTS_FIT, WEIGHTS_LOG_RATIO, shared_doc
from dpiw.privacy.neighbours import RowCount
from dpiw.privacy.spend import PrivacySpend
from dpiw.sdgp import dpsgd
from dpiw.weights.estimators import log_prior_odds


def classifier(d_in: int, hidden: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(d_in, hidden), nn.LeakyReLU(0.2), nn.Linear(hidden, hidden), nn.LeakyReLU(0.2),
                         nn.Linear(hidden, 1))


def clipped_gradient_sum(net: nn.Sequential, xb: torch.Tensor, yb: torch.Tensor, max_grad_norm: float
                         ) -> list[torch.Tensor]:
    """Sum over the batch of every row's loss gradient clipped to L2 norm ``max_grad_norm``, one tensor per
    parameter of ``net`` (a stack of Linear layers and elementwise activations), without materialising a
    per-row gradient ("ghost clipping"): for a Linear layer the row's weight gradient is the outer product
    g_i a_i^T of the gradient at its output and its input, so its norm is |g_i| |a_i| and the clipped sum is
    (c * G)^T A. Clip factors as opacus computes them: min(1, C / (|grad_i| + 1e-6))."""
    inputs, outputs, h = [], [], xb
    for layer in net:
        if isinstance(layer, nn.Linear):
            inputs.append(h)
            h = layer(h)
            outputs.append(h)
        else:
            h = layer(h)
    if len(xb) == 0:
        return [torch.zeros_like(p) for p in net.parameters()]
    loss = F.binary_cross_entropy_with_logits(h[:, 0], yb, reduction="sum")
    backprops = torch.autograd.grad(loss, outputs)  # row i's gradient at each layer's output (rows independent)
    with torch.no_grad():
        inputs = [a.detach() for a in inputs]
        sq_norm = sum((g * g).sum(1) * ((a * a).sum(1) + 1.0) for g, a in zip(backprops, inputs, strict=True))
        clip = (max_grad_norm / (sq_norm.sqrt() + 1e-6)).clamp(max=1.0)
        grads = []
        for g, a in zip(backprops, inputs, strict=True):
            gc = g * clip[:, None]
            grads += [gc.T @ a, gc.sum(0)]  # weight, bias: the order of nn.Linear.parameters()
    return grads


class ClassifierStep:
    """One step on a Poisson batch: plain (sum of losses / L) or DP (clip every row's gradient to C, sum,
    add ONE draw of N(0, sigma^2 C^2 I), / L). The DP step equals opacus's GradSampleModule + DPOptimizer
    (noise drawn the same way, parameter by parameter, from ``noise_generator``) at a third of its cost:
    the clipped sum comes from :func:`clipped_gradient_sum`. The steps are accounted by opacus's accountant."""

    def __init__(self, net: nn.Module, *, private: bool, lr: float, expected_batch_size: int,
                 noise_multiplier: float = 0.0, max_grad_norm: float = 1.0, sample_rate: float = 0.0,
                 accountant: str = "rdp", noise_generator: torch.Generator | None = None,
                 weight_decay: float = 0.0):
        if private and not all(isinstance(m, nn.Linear | nn.LeakyReLU | nn.ReLU | nn.Tanh) for m in net):
            raise DpiwError("the DP classifier step supports stacks of Linear layers and activations only")
        self.private, self.L = private, float(expected_batch_size)
        self.noise_multiplier, self.sample_rate, self.steps = noise_multiplier, sample_rate, 0
        self.max_grad_norm, self.generator = max_grad_norm, noise_generator
        self.module, self.optimizer = net, torch.optim.Adam(net.parameters(), lr=lr, weight_decay=weight_decay)
        self.accountant = dpsgd.make_accountant(accountant) if private else None

    @property
    def network(self) -> nn.Module:
        return self.module

    def parameters(self):
        return list(self.module.parameters())

    def gradient(self, xb: torch.Tensor, yb: torch.Tensor) -> None:
        self.optimizer.zero_grad(set_to_none=True)
        if not self.private:
            loss = F.binary_cross_entropy_with_logits(self.module(xb)[:, 0], yb, reduction="sum")
            loss.backward()
            for p in self.parameters():
                p.grad = p.grad / self.L
            return
        std = self.noise_multiplier * self.max_grad_norm
        summed = clipped_gradient_sum(self.module, xb, yb, self.max_grad_norm)
        for p, g in zip(self.parameters(), summed, strict=True):
            noise = torch.normal(mean=0.0, std=std, size=p.shape, generator=self.generator)  # always, once
            p.grad = (g.detach() + noise) / self.L
        self.accountant.step(noise_multiplier=self.noise_multiplier, sample_rate=self.sample_rate)
        self.steps += 1

    def step(self, xb, yb) -> None:
        self.gradient(xb, yb)
        self.optimizer.step()


class MLPWeights:
    """Non-private MLP classifier weights (``private=False``) or DP-MLP (``private=True``).

    Parameters
    ----------
    private : bool
        DP-MLP (relaxed DP-SGD, spends the weight budget) or the non-private reference ``mlp``.
    hidden, epochs, batch_size, lr : int, int, int, float
        Width of both hidden layers, passes over the N_D + N_G rows, expected Poisson batch, Adam's step size.
    max_grad_norm : float
        DP-MLP's per-row clipping norm C.
    accountant : {"rdp", "prv"}
        The opacus accountant that calibrates DP-MLP's noise multiplier.
    weight_decay : float
        The non-private ``mlp``'s own L2 penalty (Adam's ``weight_decay``): the reference for what classifier
        weights can do is a regularised fit, not DP-MLP without its noise. DP-MLP does not use it (clipping
        and noise regularise it).
    """

    def __init__(self, *, private: bool = False, hidden: int = 32, epochs: int = 20, batch_size: int = 64,
                 lr: float = 1e-3, max_grad_norm: float = 1.0, accountant: str = "rdp", weight_decay: float = 0.0,
                 neighbours: str = "replace_one"):
        for name, v in (("hidden", hidden), ("epochs", epochs), ("batch_size", batch_size)):
            if not (isinstance(v, int) and v >= 1):
                raise DpiwError(f"weights.mlp.{name} must be an integer >= 1, got {v!r}")
        if accountant not in dpsgd.ACCOUNTANTS:
            raise DpiwError(f"weights.mlp.accountant must be one of {dpsgd.ACCOUNTANTS}, got {accountant!r}")
        self.private, self.hidden, self.epochs, self.batch_size = private, hidden, epochs, batch_size
        if not (isinstance(weight_decay, int | float) and 0 <= weight_decay < math.inf):
            raise DpiwError(f"weights.mlp.weight_decay must be a number >= 0, got {weight_decay!r}")
        self.lr, self.max_grad_norm, self.accountant = lr, max_grad_norm, accountant
        self.weight_decay = 0.0 if private else float(weight_decay)
        self.neighbours = neighbours  # DP-SGD's calibration (dpsgd.NEIGHBOURS; privacy.dpsgd_neighbours)
        self.method = "dp_mlp" if private else "mlp"

    @shared_doc(WEIGHTS_FIT)
    def fit(self, X_real, X_synth, *, epsilon, delta, rng, norm_bound=None, rows: RowCount | None = None):
        rows = rows or RowCount.exact(len(X_real))
        n_d, n_g = rows.n, len(X_synth)  # N_D: public under replace-one, the noisy count under add/remove
        n_rows = len(X_real) + n_g
        n = n_d + n_g
        L = min(self.batch_size, n)
        q = L / n
        T = math.ceil(self.epochs / q)
        seeds = rng.integers(0, 2**62, size=3)
        gen = torch.Generator().manual_seed(int(seeds[0]))
        sigma = 0.0
        if self.private:
            if not (epsilon > 0):
                raise DpiwError("dp_mlp needs a positive weight budget (privacy.weights_epsilon_fraction)")
            sigma = dpsgd.calibrate_noise(epsilon=epsilon, delta=delta, sample_rate=q, steps=T,
                                          accountant=self.accountant, hint="lower weights.mlp.epochs",
                                          neighbours=self.neighbours)
        with torch.random.fork_rng():
            torch.manual_seed(int(seeds[1]))
            net = classifier(X_real.shape[1], self.hidden)
        step = ClassifierStep(net, private=self.private, lr=self.lr, expected_batch_size=L, noise_multiplier=sigma,
                              max_grad_norm=self.max_grad_norm, sample_rate=q, accountant=self.accountant,
                              noise_generator=torch.Generator().manual_seed(int(seeds[2])),
                              weight_decay=self.weight_decay)
        X = dpsgd.as_tensor(np.vstack([X_real, X_synth]))
        y = torch.cat([torch.ones(len(X_real)), torch.zeros(n_g)])
        for _ in range(T):
            mask = dpsgd.poisson_mask(n_rows, q, gen)
            step.step(X[mask], y[mask])
        self.net_ = step.network.eval()
        self.log_prior_odds_ = log_prior_odds(n_d, n_g)
        details = {"method": self.method, "hidden": self.hidden, "epochs": self.epochs, "steps": T,
                   "expected_batch_size": L, "sample_rate": q, "lr": self.lr,
                   "weight_decay": self.weight_decay, "n_real": n_d, "n_synth": n_g}
        if not self.private:
            self.privacy_ = PrivacySpend(stage="fit_weights", mechanism="none (non-private MLP classifier)",
                                         epsilon=None, delta=None, dp=False, reads_private=("train",),
                                         basis="non-private baseline: classifier trained on the private rows "
                                         "without noise", details=details, neighbours=rows.neighbours)
            return self
        if step.steps != T:
            raise AssertionError(f"stepped {step.steps} times, accounted for {T}")
        eps_ro, delta_ro, eps_ar, delta_ar = dpsgd.spent(step.accountant, delta, epsilon, self.neighbours)
        details.update({"add_remove_epsilon": eps_ar, "add_remove_delta": delta_ar})
        self.privacy_ = PrivacySpend(
            stage="fit_weights", mechanism="relaxed DP-SGD (Poisson over real + synthetic rows, Gaussian)",
            epsilon=float(eps_ro), delta=float(delta_ro),
            sensitivity={"per_example_clip_norm": self.max_grad_norm,
                         "dpsgd_accounting": "replace-one, from add/remove-one accounting by group privacy (k=2)"
                         if self.neighbours == "replace_one" else "add/remove-one (opacus's accounting as it is)"},
            neighbours=rows.neighbours,
            noise={"distribution": "gaussian", "noise_multiplier": sigma, "std": sigma * self.max_grad_norm,
                   "per_step": "one draw per step, always", "sample_rate": q, "steps": T},
            accountant=dpsgd.accountant_name(self.accountant, self.neighbours), reads_private=("train",),
            details=details, rdp=(dpsgd.rdp_event(q, sigma, T, self.neighbours),))
        return self

    @shared_doc(WEIGHTS_LOG_RATIO)
    def log_ratio(self, X):
        with torch.no_grad():
            logits = self.net_(dpsgd.as_tensor(X))[:, 0].numpy().astype(float)
        return logits + self.log_prior_odds_


def mlp(**params) -> MLPWeights:
    """The registry's factory of the non-private MLP weights."""
    return MLPWeights(private=False, **params)


def dp_mlp(**params) -> MLPWeights:
    """The registry's factory of the DP-SGD MLP weights."""
    return MLPWeights(private=True, **params)
