"""Quantiles and shares above a threshold of a numeric column (Bundle.quantile, Bundle.share): the weighted quantile
against numpy's, Woodruff's interval covering a known population's quantile as often as it says (rows drawn from
it, then releases with their noise), the bins' tilt of a share within a subgroup against the model's exact error,
whole numbers for an integer column, and clear refusals."""

from math import erf, log, sqrt

import numpy as np
import pandas as pd
import pytest

from dpiw import DpiwError
from dpiw.analysis import NOISE_AWARE, SAMPLING_ONLY, Bundle
from dpiw.analysis.bin_bias import within_bin_bias
from dpiw.analysis.estimates import Quantile, weighted_quantile
from dpiw.data.schema import parse_schema
from dpiw.scale import decode_frame
from dpiw.sdgp.binning import FineGrid, NumericBins
from dpiw.sdgp.mst import MST
from dpiw.weights.marginal_match import measurements_dict

SCHEMA = parse_schema({"name": "t", "task": "classification", "target": "y", "columns": [
    {"name": "x", "type": "numeric", "lower": 0, "upper": 50},
    {"name": "n", "type": "numeric", "lower": 0, "upper": 100, "integer": True},
    {"name": "y", "type": "categorical", "categories": ["no", "yes"]}]})
#: the population: x lognormal (median e^0.5, 98% below 5 of its bounds' 50), n binomial, y depends on x
MEDIAN_X, Q90_X = float(np.exp(0.5)), float(np.exp(0.5 + 0.6 * 1.2815515655446004))
SHARE_ABOVE_3 = 0.5 * (1 - erf((log(3) - 0.5) / (0.6 * sqrt(2))))


def population(n: int, rng) -> pd.DataFrame:
    x = np.minimum(rng.lognormal(0.5, 0.6, n), 50)
    y = rng.uniform(size=n) < 1 / (1 + np.exp(-(-2.5 + 0.8 * x)))
    return pd.DataFrame({"x": x, "n": rng.binomial(100, 0.3, n), "y": np.where(y, "yes", "no")})


def rows_bundle(rows: pd.DataFrame, weights=None) -> Bundle:
    """The rows themselves as a bundle (no generator): a sampling-only interval is then the right one."""
    scaled = pd.DataFrame({"x": rows.x / 50, "n": rows.n / 100, "y": (rows.y == "yes").astype(int)})
    w = np.ones(len(rows)) if weights is None else weights
    return Bundle(decode_frame(scaled, SCHEMA), w, {}, scaled, SCHEMA, None)


def test_the_weighted_quantile_is_numpys_inverted_cdf():
    rng = np.random.default_rng(0)
    for _ in range(300):
        n = int(rng.integers(1, 40))
        v, w, p = rng.integers(0, 8, n).astype(float), rng.uniform(0.1, 3, n), float(rng.uniform(0.001, 1))
        assert weighted_quantile(v, w, p) == np.quantile(v, p, weights=w, method="inverted_cdf")


def test_woodruffs_interval_covers_a_populations_quantiles_as_often_as_it_says():
    """400 samples of 400 rows from a known population, each taken as the released rows (unit weights): the 95%
    intervals of the median and the 90th percentile, and of the share above 3, cover the truth in 92-98% of
    samples; the mean is inside the median's interval less often (a skewed column: mean and median differ)."""
    rng = np.random.default_rng(1)
    covered = {"median": 0, "q90": 0, "share": 0, "mean in median's": 0}
    share_truth = SHARE_ABOVE_3
    for _ in range(400):
        b = rows_bundle(population(400, rng))
        med, q90, above = b.quantile("x"), b.quantile("x", 0.9), b.share("x", ">", 3)
        assert med.covers == SAMPLING_ONLY and isinstance(med, Quantile)
        for key, est, truth in (("median", med, MEDIAN_X), ("q90", q90, Q90_X), ("share", above, share_truth)):
            lo, hi = est.ci()
            covered[key] += lo <= truth <= hi
        lo, hi = med.ci()
        covered["mean in median's"] += lo <= np.exp(0.5 + 0.18) <= hi
    for key in ("median", "q90", "share"):
        assert 0.92 <= covered[key] / 400 <= 0.98, covered
    assert covered["mean in median's"] / 400 < 0.5, covered


def release(rows: pd.DataFrame, seed: int, eps: float = 1.0) -> Bundle:
    r = np.random.default_rng(seed)
    gen = MST(iters=200, fine_cells=256).fit(rows, SCHEMA, epsilon=eps, delta=1e-5, rng=r)
    synth = gen.sample(len(rows), rng=r)
    measured = {"generator": {**measurements_dict(gen), "total": float(len(rows)), "iters": gen.iters}}
    return Bundle(decode_frame(synth, SCHEMA), np.ones(len(synth)), {"records": []}, synth, SCHEMA, measured)


def scaled(rows: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({"x": rows.x / 50, "n": rows.n / 100, "y": (rows.y == "yes").astype(int)})


def test_noise_aware_quantiles_cover_over_releases_and_the_rows_alone_do_not(monkeypatch):
    """24 releases at epsilon 1, each of a fresh private table of 1,500 rows: the noise-aware intervals of the
    median of x, of the integer column's median and of the share of x above 3 cover the truth in at least 21 of
    24; the synthetic rows' sampling interval covers the median of x less often (it leaves the noise out)."""
    monkeypatch.setenv("DPIW_CACHE", "off")
    share_truth = SHARE_ABOVE_3
    rng = np.random.default_rng(5)
    noise, sampling, n_med, share = 0, 0, 0, 0
    for seed in range(24):
        b = release(scaled(population(1500, rng)), seed)
        med = b.quantile("x")
        assert med.covers == NOISE_AWARE
        lo, hi = med.ci()
        noise += lo <= MEDIAN_X <= hi
        lo, hi = b.quantile("x", interval="sampling").ci()
        sampling += lo <= MEDIAN_X <= hi
        m = b.quantile("n")
        assert float(m.value).is_integer() and all(float(v).is_integer() for v in m.ci())
        n_med += m.ci()[0] <= 30 <= m.ci()[1]
        lo, hi = b.share("x", ">", 3).ci()
        share += lo <= share_truth <= hi
    assert noise >= 21 and n_med >= 21 and share >= 21, (noise, n_med, share)
    assert sampling < noise, (sampling, noise)


def test_a_share_within_a_subgroup_tilts_with_the_bins_as_the_model_says():
    """A subgroup whose share grows with x, rows released as the generator does (a bin, then a value from the
    column's fine histogram inside it): the share of the subgroup's rows above a threshold inside a bin comes
    out too low; the bins' estimate (of an indicator of the values) finds that error to first order."""
    rng = np.random.default_rng(3)
    grid = FineGrid(64, 64)
    t = (np.arange(64_000) + 0.5) / 64_000
    dens = np.exp(-((t - 0.4) ** 2) / (2 * 0.15**2))
    dens /= dens.sum()
    fine = np.add.reduceat(dens, np.arange(0, t.size, 1000))
    nb = NumericBins(grid, np.array([0, 16, 24, 28, 32, 40, 48, 64]), fine)
    p_s = 1 / (1 + np.exp(-(-3.0 + 6.0 * t)))
    b_of_t = nb.cells(t)
    p_bin = np.bincount(b_of_t, weights=dens * p_s) / np.maximum(np.bincount(b_of_t, weights=dens), 1e-300)
    mass = nb.coarse(fine)
    cell = rng.choice(len(mass), 400_000, p=mass / mass.sum())
    x = nb.values(cell, rng)
    s = rng.uniform(size=len(x)) < p_bin[cell]
    above = (t > 0.41).astype(float)  # a threshold inside the bin [0.375, 0.4375)
    e_bin = np.bincount(b_of_t, weights=dens * above) / np.maximum(np.bincount(b_of_t, weights=dens), 1e-300)
    p_b_s = mass * p_bin / (mass * p_bin).sum()
    error = float(p_b_s @ e_bin - (above * dens * p_s).sum() / (dens * p_s).sum())
    est = within_bin_bias(nb, x, np.ones(len(x)), s, lambda u: (u > 0.41).astype(float))
    assert error < -0.003  # measured: -0.0047 (the share of S above the threshold, 0.43 in the model)
    assert est == pytest.approx(error, rel=0.15), (est, error)  # measured: -0.0047


def test_quantiles_and_shares_say_what_is_wrong():
    rng = np.random.default_rng(2)
    rows = population(300, rng)
    b = rows_bundle(rows)
    with pytest.raises(DpiwError, match="'y' is categorical.*rate"):
        b.quantile("y")
    with pytest.raises(DpiwError, match="'y' is categorical"):
        b.share("y", ">", 1)
    with pytest.raises(DpiwError, match="op must be one of"):
        b.share("x", "=>", 3)
    for bad in ("3", float("nan"), True):
        with pytest.raises(DpiwError, match="value must be a finite number"):
            b.share("x", ">", bad)
    for q in (0, 1, 50, True):
        with pytest.raises(DpiwError, match="strictly between 0 and 1"):
            b.quantile("x", q)
    with pytest.raises(DpiwError, match="no column 'z'"):
        b.quantile("z")
    with pytest.raises(DpiwError, match="not a category"):
        b.quantile("x", 0.5, {"y": "maybe"})
    # a mask gives the sampling interval; the share and the quantile agree with the rows
    mask = (rows.y == "yes").to_numpy()
    assert b.quantile("x", 0.5, mask).value == float(np.quantile(rows.x[mask], 0.5, method="inverted_cdf"))
    assert b.share("x", "<=", 2.0).value == pytest.approx((rows.x <= 2.0).mean())
    assert b.share("n", ">=", 30).value == pytest.approx((rows.n >= 30).mean())
    # an interval that runs past the rows reaches the public bound
    few = rows_bundle(population(12, np.random.default_rng(4)))
    assert few.quantile("x", 0.05).ci()[0] == 0.0 and few.quantile("x", 0.95).ci()[1] == 50.0


def test_an_integer_quantile_prints_as_whole_numbers():
    b = rows_bundle(population(500, np.random.default_rng(6)))
    text = str(b.quantile("n"))
    assert "." not in text and text.startswith("30 (95% interval "), text
    assert "." in str(b.quantile("x"))
