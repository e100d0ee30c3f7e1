"""Issue 6: PSIS (vs frozen arviz numbers, and k-hat vs its closed form), truncation, beta calibration
(vs frozen betacal numbers, identity on calibrated scores), resampling frequencies, the ESS, the
post chain and its stage."""

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpiw import DpiwError
from dpiw.evaluate import kish_ess, synthetic_ess
from dpiw.io import write_parquet
from dpiw.postprocess import parse_post, self_normalise, truncate
from dpiw.postprocess.calibration import BetaMap, calibrate_log_ratios, fit_beta_map
from dpiw.postprocess.psis import diagnose, gpd_fit, khat_threshold, psis, tail_length
from dpiw.postprocess.resample import multinomial_counts, systematic_counts
from dpiw.stages import postprocess_weights
from dpiw.stages._cli import run

DATA = Path(__file__).parent / "data"


# --- PSIS ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", sorted(json.loads((DATA / "psis_arviz_frozen.json").read_text())["cases"]))
def test_psis_matches_frozen_arviz_numbers(case):
    """Frozen from arviz 0.23.4 psislw(log_w, normalize=False) (tests/unit/data, script in its 'source')."""
    ref = json.loads((DATA / "psis_arviz_frozen.json").read_text())["cases"][case]
    res = psis(np.array(ref["log_w"]))
    assert res.k == pytest.approx(ref["k"], abs=1e-10)
    np.testing.assert_allclose(res.log_weights, ref["smoothed"], rtol=0, atol=1e-10)


@pytest.mark.parametrize("s2", [1.5, 2.0, 3.0])
def test_khat_recovers_the_gaussian_tail_index(s2):
    """q = N(0,1), p = N(0, s^2): w = p/q has a Pareto tail with k = 1 - 1/s^2 (n = 2e5)."""
    x = np.random.default_rng(int(10 * s2)).normal(size=200_000)
    log_w = -0.5 * math.log(s2) - x**2 / (2 * s2) + x**2 / 2
    assert abs(psis(log_w).k - (1 - 1 / s2)) < 0.1


def test_psis_smooths_only_the_tail_and_caps_at_the_largest_raw_weight():
    lw = np.random.default_rng(3).standard_t(3, size=1000)
    res = psis(lw)
    m = tail_length(lw.size)
    order = np.argsort(lw)
    body = order[:-m - 1]
    np.testing.assert_allclose(res.log_weights[body], lw[body], rtol=0, atol=1e-12)
    assert res.log_weights.max() <= lw.max() + 1e-12
    # the smoothed tail keeps the raw tail's order
    tail = order[-m:]
    assert (np.diff(res.log_weights[tail]) >= -1e-12).all()


def test_psis_keeps_zero_weights_and_the_gate_threshold():
    lw = np.random.default_rng(4).normal(size=500)
    lw[:50] = -np.inf
    res = psis(lw)
    assert np.isneginf(res.log_weights[:50]).all() and res.n == 450
    assert khat_threshold(100) == pytest.approx(0.5) and khat_threshold(10**9) == 0.7


def test_constant_or_few_level_weights_pass_the_gate_without_a_fit():
    for lw in (np.zeros(300), np.where(np.arange(300) % 2, 0.0, -np.inf), np.log(np.repeat([1.0, 2.0], 150))):
        d = diagnose(lw)
        assert d.k is None and d.fit_to_release
    # marginal matching's weights are one per cell: a tail of 115 rows at two levels above the bulk (this once
    # divided by zero inside the Pareto fit and stopped a noise-aware bootstrap)
    lw = np.log(np.concatenate([np.ones(3000), np.full(60, 1.0049), np.full(55, 1.0764)]))
    d = diagnose(lw)
    assert d.k is None and d.fit_to_release and np.allclose(psis(lw).log_weights, lw, rtol=0, atol=1e-12)
    k, _ = gpd_fit(np.repeat([0.004934559350000645, 0.07643525265825335], [60, 55]))  # the exceedances it met
    assert not math.isnan(k)


def test_gate_rejects_heavy_tails_and_accepts_light_ones():
    x = np.random.default_rng(5).normal(size=20_000)
    assert not diagnose(-x**2 / 18 + x**2 / 2).fit_to_release   # s^2 = 9: k ~ 0.89
    assert diagnose(-x**2 / 3 + x**2 / 2).fit_to_release         # s^2 = 1.5: k ~ 0.33


# --- truncation ----------------------------------------------------------------------------------

def test_truncation_never_raises_a_weight_and_caps_at_tau_times_the_mean():
    rng = np.random.default_rng(6)
    for _ in range(50):
        lw = rng.normal(0, rng.uniform(0.1, 4), size=rng.integers(5, 500))
        tau = rng.choice(["sqrt_n", 1.0, 2.5])
        out = truncate(lw, tau)
        assert (out <= lw + 1e-12).all()
        cap = (math.sqrt(lw.size) if tau == "sqrt_n" else float(tau)) * np.exp(lw).mean()
        assert np.exp(out).max() <= cap * (1 + 1e-9)
        np.testing.assert_array_equal(out[np.exp(lw) <= cap], lw[np.exp(lw) <= cap])


def test_truncation_rejects_a_cap_below_the_mean():
    with pytest.raises(DpiwError, match="tau"):
        truncate(np.zeros(4), 0.5)


# --- beta calibration ----------------------------------------------------------------------------

@pytest.mark.parametrize("case", sorted(json.loads((DATA / "betacal_frozen.json").read_text())["cases"]))
def test_beta_calibration_matches_frozen_betacal_numbers(case):
    """Frozen from betacal 1.1.0 BetaCalibration('abm') (sklearn lbfgs, tol 1e-4; ours is exact Newton,
    so parameters agree to ~1e-3 and predictions to ~2e-4, and our fit's log loss is never worse)."""
    ref = json.loads((DATA / "betacal_frozen.json").read_text())["cases"][case]
    s = np.clip(np.array(ref["s"]), np.finfo(float).eps, 1 - np.finfo(float).eps)
    y = np.array(ref["y"], float)
    m = fit_beta_map(np.log(s) - np.log1p(-s), y)
    a, b, mid = ref["map"]
    assert (m.a == 0) == (a == 0) and (m.b == 0) == (b == 0)
    assert m.a == pytest.approx(a, abs=5e-3) and m.b == pytest.approx(b, abs=5e-3)
    assert m.midpoint == pytest.approx(mid, abs=1e-3)
    np.testing.assert_allclose(m.predict(np.array(ref["grid"])), ref["predict"], atol=5e-4)

    def log_loss(p):
        p = np.clip(p, 1e-300, 1 - 1e-16)
        return -np.sum(y * np.log(p) + (1 - y) * np.log1p(-p))

    ref_c = b * math.log1p(-mid) - a * math.log(mid)
    assert log_loss(m.predict(s)) <= log_loss(BetaMap(a, b, ref_c).predict(s)) + 1e-9


def test_beta_calibration_is_the_identity_on_calibrated_scores():
    rng = np.random.default_rng(7)
    z = rng.normal(0, 2, size=200_000)
    y = (rng.uniform(size=z.size) < 1 / (1 + np.exp(-z))).astype(float)
    m = fit_beta_map(z, y)
    assert m.a == pytest.approx(1, abs=0.03) and m.b == pytest.approx(1, abs=0.03) and abs(m.c) < 0.03
    grid = np.linspace(-4, 4, 17)
    np.testing.assert_allclose(m.logit(grid), grid, atol=0.06)


def test_calibration_fixes_an_overconfident_weight_classifier():
    """True log ratio r; the classifier reports 3r + 1. Calibrated on public real rows vs the synthetic
    rows, the log ratios come back to r (up to Monte Carlo error)."""
    rng = np.random.default_rng(8)
    # p_G = N(0,1), p_D = N(1,1): log p_D/p_G = x - 1/2
    x_synth, x_pub = rng.normal(0, 1, 50_000), rng.normal(1, 1, 50_000)
    true = x_synth - 0.5
    out, bmap = calibrate_log_ratios(3 * true + 1, 3 * (x_pub - 0.5) + 1)
    assert np.corrcoef(out, true)[0, 1] > 0.999
    assert np.abs(out - true)[np.abs(x_synth) < 2].max() < 0.15
    with pytest.raises(DpiwError, match="public_fraction"):
        calibrate_log_ratios(true, np.array([]))


# --- resampling ----------------------------------------------------------------------------------

@pytest.mark.parametrize("scheme", ["multinomial", "systematic"])
def test_resampling_frequencies_match_the_weights(scheme):
    """Pooled over repeated draws, counts per row match N p_i (chi-square, 5 rows, 2000 draws of 100)."""
    from scipy.stats import chisquare

    p = np.array([0.05, 0.1, 0.2, 0.25, 0.4])
    rng = np.random.default_rng(9)
    draw = multinomial_counts if scheme == "multinomial" else systematic_counts
    counts = sum(draw(np.log(p), 100, rng) for _ in range(2000))
    assert counts.sum() == 200_000
    assert chisquare(counts, 200_000 * p).pvalue > 1e-3
    # and a wrong target is rejected
    assert chisquare(counts, 200_000 * np.full(5, 0.2)).pvalue < 1e-6


def test_systematic_resampling_keeps_each_count_within_one_of_n_p():
    rng = np.random.default_rng(10)
    lw = rng.normal(0, 1.5, 300)
    p = np.exp(lw) / np.exp(lw).sum()
    for _ in range(20):
        c = systematic_counts(lw, 300, rng)
        assert c.sum() == 300 and (np.abs(c - 300 * p) < 1 + 1e-9).all()
    assert (multinomial_counts(np.where(np.arange(300) < 10, 0.0, -np.inf), 300, rng)[10:] == 0).all()


# --- ESS -----------------------------------------------------------------------------------------

def test_kish_ess_of_equal_weights_is_n_and_synthetic_ess_reduces_to_it():
    rng = np.random.default_rng(11)
    X, y = rng.uniform(size=(400, 2)), rng.uniform(size=400)
    assert kish_ess(np.ones(400)) == 400.0
    assert synthetic_ess(X, y, np.ones(400), task="regression") == pytest.approx(400.0)
    w = rng.lognormal(0, 1, 400)
    # a model whose per-row gradients all have one norm: intercept only, residuals +-1 around the
    # weighted mean 0 (weights equal on the two halves), so Eq. 16 reduces to Kish's ESS
    X0, y0 = np.zeros((400, 0)), np.tile([1.0, -1.0], 200)
    w0 = np.repeat(rng.lognormal(0, 1, 200), 2)
    assert synthetic_ess(X0, y0, w0, task="regression") == pytest.approx(kish_ess(w0), rel=1e-9)
    assert 0 < synthetic_ess(X, (y > 0.5).astype(int), w, task="classification", n_classes=2) < 400


# --- the chain and the stage ---------------------------------------------------------------------

@pytest.mark.parametrize("post, message", [
    ("psis+calibrate", "must come first"), ("resample+psis", "must come last"), ("psis+psis", "twice"),
    ("none+psis", "cannot be chained"), ("pareto", "unknown step"),
])
def test_bad_post_chains_are_refused(post, message):
    with pytest.raises(DpiwError, match=message):
        parse_post(post)


def test_stage_chain_calibrate_psis_resample(tmp_path):
    rng = np.random.default_rng(12)
    x_synth, x_pub = rng.normal(0, 1, 2000), rng.normal(1, 1, 200)
    write_parquet(pd.DataFrame({"row": np.arange(2000), "log_ratio": 2 * x_synth}), tmp_path / "lr.parquet")
    write_parquet(pd.DataFrame({"row": np.arange(200), "log_ratio": 2 * x_pub}), tmp_path / "pub.parquet")
    write_parquet(pd.DataFrame({"x": x_synth, "y": rng.integers(0, 2, 2000)}), tmp_path / "synth.parquet")
    args = ["--log-ratios", str(tmp_path / "lr.parquet"), "--post", "calibrate+truncate+psis+resample",
            "--public-log-ratios", str(tmp_path / "pub.parquet"), "--synth", str(tmp_path / "synth.parquet"),
            "--resampled-out", str(tmp_path / "res.parquet"), "--seed", "3", "--run", "r",
            "--out", str(tmp_path / "lw.parquet"), "--privacy-out", str(tmp_path / "post.json")]
    postprocess_weights.main(args)
    rec = json.loads((tmp_path / "post.json").read_text())
    assert rec["epsilon"] == 0 and rec["dp"] and rec["details"]["steps"][0] == "calibrate"
    gate = rec["details"]["release_gate"]  # the verdict is k-hat against min(1 - 1/log10 S, 0.7), S = 2000
    assert gate["pareto_k_threshold"] == pytest.approx(min(1 - 1 / math.log10(2000), 0.7))
    assert gate["fit_to_release"] == (gate["pareto_k"] is None or gate["pareto_k"] <= gate["pareto_k_threshold"])
    counts = np.exp(pd.read_parquet(tmp_path / "lw.parquet").log_weight.to_numpy())
    res = pd.read_parquet(tmp_path / "res.parquet")
    assert counts.sum() == len(res) == 2000
    # resampled rows are the synthetic rows repeated by count: row i (its x is unique) appears counts[i] times
    assert np.allclose(counts, np.rint(counts))
    times = res.x.value_counts().reindex(x_synth, fill_value=0).to_numpy()
    np.testing.assert_array_equal(times, np.rint(counts).astype(int))
    assert (counts == 0).any() and (counts > 1).any()  # a resampling, not the rows as they were
    # and the same seed gives the same bytes
    first = (tmp_path / "res.parquet").read_bytes()
    postprocess_weights.main(args)
    assert (tmp_path / "res.parquet").read_bytes() == first
    # calibrate without the public scores: one clear error and nothing written
    out = tmp_path / "never.parquet"
    with pytest.raises(SystemExit) as exc:
        run(postprocess_weights.main, ["--log-ratios", str(tmp_path / "lr.parquet"), "--post", "calibrate",
                                       "--out", str(out), "--privacy-out", str(tmp_path / "never.json")])
    assert exc.value.code == 2 and not out.exists()


def test_self_normalise_then_truncate_commute_on_the_cap():
    lw = np.random.default_rng(13).normal(0, 2, 100)
    a = self_normalise(truncate(lw, 3.0))
    b = self_normalise(truncate(self_normalise(lw), 3.0))
    np.testing.assert_allclose(a, b, atol=1e-12)
