"""The bins' part of a noise-aware mean's bias (dpiw.analysis.bin_bias): rows released as a marginal generator with
fine histograms releases them (a coarse bin per row, its value drawn from the column's histogram inside the bin)
put a subgroup's mean off by a known amount; the estimate must find it, find none where the subgroup does not
depend on the column, and stand aside where the subgroup is cut by the column itself."""

import warnings

import numpy as np
import pandas as pd
import pytest

from dpiw import DpiwError
from dpiw.analysis.bin_bias import depends_on, within_bin_bias
from dpiw.data.schema import Column
from dpiw.sdgp.binning import FineGrid, NumericBins

CELLS, CUTS = 64, np.array([0, 4, 8, 12, 16, 24, 32, 44, 64])  # 8 bins, narrower where the rows are
GRID = FineGrid(CELLS, CELLS)
#: P(S | x) of the two populations: a moderate and a steep logistic
SHARES = {"moderate": (-2.0, 4.0), "steep": (-3.0, 8.0)}


def population(share: str = "moderate"):
    """x on [0, 1] with density 2 (1 - x) (a skewed column), P(S | x) = sigmoid(a + b x): the fine histogram,
    the grid it is integrated on and P(S | x) on it."""
    a, b = SHARES[share]
    t = (np.arange(CELLS * 1000) + 0.5) / (CELLS * 1000)
    dens = 2 * (1 - t)
    fine = np.add.reduceat(dens, np.arange(0, t.size, 1000)) / dens.sum()
    return fine, t, dens / dens.sum(), lambda x: 1 / (1 + np.exp(-(a + b * x)))


def released(fine, t, dens, p_s, n: int, rng, depends: bool = True):
    """Rows as the release makes them from an exact model of (bin, S): the bin by its mass, S by P(S | bin),
    x from the fine histogram inside the bin (independent of S given the bin); and the exact error of the
    release's mean within S, sum_b P(b | S) E[x | b] - E[x | S]."""
    nb = NumericBins(GRID, CUTS, fine)
    mass = nb.coarse(fine)
    b_of_t = nb.cells(t)
    p_bin = (np.bincount(b_of_t, weights=dens * p_s(t)) / np.bincount(b_of_t, weights=dens)
             if depends else np.full(len(mass), 0.3))
    cell = rng.choice(len(mass), n, p=mass / mass.sum())
    x = nb.values(cell, rng)
    s = rng.uniform(size=n) < p_bin[cell]
    # E[x | b] as released: the fine histogram's cells are uniform inside, so the bin's mean of t under dens
    e_bin = np.bincount(b_of_t, weights=dens * t) / np.bincount(b_of_t, weights=dens)
    p_b_s = mass * p_bin / (mass * p_bin).sum()
    error = float(p_b_s @ e_bin - (t * dens * p_s(t)).sum() / (dens * p_s(t)).sum())
    return nb, x, s, error


@pytest.mark.parametrize("share", sorted(SHARES))
def test_a_subgroup_whose_share_grows_with_the_column_is_found_too_low_by_the_right_amount(share):
    fine, t, dens, p_s = population(share)
    nb, x, s, error = released(fine, t, dens, p_s, 400_000, np.random.default_rng(1))
    assert error < -0.002  # the bins put the release's mean within S too low
    est = within_bin_bias(nb, x, np.ones(len(x)), s, 1.0)
    assert est == pytest.approx(error, rel=0.2), (est, error)  # first order: within a fifth of the error
    assert within_bin_bias(nb, x, np.ones(len(x)), s, 10.0) == pytest.approx(10 * est)  # in the units


def test_no_bias_where_the_subgroup_does_not_depend_on_the_column():
    pop = population()
    nb, x, s, _ = released(*pop, 200_000, np.random.default_rng(3), depends=False)
    dep_nb, dep_x, dep_s, _ = released(*pop, 200_000, np.random.default_rng(3))
    flat = within_bin_bias(nb, x, np.ones(len(x)), s, 1.0)
    tilted = within_bin_bias(dep_nb, dep_x, np.ones(len(dep_x)), dep_s, 1.0)
    assert abs(flat) < 0.1 * abs(tilted)
    assert within_bin_bias(nb, x, np.ones(len(x)), np.ones(len(x), bool), 1.0) == 0.0  # all rows: no subgroup


def test_a_subgroup_cut_by_the_column_itself_gets_no_estimate():
    nb, x, s, _ = released(*population(), 5_000, np.random.default_rng(4))
    data = pd.DataFrame({"x": 10 * x, "s": np.where(s, "yes", "no")})
    args = (data, "x", nb, Column("x", "numeric", 0.0, 10.0))
    assert depends_on({"x": 3.0}, *args)
    assert depends_on(lambda d: d.x > 3.0, *args)
    assert not depends_on(lambda d: d.s == "yes", *args)
    assert not depends_on({"s": "yes"}, *args)
    assert not depends_on(None, *args)


def test_the_weights_are_the_releases_view_of_the_subgroup():
    """Rows whose S is drawn independently of the bin, weighted so that the weighted P(S | bin) is the
    population's: the estimate is the weighted one (as for rows drawn with that P(S | bin)), and near 0 without
    the weights."""
    fine, t, dens, p_s = population()
    nb, x, s, error = released(fine, t, dens, p_s, 400_000, np.random.default_rng(6), depends=False)
    target = np.bincount(nb.cells(t), weights=dens * p_s(t)) / np.bincount(nb.cells(t), weights=dens)
    cell = nb.cells(x)
    w = np.where(s, target[cell] / 0.3, (1 - target[cell]) / 0.7)
    _, _, _, error = released(fine, t, dens, p_s, 10, np.random.default_rng(6))  # the exact error with S
    weighted = within_bin_bias(nb, x, w, s, 1.0)
    assert weighted == pytest.approx(error, rel=0.2), (weighted, error)
    assert abs(within_bin_bias(nb, x, np.ones(len(x)), s, 1.0)) < 0.1 * abs(error)


def test_a_cut_near_a_bin_edge_is_found_whatever_the_draw():
    """A subgroup cut by the column just inside a bin's edge: the check moves values to the bins' ends too."""
    nb, x, s, _ = released(*population(), 50, np.random.default_rng(7))
    data = pd.DataFrame({"x": 10 * x, "s": np.where(s, "yes", "no")})
    edge = 10 * nb.cuts[1] / CELLS  # the first bin's upper edge
    assert depends_on(lambda d: d.x > edge - 1e-3, data, "x", nb, Column("x", "numeric", 0.0, 10.0))


def test_a_bundles_mean_adds_the_bins_part_to_its_bias():
    """Bundle.mean: biases has both parts and bias is their sum; a subgroup cut by the column gets no bins'
    part; an integer column with empty rows (NaN) is read on its rows with a value."""
    from dpiw.analysis import Bundle
    from dpiw.data.schema import parse_schema
    from dpiw.scale import decode_frame
    from dpiw.sdgp.mst import MST
    from dpiw.weights.marginal_match import measurements_dict

    schema = parse_schema({"name": "t", "task": "classification", "target": "y", "columns": [
        {"name": "k", "type": "numeric", "lower": 0, "upper": 50},
        {"name": "age", "type": "numeric", "lower": 0, "upper": 100, "integer": True},
        {"name": "y", "type": "categorical", "categories": ["no", "yes"]}]})
    rng = np.random.default_rng(8)
    k = np.clip(rng.lognormal(0, 0.75, 4_000), 0, 50)
    age = np.clip(np.rint(rng.normal(55, 12, 4_000)), 0, 100)
    y = (rng.uniform(size=4_000) < 1 / (1 + np.exp(-(-2.5 + 0.6 * k)))).astype(int)
    rows = pd.DataFrame({"k": k / 50, "age": age / 100, "y": y})
    gen = MST(bins=6, iters=200, fine_cells=64).fit(rows, schema, epsilon=3.0, delta=1e-6, rng=rng)
    synth = gen.sample(4_000, rng=rng)
    measured = {"generator": {**measurements_dict(gen), "total": 4_000.0, "iters": gen.iters}}
    data = decode_frame(synth, schema)
    data["age"] = data["age"].astype(float).where(rng.uniform(size=len(data)) > 0.1)  # empty rows
    b = Bundle(data, rng.uniform(0.5, 1.5, len(data)), {"records": []}, synth, schema, measured)
    b.bootstrap(replicates=3)
    est = b.mean("k", {"y": "yes"})
    assert set(est.biases) == {"weights", "bins"} and est.bias == pytest.approx(sum(est.biases.values()))
    assert est.biases["bins"] < 0  # the deaths sit high inside kappa's bins
    lo, hi = est.ci()
    assert hi >= est.value - est.bias + 1.9 * est.se  # the interval reaches the corrected estimate
    assert b.mean("k", lambda d: d.k > 2.0).biases.get("bins", 0.0) == 0.0
    on_age = b.mean("age", {"y": "yes"})
    assert np.isfinite(on_age.biases["bins"])


def test_a_spike_leaf_is_one_point_at_its_bound():
    """The tilt is evaluated on the fine cells' points: a spike's leaf (`spikes`) holds its bound only, the
    equal-width leaves their evenly spaced points (the same as a grid without spikes, one leaf over)."""
    from dpiw.analysis.bin_bias import POINTS, _points
    from dpiw.sdgp.binning import FineGrid, NumericBins

    spiked = NumericBins(FineGrid(8, 8, None, True, True), np.array([0, 1, 7, 8]), np.ones(8))
    pos, mass, cell = _points(spiked)
    assert np.all(pos[cell == 0] == 0.0) and np.all(pos[cell == 7] == 1.0)
    assert np.allclose(pos[cell == 1], (np.arange(POINTS) + 0.5) / POINTS / 6) and np.allclose(mass, 1 / POINTS)
    plain = _points(NumericBins(FineGrid(8, 8), np.array([0, 4, 8]), np.ones(8)))[0]
    assert np.array_equal(plain, (np.repeat(np.arange(8), POINTS) + np.tile((np.arange(POINTS) + 0.5) / POINTS, 8)) / 8)


def test_a_subgroup_that_cuts_inside_another_columns_bins_says_so_and_one_between_them_does_not():
    """A release of months 1-12 in 6 bins (an integer column) with a temperature that follows the month: inside
    a bin the release draws the month apart from the temperature, so two months of one bin get the same mean
    temperature in the release (the private rows' differ by 5 degrees); b.mean over one of them warns
    (WithinBinWarning, naming the bin in whole numbers and the fix), over a whole bin or a range that ends
    between bins it does not; b.bins gives the bins as whole numbers that cover 1-12 once."""
    import warnings

    from dpiw.analysis import Bundle, WithinBinWarning
    from dpiw.data.schema import parse_schema
    from dpiw.scale import decode_frame
    from dpiw.sdgp.mst import MST
    from dpiw.weights.marginal_match import measurements_dict

    schema = parse_schema({"name": "t", "task": "classification", "target": "y", "columns": [
        {"name": "month", "type": "numeric", "lower": 1, "upper": 12, "integer": True},
        {"name": "temp", "type": "numeric", "lower": -20, "upper": 120},
        {"name": "y", "type": "categorical", "categories": ["no", "yes"]}]})
    rng = np.random.default_rng(5)
    n = 20_000
    month = rng.integers(1, 13, n)
    temp = 20 + 5 * month + rng.normal(0, 4, n)
    rows = pd.DataFrame({"month": (month - 1) / 11, "temp": (temp + 20) / 140, "y": rng.integers(0, 2, n)})
    gen = MST(bins=6, iters=300, fine_cells=64).fit(rows, schema, epsilon=10.0, delta=1e-6, rng=rng)
    synth = gen.sample(n, rng=rng)
    b = Bundle(decode_frame(synth, schema), np.ones(n), {"records": []}, synth, schema,
               {"generator": {**measurements_dict(gen), "total": float(n), "iters": gen.iters}})
    bins = b.bins("month")
    assert [a for a, _ in bins] == [1.0] + [hi + 1 for _, hi in bins[:-1]] and bins[-1][1] == 12.0
    two = next((int(a), int(hi)) for a, hi in bins if hi > a)  # a bin of two months or more
    means = [b.mean("temp", {"month": m}, interval="sampling").value for m in (two[0], two[0] + 1)]
    truth = [temp[month == m].mean() for m in (two[0], two[0] + 1)]
    assert abs(means[0] - means[1]) < 1.0 < abs(truth[0] - truth[1]) - 3  # the release: one bin, one profile
    with pytest.warns(WithinBinWarning, match=rf"^mean\('temp', where=\{{'month': {two[0]}\}}\): the subgroup cuts "
                      rf"inside the bin of 'month' {two[0]} to {two[1]} \(\d\d% of the bin's rows in the subgroup, "
                      r"100% of the subgroup\).*b.bins\('month'\).*`type: categorical` for 'month' .* its 12 whole "
                      r"numbers") as said:
        b.mean("temp", {"month": two[0]}, interval="sampling")
    assert said[0].filename == __file__  # at the caller's line
    with warnings.catch_warnings():
        warnings.simplefilter("error", WithinBinWarning)
        whole = list(range(two[0], two[1] + 1))
        b.mean("temp", {"month": whole}, interval="sampling")  # the whole bin
        b.mean("temp", lambda d: d.month > two[1], interval="sampling")  # a range ending between bins
        b.mean("month", lambda d: d.month == two[0], interval="sampling")  # the column itself: its own values
        b.rate("y", "yes", {"y": "no"}, interval="sampling")  # no numeric column in the subgroup
    with pytest.warns(WithinBinWarning, match=r"rate\('y', 'yes', where=\.\.\.\): the subgroup cuts inside"):
        b.rate("y", "yes", lambda d: d.month == two[0], interval="sampling")
    # a whole number of a bin that no released row holds (its noisy count fell within the noise, as household
    # size 9 did in a trial's release): the error names the bin, the values its rows hold and the whole bin
    gone = b.data.month.to_numpy() != two[0] + 1
    sparse = Bundle(b.data[gone].reset_index(drop=True), np.ones(int(gone.sum())), {"records": []},
                    synth[gone].reset_index(drop=True), schema, b.measurements)
    held = ", ".join(str(m) for m in range(two[0], two[1] + 1) if m != two[0] + 1)
    with pytest.raises(DpiwError, match=rf"no synthetic row is in the subgroup \{{'month': {two[0] + 1}\}}: the bin "
                       rf"{two[0]} to {two[1]} of 'month' holds released rows of {held} only .*lambda d: "
                       rf"d\['month'\].between\({two[0]}, {two[1]}\), has rows"):
        sparse.mean("temp", {"month": two[0] + 1}, interval="sampling")
    with pytest.raises(DpiwError, match=r"no synthetic row is in the subgroup \{'y': 'no', 'month': 0\}$"):
        b.mean("temp", {"y": "no", "month": 0}, interval="sampling")  # outside every bin: nothing more to say


def _release(schema, rows, n, seed=5):
    from dpiw.analysis import Bundle
    from dpiw.scale import decode_frame
    from dpiw.sdgp.mst import MST
    from dpiw.weights.marginal_match import measurements_dict

    rng = np.random.default_rng(seed)
    gen = MST(bins=6, iters=200, fine_cells=64).fit(rows, schema, epsilon=10.0, delta=1e-6, rng=rng)
    synth = gen.sample(n, rng=rng)
    return Bundle(decode_frame(synth, schema), np.ones(n), {"records": []}, synth, schema,
                  {"generator": {**measurements_dict(gen), "total": float(n), "iters": gen.iters}})


def test_a_subgroup_between_the_bins_of_a_log_integer_or_at_a_continuous_bins_edge_does_not_warn():
    """A count on a log scale (0-1000, `integer: true`): b.bins gives whole numbers that cover 0-1000 once, and a
    subgroup ending between two bins does not warn, one inside a bin does. A continuous column: a threshold at a
    bin's lowest value, or one a hair inside it (the subgroup holds nearly the whole bin), does not warn."""
    import warnings

    from dpiw.analysis import WithinBinWarning
    from dpiw.data.schema import parse_schema

    schema = parse_schema({"name": "t", "task": "classification", "target": "y", "columns": [
        {"name": "cnt", "type": "numeric", "lower": 0, "upper": 1000, "integer": True, "scale": "log"},
        {"name": "temp", "type": "numeric", "lower": 0, "upper": 100},
        {"name": "y", "type": "categorical", "categories": ["no", "yes"]}]})
    rng = np.random.default_rng(6)
    n = 20_000
    cnt = np.minimum(np.rint(rng.lognormal(2.5, 1.2, n)), 1000)
    temp = np.clip(30 + 8 * np.log1p(cnt) + rng.normal(0, 5, n), 0, 100)
    b = _release(schema, pd.DataFrame({"cnt": schema.column("cnt").to_unit(cnt), "temp": temp / 100,
                                       "y": rng.integers(0, 2, n)}), n)
    bins = b.bins("cnt")
    assert bins[0][0] == 0.0 and bins[-1][1] == 1000.0
    assert all(hi + 1 == lo for (_, hi), (lo, _) in zip(bins[:-1], bins[1:], strict=True)), bins
    with warnings.catch_warnings():
        warnings.simplefilter("error", WithinBinWarning)
        for _, hi in bins[:-1]:
            b.mean("temp", lambda d, hi=hi: d.cnt <= hi, interval="sampling")
            b.mean("temp", lambda d, hi=hi: d.cnt > hi, interval="sampling")
    wide = next(k for k, (lo, hi) in enumerate(bins) if hi - lo >= 4 and b.data.cnt.between(lo, hi).mean() > 0.1)
    lo, hi = bins[wide]
    with pytest.warns(WithinBinWarning, match=r"cuts inside the bin of 'cnt'"):
        b.mean("temp", lambda d: d.cnt <= (lo + hi) // 2, interval="sampling")
    edges = b.bins("temp")
    first = next(k for k, (a, _) in enumerate(edges) if b.data.temp.between(*edges[k]).mean() > 0.1 and k > 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", WithinBinWarning)
        b.rate("y", "yes", lambda d: d.temp > edges[first][0], interval="sampling")  # at the bin's lowest value
        b.rate("y", "yes", lambda d: d.temp > edges[first][0] + 1e-3, interval="sampling")  # a hair inside
    middle = (edges[first][0] + edges[first][1]) / 2
    with pytest.warns(WithinBinWarning, match=r"cuts inside the bin of 'temp'"):  # half the bin, and nothing else
        b.rate("y", "yes", lambda d: (d.temp > middle) & (d.temp <= edges[first][1]), interval="sampling")


FAR_SCHEMA = {"name": "t", "task": "classification", "target": "y", "columns": [
    {"name": "stays", "type": "numeric", "lower": 0, "upper": 200, "integer": True},
    {"name": "age", "type": "numeric", "lower": 0, "upper": 100, "integer": True},
    {"name": "y", "type": "categorical", "categories": ["no", "yes"]}]}


def far_published(schema, bump: float, rng) -> dict:
    """measurements.json's generator part for a count on public bounds 0-200 (a leaf per whole number) whose
    rows all hold 0-2 (8,000, 1,500 and 500 of them), with ``bump`` rows at 150 in its published tree's levels,
    at a noise sd of 50 a node; an age spread evenly over 20-79."""
    from dpiw.sdgp.binning import estimate_fine, tree_levels

    stays, age = np.zeros(256), np.zeros(128)
    stays[:3], stays[150] = [8000, 1500, 500], bump
    age[20:80] = 10_000 / 60
    noisy = {name: [lv if lv.size == 1 else lv + rng.normal(0, 1e-9, lv.size) for lv in tree_levels(leaves)]
             for name, leaves in (("stays", stays), ("age", age))}
    fine = estimate_fine(schema, 256, 8, noisy, {"stays": 50.0, "age": 50.0}, 10_000 + bump, 1.0)
    return {"generator": {"total": 10_000 + bump, "fine": fine.published()}}


def test_rows_far_past_an_empty_stretch_that_the_tree_cannot_tell_from_noise_are_named():
    """A count on public bounds 0-200 (a leaf per whole number) whose rows all hold 0-2; the published tree's
    levels carry, at 150, what the pruning keeps (above its threshold at every level) but what the measurement
    cannot tell from noise (60 rows at a noise sd of 50 a node: under 2 sds): far_rows names the column, the
    share and the range, and far_text says what to do. The same at 600 rows (12 sds: real rows) is not named,
    nor a column whose rows fill its range."""
    from dpiw.analysis.bin_bias import far_rows, far_text
    from dpiw.data.schema import parse_schema

    schema, rng = parse_schema(FAR_SCHEMA), np.random.default_rng(3)
    found = far_rows(schema, far_published(schema, 60.0, rng))
    assert [f[0] for f in found] == ["stays"] and found[0][1] == pytest.approx(60 / 10_060, rel=1e-6)
    assert found[0][2:] == (150.0, 150.0)
    text = far_text(*found[0], column=schema.column("stays"))
    assert "0.60% of its rows lie at 150" in text and "tighter than 0 to 200" in text
    assert far_rows(schema, far_published(schema, 600.0, rng)) == []


def test_an_estimate_over_rows_far_out_that_may_be_the_noises_reaches_the_one_without_them(monkeypatch):
    """The bundle of the test above (60 rows at 150, within the noise): released rows as its fine histogram gives
    them. A mean, a share above a value and a high quantile of the count warn (TailWarning) and give the estimate
    without the rows at 150; a noise-aware interval reaches it (for the quantile: the quantile of the other rows),
    a sampling one only says so. A column without far rows (age) is left as it was."""
    from dpiw.analysis import NOISE_AWARE, Bundle, TailWarning
    from dpiw.analysis.estimates import Estimate
    from dpiw.data.schema import parse_schema
    from dpiw.scale import decode_frame

    schema, rng = parse_schema(FAR_SCHEMA), np.random.default_rng(3)
    stays = np.repeat([0.0, 1.0, 2.0, 150.0], [8000, 1500, 500, 60])
    rows = pd.DataFrame({"stays": stays / 200, "age": rng.integers(20, 80, stays.size) / 100,
                         "y": rng.integers(0, 2, stays.size)})
    b = Bundle(decode_frame(rows, schema), np.ones(stays.size), {"records": []}, rows, schema,
               far_published(schema, 60.0, rng))
    without = stays[:10_000].mean()
    with pytest.warns(TailWarning, match=rf"0.60% of these rows lie at 150, .*without them the estimate is "
                                         rf"{without:.4g}, which this interval does not show"):
        sampled = b.mean("stays", interval="sampling")
    assert sampled.reach == (0.0, 0.0) and sampled.value == pytest.approx(stays.mean())
    with pytest.warns(TailWarning, match=r"share\('stays', '>', 1, where=None\): .*which this interval does not show"):
        assert b.share("stays", ">", 1, interval="sampling").reach == (0.0, 0.0)

    # a noise-aware estimate (its bootstrap stood in for by the synthetic rows' spread, its other parts left out)
    def noise_aware(self, values, where, interval):
        v = values(self.data)
        return Estimate(float(v.mean()), float(v.std() / np.sqrt(v.size)), float(v.size), covers=NOISE_AWARE)

    monkeypatch.setattr(Bundle, "_estimate", noise_aware)
    monkeypatch.setattr(Bundle, "_against_marginal", lambda self, call, column, where, of, est, middle: est)
    monkeypatch.setattr(Bundle, "_bin_bias", lambda self, *a, **k: {})
    with pytest.warns(TailWarning, match=rf"without them the estimate is {without:.4g}, which the interval reaches"):
        mean = b.mean("stays")
    assert mean.reach == (pytest.approx(stays.mean() - without), 0.0) and mean.ci()[0] < without
    with pytest.warns(TailWarning, match=r"share\('stays', '>', 1, where=None\): 0.60% of these rows"):
        share = b.share("stays", ">", 1)
    assert share.reach[0] == pytest.approx(np.mean(stays > 1) - 500 / 10_000) and share.ci()[0] < 0.05
    with warnings.catch_warnings():  # it warns only where its interval would not hold the other rows' quantile
        warnings.simplefilter("ignore")
        q = b.quantile("stays", 0.998)
    assert q.value == 150 and q.also == 2 and q.ci()[0] <= 2
    with warnings.catch_warnings():
        warnings.simplefilter("error", TailWarning)
        assert b.mean("age").reach == (0.0, 0.0)


def test_an_integer_column_on_wide_bounds_has_its_bins_ends_without_every_whole_number(monkeypatch):
    """A dollar amount declared `integer: true` on 0 to 3e9: listing every whole number of its bounds took 22 GiB
    (a trial's MemoryError on `b.mean`); the bins' ends come from their edges instead, and agree with the list's
    where the list is small enough to make."""
    from dpiw.analysis import bin_bias

    wide = Column("volume", "numeric", 0.0, 3e9, integer=True)
    nb = NumericBins(FineGrid(256, 256), np.array([0, 3, 40, 100, 256]), np.full(256, 1 / 256))
    lowest, highest = bin_bias.bin_ends(nb, wide)
    assert lowest[0] == 0 and highest[-1] == 3e9 and np.all(highest[:-1] + 1 == lowest[1:])
    small = Column("n", "numeric", 0.0, 100_000.0, integer=True)
    listed = bin_bias.bin_ends(nb, small)
    monkeypatch.setattr(bin_bias, "WHOLE_NUMBERS_MAX", 1000)
    np.testing.assert_array_equal(bin_bias.bin_ends(nb, small), listed)
