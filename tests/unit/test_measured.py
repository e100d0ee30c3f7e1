"""A subgroup's estimate read off a published noisy marginal (dpiw.analysis.measured): the closed form on exact
counts, whatever the order of the marginal's axes; unbiased with the standard error it says under Gaussian noise;
refused where the subgroup cuts inside a cell or no marginal holds its columns; and, in a bundle whose rows fall
short of what their weights measured, a warning and an interval that reaches the marginal's reading."""

import warnings

import numpy as np
import pandas as pd
import pytest

from dpiw.analysis import Bundle, MeasurementWarning, measured
from dpiw.data.schema import parse_schema
from dpiw.scale import decode_frame

SCHEMA_SPEC = {"name": "m", "task": "classification", "target": "y", "columns": [
    {"name": "a", "type": "categorical", "categories": ["p", "q", "r"]},
    {"name": "x", "type": "numeric", "lower": 0, "upper": 8},
    {"name": "b", "type": "categorical", "categories": ["u", "v"]},
    {"name": "y", "type": "categorical", "categories": ["no", "yes"]}]}
SCHEMA = parse_schema(SCHEMA_SPEC)
BINS = 4  # x in four equal-width bins: [0, 2), [2, 4), [4, 6), [6, 8]


def table(n: int, seed: int) -> pd.DataFrame:
    """The private rows as released: categories as codes, x scaled to [0, 1] by its bounds."""
    rng = np.random.default_rng(seed)
    a = rng.choice(3, n, p=[0.5, 0.3, 0.2])
    b = rng.choice(2, n)
    x = np.clip(rng.gamma(2.0 + a + b, 0.7), 0, 7.999)
    y = (rng.uniform(size=n) < 0.15 + 0.25 * a + 0.2 * b).astype(int)
    return pd.DataFrame({"a": a, "x": x / 8, "b": b, "y": y})


def counts(scaled: pd.DataFrame, clique: list[int]) -> np.ndarray:
    """The exact marginal of ``clique`` (axes in its order)."""
    from dpiw.sdgp.binning import Binning

    binning = Binning.equal_width(SCHEMA, BINS)
    cells, cards = binning.cells(scaled), binning.cards
    idx = np.ravel_multi_index(tuple(cells[:, j] for j in clique), [cards[j] for j in clique])
    return np.bincount(idx, minlength=int(np.prod([cards[j] for j in clique]))).astype(float)


def published(scaled: pd.DataFrame, cliques: list[list[int]], std: float, rng=None) -> dict:
    """A 'weights' part as measurements.json holds it: each marginal's counts plus N(0, std) noise."""
    rng = rng or np.random.default_rng(0)
    exact = {tuple(cl): counts(scaled, cl) for cl in cliques}
    return {"weights": {"bins": BINS, "cards": [3, BINS, 2, 2], "columns": SCHEMA.names, "measurements": [
        {"clique": list(cl), "std": std, "counts": (y + rng.normal(0, std, y.size)).tolist()}
        for cl, y in exact.items()]}}


def read(scaled, measurements, column, where_columns, h, mask, weights=None):
    """:func:`measured.direct` of ``h`` over ``mask``, with unit weights unless given."""
    cells = measured.cells_of(SCHEMA, measurements, scaled)
    w = np.ones(len(scaled)) if weights is None else weights
    return measured.direct(SCHEMA, measurements, cells, column, where_columns, h, w, mask)


def test_exact_counts_give_the_subgroups_own_rate_and_mean_whatever_the_axes_order():
    rows = table(4000, 1)
    scaled = rows
    data = decode_frame(scaled, SCHEMA)
    # the released rows are the private ones here: the reading must be the subgroup's own value to rounding
    sub = (data.a == "r") & (data.b == "v")
    for clique in ([3, 0, 2], [2, 3, 0], [0, 2, 3]):  # y, a, b in three orders
        m = published(scaled, [clique], std=1e-9)
        got = read(scaled, m, "y", ["b", "a"], (data.y == "yes").to_numpy(float), sub.to_numpy())
        assert got.value == pytest.approx((data.y[sub] == "yes").mean(), abs=1e-9)
        assert got.part == "weights" and set(got.columns) == {"a", "b", "y"}
    # a category no released row holds: a subgroup of labels reads its cells all the same
    m = published(scaled, [[3, 0]], std=1e-9)
    kept = (data.a != "r").to_numpy()
    sub = data.a.isin(["q", "r"]).to_numpy()
    rows_kept, h = scaled[kept].reset_index(drop=True), (data.y == "yes").to_numpy(float)[kept]
    cells = measured.cells_of(SCHEMA, m, rows_kept)
    labels = {"a": np.array([False, True, True])}
    got = measured.direct(SCHEMA, m, cells, "y", ["a"], h, np.ones(kept.sum()), sub[kept], labels=labels)
    assert got.value == pytest.approx((data.y[sub] == "yes").mean(), abs=1e-9)
    # a label no released row holds: its bin is worth 1 (the caller's fallback), not the release's rate of 0
    no = (data.y == "no").to_numpy()  # the released rows: the private ones that say 'no'
    got = measured.direct(SCHEMA, m, measured.cells_of(SCHEMA, m, scaled[no]), "y", ["a"], np.zeros(no.sum()),
                          np.ones(no.sum()), (data.a == "r").to_numpy()[no], fallback=lambda k: float(k == 1))
    assert got.value == pytest.approx((data.y[data.a == "r"] == "yes").mean(), abs=1e-9)
    # a numeric column's mean: each bin's value is the subgroup's released mean in it, so exact counts give it back
    m = published(scaled, [[1, 0]], std=1e-9)
    sub = (data.a == "q").to_numpy()
    got = read(scaled, m, "x", ["a"], data.x.to_numpy(float), sub)
    assert got.value == pytest.approx(data.x[sub].mean(), rel=1e-9)


def test_the_reading_is_unbiased_with_the_standard_error_it_says():
    """400 draws of Gaussian noise (std 30) on the exact marginal of (y, a): the readings' mean is the truth within
    4 of its standard errors, and their sd is the reported se within 10%."""
    rows = table(3000, 2)
    scaled = rows
    data = decode_frame(scaled, SCHEMA)
    sub = (data.a != "p").to_numpy()
    h = (data.y == "yes").to_numpy(float)
    truth = h[sub].mean()
    rng = np.random.default_rng(5)
    got = [read(scaled, published(scaled, [[3, 0]], 30.0, rng), "y", ["a"], h, sub) for _ in range(400)]
    values, ses = np.array([g.value for g in got]), np.array([g.se for g in got])
    assert abs(values.mean() - truth) < 4 * values.std() / np.sqrt(len(values))
    assert values.std() / ses.mean() == pytest.approx(1.0, abs=0.1)


def test_no_reading_where_the_subgroup_cuts_a_cell_no_marginal_holds_it_or_the_noise_swamps_it():
    rows = table(2000, 3)
    scaled = rows
    data = decode_frame(scaled, SCHEMA)
    h = (data.y == "yes").to_numpy(float)
    m = published(scaled, [[1, 3], [0, 3]], std=1.0)
    assert read(scaled, m, "y", ["x"], h, (data.x > 3).to_numpy()) is None  # 3 is inside the bin [2, 4)
    assert read(scaled, m, "y", ["x"], h, (data.x >= 4).to_numpy()) is not None  # between bins
    assert read(scaled, m, "y", ["b"], h, (data.b == "u").to_numpy()) is None  # no marginal holds (b, y)
    assert read(scaled, m, "y", ["a", "x"], h, ((data.a == "p") & (data.x >= 4)).to_numpy()) is None  # nor (a, x, y)
    assert read(scaled, published(scaled, [[0, 3]], std=400.0), "y", ["a"], h, (data.a == "r").to_numpy()) is None
    # counts below zero that take the ratio past every value it averages: no mean of anything, no reading (a
    # trial's mean wage among those aged 42-47 read 14.75, se 46, where every bin's wage was over 60)
    x = data.x.to_numpy(float)
    inside = (data.b == "v").to_numpy()
    bins = np.minimum((x // 2).astype(int), BINS - 1)
    means = [x[inside & (bins == k)].mean() for k in range(BINS)]
    counts = np.zeros((BINS, 2))  # (x, b): the b = u column is out of the subgroup
    counts[:, 0] = 500.0
    for y_v in ([300.0, 200.0, 100.0, 50.0], [400.0, -330.0, 30.0, 20.0]):
        counts[:, 1] = y_v
        m = {"weights": {"bins": BINS, "cards": [3, BINS, 2, 2], "columns": SCHEMA.names, "measurements": [
            {"clique": [1, 2], "std": 1.0, "counts": counts.ravel().tolist()}]}}
        got = read(scaled, m, "x", ["b"], x, inside)
        ratio = float(np.dot(y_v, means) / np.sum(y_v))
        if min(y_v) > 0:
            assert got is not None and got.value == pytest.approx(ratio)
        else:
            assert not min(means) <= ratio <= max(means) and got is None


def lost_relation(column: str = "b", seed: int = 4, schema=SCHEMA):
    """A release whose rows lost ``column``'s relation to every other column (shuffled), with unit weights and
    marginal_match's published two-way marginals with y (epsilon 1), which show it; and the private rows
    (``schema``: :data:`SCHEMA` or the same with other labels)."""
    from dpiw.sdgp.mst import MST
    from dpiw.weights.marginal_match import MarginalMatch, measurements_dict

    rows = table(6000, seed)
    rng = np.random.default_rng(7)
    gen = MST(bins=BINS, iters=200).fit(rows, schema, epsilon=3.0, delta=1e-6, rng=rng)
    synth = gen.sample(6000, rng=rng)
    synth[column] = rng.permutation(synth[column].to_numpy())
    mm = MarginalMatch(bins=BINS, degree=2).on_bins_of(gen).measure(rows, schema, epsilon=1.0, delta=1e-6, rng=rng)
    meas = {"generator": {**measurements_dict(gen), "total": 6000.0, "iters": gen.iters},
            "weights": measurements_dict(mm)}
    return (Bundle(decode_frame(synth, schema), np.ones(len(synth)), {"records": []}, synth, schema, meas),
            decode_frame(rows, schema))


def test_rows_short_of_their_marginal_warn_and_the_interval_reaches_its_reading():
    """A release whose rows lost the relation of b with y (the private table: 0.50 of b = v are 'yes' against
    0.34 of b = u; the rows: about 0.42 in both), with unit weights that never moved, and marginal_match's
    published two-way marginals with y (epsilon 1), which show it: the rate among b = v warns and its interval
    covers the table's value, which the rows' own interval leaves out; the rate among a = r, which the rows keep
    and the marginal of (a, y) agrees with, does not warn and keeps its interval."""
    bundle, truth = lost_relation()
    with pytest.warns(MeasurementWarning, match=r"the weights' noisy marginal of 'b', 'y' reads it as"):
        est = bundle.rate("y", "yes", {"b": "v"})
    target = (truth.y[truth.b == "v"] == "yes").mean()
    assert est.measured is not None and abs(est.measured[0] - target) < 0.03
    lo, hi = est.ci()
    assert lo <= target <= hi and not est.value - 1.96 * est.se <= target <= est.value + 1.96 * est.se
    with warnings.catch_warnings():
        warnings.simplefilter("error", MeasurementWarning)
        kept = bundle.rate("y", "yes", {"a": "r"})
    assert kept.measured is None


def test_an_estimate_over_all_rows_is_checked_against_its_columns_own_marginal():
    """Every row: the generator's published one-way marginal of x reads the mean of x. A release whose rows put a
    tenth of x's mass from the lowest bin into the top one (as a wide two-way marginal's cells at or above zero
    push rows into a sparse tail) warns, and its interval covers the table's mean, which the rows' own interval
    leaves out; a rate the rows keep (a = p) says nothing."""
    bundle, truth = lost_relation()
    data, scaled = bundle.data.copy(), bundle.scaled.copy()
    moved = np.flatnonzero((data.x < 2).to_numpy())[: len(data) // 10]
    rng = np.random.default_rng(3)
    top = rng.uniform(6, 7.999, moved.size)
    data.loc[moved, "x"], scaled.loc[moved, "x"] = top, top / 8
    pushed = Bundle(data, bundle.weights, bundle.manifest, scaled, SCHEMA, bundle.measurements)
    with pytest.warns(MeasurementWarning, match=r"mean\('x', where=None\): the generator's noisy marginal of 'x' "
                                                r"reads it as"):
        est = pushed.mean("x")
    target = truth.x.mean()
    lo, hi = est.ci()
    assert est.measured is not None and lo <= target <= hi
    assert not est.value - 1.96 * est.se <= target <= est.value + 1.96 * est.se
    with warnings.catch_warnings():
        warnings.simplefilter("error", MeasurementWarning)
        assert pushed.rate("a", "p").measured is None


def test_a_fit_on_a_relation_the_rows_lost_says_so_marks_its_coefficients_and_reaches_over_it():
    """The release above (b's relation with y lost in the rows, the weights' marginal of (b, y) showing it): a
    logistic fit of y on a and b warns once (MeasurementWarning) naming b and the rate it reads, and marks b's
    coefficients, not a's. Its intervals reach over the fit on the rows reweighted to the marginal's rates of 'yes'
    within b: b's coefficient, 0.00 from the rows and 0.83 from the same fit on the private rows, moves to 0.65,
    the log odds ratio the marginal of (b, y) reads. The private rows' is larger, adjusted for a (a logistic
    model's coefficients are not collapsible), and no published marginal holds (a, b, y): the reach closes all but
    a few hundredths of the gap for b's coefficient and the intercept, and a's barely move. A fit on a alone, whose
    relation the rows keep, neither warns nor marks nor reaches."""
    from sklearn.linear_model import LogisticRegression

    from dpiw.analysis.fit import coefficients

    bundle, truth = lost_relation()
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        fit = bundle.fit(LogisticRegression(), ["a", "b"], "y")
    gaps = [str(w.message) for w in said if issubclass(w.category, MeasurementWarning)]
    assert len(gaps) == 1 and "Of 'y' within 'b': rate of 'yes' for b=" in gaps[0] and "b=v" in gaps[0], gaps
    marked = fit.table.index[fit.table.measured_gap].tolist()
    assert marked and all(name.startswith("b=") for name in marked)
    assert str(fit).splitlines()[-1].startswith("* the rows fall short of what a published marginal measured")
    private = Bundle(truth, np.ones(len(truth)), {}, None, SCHEMA, None)
    x = private.design(["a", "b"])
    exact = coefficients(LogisticRegression().fit(x, truth.y.astype(str)), list(x.columns))
    t = fit.table
    own = pd.DataFrame({"lo": t.value - 1.96 * t.se, "hi": t.value + 1.96 * t.se})
    short = np.maximum(own.lo - exact, exact - own.hi).clip(lower=0)  # how far each interval leaves it out
    left = np.maximum(t.lo - exact, exact - t.hi).clip(lower=0)
    assert short["b=v"] > 0.5 and short["(intercept)"] > 0.3  # the rows' own intervals, far off
    assert (left[["b=v", "(intercept)"]] < 0.05 * short[["b=v", "(intercept)"]]).all(), left
    assert left[["a=q", "a=r"]].eq(0).all()
    assert 0.6 < t.measured_reach["b=v"] < 0.7 and (t.measured_reach[["a=q", "a=r"]] < 0.05).all()
    with warnings.catch_warnings():
        warnings.simplefilter("error", MeasurementWarning)
        kept = bundle.fit(LogisticRegression(), ["a"], "y")
    assert not kept.table.measured_gap.any() and (kept.table.measured_reach == 0).all() and "*" not in str(kept)


def test_a_fits_checks_skip_only_subgroups_that_cannot_be_found_apart():
    """Bundle._apart_bound, which touches no replicate, bounds the check's distance from above (its spread over the
    synthetic rows' part alone): on the release above every subgroup found apart lies within its bound, and b.fit's
    checks, which skip a subgroup whose bound is under the family-wise threshold, find the same as the full ones."""
    from dpiw.analysis import fit as fit_module

    bundle, _ = lost_relation()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for features in (["x", "b"], ["a", "b", "x"]):
            for check, args in ((fit_module.short_of_marginals, (bundle, features, "y", ["no", "yes"])),
                                (fit_module.pairs_short_of_marginals, (bundle, features))):
                full, tests = check(*args)
                quick, same = check(*args, family_only=True)
                found = [{key: [(text, move.reading) for text, move in v] for key, v in
                          fit_module.fit_gaps(got, tests).items()} for got in (full, quick)]
                assert same == tests and found[0] == found[1] and found[0], found
                assert len(quick) <= len(full)
                for apart, _, _, move in full:
                    assert apart <= bundle._apart_bound(move.of, move.label, move.where) + 1e-9


def test_rows_moved_to_a_reading_hit_it_and_keep_the_subgroups_weight():
    """fit.moved, the closed form: a numeric column's weighted mean within the subgroup becomes the reading (a
    whole-number column's too, as floats), a label's weighted rate within it becomes the reading while the
    subgroup's total weight stays; rows outside keep their values and weights; one move after another (the last
    one's reading holds exactly)."""
    from dpiw.analysis.fit import Move, moved

    rng = np.random.default_rng(2)
    data = pd.DataFrame({"n": rng.integers(0, 10, 500), "c": pd.Categorical(rng.choice(["u", "v", "w"], 500)),
                         "g": pd.Categorical(rng.choice(["p", "q"], 500))})
    w = rng.uniform(0.5, 2.0, 500)
    inside = (data.g == "p").to_numpy()

    def rows_rate(d, ww):
        return np.average((d.c[inside] == "v").to_numpy(float), weights=ww[inside])

    before, w0 = data.copy(), w.copy()
    moves = [Move("n", None, {"g": "p"}, 7.25, float(np.average(data.n[inside], weights=w[inside]))),
             Move("c", "v", {"g": "p"}, 0.6, rows_rate(data, w))]
    d, w1 = moved(data, w, moves[:1])
    assert np.average(d.n[inside], weights=w1[inside]) == pytest.approx(7.25) and (w1 == w).all()
    d, w2 = moved(data, w, moves)
    assert rows_rate(d, w2) == pytest.approx(0.6) and w2[inside].sum() == pytest.approx(w[inside].sum())
    assert (d.n[~inside] == data.n[~inside]).all() and (w2[~inside] == w[~inside]).all()
    assert data.equals(before) and (w == w0).all() and d.n.dtype.kind == "f"  # the caller's rows are not changed
    # two labels of one column in one subgroup: the second starts from the rate the first left, and holds
    d, w3 = moved(data, w, [Move("c", "v", {"g": "p"}, 0.45, rows_rate(data, w)),
                            Move("c", "w", {"g": "p"}, 0.35, 0.0)])  # its rows' rate: read afresh, not this
    assert np.average((d.c[inside] == "w").to_numpy(float), weights=w3[inside]) == pytest.approx(0.35)
    assert abs(rows_rate(d, w3) - 0.45) < 0.1 and w3[inside].sum() == pytest.approx(w[inside].sum())


def test_a_fit_on_a_target_whose_labels_are_numbers_checks_it_too():
    """The release above with y's categories [0, 1] (a 0/1 outcome, as many schemas declare it): the estimator's
    classes are the labels as text ('0', '1'); b.fit reads them back as the categories, so it neither fails nor
    leaves the target's check out, and warns of b as with labels."""
    from sklearn.linear_model import LogisticRegression

    numbers = parse_schema({"name": "m", "task": "classification", "target": "y", "columns": [
        *[c for c in SCHEMA_SPEC["columns"] if c["name"] != "y"], {"name": "y", "type": "categorical",
                                                                   "categories": [0, 1]}]})
    bundle, _ = lost_relation(schema=numbers)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        fit = bundle.fit(LogisticRegression(), ["a", "b"], "y")
    gaps = [str(w.message) for w in said if issubclass(w.category, MeasurementWarning)]
    assert len(gaps) == 1 and "Of 'y' within 'b': rate of 1 for b=" in gaps[0], gaps
    assert fit.table.measured_gap["b=v"] and not fit.table.measured_gap["a=q"]


def test_a_fit_whose_features_lost_their_relation_to_each_other_marks_both(monkeypatch):
    """The release above with b shuffled lost b's relation to x (x's shape grows with b in the table) as well as to
    y. A coefficient is adjusted for the other features, so a fit of y on x and b rests on the relation of x with b
    too: the pair check reads the rate of b = v within x's bins off the marginal of (x, b, y) and finds it apart
    (the table: 0.39 in the lowest bin, the rows: 0.50), and with the target's own check silenced it alone marks
    both features and says so; pairs the rows keep (a with x: x grows with a in both) or that have none to lose
    (a with b, drawn apart) find nothing."""
    from sklearn.linear_model import LogisticRegression

    from dpiw.analysis import fit as fit_module

    bundle, truth = lost_relation()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found, tests = fit_module.pairs_short_of_marginals(bundle, ["x", "b"])
        assert tests == len(bundle.bins("x")) and {key for _, key, *_ in found} == {("x", "b")}
        lowest = truth.b[truth.x < bundle.bins("x")[0][1]]
        far = max(found, key=lambda r: r[0])
        assert far[2].startswith("rate of 'v' for x ") and far[0] > 5
        assert fit_module.pair_direction(bundle, "x", "b") == ("b", "x") and (lowest == "v").mean() < 0.45
        for kept in (["a", "x"], ["a", "b"]):
            assert fit_module.pairs_short_of_marginals(bundle, kept)[0] == [], kept
    monkeypatch.setattr(fit_module, "short_of_marginals", lambda *a, **k: ([], 0))
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        fit = bundle.fit(LogisticRegression(), ["x", "b"], "y")
    (gap,) = [str(w.message) for w in said if issubclass(w.category, MeasurementWarning)]
    assert "Of 'x' with 'b' (the features' relation to each other" in gap and "rate of 'v' for x " in gap, gap
    assert fit.table.measured_gap.to_dict() == {"(intercept)": False, "x": True, "b=v": True}


def test_a_columns_empty_rows_are_read_apart_from_its_values_or_not_at_all():
    """x is empty in a fifth of the rows (`missing: indicator`: held at its lower bound, x_missing = 1). Read off
    exact counts, the mean of x among a = r is the mean of the rows that have a value: from a marginal with
    x_missing, where it is 0; from one without, leaving out x's lowest bin, which the fine histograms give the
    empty rows alone. Equal-width bins share that bin with small values: no reading."""
    from dpiw.sdgp.binning import Binning
    from dpiw.sdgp.mst import MST

    schema = parse_schema({"name": "e", "task": "classification", "target": "y", "columns": [
        {"name": "a", "type": "categorical", "categories": ["p", "q", "r"]},
        {"name": "x", "type": "numeric", "lower": 0, "upper": 8, "missing": "indicator"},
        {"name": "y", "type": "categorical", "categories": ["no", "yes"]}]})
    base = table(5000, 6)
    empty = np.random.default_rng(9).uniform(size=len(base)) < 0.2
    scaled = pd.DataFrame({"a": base.a, "x": np.where(empty, 0.0, np.maximum(base.x, 0.01)),
                           "x_missing": empty.astype(int), "y": base.y})
    data = decode_frame(scaled, schema)
    sub = (data.a == "r").to_numpy()
    target = data.x[sub].mean()  # the rows with a value (pandas leaves out NaN)
    assert np.isnan(data.x[empty]).all()
    fine = MST(bins=BINS, iters=50, fine_cells=64).fit(scaled, schema, epsilon=5.0, delta=1e-6,
                                                       rng=np.random.default_rng(1))
    for binning, expect in ((fine.binning_, True), (Binning.equal_width(schema, BINS), False)):
        cells, cards = binning.cells(scaled), binning.cards
        for clique in ([1, 0], [0, 2, 1]):
            idx = np.ravel_multi_index(tuple(cells[:, j] for j in clique), [cards[j] for j in clique])
            y = np.bincount(idx, minlength=int(np.prod([cards[j] for j in clique]))).astype(float)
            part = {"columns": schema.names, "measurements": [{"clique": clique, "std": 1e-9, "counts": y.tolist()}]}
            got = measured.direct(schema, {"weights": part}, {"weights": (cells, cards, binning)}, "x", ["a"],
                                  data.x.to_numpy(float), np.ones(len(data)), sub)
            if expect or 2 in clique:  # a marginal with x_missing reads the rows with a value on any bins
                assert got is not None and got.value == pytest.approx(target, rel=1e-9), (clique, binning)
            else:
                assert got is None


def test_a_share_within_a_subgroup_is_read_off_the_marginal_too():
    """The share of x above 4 (a bin edge) among y = yes: exact counts of (x, y) give the subgroup's own share
    back; in a release whose rows lost x's relation to the rest (x permuted), b.share warns and reaches the
    reading of marginal_match's published (x, y), which covers the table's share."""
    rows = table(6000, 5)
    data = decode_frame(rows, SCHEMA)
    sub, h = (data.y == "yes").to_numpy(), (data.x > 4).to_numpy(float)
    got = read(rows, published(rows, [[1, 3]], std=1e-9), "x", ["y"], h, sub)
    assert got.value == pytest.approx(h[sub].mean(), abs=1e-9)
    bundle, _ = lost_relation("x", seed=5)
    with pytest.warns(MeasurementWarning, match=r"share\('x', '>', 4, where=\{'y': 'yes'\}\): the weights' noisy"):
        est = bundle.share("x", ">", 4, {"y": "yes"})
    lo, hi = est.ci()
    assert est.measured is not None and lo <= h[sub].mean() <= hi
    # a quantile's interval is its share's carried back, checked as b.share checks it (a trial's 90th percentile,
    # unwarned where the share at it warned): the share at the quantile reaches the same marginal's reading
    p = float((bundle.data.x[(bundle.data.y == "yes").to_numpy()] <= 4).mean())
    with pytest.warns(MeasurementWarning, match=r"quantile\('x', [0-9.]+, where=\{'y': 'yes'\}\), through "
                                                r"share\('x', '<=', 3\.99\d*\): the weights' noisy"):
        q = bundle.quantile("x", p, {"y": "yes"})
    sampling = bundle.quantile("x", p, {"y": "yes"}, interval="sampling")
    assert q.share.measured is not None and q.ci()[1] > sampling.ci()[1]


def test_the_check_spreads_the_difference_over_replicates_fitted_to_their_own_measurements(monkeypatch):
    """NoiseBootstrap.measured replays the noise each replicate was fitted to: replicate k's generator
    measurements are those Private-PGM was refitted on, and its weights' those the weights were refitted to. On
    a subgroup whose rows keep what the marginal measured (the rate among a = r), the difference rows - reading
    varies over the replicates less than the sum of the two variances (they share the measurements' noise), and
    the check's z is the difference over that spread: no warning there, and a warning with the z it prints where
    the rows lost the relation (b = v)."""
    import dpiw.sdgp.pgm as pgm
    from dpiw.analysis import noise_aware

    monkeypatch.setenv("DPIW_CACHE", "off")
    fitted, matched = [], {}
    real_estimate, real_reweight = pgm.estimate, noise_aware.Chains.reweight

    def estimate(mbi, cards, measured_, **kw):
        if kw.get("warm_start") is not None:  # a replicate's refit (the base fit has none)
            fitted.append([np.asarray(y, float).copy() for _, y, _ in measured_])
        return real_estimate(mbi, cards, measured_, **kw)

    def reweight(self, k, mm, rows, extra, into, tau=None):
        matched.setdefault(k, [np.asarray(y, float).copy() for _, y in mm.measurements_])
        return real_reweight(self, k, mm, rows, extra, into, tau=tau)

    monkeypatch.setattr(pgm, "estimate", estimate)
    monkeypatch.setattr(noise_aware.Chains, "reweight", reweight)
    bundle, truth = lost_relation()
    boot = bundle.bootstrap()
    boot.made()
    replayed = boot.measured()
    assert len(fitted) == len(replayed) == boot.replicates and len(matched) == boot.replicates
    for k, m in enumerate(replayed):
        for got, want in zip((x["counts"] for x in m["generator"]["measurements"]), fitted[k], strict=True):
            np.testing.assert_array_equal(np.asarray(got, float), want)
        for got, want in zip((x["counts"] for x in m["weights"]["measurements"]), matched[k], strict=True):
            np.testing.assert_array_equal(np.asarray(got, float), want)
    # the spread of the difference, against the sum of the variances, where the rows keep the relation
    values = lambda data: (data.y == "yes").to_numpy(float)  # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("error", MeasurementWarning)
        kept = bundle.rate("y", "yes", {"a": "r"})
    cells = measured.cells_of(SCHEMA, bundle.measurements, bundle.scaled)
    sub = (bundle.data.a == "r").to_numpy()
    reading = measured.direct(SCHEMA, bundle.measurements, cells, "y", ["a"], values(bundle.data), bundle.weights,
                              sub)
    joint = bundle._difference_variance(reading, "y", {"a": "r"}, ["a"], bundle._labels({"a": "r"}), values,
                                        None)
    assert 0 < joint < reading.se ** 2 + kept.parts["noise"]
    with pytest.warns(MeasurementWarning) as said:
        lost = bundle.rate("y", "yes", {"b": "v"})
    message = next(str(w.message) for w in said if issubclass(w.category, MeasurementWarning))
    z = float(message.split(" standard errors from")[0].rsplit(" ", 1)[-1])
    assert lost.measured is not None and z == pytest.approx(lost.measured[2], abs=0.05) and z > 1.96


def test_rows_in_bins_the_marginal_measured_within_its_noise_of_nothing_are_set_apart():
    """The subgroup a = r holds no x below 2 in the table; the released rows put 100 of its rows there (as a model
    fitted to noisy counts at or above zero does). The published (x, a) measures that bin at 0 +- 5: the reading
    says what the released rows give without it (the table's mean, as the rest of the rows are the table's) and
    the share of the subgroup's rows it set apart; a bin the marginal measured above its noise sets none apart."""
    rows = table(4000, 7)
    rows.loc[rows.a == 2, "x"] = np.maximum(rows.x[rows.a == 2], 2.5 / 8)  # a = r: no x below 2 in the table
    data = decode_frame(rows, SCHEMA)
    m = published(rows, [[1, 0]], std=5.0, rng=np.random.default_rng(1))
    y = np.asarray(m["weights"]["measurements"][0]["counts"]).reshape(BINS, 3)
    assert abs(y[0, 2]) < 2 * 5.0  # the empty bin, as measured
    extra = rows[rows.a == 2].head(100).assign(x=1.0 / 8)
    released = pd.concat([rows, extra], ignore_index=True)
    sub = (decode_frame(released, SCHEMA).a == "r").to_numpy()
    got = read(released, m, "x", ["a"], decode_frame(released, SCHEMA).x.to_numpy(float), sub)
    truth = data.x[data.a == "r"].mean()
    assert got.floored == pytest.approx(truth, rel=1e-9)
    assert got.floored_out == pytest.approx(100 / sub.sum(), rel=1e-9)
    # the table's own rows: no bin of a = r with rows is within the noise of nothing
    got = read(rows, m, "x", ["a"], data.x.to_numpy(float), (data.a == "r").to_numpy())
    assert got.floored is None and got.floored_out == 0.0


def test_the_interval_reaches_the_estimate_without_rows_the_noise_may_have_put_there():
    """A noise-aware mean of 77.4 +- 0.8 whose reading sets 8.5% of its rows apart, 80.06 without them (a trial's
    mean July temperature, the table's 80.6): the interval reaches 80.06 above and no lower, with a warning that
    names the share and the marginal; a move under a quarter of the half width reaches as far, unsaid."""
    from dpiw.analysis.estimates import NOISE_AWARE, Estimate

    rows = table(500, 8)
    bundle = Bundle(decode_frame(rows, SCHEMA), np.ones(len(rows)), {}, rows, SCHEMA, None)
    est = Estimate(77.4, 0.8, 500.0, covers=NOISE_AWARE)
    read = measured.Direct(79.1, 1.8, "generator", ("a", "x"), floored=80.06, floored_out=0.085)
    with pytest.warns(MeasurementWarning, match=r"mean\('x'\): 8\.5% of these rows lie in bins of 'x' where the "
                                                r"generator's noisy marginal of 'a', 'x' measured this subgroup "
                                                r"within 2 noise sds of nothing.*without them the estimate is 80\.06"):
        got = bundle._floor("mean('x')", "x", read, est)
    lo, hi = got.ci()
    assert lo == pytest.approx(77.4 - 1.96 * 0.8, abs=1e-3) and hi == pytest.approx(80.06 + 1.96 * 0.8, abs=1e-3)
    near = measured.Direct(79.1, 1.8, "generator", ("a", "x"), floored=77.2, floored_out=0.01)
    with warnings.catch_warnings():
        warnings.simplefilter("error", MeasurementWarning)
        assert bundle._floor("mean('x')", "x", near, est).reach == pytest.approx((0.2, 0.0))
    # a quantile's check runs through its share: the value without those rows is the share's, and says so (a trial's
    # median vocabulary score was told "without them the estimate is 0.7046")
    share = Estimate(0.62, 0.01, 500.0, covers=NOISE_AWARE)
    read = measured.Direct(0.66, 0.02, "generator", ("a", "x"), floored=0.7046, floored_out=0.085)
    with pytest.warns(MeasurementWarning, match=r"without them that share is 0\.7046, which the interval reaches"):
        bundle._floor("quantile('x', 0.5, where=...), through share('x', '<=', 5)", "x", read, share)


def test_a_subgroup_its_marginal_measured_within_its_noise_of_none_warns():
    """The table holds 3 rows of a = r; the release draws 200 (a model fitted to noisy counts at or above zero).
    The published one-way marginal of a (noise sd 30) and two-way (a, y) both hold a: the size is read off the
    one-way one (the least noise), and a subgroup of a = r warns that the table may hold no such row; a = q (about
    1,200 rows) says nothing."""
    rows = table(4000, 9)
    rare = np.flatnonzero(rows.a == 2)
    rows.loc[rare[3:], "a"] = 0  # 3 rows of a = r left
    m = published(rows, [[0], [0, 3]], std=30.0, rng=np.random.default_rng(2))
    released = rows.copy()
    released.loc[released.index[:200], "a"] = 2  # the release's 200 rows of a = r
    data = decode_frame(released, SCHEMA)
    cells = measured.cells_of(SCHEMA, m, released)
    labels = {"a": np.array([False, False, True])}
    count, sd, part, columns = measured.subgroup_size(SCHEMA, m, cells, ["a"], (data.a == "r").to_numpy(), labels)
    assert (part, columns, sd) == ("weights", ("a",), 30.0)
    assert count == pytest.approx(m["weights"]["measurements"][0]["counts"][2])  # the 3 rows plus the noise
    bundle = Bundle(data, np.ones(len(data)), {}, released, SCHEMA, m)
    bundle._cells["rows"] = cells
    with pytest.warns(MeasurementWarning, match=r"rate\('y'\): the weights' noisy marginal of 'a' measured this "
                                                r"subgroup at -?\d+ rows \(noise sd 30\), within 2 noise sds of none"):
        bundle._thin("rate('y')", {"a": "r"}, ["a"], labels)
    with warnings.catch_warnings():
        warnings.simplefilter("error", MeasurementWarning)
        bundle._thin("rate('y')", {"a": "q"}, ["a"], {"a": np.array([False, True, False])})


def test_a_subgroup_only_the_weights_measured_warns_where_their_marginal_cannot_read_it():
    """A pair only the weights' marginals hold (the generator's tree left it out) is checked against those
    marginals; where none can read the subgroup's estimate (here their noise made a thousand times larger: a
    trial's mean age of those in poor health, a 32-cell marginal at 2.4 noise sds, 38.9 against 41.8 in three
    releases of three), the estimate says that it is the generator's model of the relation; where they can, it
    does not say so."""
    from dataclasses import replace

    from dpiw.analysis import UnmeasuredWarning

    bundle, _ = lost_relation(seed=4)
    only = [c for c in ("a", "b") if frozenset((c, "y")) not in bundle.generator_pairs]
    assert only and all(frozenset((c, "y")) in bundle.measured_pairs for c in only)
    c = only[0]
    label = list(bundle.data[c].cat.categories)[-1]
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        bundle.rate("y", "yes", {c: label})
    assert not [w for w in said if "only the weights' noisy marginals" in str(w.message)]
    weights = bundle.measurements["weights"]
    loud = {**weights, "measurements": [{**m, "std": float(m["std"]) * 1000} for m in weights["measurements"]]}
    noisy = replace(bundle, measurements={**bundle.measurements, "weights": loud})
    with pytest.warns(UnmeasuredWarning, match=rf"rate\('y', 'yes', where=\{{'{c}': '{label}'\}}\): only the "
                                               rf"weights' noisy marginals measured 'y' together with '{c}', and "
                                               r"none reads this subgroup's estimate .*too few of its rows"):
        noisy.rate("y", "yes", {c: label})
    # a subgroup of two columns that no marginal holds with y together: said so, not that it is too thin
    with pytest.warns(UnmeasuredWarning, match=rf"only the weights' noisy marginals measured 'y' together with '{c}'"
                                               r".*no marginal holds 'y' with all of the subgroup's columns"):
        bundle.rate("y", "yes", lambda d: (d[c] == label) & (d.x > 4))  # x > 4: a bin edge of x


def test_a_relation_its_marginal_measured_under_its_noise_warns(monkeypatch):
    """40 rows of a = r: the one-way marginal of a (noise sd 5) measures them well, so the subgroup is no thin one,
    but the only marginal that holds x with a, (a, x) at noise sd 30 a cell, measured them at about 40 over four
    cells (sd 60 for that sum), under MIN_SIGNAL sds: the mean of x among them warns that how x lies within the
    subgroup was measured under its noise (Bundle._weak); a = p (about 2,000 rows) says nothing; nor with the flag
    off."""
    from dpiw.analysis import bundle as bundle_module

    rows = table(4000, 9)
    rare = np.flatnonzero(rows.a == 2)
    rows.loc[rare[40:], "a"] = 0  # 40 rows of a = r left
    m = published(rows, [[0]], std=5.0, rng=np.random.default_rng(2))
    m["weights"]["measurements"] += published(rows, [[0, 1]], std=30.0, rng=np.random.default_rng(3))["weights"][
        "measurements"]
    data = decode_frame(rows, SCHEMA)
    cells = measured.cells_of(SCHEMA, m, rows)
    labels = {"a": np.array([False, False, True])}
    in_r = (data.a == "r").to_numpy()
    count, sd, part, columns = measured.subgroup_size(SCHEMA, m, cells, ["a"], in_r, labels, with_column="x")
    two_way = np.asarray(m["weights"]["measurements"][1]["counts"]).reshape(3, BINS)
    assert (part, columns, sd) == ("weights", ("a", "x"), 60.0) and count == pytest.approx(two_way[2].sum())
    assert measured.subgroup_size(SCHEMA, m, cells, ["a"], in_r, labels)[1] == 5.0  # no thin subgroup
    assert measured.subgroup_size(SCHEMA, m, cells, ["a"], in_r, labels, with_column="b") is None
    bundle = Bundle(data, np.ones(len(data)), {}, rows, SCHEMA, m)
    bundle._cells["rows"] = cells
    with pytest.warns(MeasurementWarning, match=r"mean\('x'\): the weights' noisy marginal of 'a', 'x', the best "
                                                r"that holds 'x' with the subgroup, measured its rows at -?\d+ in all "
                                                r"\(noise sd 60 for that sum, under 4 sds\)"):
        bundle._weak("mean('x')", "x", {"a": "r"}, ["a"], labels)
    with warnings.catch_warnings():
        warnings.simplefilter("error", MeasurementWarning)
        bundle._weak("mean('x')", "x", {"a": "p"}, ["a"], {"a": np.array([True, False, False])})
        monkeypatch.setattr(bundle_module, "WEAK_WARNS", False)
        bundle._weak("mean('x')", "x", {"a": "r"}, ["a"], labels)
