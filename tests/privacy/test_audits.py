"""Empirical DP audits (tests/audit.py): for each mechanism that reads private rows, many runs on a pair
of neighbouring datasets give a 95%-confidence lower bound on epsilon, which must not exceed the claim.
A deliberately broken mechanism (half the Laplace noise) must be caught: the audits have power.

The fitted logistic regression is memoised per dataset (it is deterministic); every run still goes
through the mechanism's own code: sensitivity, noise scale, noise draw, record.
"""

import functools

import numpy as np
import pandas as pd
import pytest
from audit import audit

from dpiw.data.schema import load_schema
from dpiw.sdgp import marginals as marginals_mod
from dpiw.sdgp.marginals import DPMarginals
from dpiw.sdgp.privbayes import PrivBayes
from dpiw.weights import boosting
from dpiw.weights import estimators as est_mod
from dpiw.weights.estimators import make_estimator

pytestmark = pytest.mark.audit


@pytest.fixture(scope="module")
def toy(root):
    schema = load_schema(root / "data/schemas/toy.yaml")
    rng = np.random.default_rng(5)
    d = pd.DataFrame({"x1": rng.uniform(0, 0.5, 20), "x2": rng.uniform(0, 0.5, 20)})
    d_prime = d.copy()
    d_prime.iloc[0] = [0.99, 0.99]  # the replaced row moves to the far corner: a different cell everywhere
    return schema, d, d_prime


def _cell_score(model, x, x_prime, bins):
    """Sum over the noisy count tables of (count at x' 's cell - count at x 's cell): the Laplace LLR's
    linear proxy."""
    cx = np.minimum((np.asarray(x) * bins).astype(int), bins - 1)
    cxp = np.minimum((np.asarray(x_prime) * bins).astype(int), bins - 1)
    s = 0.0
    for spec, counts in model.noisy_counts_.items():
        s += counts[tuple(cxp[list(spec)])] - counts[tuple(cx[list(spec)])]
    return s


def _marginals_score(toy, eps):
    schema, d, d_prime = toy
    x, xp = d.iloc[0].to_numpy(), d_prime.iloc[0].to_numpy()

    def score(neighbour, rng):
        m = DPMarginals(bins=4, structure="naive_bayes").fit(d_prime if neighbour else d, schema, epsilon=eps,
                                                            delta=0.0, rng=rng)
        return _cell_score(m, x, xp, 4)
    return score


def test_marginals_laplace_histograms(toy):
    eps = 1.0
    lb = audit(_marginals_score(toy, eps), n_choose=10000, n_test=50000, seed=1)
    assert lb <= eps, lb


def test_the_audit_catches_half_the_noise(toy, monkeypatch):
    """Power: with the L1 sensitivity understated (1 instead of 2) the histograms are 2-DP, not 1-DP."""
    monkeypatch.setattr(marginals_mod, "count_l1", lambda neighbours: 1.0)
    lb = audit(_marginals_score(toy, 1.0), n_choose=10000, n_test=50000, seed=2)
    assert lb > 1.0, lb


def test_privbayes(toy):
    schema, d, d_prime = toy
    x, xp = d.iloc[0].to_numpy(), d_prime.iloc[0].to_numpy()
    eps = 1.0

    def score(neighbour, rng):
        m = PrivBayes(bins=3, degree=1).fit(d_prime if neighbour else d, schema, epsilon=eps, delta=0.0, rng=rng)
        return _cell_score(m, x, xp, 3)

    lb = audit(score, n_choose=500, n_test=2000, seed=3)
    assert lb <= eps, lb


@pytest.fixture
def memo_logistic(monkeypatch):
    real = est_mod.fit_l2_logistic

    @functools.lru_cache(maxsize=16)
    def cached(xb, yb, shape, lam):
        return real(np.frombuffer(xb).reshape(shape), np.frombuffer(yb), lam=lam)

    monkeypatch.setattr(est_mod, "fit_l2_logistic",
                        lambda X, y, *, lam: cached(np.ascontiguousarray(X, float).tobytes(),
                                                    np.ascontiguousarray(y, float).tobytes(), X.shape, lam).copy())


def _weights_data():
    rng = np.random.default_rng(11)
    real, synth = rng.uniform(size=(25, 2)), rng.uniform(size=(25, 2))
    real_prime = real.copy()
    real[0], real_prime[0] = [0.0, 0.0], [1.0, 1.0]
    return real, real_prime, synth


@pytest.mark.parametrize("method, delta", [("beta_noised", 0.0), ("beta_debiased_gauss", 1e-3),
                                           ("output_laplace", 0.0), ("output_gauss", 1e-3)])
def test_weight_mechanisms(method, delta, memo_logistic):
    real, real_prime, synth = _weights_data()
    eps = 0.9  # the classical Gaussian mechanism needs epsilon < 1
    kw = {"lam": 20.0} if method.startswith("output") else {"lam": 0.05}

    def log_weights(neighbour, rng):
        e = make_estimator(method, **kw).fit(real_prime if neighbour else real, synth, epsilon=eps, delta=delta,
                                             rng=rng, norm_bound=np.sqrt(3.0))
        assert e.privacy_.epsilon == eps
        return e.log_ratio(synth)

    base = {nb: log_weights(nb, np.random.default_rng(0)) for nb in (False, True)}
    direction = base[True] - base[False]
    if np.allclose(direction, 0):
        direction = np.ones_like(direction)

    def score(neighbour, rng):
        return float(log_weights(neighbour, rng) @ direction)

    lb = audit(score, n_choose=300, n_test=1500, seed=4, delta=delta)
    assert lb <= eps, lb


def test_post_gan_boosting_exponential_mechanism():
    """PGB's T exponential mechanisms: D' raises the real-row mean of discriminator 0 by the sensitivity."""
    n, rounds, eps = 20, 5, 1.0
    rng0 = np.random.default_rng(7)
    d_synth = rng0.uniform(size=(3, 8))
    mean = np.array([0.5, 0.5, 0.5])
    sens = boosting.score_sensitivity(n)
    eps0, comp = boosting.per_round_epsilon(eps, 0.0, rounds)
    assert comp == "basic"

    def score(neighbour, rng):
        m = mean + (np.array([sens, 0.0, 0.0]) if neighbour else 0.0)
        _, picks = boosting.post_gan_boosting(m, d_synth, rounds=rounds, eps0=eps0, sensitivity=sens,
                                              eta=boosting.default_eta(8, rounds), rng=rng)
        return float(picks[0])

    lb = audit(score, n_choose=1000, n_test=4000, seed=5)
    assert lb <= eps, lb


@pytest.fixture
def memo_accounting(monkeypatch):
    """The noise calibration and the RDP curves are deterministic functions of (epsilon, delta, q, steps):
    computed once. The training, clipping and noise draws run every time."""
    from opacus.accountants.analysis import rdp as opacus_rdp

    from dpiw.sdgp import dpsgd

    original = opacus_rdp.compute_rdp
    compute = functools.lru_cache(maxsize=64)(
        lambda q, noise_multiplier, steps, orders: original(q=q, noise_multiplier=noise_multiplier, steps=steps,
                                                            orders=list(orders)))
    monkeypatch.setattr(opacus_rdp, "compute_rdp", lambda *, q, noise_multiplier, steps, orders: compute(
        q, noise_multiplier, steps, tuple(np.atleast_1d(orders).tolist())))
    monkeypatch.setattr(dpsgd, "calibrate_noise", functools.lru_cache(maxsize=8)(dpsgd.calibrate_noise))


def test_dp_mlp_dp_sgd(memo_accounting):
    """DP-SGD (closed-form per-example clipping) in the DP-MLP weights, few steps on tiny data; score: the log
    weight at the canary."""
    real, real_prime, synth = _weights_data()
    eps, delta = 2.0, 1e-3
    canary = np.array([[1.0, 1.0]])

    def score(neighbour, rng):
        e = make_estimator("dp_mlp", hidden=4, epochs=1, batch_size=25, lr=0.05).fit(
            real_prime if neighbour else real, synth, epsilon=eps, delta=delta, rng=rng)
        assert e.privacy_.epsilon <= eps + 1e-9
        return float(e.log_ratio(canary)[0])

    lb = audit(score, n_choose=200, n_test=1000, seed=6, delta=delta)
    assert lb <= eps, lb


def test_scaling_with_public_bounds_is_a_per_row_map(toy):
    """The scale stage spends nothing because each row's image depends on that row and the schema's
    public bounds only: replacing row 0 changes row 0 of the output and nothing else (exactly)."""
    from dpiw.scale import column_bounds, scale_frame

    schema, d, d_prime = toy
    a = scale_frame(d, schema, column_bounds(d, schema, bounds="schema"))
    b = scale_frame(d_prime, schema, column_bounds(d_prime, schema, bounds="schema"))
    assert a.iloc[1:].equals(b.iloc[1:]) and not a.iloc[0].equals(b.iloc[0])
    # with bounds: data the map depends on the other rows - which is why that setting is marked NOT DP
    a = scale_frame(d, schema, column_bounds(d, schema, bounds="data"))
    b = scale_frame(d_prime, schema, column_bounds(d_prime, schema, bounds="data"))
    assert not a.iloc[1:].equals(b.iloc[1:])


def test_dp_gan_discriminator_step(memo_accounting):
    """The DP-GAN's discriminator update (dpsgd.DiscriminatorStep: opacus per-example clipping, one noise
    draw per step, Poisson batches as the GAN draws them), a linear critic for a few steps; score: the
    critic's value at the canary row."""
    import torch

    from dpiw.sdgp import dpsgd

    n, q, steps, eps, delta = 20, 0.5, 3, 2.0, 1e-3
    real = torch.zeros(n, 2)
    real_prime = real.clone()
    real_prime[0] = torch.tensor([1.0, 1.0])
    fake = torch.zeros(8, 2)
    canary = torch.tensor([[1.0, 1.0]])
    sigma = dpsgd.calibrate_noise(epsilon=eps, delta=delta, sample_rate=q, steps=steps, accountant="rdp")

    def score(neighbour, rng):
        seeds = rng.integers(0, 2**62, size=3)
        torch.manual_seed(int(seeds[0]))
        gen = torch.Generator().manual_seed(int(seeds[1]))
        d_step = dpsgd.DiscriminatorStep(torch.nn.Linear(2, 1), private=True, lr=0.5, expected_batch_size=n * q,
                                         noise_multiplier=sigma, max_grad_norm=1.0, sample_rate=q,
                                         noise_generator=torch.Generator().manual_seed(int(seeds[2])))
        data = real_prime if neighbour else real
        for _ in range(steps):
            batch = data[dpsgd.poisson_mask(n, q, gen)]
            d_step.step(batch, fake, lambda out: -out[:, 0], lambda out: out[:, 0])
        eps_spent, *_ = dpsgd.spent(d_step.accountant, delta, eps)
        assert eps_spent <= eps + 1e-9
        with torch.no_grad():
            return float(d_step.network(canary)[0, 0])

    lb = audit(score, n_choose=200, n_test=1000, seed=8, delta=delta)
    assert lb <= eps, lb
