"""The GAN family: the DP discriminator step against plain autograd, the generator's isolation from the
private rows, the spend record against opacus's accountant, reproducibility, the kept models."""

import copy
import math

import numpy as np
import pandas as pd
import pytest
import torch

from dpiw.data.schema import parse_schema
from dpiw.sdgp import dpsgd, make_sdgp
from dpiw.sdgp.gan import GanSDGP, _losses, mlp
from dpiw.sdgp.gan_models import Discriminators, load_models, save_models

SMALL = dict(hidden=16, noise_dim=4, steps=12, batch_size=16, lr=2e-3, n_critic=2, keep_last=3, snapshot_every=2,
             progress=False)

SCHEMA = parse_schema({
    "name": "mix", "task": "classification", "target": "y", "provenance": "test",
    "columns": [{"name": "a", "type": "numeric", "lower": 0, "upper": 1},
                {"name": "b", "type": "numeric", "lower": 0, "upper": 1},
                {"name": "y", "type": "categorical", "categories": ["p", "q", "r"]}]})


def frame(seed: int, n: int = 120) -> pd.DataFrame:
    r = np.random.default_rng(seed)
    y = np.arange(n) % 3  # the same class counts for every seed
    return pd.DataFrame({"a": r.uniform(size=n), "b": r.beta(2, 5, size=n), "y": y})


@pytest.mark.parametrize("loss", ["wgan", "cgan"])
def test_dp_gradient_without_noise_or_clipping_is_plain_autograd(loss):
    torch.manual_seed(0)
    net = mlp(5, 8, 1)
    x_real, x_fake = torch.rand(7, 5), torch.rand(6, 5)
    real_loss, fake_loss, _ = _losses(loss)
    L = 6
    dp = dpsgd.DiscriminatorStep(copy.deepcopy(net), private=True, lr=1e-3, expected_batch_size=L,
                                 noise_multiplier=0.0, max_grad_norm=1e12, sample_rate=0.5)
    dp.gradient(x_real, x_fake, real_loss, fake_loss)
    ref = copy.deepcopy(net)
    (real_loss(ref(torch.cat([x_real]))).sum() / L + fake_loss(ref(x_fake)).mean()).backward()
    for p_dp, p_ref in zip(dp.parameters(), ref.parameters(), strict=True):
        torch.testing.assert_close(p_dp.grad, p_ref.grad, rtol=1e-5, atol=1e-6)
    plain = dpsgd.DiscriminatorStep(copy.deepcopy(net), private=False, lr=1e-3, expected_batch_size=L)
    plain.gradient(x_real, x_fake, real_loss, fake_loss)
    for p_dp, p_plain in zip(dp.parameters(), plain.parameters(), strict=True):
        torch.testing.assert_close(p_dp.grad, p_plain.grad, rtol=1e-5, atol=1e-6)


def test_fake_gradient_is_added_after_the_noise_step():
    """Clip the real rows to ~0 and add no noise: what is left must be exactly the public fake gradient
    (an implementation that adds it before opacus's pre_step loses it)."""
    torch.manual_seed(1)
    net = mlp(3, 8, 1)
    real_loss, fake_loss, _ = _losses("cgan")
    x_real, x_fake = torch.rand(5, 3), torch.rand(4, 3)
    dp = dpsgd.DiscriminatorStep(copy.deepcopy(net), private=True, lr=1e-3, expected_batch_size=4,
                                 noise_multiplier=0.0, max_grad_norm=1e-12, sample_rate=0.5)
    dp.gradient(x_real, x_fake, real_loss, fake_loss)
    ref = copy.deepcopy(net)
    fake_loss(ref(x_fake)).mean().backward()
    for p_dp, p_ref in zip(dp.parameters(), ref.parameters(), strict=True):
        torch.testing.assert_close(p_dp.grad, p_ref.grad, rtol=1e-5, atol=1e-7)
    assert dp.steps == 1  # one accountant step per discriminator step


def test_noise_is_one_draw_per_step_with_std_sigma_c_over_L():
    """Empty real batch, no fake signal: p.grad is pure noise with std sigma*C/L per coordinate."""
    net = mlp(3, 64, 1)
    gen = torch.Generator().manual_seed(3)
    sigma, C, L = 2.0, 0.5, 8
    dp = dpsgd.DiscriminatorStep(net, private=True, lr=1e-3, expected_batch_size=L, noise_multiplier=sigma,
                                 max_grad_norm=C, sample_rate=0.1, noise_generator=gen)
    zero = lambda o: 0.0 * o[:, 0]  # noqa: E731
    dp.gradient(torch.rand(0, 3), torch.rand(4, 3), zero, zero)
    g = torch.cat([p.grad.flatten() for p in dp.parameters()]).numpy()
    assert g.size > 4000
    assert abs(g.std() - sigma * C / L) < 4 * (sigma * C / L) / math.sqrt(2 * g.size)


@pytest.mark.parametrize("variant, accountant", [("dpgan", "rdp"), ("dpcgan", "rdp"), ("dpgan", "prv")])
def test_spend_record_matches_dp_accounting(variant, accountant):
    from helpers import dp_sgd_epsilon

    train = frame(0)
    eps, delta = 2.0, 1e-4
    gan = GanSDGP(variant=variant, accountant=accountant, **SMALL).fit(train, SCHEMA, epsilon=eps, delta=delta,
                                                                       rng=np.random.default_rng(0))
    rec = gan.privacy_
    d = rec.details
    assert d["discriminator_steps"] == SMALL["steps"] * (SMALL["n_critic"] if variant == "dpgan" else 1)
    assert rec.accountant.startswith(f"opacus {accountant}")
    # dp-accounting (RDP on its own orders; its PLD accountant for opacus's PRV one) for the same history: within
    # 1.5%, and at or above it for RDP (dpiw's RDP orders are a subset of a grid: never a tighter epsilon)
    eps_ar = d["add_remove_epsilon"]
    ref = dp_sgd_epsilon(rec.noise["noise_multiplier"], d["sample_rate"], d["discriminator_steps"],
                         d["add_remove_delta"], accountant="rdp" if accountant == "rdp" else "pld")
    assert eps_ar == pytest.approx(ref, rel=0.015)
    if accountant == "rdp":
        assert eps_ar >= ref * (1 - 1e-3)
    # group privacy k=2 turns add/remove-one into replace-one: (2 eps, (1 + e^eps) delta)
    assert d["dpsgd_epsilon"] == pytest.approx(2 * eps_ar, rel=1e-9)
    assert rec.delta == pytest.approx((1 + math.exp(eps_ar)) * d["add_remove_delta"], rel=1e-9)
    assert rec.delta <= delta * (1 + 1e-9)
    label_eps = d.get("label_epsilon", 0.0)
    assert rec.epsilon == pytest.approx(d["dpsgd_epsilon"] + label_eps)
    assert 0.95 * eps <= rec.epsilon <= eps * (1 + 1e-9)  # the noise is calibrated to the budget, not far below
    assert d["sample_rate"] == pytest.approx(16 / 120)
    if variant == "dpcgan":
        assert label_eps == pytest.approx(0.05 * eps)
        assert rec.noise["condition_histogram_laplace_scale"] == pytest.approx(2 / label_eps)


def test_non_private_twins_say_so():
    gan = make_sdgp("cgan", **SMALL).fit(frame(0), SCHEMA, epsilon=1.0, delta=1e-4, rng=np.random.default_rng(0))
    assert gan.privacy_.dp is False and "without noise" in gan.privacy_.basis


@pytest.mark.parametrize("variant", ["dpgan", "dpcgan"])
def test_generator_sees_private_rows_only_through_the_discriminator(variant, monkeypatch):
    """Freeze the discriminator (its step only charges the accountant): then two datasets with no row in
    common (same class counts, so dpcgan's condition histogram draws the same) give the same generator.
    Without the freeze they do not: the test can fail."""
    a, b = frame(1), frame(2)

    def fit(df):
        return GanSDGP(variant=variant, **SMALL).fit(df, SCHEMA, epsilon=1.0, delta=1e-4,
                                                     rng=np.random.default_rng(5))

    assert not fit(a).sample(50, rng=np.random.default_rng(0)).equals(fit(b).sample(50, rng=np.random.default_rng(0)))

    def frozen(self, x_real, x_fake, real_loss, fake_loss):
        self.steps += 1
        self.accountant.step(noise_multiplier=self.noise_multiplier, sample_rate=self.sample_rate)

    monkeypatch.setattr(dpsgd.DiscriminatorStep, "step", frozen)
    ga, gb = fit(a), fit(b)
    for sa, sb in zip(ga.generators_, gb.generators_, strict=True):
        for k in sa:
            assert torch.equal(sa[k], sb[k])


def test_same_seed_same_rows_and_models(tmp_path):
    train = frame(0)

    def run(seed):
        g = GanSDGP(variant="dpcgan", **SMALL).fit(train, SCHEMA, epsilon=1.0, delta=1e-4,
                                                   rng=np.random.default_rng(seed))
        return g, g.sample(40, rng=np.random.default_rng(seed + 100))

    (g1, s1), (g2, s2), (_, s3) = run(0), run(0), run(1)
    pd.testing.assert_frame_equal(s1, s2)
    assert not s1.equals(s3)
    assert list(s1.columns) == SCHEMA.names and s1["y"].isin([0, 1, 2]).all()
    assert ((s1[["a", "b"]] >= 0) & (s1[["a", "b"]] <= 1)).all().all()
    save_models(g1.models(), tmp_path / "m.npz")
    discs = Discriminators(load_models(tmp_path / "m.npz"), SCHEMA)
    assert len(discs) == SMALL["keep_last"]
    out = discs.outputs(s1)
    assert out.shape == (3, 40) and np.isfinite(out).all()
    # the last kept discriminator is the trained one
    x = dpsgd.as_tensor(discs.space.discriminator_input(s1))
    with torch.no_grad():
        net = mlp(discs.space.d_input, SMALL["hidden"], 1)
        net.load_state_dict(g2.discriminators_[-1])
        np.testing.assert_allclose(out[-1], net(x)[:, 0].numpy(), rtol=1e-4, atol=1e-6)  # numpy == torch


def test_networks_have_no_normalisation_layers_and_pass_opacus_validation(monkeypatch):
    """The discriminator the fitted GAN trained with DP-SGD (caught where the GAN hands it to the DP step; its
    final weights are the GAN's last kept discriminator)."""
    from opacus.validators import ModuleValidator

    trained = []
    real_init = dpsgd.DiscriminatorStep.__init__

    def spy(self, module, **kw):
        trained.append(module)
        real_init(self, module, **kw)

    monkeypatch.setattr(dpsgd.DiscriminatorStep, "__init__", spy)
    g = GanSDGP(variant="dpgan", **SMALL).fit(frame(0), SCHEMA, epsilon=1.0, delta=1e-4,
                                              rng=np.random.default_rng(0))
    (net,) = trained
    kept = g.discriminators_[-1]
    assert set(net.state_dict()) == set(kept)
    assert all(torch.equal(v, kept[k]) for k, v in net.state_dict().items())
    assert ModuleValidator.validate(net, strict=False) == []
    norm = (torch.nn.BatchNorm1d, torch.nn.GroupNorm, torch.nn.LayerNorm, torch.nn.InstanceNorm1d)
    assert not any(isinstance(m, norm) for m in net.modules())


def test_numeric_target_conditions_on_public_bins():
    schema = parse_schema({"name": "reg", "task": "regression", "target": "t",
                           "provenance": "test",
                           "columns": [{"name": "x", "type": "numeric", "lower": 0, "upper": 1},
                                       {"name": "t", "type": "numeric", "lower": 0, "upper": 1}]})
    r = np.random.default_rng(0)
    df = pd.DataFrame({"x": r.uniform(size=80), "t": r.uniform(size=80)})
    g = GanSDGP(variant="cgan", condition_bins=4, **SMALL).fit(df, schema, epsilon=1.0, delta=1e-3, rng=r)
    assert g.space_.n_conditions == 4
    np.testing.assert_allclose(g.cond_probs_, np.bincount(np.minimum((df.t * 4).astype(int), 3)) / 80)
    s = g.sample(200, rng=np.random.default_rng(1))
    assert s["t"].between(0, 1).all()


def test_bad_gan_settings_fail_clearly():
    from dpiw import DpiwError

    with pytest.raises(DpiwError, match="keep_last"):
        GanSDGP(variant="dpgan", **{**SMALL, "keep_last": 10}).fit(frame(0), SCHEMA, epsilon=1.0, delta=1e-4,
                                                                   rng=np.random.default_rng(0))
    with pytest.raises(DpiwError, match="accountant"):
        GanSDGP(variant="dpgan", **{**SMALL, "accountant": "gdp"}).fit(frame(0), SCHEMA, epsilon=1.0, delta=1e-4,
                                                                       rng=np.random.default_rng(0))
    with pytest.raises(DpiwError, match="delta"):
        GanSDGP(variant="dpgan", **SMALL).fit(frame(0), SCHEMA, epsilon=1.0, delta=0.0, rng=np.random.default_rng(0))


def test_discriminator_weight_jobs_do_not_import_torch(tmp_path):
    """The weight methods read the .npz in numpy: their jobs skip torch's import time."""
    import subprocess
    import sys

    g = GanSDGP(variant="dpgan", **SMALL).fit(frame(0), SCHEMA, epsilon=1.0, delta=1e-4,
                                              rng=np.random.default_rng(0))
    save_models(g.models(), tmp_path / "m.npz")
    code = ("import sys; from dpiw.stages import fit_weights; from dpiw.sdgp.gan_models import load_models; "
            f"load_models({str(tmp_path / 'm.npz')!r}); assert 'torch' not in sys.modules, 'torch imported'")
    subprocess.run([sys.executable, "-c", code], check=True)
