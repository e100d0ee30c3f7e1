"""Quantiles and shares above a threshold of a numeric column (Bundle.quantile, Bundle.share): the weighted quantile
against numpy's, Woodruff's interval covering a known population's quantile as often as it says (rows drawn from
it, then releases with their noise), the bins' tilt of a share within a subgroup against the model's exact error,
whole numbers for an integer column, and clear refusals."""

import warnings
from dataclasses import replace
from math import erf, log, sqrt

import numpy as np
import pandas as pd
import pytest
from helpers import tilted_release

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


def test_a_bundles_share_carries_the_bins_tilt_with_its_sign(monkeypatch):
    """Through Bundle.share: among the rows with y = yes (whose share grows with x), the values inside a bin sit
    where the column's do, too low, so the released share above a threshold inside a bin is too low: the bins'
    part of its bias is negative, that of the share at or below the same threshold is its opposite, and a
    threshold the subgroup does not depend on (all rows) gets none."""
    monkeypatch.setenv("DPIW_CACHE", "off")
    b = release(scaled(population(4000, np.random.default_rng(8))), 0, eps=3.0)
    assert frozenset(("x", "y")) in b.measured_pairs
    above, below = b.share("x", ">", 2.0, {"y": "yes"}), b.share("x", "<=", 2.0, {"y": "yes"})
    assert above.biases["bins"] < 0 and below.biases["bins"] == pytest.approx(-above.biases["bins"], rel=1e-9)
    assert above.value + below.value == pytest.approx(1.0)
    assert b.share("x", ">", 2.0).biases["bins"] == 0.0
    mean = b.mean("x", {"y": "yes"})
    assert mean.biases["bins"] < 0  # the mean's, in the same release: the same sign
    mask = (b.data.y == "yes").to_numpy()
    with pytest.raises(DpiwError, match="a boolean mask cannot be applied"):
        b.quantile("x", 0.5, mask, interval="noise")
    with pytest.raises(DpiwError, match="a boolean mask cannot be applied"):
        b.share("x", ">", 3, mask, interval="noise")


def test_a_share_within_a_subgroup_tilts_with_the_bins_as_the_model_says():
    """A subgroup whose share grows with x, rows released as the generator does (a bin, then a value from the
    column's fine histogram inside it): the share of the subgroup's rows above a threshold inside a bin comes
    out too low; the bins' estimate (of an indicator of the values) finds that error to first order."""
    # a threshold inside the bin [0.375, 0.4375)
    nb, x, s, model_error = tilted_release(0.4, 0.15, [0, 16, 24, 28, 32, 40, 48, 64])
    error = model_error(lambda t: (t > 0.41).astype(float))
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
    # an interval that runs past the rows reaches the public bound, and its other end stays below the estimate
    # (the share's interval is not clipped to [0, 1] first: at the largest row the share is 1)
    few = rows_bundle(population(12, np.random.default_rng(4)))
    top, bottom = few.quantile("x", 0.95), few.quantile("x", 0.05)
    assert top.ci()[1] == 50.0 and top.ci()[0] < top.value
    assert bottom.ci()[0] == 0.0 and bottom.ci()[1] > bottom.value


def test_woodruffs_interval_is_centred_on_q_where_values_tie():
    """Half the rows hold 1, then 30% hold 2 and 20% 3: the 0.3-quantile is 1 (half the rows are at or below
    it), and the interval, from the share 0.5 at or below 1 (+- 0.098), is (1, 1): the released distribution
    reaches 0.3 + 0.5 - 0.598 to 0.3 + 0.5 - 0.402 at 1. Centred on the share (2v - hi), it would reach 2."""
    n = np.r_[[1] * 50, [2] * 30, [3] * 20]
    rows = pd.DataFrame({"x": np.ones(100), "n": n, "y": ["no"] * 100})
    q = rows_bundle(rows).quantile("n", 0.3)
    assert q.value == 1 and q.share.value == 0.5 and q.ci() == (1.0, 1.0)
    assert rows_bundle(rows).quantile("n", 0.5).ci() == (1.0, 2.0)


def test_rows_without_a_value_are_left_out():
    """A `missing: indicator` column's empty rows (NaN in b.data) are in neither a quantile nor a share."""
    x = np.r_[np.arange(1.0, 11.0), [np.nan] * 10]
    data = pd.DataFrame({"x": x, "n": np.zeros(20), "y": pd.Categorical(["no"] * 20, ["no", "yes"])})
    b = Bundle(data, np.ones(20), {}, None, SCHEMA, None)
    assert b.quantile("x").value == 5.0 and b.share("x", ">", 8).value == pytest.approx(0.2)


def test_an_integer_quantile_prints_as_whole_numbers():
    b = rows_bundle(population(500, np.random.default_rng(6)))
    text = str(b.quantile("n"))
    assert "." not in text and text.startswith("30 (95% interval "), text
    assert "." in str(b.quantile("x"))


def test_an_interval_of_no_width_says_how_many_rows_hold_its_value():
    """A median on a heap of one whole number: the interval is that number alone, which is right (however far the
    share moves, the quantile stays on the heap) but reads as certainty; the text says why (30 of 100 rows)."""
    n = np.r_[np.full(30, 35.0), np.arange(1.0, 35.0), np.arange(36.0, 72.0)]
    rows = pd.DataFrame({"x": np.ones(100), "n": n, "y": pd.Categorical(["no"] * 100, ["no", "yes"])})
    q = rows_bundle(rows).quantile("n")
    assert q.value == 35 and q.ci() == (35.0, 35.0)
    assert str(q) == "35 (95% interval 35 to 35: 30% of these rows hold 35)"
    assert str(rows_bundle(population(500, np.random.default_rng(6))).quantile("n")).count(":") == 0


def test_a_threshold_inside_a_pile_of_rows_reaches_over_it_and_says_so(monkeypatch):
    """40% of x is exactly 12.0 (a coded value in a column not declared whole-numbered), inside the fine cell
    11.91-12.11 of its bounds 0-50: the release spreads those rows evenly across the cell, so most come back
    below 12 and the share at or above 12 comes out far too low. The interval reaches over the cell's rows on
    both sides and covers the truth, with a CellWarning that names the fix; without the reach it would not. A
    threshold in a smooth stretch of the column (no pile) is left as it is."""
    from dpiw.analysis import CellWarning

    monkeypatch.setenv("DPIW_CACHE", "off")
    rng = np.random.default_rng(9)
    rows = population(5000, rng)
    piled = rng.uniform(size=5000) < 0.4
    rows["x"] = np.where(piled, 12.0, np.clip(rng.normal(12, 3, 5000), 0, 50))
    truth = float((rows.x >= 12).mean())
    b = release(scaled(rows), 1)
    with pytest.warns(CellWarning, match=r"12 falls inside the fine cell 11.91 to 12.11.*`integer: true`"):
        est = b.share("x", ">=", 12)
    lo, hi = est.ci()
    assert est.value < truth - 0.1 and lo <= truth <= hi, (est, truth)
    assert est.value + 1.96 * est.se < truth  # the standard error alone does not reach it
    assert est.reach[0] + est.reach[1] > 0.3
    with pytest.warns(CellWarning, match="which this interval does not show"):  # the rows alone: said, no reach
        assert b.share("x", ">=", 12, interval="sampling").reach == (0.0, 0.0)
    with pytest.warns(CellWarning, match=r"quantile\('x', 0.5\): the estimate .* lies inside"):
        q = b.quantile("x")
    lo, hi = q.ci()  # the pile's rows may sit anywhere in its cell, beyond any released value: it holds the cell
    assert q.cell == pytest.approx((11.9140625, 12.109375)) and lo <= q.cell[0] and hi >= q.cell[1]
    with warnings.catch_warnings():
        warnings.simplefilter("error", CellWarning)
        smooth = b.share("x", ">", 17.0)  # no pile: what it reaches over is the pruning's alone, a little
    from dpiw.analysis import bin_bias

    x = b.data.x.to_numpy(float)
    assert smooth.reach == bin_bias.pruning_reach(b._bins("x"), b._spec("x"), 17.0, np.greater, x, b.weights,
                                                  np.ones(x.size, bool), bin_bias.leaf_estimates(b.measurements, "x"))
    assert 0 < sum(smooth.reach) < 0.02  # (not 0: the test would not see the reach unwired)
    # an end of a quantile's interval inside the pile's cell, its top edge included (a trial's median hard disk,
    # 384 (343 to 422) against 340, in the cell 329 to 343): the interval reaches over the cell, and says so
    rows_x = (x, b.weights, np.ones(x.size, bool), bin_bias.leaf_estimates(b.measurements, "x"))
    share, cell = bin_bias.pile_at(b._bins("x"), b._spec("x"), 12.1, *rows_x)
    assert cell == pytest.approx((11.9140625, 12.109375)) and share > 0.3
    assert bin_bias.pile_at(b._bins("x"), b._spec("x"), 17.0, *rows_x) == (0.0, None)
    far = replace(q, cell=None)
    monkeypatch.setattr(Quantile, "ci", lambda self, level=0.95: (12.1, 20.0) if self.cell is None else
                        (min(12.1, self.cell[0]), 20.0))
    with pytest.warns(CellWarning, match=r"quantile\('x', 0.5\): the lower end of its interval, 12.1, lies inside "
                                         r"the fine cell 11.91 to 12.11"):
        reached = b._end_in_pile("x", 0.5, None, far)
    assert reached.cell == pytest.approx(cell) and reached.ci()[0] == pytest.approx(11.9140625)


def test_a_small_pile_at_a_shares_own_threshold_is_reached_over(monkeypatch):
    """2.5% of 20,000 rows hold exactly 5.0 (an answer rounded to a whole number) in the fine cell 4.88-5.08: under
    the datasheet's 5% of the rows, so no pile there, and the share above 5 (the pile below it, the release's
    values drawn evenly over the cell, 40% of them above) came out 0.047 (95% interval 0.041 to 0.054) against
    0.031. The test of the share's own threshold (1% of the rows, 2 noise sds: one cell, not a search) finds it,
    warns, and reaches over the cell's rows above 5, and the interval covers."""
    from dpiw.analysis import CellWarning, bin_bias

    monkeypatch.setenv("DPIW_CACHE", "off")
    rng = np.random.default_rng(2)
    rows = population(20000, rng)
    rows["x"] = np.where(rng.uniform(size=20000) < 0.025, 5.0, rows.x)
    truth = float((rows.x > 5).mean())
    b = release(scaled(rows), 2)
    with pytest.warns(CellWarning, match=r"5 falls inside the fine cell 4.883 to 5.078"):
        est = b.share("x", ">", 5)
    x = b.data.x.to_numpy(float)
    above = float(((x > 5) & (x < 5.078125)).mean())  # the cell's released rows above 5: 40% of its 3%
    assert est.reach[0] >= above > 0.008  # (and the pruning's reach on top)
    lo, hi = est.ci()
    assert lo <= truth <= hi, (est, truth)
    monkeypatch.setattr(bin_bias, "REACH_NAMED", bin_bias.PILE_NAMED)  # the datasheet's test: no pile, a miss
    monkeypatch.setattr(bin_bias, "REACH_SDS", bin_bias.PILE_SDS)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CellWarning)
        before = b.share("x", ">", 5)
    assert not before.ci()[0] <= truth, (before, truth)


def test_a_pile_is_reached_over_on_the_side_each_comparison_puts_it():
    """bin_bias.cell_reach on hand-built grids (rows as a release draws them: evenly across their cell). 40% of
    the rows are exactly 12 in the cell [12, 13) of bounds 0-64: "<= 12" may be too low by the whole pile, "> 12"
    too high by it, "< 12" and ">= 12" are right as they are (no value the cell holds is on the other side); a
    threshold inside the cell splits the pile; a cell no higher than its neighbours is no pile; a spike's leaf is
    no neighbour; a cell of several whole numbers splits too, one whole number's never."""
    from dpiw.analysis.bin_bias import cell_reach
    from dpiw.analysis.bundle import COMPARISONS as C
    from dpiw.data.schema import Column

    rng = np.random.default_rng(0)

    def rows(col, grid, mass):
        nb = NumericBins(grid, np.array([0, grid.support]), np.asarray(mass, float) / np.sum(mass))
        x = np.asarray(col.from_unit(nb.values(np.zeros(20_000, int), rng)))
        return nb, np.rint(x) if col.integer else x

    def measured(nb):  # the tree measured these cells exactly (no noise)
        return nb.fine, 0.0

    col = Column("x", "numeric", 0.0, 64.0)
    mass = np.full(64, 0.6 / 63)
    mass[12] = 0.4
    nb, x = rows(col, FineGrid(64, 64), mass)
    w, everyone = np.ones(x.size), np.ones(x.size, bool)

    def reach(op, t, nb=nb, col=col, x=x):
        on, off, _ = cell_reach(nb, col, t, C[op], x, w, everyone, measured(nb))
        return round(on, 2), round(off, 2)

    assert reach("<=", 12.0) == (0.0, 0.4) and reach(">", 12.0) == (0.4, 0.0)
    assert reach("<", 12.0) == (0.0, 0.0) and reach(">=", 12.0) == (0.0, 0.0)
    assert reach("<=", 12.5) == (0.2, 0.2) and reach(">", 12.5) == (0.2, 0.2)
    assert reach(">", 30.5) == (0.0, 0.0)  # a cell no higher than its neighbours
    near = (x > 25) & (x < 36)  # a subgroup where that cell holds a tenth of the rows: still no pile
    assert cell_reach(nb, col, 30.5, C[">"], x, w, near, measured(nb))[2] is None
    # a spike at the lower bound (30% at 0) beside a pile (15% in the first cell after it)
    spiked = Column("x", "numeric", 0.0, 64.0, spikes=("lower",))
    grid = FineGrid.of(spiked, 64)
    mass = np.full(64, 0.55 / 62)
    mass[0], mass[1] = 0.3, 0.15
    nb2, x2 = rows(spiked, grid, mass)
    on, off, cell = cell_reach(nb2, spiked, 0.5, C[">"], x2, w, everyone, measured(nb2))
    assert cell_reach(nb2, spiked, 0.5, C[">"], x2, w, everyone, None)[2] is None  # no tree published: no pile
    assert cell is not None and on + off == pytest.approx(0.15, abs=0.02)
    # whole numbers 0-1000 on 64 cells of 15-16 each: a pile at 12 in the cell 0-15 splits; on 0-50, a cell each
    wide = Column("n", "numeric", 0.0, 1000.0, integer=True)
    grid = FineGrid.of(wide, 64)
    assert not grid.per_integer
    mass = np.full(64, 0.6 / 63)
    mass[0] = 0.4
    nb3, x3 = rows(wide, grid, mass)
    assert reach(">=", 12, nb3, wide, x3)[0] > 0.05 and reach(">=", 12, nb3, wide, x3)[1] > 0.05
    assert reach(">=", 16, nb3, wide, x3) == (0.0, 0.0)  # the next cell's first whole number: no split
    narrow = Column("n", "numeric", 0.0, 50.0, integer=True)
    grid = FineGrid.of(narrow, 64)
    mass = np.full(grid.cells, 0.6 / 50)
    mass[12], mass[51:] = 0.4, 0.0
    nb4, x4 = rows(narrow, grid, mass)
    assert all(reach(op, 12, nb4, narrow, x4) == (0.0, 0.0) for op in C)


def pruned_counts():
    """A hand-built count column 0-200 (a cell per whole number) whose tree measured 6% of the rows at each of 9 and
    10 and 4% at each of 11-16 (a bin 9-16 of 36%), and whose pruning emptied 9 and 10 and drew their rows at 11 and
    12: (column, grid, measured cells, pruned cells, bins, each row's bin, 40,000 released values)."""
    from dpiw.data.schema import Column

    col = Column("visits", "numeric", 0.0, 200.0, integer=True)
    grid = FineGrid.of(col, 256)
    measured = np.zeros(grid.cells)
    measured[:9] = 0.44 / 9
    measured[9:11] = 0.06
    measured[11:17] = 0.04
    measured[17:40] = 0.2 / 23
    pruned = measured.copy()
    pruned[11] += 0.06
    pruned[12] += 0.06
    pruned[9:11] = 0.0
    nb = NumericBins(grid, np.array([0, 9, 17, grid.support]), pruned)
    rng = np.random.default_rng(1)
    cells = rng.choice(3, 40_000, p=[0.44, 0.36, 0.2])
    return col, grid, measured, pruned, nb, cells, np.rint(np.asarray(col.from_unit(nb.values(cells, rng))))


def test_a_share_reaches_over_the_rows_the_pruning_moved_across_its_threshold():
    """bin_bias.pruning_reach on a hand-built count column 0-200 (a cell per whole number): its tree measured 6%
    of the rows at each of 9 and 10 and 4% at each of 11-16 (a bin 9-16 of 36%); the pruning emptied 9 and 10
    and drew their rows at 11 and 12, so "> 10" is 0.36 from the rows against 0.24. The interval reaches 0.12
    lower; ">= 9" and "> 16" (the bin's edges: every row of it on one side) reach nothing; a bin whose measured
    mass is within its noise of nothing reaches over all of its rows."""
    from dpiw.analysis.bin_bias import pruning_reach
    from dpiw.analysis.bundle import COMPARISONS as C

    col, grid, measured, pruned, nb, cells, x = pruned_counts()
    assert grid.per_integer and grid.support == 201
    w, everyone = np.ones(x.size), np.ones(x.size, bool)
    assert np.mean(x > 10) == pytest.approx(0.56, abs=0.01)  # the table's: 0.24 + 0.2 = 0.44

    def reach(op, t, leaves=(measured, 0.001), mask=everyone):
        return tuple(round(r, 3) for r in pruning_reach(nb, col, t, C[op], x, w, mask, leaves))

    down, up = reach(">", 10)
    assert down == pytest.approx(0.12, abs=0.01) and up == 0.0  # the share may be 0.12 too high
    assert reach("<=", 10)[1] == pytest.approx(0.12, abs=0.01) and reach("<=", 10)[0] == 0.0  # mirrored
    assert reach(">=", 9) == (0.0, 0.0) and reach(">", 16) == (0.0, 0.0) and reach(">", 5) == (0.0, 0.0)
    assert reach(">", 12) == (0.0, 0.0)  # 13-16 hold what was measured there
    assert reach(">", 10, leaves=None) == (0.0, 0.0)  # no tree published
    in_bin = (x >= 9) & (x <= 16)  # a subgroup of the bin's rows: its share moves by the whole difference
    assert reach(">", 10, mask=in_bin)[0] == pytest.approx(0.12 / 0.36, abs=0.02)
    quiet = measured.copy()
    quiet[9:17] = 0.0005  # the bin measured at nothing beyond its noise: its rows may be on either side
    assert reach(">", 10, leaves=(quiet, 0.01)) == (pytest.approx(0.36, abs=0.01), 0.0)  # all drawn above 10
    assert sum(reach(">", 11, leaves=(quiet, 0.01))) == pytest.approx(0.36, abs=0.01)  # 11's on one side, 12-16's
    # the pruned bin all below the threshold while its measured cells above it hold nothing or less (their noise):
    # every bootstrap replicate prunes alike (no spread), so the noise of those cells' sum is a variance of its
    # own (a trial's income share above 20: "0 (95% interval 0 to 0)" against 0.0003)
    from dpiw.analysis.bin_bias import pruning_variance
    from dpiw.sdgp.binning import canonical

    tail, low = measured.copy(), pruned.copy()
    tail[30:40], low[17:30], low[30:40] = -0.0005, 0.2 / 13, 0.0
    nb_t = NumericBins(grid, np.array([0, 9, 17, grid.support]), low)
    x_t = np.rint(np.asarray(col.from_unit(nb_t.values(cells, np.random.default_rng(2)))))
    assert not (x_t > 29).any()
    assert pruning_reach(nb_t, col, 29, C[">"], x_t, w, everyone, (tail, 0.001)) == (0.0, 0.0)  # nothing measured
    sd = 0.001 * np.sqrt(canonical(30, grid.support)) / tail[17:grid.support].sum()
    var = pruning_variance(nb_t, col, 29, C[">"], x_t, w, everyone, (tail, 0.001))
    assert var == pytest.approx((np.mean(x_t >= 17) * sd) ** 2, rel=1e-6) and np.sqrt(var) > 0.002
    assert pruning_variance(nb, col, 12, C[">"], x, w, everyone, (measured, 0.001)) == 0.0  # rows on both sides
    # the same cells as noisy as the bin's whole measured mass (the sd of their sum, over its canonical nodes, at
    # least that mass; one node's sd below it): their sum says nothing, so the bin's rows may lie above 29 (a
    # trial's count share ">= 4": 0 (95% interval 0 to 0.0005) against 0.019; the cells above 3 measured 0.0003,
    # noise sd 0.035)
    noisy = 0.05
    assert noisy < tail[17:grid.support].sum() <= noisy * np.sqrt(canonical(30, grid.support))
    assert pruning_reach(nb_t, col, 29, C[">"], x_t, w, everyone, (tail, noisy)) == (
        0.0, pytest.approx(np.mean(x_t >= 17)))
    assert pruning_reach(nb_t, col, 29, C["<="], x_t, w, everyone, (tail, noisy)) == (
        pytest.approx(np.mean(x_t >= 17)), 0.0)  # mirrored
    # whole numbers as a release gives them (rounded): on 0-200, 29 / 200 * 200 is not exactly 29 in floating point
    at29 = NumericBins(grid, np.array([0, 29, 60, grid.support]), pruned)
    for op, t in (("<", 29), ("<=", 28), (">=", 29), (">", 28)):  # every row of the bin 29-59 on one side
        assert pruning_reach(at29, col, t, C[op], x, w, everyone, (measured, 0.001)) == (0.0, 0.0), (op, t)


def test_a_quantile_at_the_last_whole_number_of_a_piled_cell_reaches_over_the_cell(monkeypatch):
    """A count of visits (whole numbers, public bounds 0-400 with a spike at 0: more whole numbers than fine
    cells, so 1 and 2 share one): 30% of the rows are 0, 24% are 1 and 6% are 2, so the median is 1. The release
    draws the cell's 30% evenly over 1 and 2, the share at or below 1 comes out near 0.45 and the median 2, the
    last whole number of the cell, where the share "<= 2" splits nothing. The quantile warns of the pile and its
    interval reaches over the cell, down to 1 (as a trial's DoctorContacts release did, median 2 against 1)."""
    from dpiw.analysis import CellWarning
    from dpiw.scale import scale_frame

    monkeypatch.setenv("DPIW_CACHE", "off")
    schema = parse_schema({"name": "v", "task": "classification", "target": "y", "columns": [
        {"name": "visits", "type": "numeric", "lower": 0, "upper": 400, "integer": True, "spikes": [0]},
        {"name": "y", "type": "categorical", "categories": ["no", "yes"]}]})
    rng = np.random.default_rng(3)
    n = 20_000
    visits = rng.choice([0, 1, 2, -1], p=[0.3, 0.24, 0.06, 0.4], size=n)  # -1: 3 or more, a geometric tail
    visits = np.where(visits < 0, np.minimum(2 + rng.geometric(0.15, n), 60), visits)
    rows = pd.DataFrame({"visits": visits, "y": np.where(rng.uniform(size=n) < 0.3, "yes", "no")})
    assert np.median(rows.visits) == 1
    data = scale_frame(rows, schema, {"visits": (0.0, 400.0)})
    gen = MST(iters=200, fine_cells=256).fit(data, schema, epsilon=1.0, delta=1e-6, rng=rng)
    synth = gen.sample(n, rng=rng)
    b = Bundle(decode_frame(synth, schema), np.ones(n), {"records": []}, synth, schema,
               {"generator": {**measurements_dict(gen), "total": float(n), "iters": gen.iters}})
    assert b.bins("visits")[0] == (0.0, 0.0)
    with pytest.warns(CellWarning, match=r"quantile\('visits', 0.5\): the estimate 2 lies inside the fine cell 1 to "
                                         r"2, .*the interval reaches over them"):
        med = b.quantile("visits")
    assert med.value == 2 and med.cell == (1.0, 2.0)
    lo, hi = med.ci()
    assert lo <= 1 <= hi


def test_a_share_with_no_spread_gets_the_measured_cells_noise_and_only_it(monkeypatch):
    """A share every replicate prunes alike, with nothing across its threshold measured (a trial's income above
    20: "0 (95% interval 0 to 0)", truth 0.0003), gets the noise of the tree's measured cells across the
    threshold as a variance of its own (bin_bias.pruning_variance; what it is, tests above); a share whose interval
    has a width keeps it as it is (added to every share, it widened 1,000-row intervals past twice their
    calibrated width). Here x > 30, whose last bin the release's tree measured within its noise of nothing,
    with the reach over that bin taken away, stands in for the trial's."""
    from dpiw.analysis import bin_bias

    monkeypatch.setenv("DPIW_CACHE", "off")
    b = release(scaled(population(1500, np.random.default_rng(11))), seed=3)
    assert not (b.data.x > 30).any()
    monkeypatch.setattr(bin_bias, "pruning_reach", lambda *a: (0.0, 0.0))
    monkeypatch.setattr(bin_bias, "pruning_variance", lambda *a: 0.004 ** 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        far = b.share("x", ">", 30.0)
        near = b.share("x", ">", 3.0)
    assert far.value == 0.0 and far.parts["pruned_side"] == 0.004 ** 2 and far.se == pytest.approx(0.004)
    assert far.ci() == (0.0, pytest.approx(1.96 * 0.004, rel=1e-3))
    assert near.se > 0 and "pruned_side" not in near.parts


def test_a_quantile_at_the_rows_largest_value_takes_its_interval_from_the_share_below_it(monkeypatch):
    """A score of whole numbers 0-12 (geometric, 0 a spike), 5,000 rows, 8 releases at epsilon 1: the 99.5th
    percentile often comes out at the rows' largest value, where every row is at or below it and the share there
    has no spread, so its interval stopped at the estimate (2 of these 8 missed, as a trial's 99th percentile of a
    0-12 score did: "12 (95% interval 12 to 12)" against 10). The share below it carries the interval: every one
    covers the table's percentile."""
    from dpiw.scale import scale_frame

    monkeypatch.setenv("DPIW_CACHE", "off")
    schema = parse_schema({"name": "s", "task": "classification", "target": "y", "columns": [
        {"name": "score", "type": "numeric", "lower": 0, "upper": 12, "integer": True, "spikes": [0]},
        {"name": "y", "type": "categorical", "categories": ["no", "yes"]}]})
    n, at_max, covered = 5000, 0, 0
    for seed in range(8):
        rng = np.random.default_rng(seed)
        score = np.minimum(rng.geometric(0.42, n) - 1, 12)
        rows = pd.DataFrame({"score": score, "y": np.where(rng.uniform(size=n) < 0.2 + 0.05 * score, "yes", "no")})
        gen = MST(iters=200, fine_cells=256).fit(scale_frame(rows, schema, {"score": (0.0, 12.0)}), schema,
                                                 epsilon=1.0, delta=1e-6, rng=rng)
        synth = gen.sample(n, rng=rng)
        b = Bundle(decode_frame(synth, schema), np.ones(n), {"records": []}, synth, schema,
                   {"generator": {**measurements_dict(gen), "total": float(n), "iters": gen.iters}})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            q = b.quantile("score", 0.995)
        if q.value == b.data.score.max():
            at_max += 1
            assert q.share.value == pytest.approx(np.mean(b.data.score < q.value))  # below it, not at or below
        lo, hi = q.ci()
        covered += lo <= np.quantile(rows.score, 0.995, method="inverted_cdf") <= hi
    assert at_max >= 6 and covered == 8


def test_a_quantile_in_a_lump_the_pruning_made_reaches_where_the_tree_measured_its_rows():
    """The count column of the test above: the pruning emptied 9 and 10 (6% of the rows each, measured) and drew
    their rows at 11 and 12, so the released distribution function jumps from 0.44 to 0.54 at 11 where the table's
    rises through 9 and 10. The 47th percentile comes back 11, and Woodruff's interval through the rows stays on 11
    however the share moves; carried back through the bin as the tree measured it (bin_bias.measured_shape: the
    bin's rows spread over 9-16 by the measured cells) it reaches 9, the table's, and Quantile.pruned holds that."""
    from dpiw.analysis.bin_bias import measured_shape
    from dpiw.analysis.estimates import Estimate

    col, grid, measured, pruned, nb, _, x = pruned_counts()
    w = np.ones(x.size)
    value = weighted_quantile(x, w, 0.47)
    assert value == 11
    share = Estimate(float(np.mean(x <= value)), 0.005, float(x.size), covers=NOISE_AWARE)
    est = Quantile(value, 0.47, share, (0.0, 200.0), x, w)
    assert est.ci()[0] == 11  # the lump: every share the interval allows falls inside its jump
    values, weights = measured_shape(nb, col, value, x, w, (measured, 0.001))
    assert weights.sum() == pytest.approx(w.sum())
    inside = (values >= 9) & (values <= 16)
    by_value = pd.Series(weights[inside]).groupby(values[inside]).sum() / weights.sum()
    assert by_value.loc[9.0] == pytest.approx(0.06 / 0.36 * np.mean((x >= 9) & (x <= 16)), rel=1e-9)
    through = replace(est, _values=values, _weights=weights).ci()
    assert through[0] == 9
    held = replace(est, pruned=(values, weights))
    assert held.ci() == (9, max(through[1], est.ci()[1]))
    half = held.ci(0.5)  # at the level asked for, not the 95% interval's reach
    assert half == (min(est.ci(0.5)[0], replace(est, _values=values, _weights=weights).ci(0.5)[0]),
                    max(est.ci(0.5)[1], replace(est, _values=values, _weights=weights).ci(0.5)[1]))
    # a wide top bin (40-200) whose rows the tree measured at its first whole number, every cell past it noise about
    # nothing: the measured running sum keeps the bin's rows at 40 (within the noise of its first steps), where each
    # cell's count clipped at zero would have spread over half of them past 41 (0.4 sd a cell, 160 cells); a bin
    # measured within one noise sd of nothing is spread evenly (its measured shape says nothing)
    noisy = measured.copy()
    noisy[40], noisy[17:40] = 0.2, 0.0
    noisy[41:201] = np.random.default_rng(3).normal(0, 0.002, 160)
    top = NumericBins(grid, np.array([0, 9, 17, 40, grid.support]), pruned)
    at40 = np.full(1000, 40.0)
    values, weights = measured_shape(top, col, 40.0, at40, np.ones(1000), (noisy, 0.002))
    assert weights[values > 41].sum() / weights.sum() < 0.1
    noisy[40] = 0.001
    values, weights = measured_shape(top, col, 40.0, at40, np.ones(1000), (noisy, 0.002))
    assert np.allclose(pd.Series(weights).groupby(values).sum().to_numpy(), 1000 / 161)


def test_a_bundles_quantile_holds_the_measured_shape_where_the_pruning_moved_rows_across_it():
    """Bundle._through_measured on a bundle that publishes the column's tree (pruned_counts' column): over all rows or
    a subgroup of another column, where the pruning moved rows across the 47th percentile (11), the interval reaches
    9; over a subgroup of the column's own values (visits >= 11) the bin's measured shape is not that subgroup's,
    and the interval is left as it was; nor where the estimate's bin lies wholly on one side (the 40th
    percentile, 8)."""
    from dpiw.analysis.estimates import Estimate
    from dpiw.sdgp.binning import Binning, tree_levels

    col, grid, measured, pruned, nb, _, x = pruned_counts()
    schema = parse_schema({"name": "t", "task": "classification", "target": "y", "columns": [
        {"name": "visits", "type": "numeric", "lower": 0, "upper": 200, "integer": True},
        {"name": "y", "type": "categorical", "categories": ["a", "b"]}]})
    n = float(x.size)
    published = {"generator": {"bins": 3, "total": n, "fine": {
        "binning": Binning(schema, {"visits": nb}).to_dict(),
        "levels": {"visits": [lv.tolist() for lv in tree_levels(measured * n)[1:]]}, "std": {"visits": 1.0}}}}
    y = np.random.default_rng(4).choice(["a", "b"], x.size)
    data = pd.DataFrame({"visits": x, "y": pd.Categorical(y, categories=["a", "b"])})
    b = Bundle(data, np.ones(x.size), {}, None, schema, published)

    def quantile(q, where):
        mask = b._subgroup(where)
        value = weighted_quantile(x[mask], np.ones(mask.sum()), q)
        share = Estimate(float(np.mean(x[mask] <= value)), 0.005, float(mask.sum()), covers=NOISE_AWARE)
        est = Quantile(value, q, share, (0.0, 200.0), x[mask], np.ones(mask.sum()))
        return est, b._through_measured("visits", where, "<=", est)

    for where in (None, {"y": "a"}):
        est, got = quantile(0.47, where)
        assert est.value == 11 and est.ci()[0] == 11 and got.pruned is not None and got.ci()[0] == 9
    est, got = quantile(0.05, lambda d: d.visits >= 11)
    assert got.pruned is None and got.ci() == est.ci()
    est, got = quantile(0.40, None)
    assert est.value == 8 and got.pruned is None


def test_a_threshold_in_a_heavy_cell_among_heavy_cells_warns_without_reaching(monkeypatch):
    """x reported to the nearest 0.2 (every fine cell of 0-50, 0.195 wide, holds one heap): the cell 0.977-1.172
    holds 19% of the rows, its neighbours 5-20%, so it is no pile over twice them, and the rows at exactly 1.0 come
    back spread evenly across it: P(x > 1) reads 0.768 against 0.590. A cell of 5% of the rows or more warns
    (bin_bias.REACH_HEAVY) and says the interval does not show it; it does not reach over the cell, which made a
    smooth column's intervals 2-8 times wider (bench/heaped_shares.py --weeks). The median warns once (its interval
    lies in its own cell) and holds no cell; the 40th percentile's upper end lies in the next heavy cell, which warns
    as well."""
    from dpiw.analysis import CellWarning, bin_bias

    monkeypatch.setenv("DPIW_CACHE", "off")
    rng = np.random.default_rng(3)
    rows = population(20000, rng)
    rows["x"] = np.round(np.clip(rng.lognormal(np.log(1.2), 0.35, 20000), 0, 50) / 0.2) * 0.2
    truth = float((rows.x > 1.0 + 1e-9).mean())
    b = release(scaled(rows), 3)
    with pytest.warns(CellWarning, match=r"1 falls inside the fine cell 0.9766 to 1.172, which holds 19% of these "
                                         r"rows, and the column's tree measured 5% or more of all its rows there \(no "
                                         r"pile over twice the cells around it\).*which this interval does not show"):
        est = b.share("x", ">", 1.0)
    assert est.value > truth + 0.1  # the even spread puts most of the rows at 1.0 above it: what the warning says
    with pytest.warns(CellWarning) as said:
        q = b.quantile("x")
    said = [str(w.message) for w in said if w.category is CellWarning]
    assert len(said) == 1 and "the estimate 1.281 lies inside the fine cell 1.172 to 1.367" in said[0]
    assert q.cell is None
    with pytest.warns(CellWarning) as said:
        q40 = b.quantile("x", 0.4)
    said = [str(w.message) for w in said if w.category is CellWarning]
    assert len(said) == 2 and q40.cell is None
    assert said[0].startswith("quantile('x', 0.4): the estimate 1.17 lies inside the fine cell 0.9766 to 1.172")
    assert said[1].startswith("quantile('x', 0.4): the upper end of its interval, 1.179, lies inside the fine cell "
                              "1.172 to 1.367") and "which this interval does not show" in said[1]
    monkeypatch.setattr(bin_bias, "REACH_HEAVY", None)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CellWarning)
        before, q_before, q40_before = b.share("x", ">", 1.0), b.quantile("x"), b.quantile("x", 0.4)
    assert before.ci() == est.ci() and before.reach == est.reach and q_before.ci() == q.ci()
    assert q40_before.ci() == q40.ci()


def test_a_quantiles_interval_holds_every_value_whose_share_interval_holds_q():
    """Test inversion (Quantile.inverted): the released distribution function is lumpy below the 90th percentile
    (3% of the rows on 85) and the share at the estimate (89) is measured more tightly than the shares near it (se
    0.03, a bin's inside). Woodruff's interval carries the estimate's error to every value and stops at 91; a table
    whose 90th percentile is 93 (its share at or below 93, 0.90, inside the released share's interval there, 0.94 +-
    0.059) lies in the set of values whose share's interval holds q, which runs from the first tested value whose
    upper end reaches 0.9 to the first whose lower end passes it; the interval is the union of both, at the level
    the values were tested at (Woodruff's alone at another)."""
    from dpiw.analysis.estimates import Estimate

    x = np.concatenate([np.repeat(np.arange(100.0), 10), np.full(20, 85.0)])
    w = np.ones(x.size)
    value = weighted_quantile(x, w, 0.9)
    assert value == 89

    def share(t, se):
        return Estimate(float(np.mean(x <= t)), se, float(x.size), covers=NOISE_AWARE)

    woodruff = Quantile(value, 0.9, share(value, 0.003), (0.0, 100.0), x, w)
    assert woodruff.ci() == (87, 91)
    tests = tuple((float(t), share(t, 0.003 if t == value else 0.03)) for t in (80, 84, 86, 88, 89, 90, 93, 95, 97))
    est = replace(woodruff, tests=tests, window=(80.0, 97.0), tested_at=0.95)
    ends = [s.ci() for _, s in tests]
    first = min(i for i, (_, hi) in enumerate(ends) if hi >= 0.9)
    past = min(i for i, (lo, _) in enumerate(ends) if lo > 0.9)
    assert est.inverted() == (tests[first][0], tests[past][0]) == (86, 95)  # 84's reaches 0.892, 95's 0.902 at least
    assert est.ci() == (min(woodruff.ci()[0], 86), max(woodruff.ci()[1], 95)) == (86, 95)
    for level in (0.5, 0.99):  # the values were tested at 0.95 only: another level's interval is Woodruff's
        assert est.ci(level) == woodruff.ci(level)
    # no tested share reaches q: the quantile lies above them all, up to the public bound; every one passes q:
    # below them all, down to the lower bound
    low = tuple((t, replace(s, value=0.5, se=0.01)) for t, s in tests)
    assert replace(est, tests=low).inverted() == (97.0, 100.0)
    high = tuple((t, replace(s, value=0.99, se=0.01)) for t, s in tests)
    assert replace(est, tests=high).inverted() == (0.0, 80.0)


def test_a_bundles_quantile_inverts_the_shares_b_share_gives(monkeypatch):
    """With bundle.INVERT on (off by default), in a release (noise-aware), a quantile's tested shares are b.share's
    at or below each tested value (before b.share's check against a published marginal; with Woodruff's binomial
    floor on the standard error), the tested values are released values in the window, and its interval holds
    Woodruff's."""
    from dpiw.analysis import bundle as bundle_module

    monkeypatch.setenv("DPIW_CACHE", "off")
    b = release(scaled(population(3000, np.random.default_rng(11))), 2)
    for column, q, where in (("x", 0.9, None), ("x", 0.5, {"y": "yes"}), ("n", 0.25, None)):
        assert b.quantile(column, q, where).tests is None  # off by default (bundle.INVERT)
        monkeypatch.setattr(bundle_module, "INVERT", True)
        est = b.quantile(column, q, where)
        assert est.tests and est.window[0] <= est.value <= est.window[1]
        floor = sqrt(q * (1 - q) / est.share.ess)
        released = set(b.data[column].to_numpy(float))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for t, s in est.tests:
                assert t in released and est.window[0] <= t <= est.window[1]
                direct = b._share(column, "<=", t, where, "auto")[0]
                assert s.value == pytest.approx(direct.value) and s.se == pytest.approx(max(direct.se, floor))
        lo, hi = replace(est, tests=None).ci()
        assert est.ci()[0] <= lo and est.ci()[1] >= hi
        if where is None:  # the bisection's ends are those of testing every released value in the window
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                window = sorted({v for v in released if est.window[0] <= v <= est.window[1]})
                every = tuple((t, replace(b._share(column, "<=", t, where, "auto")[0],
                                          se=max(b._share(column, "<=", t, where, "auto")[0].se, floor),
                                          limits=None)) for t in window)
            assert len(every) >= len(est.tests) and replace(est, tests=every).inverted() == est.inverted()
        monkeypatch.setattr(bundle_module, "INVERT", False)


def test_a_subgroup_mean_warns_through_b_mean_where_its_relation_was_measured_under_its_noise(monkeypatch):
    """A release at epsilon 0.3 of 1,500 rows: the one-way marginal of y counts the ~300 rows of y = yes well, but
    the generator's (x, y) marginal measured them, summed over x's cells, under 4 noise sds: b.mean('x') among them
    warns that how x lies within the subgroup was measured under its noise (Bundle._weak, reached through
    _against_marginal); among y = no (1,200 rows) it does not; with bundle.WEAK_WARNS off, neither."""
    from dpiw.analysis import MeasurementWarning
    from dpiw.analysis import bundle as bundle_module

    monkeypatch.setenv("DPIW_CACHE", "off")
    b = release(scaled(population(1500, np.random.default_rng(0))), 0, eps=0.3)

    def said(where):
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            b.mean("x", where)
        return [str(w.message) for w in got if issubclass(w.category, MeasurementWarning)
                and "measured under its noise" in str(w.message)]

    weak = said({"y": "yes"})
    assert len(weak) == 1 and "noisy marginal of 'x', 'y', the best that holds 'x' with the subgroup" in weak[0]
    assert said({"y": "no"}) == []
    monkeypatch.setattr(bundle_module, "WEAK_WARNS", False)
    assert said({"y": "yes"}) == []
