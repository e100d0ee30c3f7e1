"""Empirical DP audits (tests/audit.py): for each mechanism that reads private rows, many runs on a pair
of neighbouring datasets give a 95%-confidence lower bound on epsilon, which must not exceed the claim.
Each audit also runs, in the same test, on a deliberately broken mechanism (half the noise, or 4 times the
spend claimed as 1) on neighbours at the worst case of the mechanism's sensitivity, and must catch it (lower
bound above the claim): the audits have power. The logistic weights are audited at the worst case their
sensitivity bound allows (_weights_audit); every run goes through the mechanism's own code: sensitivity,
noise scale, noise draw, record.
"""

import functools
import math

import numpy as np
import pandas as pd
import pytest
from audit import audit

from dpiw.data.schema import load_schema
from dpiw.privacy.mechanisms import analytic_gaussian_sigma
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


def _clipped_cell_score(model, d, x, x_prime, bins):
    """The Laplace likelihood ratio of the replaced row, up to its scale: over the noisy count tables, the noise
    at x' 's cell and minus the noise at x 's cell, each clipped to [0, 1] (the count D' adds or removes)."""
    cells = np.minimum((d.to_numpy() * bins).astype(int), bins - 1)
    cx = np.minimum((np.asarray(x) * bins).astype(int), bins - 1)
    cxp = np.minimum((np.asarray(x_prime) * bins).astype(int), bins - 1)
    s = 0.0
    for spec, counts in model.noisy_counts_.items():
        spec = list(spec)
        true = [int(np.all(cells[:, spec] == c[spec], axis=1).sum()) for c in (cx, cxp)]
        s += np.clip(counts[tuple(cxp[spec])] - true[1], 0, 1) + np.clip(true[0] - counts[tuple(cx[spec])], 0, 1)
    return float(s)


def _marginals_audit(toy, *, l1_claimed: float | None, seed: int) -> float:
    """DPMarginals (naive Bayes: two tables) at epsilon 1; ``l1_claimed``: the L1 sensitivity the broken
    mechanism calibrates to (None: the mechanism's own, 2 for a replaced row)."""
    schema, d, d_prime = toy
    x, xp = d.iloc[0].to_numpy(), d_prime.iloc[0].to_numpy()
    real_l1 = marginals_mod.count_l1

    def score(neighbour, rng):
        if l1_claimed is not None:
            marginals_mod.count_l1 = lambda neighbours: l1_claimed
        try:
            m = DPMarginals(bins=4, structure="naive_bayes").fit(d_prime if neighbour else d, schema, epsilon=1.0,
                                                                delta=0.0, rng=rng)
        finally:
            marginals_mod.count_l1 = real_l1
        return _clipped_cell_score(m, d, x, xp, 4)

    return audit(score, n_choose=1000, n_test=5000, seed=seed, select="bound")


def test_marginals_laplace_histograms_and_their_power(toy):
    """Below the claim of 1 (0.55 at seed 1); with the L1 sensitivity understated (1 instead of 2) the
    histograms are 2-DP, not 1-DP, and the audit says so (1.68 at seed 2; 1.47-1.71 over seeds 1-3)."""
    correct, broken = _marginals_audit(toy, l1_claimed=None, seed=1), _marginals_audit(toy, l1_claimed=1.0, seed=2)
    assert correct <= 1.0 < broken, (correct, broken)


class _HalfNoise:
    """The broken mechanism's generator: every Laplace or Gaussian draw at half the scale asked for (the
    recorded scale stays what the mechanism computed)."""

    def __init__(self, rng):
        self.rng = rng

    def laplace(self, loc=0.0, scale=1.0, size=None):
        return self.rng.laplace(loc, 0.5 * scale, size)

    def normal(self, loc=0.0, scale=1.0, size=None):
        return self.rng.normal(loc, 0.5 * scale, size)

    def __getattr__(self, name):  # every other draw (choice, integers, ...) as it is
        return getattr(self.rng, name)


def _privbayes_audit(toy, *, broken: bool, seed: int) -> float:
    """PrivBayes on two columns: the structure is forced (one candidate), so a run is the one noisy joint table
    on 0.7 of epsilon; the replaced row moves one count down and another up (L1 2, the worst case)."""
    schema, d, d_prime = toy
    x, xp = d.iloc[0].to_numpy(), d_prime.iloc[0].to_numpy()

    def score(neighbour, rng):
        m = PrivBayes(bins=3, degree=1).fit(d_prime if neighbour else d, schema, epsilon=1.0, delta=0.0,
                                            rng=_HalfNoise(rng) if broken else rng)
        return _clipped_cell_score(m, d, x, xp, 3)

    return audit(score, n_choose=1000, n_test=4000, seed=seed, select="bound")


def test_privbayes_and_its_power(toy):
    """Below the claim of 1 (0.59 at seed 3; 0.50-0.68 over seeds 3-6); half the noise caught (1.15 at seed 4;
    1.15-1.33 over seeds 3-6), though the structure's 0.3 of epsilon is spent on a forced choice and invisible."""
    correct, broken = _privbayes_audit(toy, broken=False, seed=3), _privbayes_audit(toy, broken=True, seed=4)
    assert correct <= 1.0 < broken, (correct, broken)


def _weights_data():
    rng = np.random.default_rng(11)
    real, synth = rng.uniform(size=(25, 2)), rng.uniform(size=(25, 2))
    real_prime = real.copy()
    real[0], real_prime[0] = [0.0, 0.0], [1.0, 1.0]
    return real, real_prime, synth


WEIGHT_AUDITS = {  # method: (epsilon, delta, lambda); the Gaussian ones at epsilon 2, where an audit of n runs
    # can certify the doubled epsilon of half the noise (at 0.9 it cannot tell it from the claim)
    "beta_noised": (0.9, 0.0, 0.05), "beta_debiased_gauss": (2.0, 1e-3, 0.05),
    "output_laplace": (0.9, 0.0, 20.0), "output_gauss": (2.0, 1e-3, 20.0)}


def _weights_audit(method: str, *, broken: bool, seed: int, monkeypatch) -> float:
    """Worst-case neighbours for the logistic weights. The noise is calibrated to Chaudhuri et al.'s bound: the
    minimiser moves by at most 2R/(n lambda) in L2 when a row is replaced; the real fit on rows in [0, 1] moves
    far less (the logistic loss's slope is 1/2 at the margins a penalised fit reaches), so here the fit returns
    coefficients that move by exactly that bound, along (1, 1)/sqrt(2): the L1 bound sqrt(p) times it is then
    reached too. One feature (bound 1, R = sqrt(2)), 25 real rows (D' moves row 0 from 0 to 1), one synthetic
    row at x = 1, where the log weight moves by 2R^2/(n lambda), the per-weight bound. Everything else is the
    mechanism's own code: sensitivity, scale, draw, record. Score: the released coefficients or log weight, as
    the likelihood ratio orders them (Laplace: clipped to the segment between the two noiseless releases; Gauss:
    projected on it)."""
    eps, delta, lam = WEIGHT_AUDITS[method]
    n, R = 25, math.sqrt(2.0)
    shift = 2 * R / (n * lam) * np.ones(2) / math.sqrt(2)  # ||shift||_2 = 2R/(n lambda), ||shift||_1 = sqrt(2) that
    real = np.zeros((n, 1))
    real_prime = real.copy()
    real_prime[0] = 1.0
    synth = np.ones((1, 1))
    monkeypatch.setattr(est_mod, "fit_l2_logistic",
                        lambda X, y, *, lam: shift.copy() if X[0, 0] == 1.0 else np.zeros(2))
    if method.startswith("beta"):
        r0, r1 = np.zeros(2), shift
    else:  # log(N_S/N_D) + the noise's mean shift, and the per-weight bound 2R^2/(n lambda) = x~ . shift
        per_weight = 2 * R**2 / (n * lam)
        mean_shift = (math.log1p(-(per_weight / eps) ** 2) if method == "output_laplace"
                      else -0.5 * analytic_gaussian_sigma(eps, delta, per_weight) ** 2)
        r0 = np.array([math.log(1 / n) + mean_shift])
        r1 = r0 + per_weight
    laplace = method in ("beta_noised", "output_laplace")

    def score(neighbour, rng):
        e = make_estimator(method, lam=lam).fit(real_prime if neighbour else real, synth, epsilon=eps, delta=delta,
                                                rng=_HalfNoise(rng) if broken else rng, norm_bound=1.0)
        assert e.privacy_.epsilon == eps
        r = e.noisy_coef_ if method.startswith("beta") else e.log_ratio(synth)
        return float(np.sum(np.clip(r - r0, 0, r1 - r0)) if laplace else (r - r0) @ (r1 - r0))

    return audit(score, n_choose=1000, n_test=4000, seed=seed, delta=delta, select="bound")


@pytest.mark.parametrize("method", list(WEIGHT_AUDITS))
def test_weight_mechanisms_and_their_power(method, monkeypatch):
    """The lower bound stays below the claim; with half the noise drawn it goes above (seeds 4, correct, and 5,
    broken): beta_noised 0.71 / 1.60 (claim 0.9), beta_debiased_gauss 1.04 / 2.80 (claim 2), output_laplace
    0.82 / 1.69 (0.9), output_gauss 1.14 / 2.52 (2); over seeds 4-7 the broken bounds range 1.42-1.76, 2.36-2.80,
    1.64-1.72 and 1.01-1.35 at claim 0.9 for output_gauss, hence the claim of 2. And the real fit, on rows in
    [0, 1], moves within the bound the audit assumes (13% of it for lambda 0.05, 20% for 20)."""
    eps = WEIGHT_AUDITS[method][0]
    real, real_prime, synth = _weights_data()
    lam, R = WEIGHT_AUDITS[method][2], math.sqrt(3.0)
    X = [est_mod.design(r, synth) for r in (real, real_prime)]
    y = np.r_[np.ones(25), np.zeros(25)]
    moved = np.linalg.norm(est_mod.fit_l2_logistic(X[0], y, lam=lam) - est_mod.fit_l2_logistic(X[1], y, lam=lam))
    bound = 2 * R / (len(X[0]) * lam)  # the objective's divisor: N_D + N_G (the record's n, N_D, is larger)
    assert 0.1 * bound < moved <= bound
    correct = _weights_audit(method, broken=False, seed=4, monkeypatch=monkeypatch)
    broken = _weights_audit(method, broken=True, seed=5, monkeypatch=monkeypatch)
    assert correct <= eps < broken, (correct, broken)


def _pgb_audit(spent: float, seed: int) -> float:
    """PGB's T exponential mechanisms on worst-case neighbours: a replaced row moves every discriminator's
    real-row mean by up to the sensitivity 1/n at once, here discriminator 0's up and the others' down (the
    exponential mechanism's ratio reaches e^eps0 only when the scores move apart). Score: how often 0 is
    picked. The runs spend ``spent`` times the per-round epsilon the claim of 1 allows."""
    n, rounds, eps = 20, 5, 1.0
    d_synth = np.random.default_rng(7).uniform(size=(3, 8))
    mean = np.array([0.5, 0.5, 0.5])
    sens = boosting.score_sensitivity(n)
    assert sens == 1 / n
    eps0, comp = boosting.per_round_epsilon(eps, 0.0, rounds)
    assert (eps0, comp) == (eps / rounds, "basic")  # delta 0: basic composition, T eps0 = epsilon

    def score(neighbour, rng):
        m = mean + (np.array([sens, -sens, -sens]) if neighbour else 0.0)
        _, picks = boosting.post_gan_boosting(m, d_synth, rounds=rounds, eps0=spent * eps0, sensitivity=sens,
                                              eta=boosting.default_eta(8, rounds), rng=rng)
        return float(picks[0])

    return audit(score, n_choose=1000, n_test=4000, seed=seed, select="bound")


def test_post_gan_boosting_exponential_mechanism_and_its_power():
    """The lower bound stays below the claim of 1 (0.09 at seed 5; 0.09-0.16 over seeds 5-7); a run that spends
    4 times the claimed epsilon is caught (1.28 at seed 6; 1.28-1.46 over seeds 5-7)."""
    assert _pgb_audit(1.0, seed=5) <= 1.0
    assert _pgb_audit(4.0, seed=6) > 1.0


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


def _dp_mlp_audit(spent: float, *, seed: int, monkeypatch) -> float:
    """DP-SGD (closed-form per-example clipping) in the DP-MLP weights, through MLPWeights.fit, on the 25 + 25
    rows of _weights_data with every row in the one batch (batch size 50: sample rate 1, one step). White box:
    the score is the noisy gradient sum the step releases (its p.grad times L), less the clipped gradients of the
    rows D and D' share and of D's replaced row, projected on the replaced row's change of clipped gradient
    (the Gaussian likelihood ratio's statistic). The noise is calibrated for ``spent`` times the claimed 2."""
    import torch

    from dpiw.sdgp import dpsgd
    from dpiw.weights import mlp as mlp_mod

    real, real_prime, synth = _weights_data()
    real[0], real_prime[0] = [-20.0, 2.0], [20.0, -8.0]
    eps, delta = 2.0, 1e-3
    x_old, x_new = dpsgd.as_tensor(real[:1]), dpsgd.as_tensor(real_prime[:1])
    one, released = torch.ones(1), []
    real_gradient, calibrate = mlp_mod.ClassifierStep.gradient, dpsgd.calibrate_noise
    real_classifier = mlp_mod.classifier

    def flat(grads):
        return torch.cat([g.flatten() for g in grads])

    def gradient(self, xb, yb):
        real_gradient(self, xb, yb)
        assert len(xb) == 50  # every row, the replaced one first
        C = self.max_grad_norm
        shared = flat(mlp_mod.clipped_gradient_sum(self.module, xb[1:], yb[1:], C))
        g_old, g_new = (flat(mlp_mod.clipped_gradient_sum(self.module, x, one, C)) for x in (x_old, x_new))
        noisy = flat([p.grad for p in self.parameters()]) * self.L
        change = g_new - g_old
        released.append(float((noisy - shared - g_old) @ change / change.norm()))

    def classifier(d_in, hidden):  # one initialisation for every run, where the two rows' gradients differ most
        with torch.random.fork_rng():
            torch.manual_seed(2)
            return real_classifier(d_in, hidden)

    monkeypatch.setattr(mlp_mod.ClassifierStep, "gradient", gradient)
    monkeypatch.setattr(mlp_mod, "classifier", classifier)
    monkeypatch.setattr(dpsgd, "calibrate_noise", lambda **kw: calibrate(**{**kw, "epsilon": spent * kw["epsilon"]}))

    def score(neighbour, rng):
        released.clear()
        e = make_estimator("dp_mlp", hidden=4, epochs=1, batch_size=50, lr=0.05).fit(
            real_prime if neighbour else real, synth, epsilon=eps, delta=delta, rng=rng)
        assert e.privacy_.noise["steps"] == len(released) == 1
        assert e.privacy_.epsilon <= spent * eps + 1e-9
        return sum(released)

    return audit(score, n_choose=200, n_test=1000, seed=seed, delta=delta, select="bound")


@pytest.fixture
def one_torch_thread():
    """torch on one thread for the many tiny fits of the DP-SGD audits (on 2 busy cores it runs them twice as
    fast); restored afterwards."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_dp_mlp_dp_sgd_and_its_power(memo_accounting, monkeypatch, one_torch_thread):
    """Below the claim of 2 (0.46 at seed 6; 0.46-0.50 over seeds 6-8); noise calibrated for 4 times the claimed
    epsilon is caught (2.34 at seed 7; 2.34-2.63 over seeds 6-8). The two rows' clipped gradients differ by
    1.84 C at that initialisation (2 C is the most a replacement can move the sum)."""
    lb = _dp_mlp_audit(1.0, seed=6, monkeypatch=monkeypatch)
    assert lb <= 2.0, lb
    broken = _dp_mlp_audit(4.0, seed=7, monkeypatch=monkeypatch)
    assert broken > 2.0, broken


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


def _dp_gan_audit(spent: float, *, seed: int) -> float:
    """The DP-GAN's discriminator update (dpsgd.DiscriminatorStep: opacus per-example clipping, one noise draw
    per step), a linear critic without bias for 3 steps, every row in every batch (sample rate 1: the Poisson
    mask keeps them all). Worst-case neighbours for DP-SGD: the other rows (and the fake ones) are 0, so their
    gradients are 0, and the replaced row's clipped gradient is the opposite of the canary's, so the clipped sum
    moves by 2C, the most a replacement can. Score: the noisy gradients each step releases (opacus writes them to
    p.grad), projected on the canary's. The noise is calibrated for ``spent`` times the claimed epsilon of 2."""
    import torch

    from dpiw.sdgp import dpsgd

    n, q, steps, eps, delta = 20, 1.0, 3, 2.0, 1e-3
    real = torch.zeros(n, 2)
    real[0] = torch.tensor([-1.0, -1.0])
    real_prime = real.clone()
    real_prime[0] = torch.tensor([1.0, 1.0])
    fake = torch.zeros(8, 2)
    canary = torch.tensor([1.0, 1.0])
    sigma = dpsgd.calibrate_noise(epsilon=spent * eps, delta=delta, sample_rate=q, steps=steps, accountant="rdp")

    def score(neighbour, rng):
        seeds = rng.integers(0, 2**62, size=3)
        torch.manual_seed(int(seeds[0]))
        gen = torch.Generator().manual_seed(int(seeds[1]))
        d_step = dpsgd.DiscriminatorStep(torch.nn.Linear(2, 1, bias=False), private=True, lr=0.5,
                                         expected_batch_size=n * q, noise_multiplier=sigma, max_grad_norm=1.0,
                                         sample_rate=q, noise_generator=torch.Generator().manual_seed(int(seeds[2])))
        data = real_prime if neighbour else real
        s = 0.0
        for _ in range(steps):
            batch = data[dpsgd.poisson_mask(n, q, gen)]
            d_step.step(batch, fake, lambda out: -out[:, 0], lambda out: out[:, 0])
            s -= float(d_step.network.weight.grad[0] @ canary)  # the real loss's gradient at the canary is -canary
        eps_spent, *_ = dpsgd.spent(d_step.accountant, delta, eps)
        assert eps_spent <= spent * eps + 1e-9
        return s

    return audit(score, n_choose=200, n_test=1000, seed=seed, delta=delta, select="bound")


def test_dp_gan_discriminator_step_and_its_power(memo_accounting, one_torch_thread):
    """Below the claim of 2 (0.61 at seed 8; 0.39 at 9); noise calibrated for 4 times the claimed epsilon is
    caught (2.54 at seed 9; 2.64 at 8)."""
    lb = _dp_gan_audit(1.0, seed=8)
    assert lb <= 2.0, lb
    broken = _dp_gan_audit(4.0, seed=9)
    assert broken > 2.0, broken
