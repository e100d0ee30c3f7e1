"""The datasheet's numeric cards (dpiw.analysis.datasheet): each bin labelled with the values it holds and the
released rows counted in the bins the generator modelled, on a grid of one whole number per fine cell too."""

from types import SimpleNamespace

import numpy as np
import pandas as pd

from dpiw.analysis.datasheet import _rows
from dpiw.data.schema import parse_schema
from dpiw.sdgp.binning import Binning, FineGrid, NumericBins

SCHEMA = parse_schema({"name": "t", "task": "classification", "target": "y", "columns": [
    {"name": "age", "type": "numeric", "lower": 18, "upper": 100, "integer": True},
    {"name": "debt", "type": "numeric", "lower": 0, "upper": 1000},
    {"name": "y", "type": "categorical", "categories": ["a", "b"]}]})


def _bundle(age: np.ndarray, debt: np.ndarray) -> SimpleNamespace:
    grid = FineGrid.of(SCHEMA.column("age"), 256)  # 83 whole numbers: one a cell, 128 leaves
    assert grid.per_integer and grid.cells == 128
    binning = Binning(SCHEMA, {"age": NumericBins(grid, np.array([0, 6, 20, 83])),
                               "debt": NumericBins(FineGrid(256, 256), np.array([0, 1, 64, 256]))})
    data = pd.DataFrame({"age": age, "debt": debt, "y": pd.Categorical(["a"] * len(age), ["a", "b"])})
    return SimpleNamespace(schema=SCHEMA, data=data, weights=np.ones(len(age)),
                           measurements={"generator": {"bins": 3, "fine": {"binning": binning.to_dict()}}})


def test_an_integer_columns_bins_are_its_whole_numbers_one_a_cell():
    """Cut points count fine cells, and each cell here is one whole number (not 1/128 of the range): the bins are
    18-23, 24-37 and 38-100, and 23, 24, 40 and 100 land in the bins the generator modelled them in."""
    b = _bundle(np.array([18, 23, 24, 40, 100]), np.zeros(5))
    labels, _, unweighted, _ = _rows(b, SCHEMA.column("age"))
    assert labels == ["18 to 23", "24 to 37", "38 to 100"]
    assert np.allclose(unweighted, [2 / 5, 1 / 5, 2 / 5])


def test_a_continuous_columns_bins_are_its_fine_cells_in_its_units():
    b = _bundle(np.full(4, 30), np.array([0.0, 5.0, 100.0, 999.0]))
    labels, _, unweighted, _ = _rows(b, SCHEMA.column("debt"))
    assert labels == ["0 to 3.9", "3.9 to 250", "250 to 1,000"]  # to a tenth of a fine cell's width
    assert np.allclose(unweighted, [1 / 4, 2 / 4, 1 / 4])


def test_a_spikes_bin_is_its_bound_alone():
    """`spikes: [0]`: the first fine cell holds exactly 0, so a bin of it alone reads "0", and the released zeros
    count there (not in the cells of small debts after it)."""
    from dataclasses import replace

    b = _bundle(np.full(4, 30), np.array([0.0, 0.0, 5.0, 999.0]))
    grid = replace(FineGrid(256, 256), low=True)
    binning = Binning(SCHEMA, {"age": Binning.from_dict(SCHEMA, b.measurements["generator"]["fine"]["binning"])
                               .numeric["age"], "debt": NumericBins(grid, np.array([0, 1, 64, 256]))})
    b.measurements["generator"]["fine"]["binning"] = binning.to_dict()
    assert binning.to_dict()["debt"]["spikes"] == ["lower"]
    labels, _, unweighted, _ = _rows(b, SCHEMA.column("debt"))
    assert labels == ["0", "above 0 to 247.1", "247.1 to 1,000"]
    assert np.allclose(unweighted, [2 / 4, 1 / 4, 1 / 4])


def test_an_indicator_columns_measured_shares_are_of_the_rows_with_a_value():
    """`missing: indicator`: the one-way count holds the empty rows at the lower bound; the card's measured shares
    come from the column's count beside its empty flag, the flag's 0 (a value there), as the released shares do."""
    from dpiw.analysis.datasheet import _measured

    schema = parse_schema({"name": "t", "task": "classification", "target": "y", "columns": [
        {"name": "debt", "type": "numeric", "lower": 0, "upper": 1000, "missing": "indicator"},
        {"name": "y", "type": "categorical", "categories": ["a", "b"]}]})
    assert schema.names == ["debt", "debt_missing", "y"]
    g = {"columns": schema.names, "cards": [3, 2, 2], "measurements": [
        {"clique": [0], "counts": [70.0, 20.0, 10.0]},  # 40 empty rows held in the first bin
        {"clique": [0, 1], "counts": [30.0, 40.0, 20.0, 0.0, 10.0, 0.0]}]}  # rows: debt's bins; columns: the flag
    b = SimpleNamespace(schema=schema, measurements={"generator": g})
    assert list(_measured(b, "debt")) == [30.0, 20.0, 10.0]
    g["measurements"][1]["clique"] = [1, 0]  # the flag first: its 0 row
    g["measurements"][1]["counts"] = [30.0, 20.0, 10.0, 40.0, 0.0, 0.0]
    assert list(_measured(b, "debt")) == [30.0, 20.0, 10.0]
    g["measurements"].pop()  # no such pair published: the one-way counts, as before
    assert list(_measured(b, "debt")) == [70.0, 20.0, 10.0]


def test_an_indicator_columns_measured_shares_divide_by_the_total_less_the_empty_flag():
    """The rows with a value are the total less the flag's one-way count of 1 (one noisy cell): unbiased, where the
    sum of the pair's cells clipped at 0 adds about 0.4 sd for every empty bin (here +8%: the shares ran low)."""
    from dpiw.analysis.datasheet import _with_value

    schema = parse_schema({"name": "t", "task": "classification", "target": "y", "columns": [
        {"name": "debt", "type": "numeric", "lower": 0, "upper": 1000, "missing": "indicator"},
        {"name": "y", "type": "categorical", "categories": ["a", "b"]}]})
    value, empty, sd = np.array([300.0, 100, 20, 5, 0, 0, 0, 0]), 75.0, 20.0
    rng = np.random.default_rng(0)
    new, old = [], []
    for _ in range(2000):
        pair = np.stack([value, np.r_[empty, np.zeros(7)]], axis=1) + rng.normal(0, sd, (8, 2))
        g = {"columns": schema.names, "cards": [8, 2, 2], "total": 500.0, "measurements": [
            {"clique": [1], "counts": list(np.array([value.sum(), empty]) + rng.normal(0, sd, 2))},
            {"clique": [0, 1], "counts": list(pair.ravel())}]}
        b = SimpleNamespace(schema=schema, measurements={"generator": g})
        new.append(_with_value(b, "debt"))
        old.append(np.clip(pair[:, 0], 0, None).sum())
    truth, se = value.sum(), sd / np.sqrt(2000)
    assert abs(np.mean(new) - truth) < 3 * se and abs(np.std(new) - sd) < 0.1 * sd
    assert np.mean(old) - truth > 25  # what the card divided by before
    g.pop("total")  # no total published: None (the card then sums the cells)
    assert _with_value(b, "debt") is None


def test_an_indicator_columns_card_divides_by_the_rows_with_a_value():
    """The card's measured shares are the pair's counts over the total less the flag's one-way count of 1."""
    schema = parse_schema({"name": "t", "task": "classification", "target": "y", "columns": [
        {"name": "debt", "type": "numeric", "lower": 0, "upper": 1000, "missing": "indicator"},
        {"name": "y", "type": "categorical", "categories": ["a", "b"]}]})
    grid = FineGrid.of(schema.column("debt"), 256)
    binning = Binning(schema, {"debt": NumericBins(grid, np.array([0, 1, 64, 256]))})
    g = {"columns": schema.names, "cards": [3, 2, 2], "total": 100.0, "bins": 3,
         "fine": {"binning": binning.to_dict()}, "measurements": [
             {"clique": [1], "counts": [62.0, 38.0]},  # 38 empty: 62 with a value
             {"clique": [0, 1], "counts": [3.0, 40.0, 30.0, 0.0, 24.0, 0.0]}]}  # the cells sum to 57, not 62
    data = pd.DataFrame({"debt": [1.0, 500.0, np.nan], "debt_missing": pd.Categorical([0, 0, 1], [0, 1]),
                         "y": pd.Categorical(["a"] * 3, ["a", "b"])})
    b = SimpleNamespace(schema=schema, data=data, weights=np.ones(3), measurements={"generator": g})
    _, measured, _, _ = _rows(b, schema.column("debt"))
    assert np.allclose(measured, [3 / 62, 30 / 62, 24 / 62])


def test_pairs_measured_by_the_weights_only_are_named_so():
    """Which columns were measured together: a pair only the weights' marginals hold (x with z; the target y with
    z) is marked "by the weights only" and explained; the generator's own pairs (x with y) are not; a bundle whose
    generator holds every measured pair says nothing of the weights."""
    from dpiw.analysis import Bundle
    from dpiw.analysis.datasheet import _measured_together

    schema = parse_schema({"name": "t", "task": "classification", "target": "y", "columns": [
        {"name": "x", "type": "numeric", "lower": 0, "upper": 1},
        {"name": "z", "type": "numeric", "lower": 0, "upper": 1},
        {"name": "y", "type": "categorical", "categories": ["a", "b"]}]})
    names = schema.names
    gen = {"columns": names, "measurements": [{"clique": [0, 2], "counts": [], "std": 1.0}]}
    weights = {"columns": names, "measurements": [{"clique": [0, 1, 2], "counts": [], "std": 1.0}]}
    data = pd.DataFrame({"x": [0.5], "z": [0.5], "y": pd.Categorical(["a"], ["a", "b"])})
    b = Bundle(data, np.ones(1), {}, None, schema, {"generator": gen, "weights": weights})
    assert b.generator_pairs == {frozenset(("x", "y"))} and len(b.measured_pairs) == 3
    lines = _measured_together(b)
    assert lines[0] == ("The target <code>y</code> with: <code>x</code>, <code>z</code> (<code>z</code> by the "
                        "weights only).")
    assert lines[1] == "The other pairs measured together: x – z (by the weights only)."
    assert "moved by the weights only as far as their noisy measurement shows it" in lines[2]
    alone = Bundle(data, np.ones(1), {}, None, schema, {"generator": gen})
    assert not any("weights" in line for line in _measured_together(alone))

    only = Bundle(data, np.ones(1), {}, None, schema, {"weights": weights})  # PrivBayes or a GAN: no marginals
    assert not any("weights only" in line for line in _measured_together(only))


def test_a_category_left_out_of_a_long_card_is_named():
    """A column of 14 categories: the card shows the 12 with the most rows and names the 2 it leaves out, with
    their largest share (a trial's loan purposes: two left out without a word read as dropped)."""
    from dpiw.analysis.datasheet import MAX_ROWS, _card

    labels = [f"p{k:02d}" for k in range(14)]
    schema = parse_schema({"name": "t", "task": "classification", "target": "y", "columns": [
        {"name": "purpose", "type": "categorical", "categories": labels},
        {"name": "y", "type": "categorical", "categories": ["a", "b"]}]})
    counts = np.r_[np.arange(20, 8, -1), [1, 0]]  # p12 holds 1 row of 167, p13 none
    values = np.repeat(labels, counts)
    b = SimpleNamespace(schema=schema, weights=np.ones(values.size), measurements={}, manifest={},
                        data=pd.DataFrame({"purpose": pd.Categorical(values, labels),
                                           "y": pd.Categorical(["a"] * values.size, ["a", "b"])}))
    card = _card(b, schema.column("purpose"), [])
    assert MAX_ROWS == 12 and card.count("<tr><td>p") == 12 and "<tr><td>p12<" not in card
    assert f"2 more categories, not shown, with at most {1 / values.size:.3f} of the rows weighted each: p12, p13" \
        in card
    b.data["purpose"] = pd.Categorical(np.where(values == "p12", "p00", values), labels)  # p12's row gone too
    assert "2 more categories, not shown, with no released rows: p12, p13" in _card(b, schema.column("purpose"), [])
