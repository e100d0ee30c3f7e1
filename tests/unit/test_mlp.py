"""MLP and DP-MLP weights: the DP step against plain autograd, the spend record against opacus, and
recovery of a known linear log ratio."""

import copy
import math

import numpy as np
import pytest
import torch

from dpiw.weights import make_estimator
from dpiw.weights.mlp import ClassifierStep, classifier


def test_dp_step_without_noise_or_clipping_is_the_plain_step():
    torch.manual_seed(0)
    net = classifier(3, 8)
    xb, yb = torch.rand(9, 3), (torch.rand(9) < 0.5).float()
    dp = ClassifierStep(copy.deepcopy(net), private=True, lr=1e-2, expected_batch_size=8, noise_multiplier=0.0,
                        max_grad_norm=1e12, sample_rate=0.1)
    plain = ClassifierStep(copy.deepcopy(net), private=False, lr=1e-2, expected_batch_size=8)
    for _ in range(3):  # the updates too, not only the first gradient
        dp.gradient(xb, yb)
        plain.gradient(xb, yb)
        for a, b in zip(dp.parameters(), plain.parameters(), strict=True):
            torch.testing.assert_close(a.grad, b.grad, rtol=1e-5, atol=1e-7)
        dp.optimizer.step()
        plain.optimizer.step()
    for a, b in zip(dp.network.parameters(), plain.network.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_dp_step_equals_opacus_dp_sgd_step_for_step():
    """The closed-form clipped sum ("ghost clipping") against opacus's per-sample gradients and
    DPOptimizer: same clipping, same noise draws (same generator), 20 Adam steps on Poisson batches, with
    rows clipped (small C) and an empty batch among them."""
    from opacus import GradSampleModule
    from opacus.optimizers import DPOptimizer

    from dpiw.sdgp import dpsgd

    torch.manual_seed(0)
    net = classifier(5, 16)
    X, y = torch.rand(200, 5), (torch.rand(200) < 0.5).float()
    sigma, C, L, q = 1.3, 0.05, 20, 0.1
    ours = ClassifierStep(copy.deepcopy(net), private=True, lr=1e-2, expected_batch_size=L, noise_multiplier=sigma,
                          max_grad_norm=C, sample_rate=q, noise_generator=torch.Generator().manual_seed(7))
    module = GradSampleModule(copy.deepcopy(net), loss_reduction="sum")
    opt = DPOptimizer(torch.optim.Adam(module.parameters(), lr=1e-2), noise_multiplier=sigma, max_grad_norm=C,
                      expected_batch_size=L, loss_reduction="sum", generator=torch.Generator().manual_seed(7))
    gen = torch.Generator().manual_seed(3)
    clipped = 0
    for step in range(20):
        mask = dpsgd.poisson_mask(200, q, gen) if step != 5 else torch.zeros(200, dtype=torch.bool)
        xb, yb = X[mask], y[mask]
        ours.step(xb, yb)
        opt.zero_grad(set_to_none=True)
        with dpsgd.quiet_hooks():
            torch.nn.functional.binary_cross_entropy_with_logits(module(xb)[:, 0], yb, reduction="sum").backward()
        if len(xb):
            norms = torch.stack([p.grad_sample.reshape(len(xb), -1).norm(dim=1) for p in module.parameters()],
                                1).norm(dim=1)
            clipped += int((norms > C).sum())
        opt.pre_step()
        for p in module.parameters():
            p.grad = p.grad / L
        opt.original_optimizer.step()
    assert clipped > 50  # the clipping is exercised
    for a, b in zip(ours.network.parameters(), module._module.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-6)


def test_noise_is_added_once_per_step_even_for_an_empty_batch():
    sigma, C, L = 3.0, 0.5, 16
    st = ClassifierStep(classifier(4, 64), private=True, lr=1e-3, expected_batch_size=L, noise_multiplier=sigma,
                        max_grad_norm=C, sample_rate=0.01, noise_generator=torch.Generator().manual_seed(0))
    st.gradient(torch.rand(0, 4), torch.zeros(0))
    g = torch.cat([p.grad.flatten() for p in st.parameters()]).numpy()
    assert abs(g.std() - sigma * C / L) < 4 * (sigma * C / L) / math.sqrt(2 * g.size)
    assert st.steps == 1


def test_dp_mlp_spend_matches_dp_accounting():
    from helpers import dp_sgd_epsilon

    r = np.random.default_rng(0)
    real, synth = r.uniform(size=(300, 3)), r.uniform(size=(200, 3))
    est = make_estimator("dp_mlp", hidden=8, epochs=2, batch_size=50).fit(real, synth, epsilon=0.5, delta=1e-4,
                                                                           rng=np.random.default_rng(1))
    rec = est.privacy_
    assert rec.noise["sample_rate"] == pytest.approx(50 / 500)  # over real + synthetic rows
    assert rec.noise["steps"] == math.ceil(2 / 0.1)
    eps_ar = rec.details["add_remove_epsilon"]  # against dp-accounting's RDP for the same steps (its own orders)
    ref = dp_sgd_epsilon(rec.noise["noise_multiplier"], rec.noise["sample_rate"], rec.noise["steps"],
                         rec.details["add_remove_delta"])
    assert ref * (1 - 1e-3) <= eps_ar <= ref * 1.015
    assert rec.epsilon == pytest.approx(2 * eps_ar, rel=1e-9) and rec.epsilon <= 0.5 * (1 + 1e-9)
    assert rec.delta == pytest.approx((1 + math.exp(eps_ar)) * rec.details["add_remove_delta"]) and rec.delta <= 1e-4
    assert np.isfinite(est.log_ratio(synth)).all()
    assert make_estimator("mlp", hidden=8, epochs=1).fit(real, synth, epsilon=0, delta=0,
                                                         rng=np.random.default_rng(0)).privacy_.dp is False


def test_logreg_and_mlp_recover_a_linear_log_ratio():
    """p_D = N(mu1, s^2 I), p_G = N(mu0, s^2 I): log p_D/p_G is linear; N = 20k each."""
    r = np.random.default_rng(0)
    mu0, mu1, s = np.array([0.45, 0.5, 0.5]), np.array([0.55, 0.45, 0.5]), 0.15
    real = r.normal(mu1, s, size=(20_000, 3))
    synth = r.normal(mu0, s, size=(20_000, 3))
    true = (synth @ (mu1 - mu0) - (mu1 @ mu1 - mu0 @ mu0) / 2) / s**2
    lr = make_estimator("logreg", lam=1e-5, sensitivity_n="private").fit(real, synth, epsilon=0, delta=0, rng=None,
                                                                        norm_bound=2.0)
    mlp = make_estimator("mlp", hidden=32, epochs=5, batch_size=256, lr=3e-3).fit(
        real, synth, epsilon=0, delta=0, rng=np.random.default_rng(0))
    for est in (lr, mlp):
        assert np.corrcoef(est.log_ratio(synth), true)[0, 1] > 0.95
