"""Private Post-GAN Boosting and the other discriminator-based weights (numpy only)."""

import math

import numpy as np
import pytest
from scipy import stats

from dpiw import DpiwError
from dpiw.weights import boosting
from dpiw.weights.gan_weights import DiscriminatorWeights, DRSWeights, PGBWeights


def test_exponential_mechanism_frequencies_follow_the_closed_form():
    q = np.array([0.0, 0.3, 0.6, 1.0, 0.2])
    eps0, sens = 1.5, 0.25
    rng = np.random.default_rng(0)
    n = 40_000
    counts = np.bincount([boosting.exponential_mechanism(q, epsilon=eps0, sensitivity=sens, rng=rng)
                          for _ in range(n)], minlength=len(q))
    p = np.exp(eps0 * q / (2 * sens))
    p /= p.sum()
    assert stats.chisquare(counts, n * p).pvalue > 1e-3
    # and the test has power: the mechanism with the sensitivity factor forgotten is rejected
    p_wrong = np.exp(eps0 * q / sens)
    p_wrong /= p_wrong.sum()
    assert stats.chisquare(counts, n * p_wrong).pvalue < 1e-6


def test_score_sensitivity_is_one_over_n_and_attained():
    rng = np.random.default_rng(1)
    n, K, B = 50, 4, 30
    d_real = rng.uniform(size=(K, n))
    d_real[:, 0] = 0.0  # the row an adversary replaces
    d_synth = rng.uniform(size=(K, B))
    phi = rng.dirichlet(np.ones(B))
    u = boosting.scores(d_real.mean(axis=1), d_synth, phi)
    worst = d_real.copy()
    worst[:, 0] = 1.0  # replacement row on which every D_j says "real"
    u_worst = boosting.scores(worst.mean(axis=1), d_synth, phi)
    assert np.max(np.abs(u_worst - u)) == pytest.approx(boosting.score_sensitivity(n))
    for _ in range(200):  # random replacements never exceed it
        other = d_real.copy()
        other[:, rng.integers(n)] = rng.uniform(size=K)
        assert np.max(np.abs(boosting.scores(other.mean(axis=1), d_synth, phi) - u)) <= 1 / n + 1e-15


def _two_generator_problem(seed=0, B_half=400):
    """Real rows N(0,1); B = samples of a good generator N(0,1) and a bad one N(3,1); discriminators are
    sigmoids of the (scaled) log ratio real/bad, plus the constant 1/2."""
    rng = np.random.default_rng(seed)
    real = rng.normal(0, 1, size=600)
    B = np.concatenate([rng.normal(0, 1, size=B_half), rng.normal(3, 1, size=B_half)])

    def llr(x):  # log N(x;0,1) - log N(x;3,1)
        return (-(x**2) + (x - 3) ** 2) / 2

    temps = [0.25, 0.5, 1.0, 2.0]
    d_real = np.array([1 / (1 + np.exp(-a * llr(real))) for a in temps] + [np.full(real.size, 0.5)])
    d_synth = np.array([1 / (1 + np.exp(-a * llr(B))) for a in temps] + [np.full(B.size, 0.5)])
    return real, B, d_real, d_synth


def test_pgb_concentrates_on_the_generator_that_matches_the_data():
    real, B, d_real, d_synth = _two_generator_problem()
    n = real.size
    phi_bar, picks = boosting.post_gan_boosting(d_real.mean(axis=1), d_synth, rounds=200, eps0=0.5,
                                                sensitivity=boosting.score_sensitivity(n), eta=0.5,
                                                rng=np.random.default_rng(2))
    w = B.size * phi_bar
    assert w.sum() == pytest.approx(B.size)
    good = w[: B.size // 2].sum() / B.size
    assert good > 0.85, good  # from 0.5 under uniform weights
    assert picks.sum() == 200


class _FixedDiscriminators:
    """Stands in for dpiw.sdgp.gan.Discriminators: outputs are logits of given probabilities."""

    loss = "cgan"

    def __init__(self, real, B, d_real, d_synth):
        self._map = {id(real): d_real, id(B): d_synth}

    def __len__(self):
        return len(next(iter(self._map.values())))

    def outputs(self, frame):
        p = np.clip(self._map[id(frame)], 1e-12, 1 - 1e-12)
        return np.log(p) - np.log1p(-p)


def test_pgb_weights_sum_to_B_and_record_both_compositions():
    real, B, d_real, d_synth = _two_generator_problem(seed=3, B_half=100)
    discs = _FixedDiscriminators(real, B, d_real, d_synth)
    est = PGBWeights(rounds=40, eta="auto").fit_gan(discs, real, B, epsilon=0.5, delta=1e-4,
                                                    rng=np.random.default_rng(0))
    w = np.exp(est.log_ratio_)
    assert w.sum() == pytest.approx(B.size)
    rec = est.privacy_
    d = rec.details
    eps0 = rec.noise["epsilon_per_round"]
    assert d["basic_composition_epsilon"] == pytest.approx(40 * eps0)
    assert d["advanced_composition_epsilon"] == pytest.approx(
        math.sqrt(2 * 40 * math.log(1e4)) * eps0 + 40 * eps0 * math.expm1(eps0))
    assert rec.epsilon <= 0.5 * (1 + 1e-9) and rec.sensitivity["delta_U"] == pytest.approx(1 / real.size)
    assert rec.epsilon == pytest.approx(min(d["basic_composition_epsilon"], d["advanced_composition_epsilon"]))
    assert rec.reads_private == ("train",)


@pytest.mark.parametrize("eps,delta,T,comp", [(0.5, 1e-5, 50, "advanced"), (6.0, 1e-5, 50, "advanced"),
                                               (0.1, 1e-6, 1000, "advanced"), (1.0, 0.0, 10, "basic"),
                                               (1.0, 1e-5, 3, "basic"), (0.3, 1e-2, 4, "basic")])
def test_per_round_epsilon_is_the_largest_allowed(eps, delta, T, comp):
    """Against the closed forms, written here: basic composition gives eps/T; Dwork-Rothblum-Vadhan's
    sqrt(2 T ln(1/delta)) e0 + T e0 (e^e0 - 1) = eps, solved by brentq; the rule takes the larger, in every case."""
    from scipy.optimize import brentq

    basic = eps / T
    if delta > 0:
        advanced = brentq(lambda e0: math.sqrt(2 * T * math.log(1 / delta)) * e0 + T * e0 * math.expm1(e0) - eps,
                          0.0, eps, xtol=1e-15)
        expected = (advanced, "advanced") if advanced > basic else (basic, "basic")
    else:
        expected = (basic, "basic")
    eps0, rule = boosting.per_round_epsilon(eps, delta, T)
    assert rule == expected[1] == comp
    assert eps0 == pytest.approx(expected[0], rel=1e-9)


def test_discriminator_weights_are_logits_and_free():
    real, B, d_real, d_synth = _two_generator_problem(seed=4, B_half=50)
    est = DiscriminatorWeights().fit_gan(_FixedDiscriminators(real, B, d_real, d_synth), real, B, epsilon=0.0,
                                         delta=0.0, rng=None)
    p = d_synth[-1]
    np.testing.assert_allclose(est.log_ratio_, np.log(p) - np.log1p(-p))
    assert est.privacy_.epsilon == 0 and est.privacy_.reads_private == ()


def test_drs_with_the_max_is_exact_rejection_sampling():
    """Percentile 100: P(keep b) = exp(o_b - max o); over many draws the kept frequency matches."""
    class Discs:
        loss = "cgan"

        def __len__(self):
            return 1

        def outputs(self, frame):
            return np.log(np.asarray(frame, float))[None, :]

    odds = np.array([0.1, 0.5, 1.0, 2.0, 4.0])
    B = np.tile(odds, 4000)
    est = DRSWeights(percentile=100).fit_gan(Discs(), None, B, epsilon=0, delta=0, rng=np.random.default_rng(0))
    kept = np.isfinite(est.log_ratio_).reshape(-1, len(odds)).mean(axis=0)
    np.testing.assert_allclose(kept, odds / odds.max(), atol=4 * np.sqrt(0.25 / 4000))
    with pytest.raises(DpiwError, match="percentile"):
        DRSWeights(percentile=0)
