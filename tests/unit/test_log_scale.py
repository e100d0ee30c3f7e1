"""`scale: log`: a numeric column's fine cells equal-width in log(1 + x - lower), so a skewed column on wide public
bounds keeps its shape (spending: two thirds of the rows in the first $391 cell on a linear scale)."""

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from helpers import tilted_release

from dpiw import DpiwError
from dpiw.analysis.bin_bias import crowded, crowded_text, pile_fix, piles, piles_text, within_bin_bias
from dpiw.analysis.datasheet import _bin_labels
from dpiw.data.schema import Column, parse_schema
from dpiw.scale import decode_frame, scale_frame
from dpiw.sdgp.binning import FineGrid, NumericBins
from dpiw.sdgp.mst import MST

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
from log_scale import schema, table  # noqa: E402  (the bench's simulated spending)


def test_the_scale_is_a_numeric_columns_and_says_what_it_takes():
    base = {"name": "t", "task": "classification", "target": "y"}
    y = {"name": "y", "type": "categorical", "categories": ["a", "b"]}
    with pytest.raises(DpiwError, match="scale must be one of linear, log"):
        parse_schema({**base, "columns": [{"name": "x", "type": "numeric", "lower": 0, "upper": 9, "scale": "ln"},
                                          y]})
    with pytest.raises(DpiwError, match="'scale' applies to numeric columns only"):
        parse_schema({**base, "columns": [{**y, "name": "g", "scale": "log"}, y]})
    s = parse_schema({**base, "columns": [{"name": "x", "type": "numeric", "lower": 0, "upper": 9, "scale": "log"},
                                          {"name": "z", "type": "numeric", "lower": 0, "upper": 9}, y]})
    assert s.public_dict()["columns"][0]["scale"] == "log"  # the bundle's schema says it; a linear one says nothing
    assert "scale" not in s.public_dict()["columns"][1]
    assert parse_schema(s.public_dict()) == s


def test_values_go_to_the_unit_scale_and_back():
    c = Column("x", "numeric", 10.0, 100_010.0, scale="log")
    x = np.array([10.0, 10.5, 11.0, 1_000.0, 100_010.0])
    u = c.to_unit(x)
    assert u[0] == 0.0 and u[-1] == pytest.approx(1.0) and np.all(np.diff(u) > 0)
    assert c.from_unit(u) == pytest.approx(x)
    assert c.to_unit(np.array([5.0]))[0] == 0.0  # below the bound: the bound (the release clips it there)
    # a fine cell of 256 is 4.6% of the value near the bound's end, not $391
    assert c.from_unit(np.array([1 / 256]))[0] - 10.0 == pytest.approx(np.expm1(np.log1p(1e5) / 256))


def test_a_skewed_column_keeps_its_shape_on_a_log_scale():
    """MST at epsilon 1 on 5,000 simulated rows (bench/log_scale.py's spending: 25% zeros, the rest lognormal with a
    median near $55, bounds 0 to 100,000), the same noise on either scale: on the linear one the median comes back
    five times too large and the share above $100 doubles; on the log one both are near the table's."""
    mst = yaml.safe_load((ROOT / "params.yaml").read_text())["sdgp"]["mst"]
    raw = table(5000, 0)
    x = raw.spend.to_numpy()
    got = {}
    for scale in ("linear", "log"):
        s = schema(scale)
        gen = MST(**mst).fit(scale_frame(raw, s, {"spend": (0.0, 1e5)}), s, epsilon=1.0, delta=5000**-1.5,
                             rng=np.random.default_rng(11))
        v = decode_frame(gen.sample(5000, rng=np.random.default_rng(12)), s).spend.to_numpy()
        got[scale] = (np.median(v), (v > 100).mean(), (v == 0).mean())
    truth = (np.median(x), (x > 100).mean(), (x == 0).mean())
    assert got["log"][0] == pytest.approx(truth[0], rel=0.25) and abs(got["log"][1] - truth[1]) < 0.03
    assert got["linear"][0] > 3 * truth[0] and got["linear"][1] > truth[1] + 0.2
    assert abs(got["log"][2] - truth[2]) < 0.03  # the zero spike holds on either scale


def test_a_crowded_cell_is_found_on_a_linear_scale_only():
    grid = FineGrid(256, 256, None, True, False)
    fine = np.zeros(256)
    fine[0], fine[1], fine[2:40] = 0.25, 0.6, 0.15 / 38
    cuts = np.array([0, 1, 2, 40, 256])
    for scale, expect in (("linear", 1), ("log", 0)):
        s = parse_schema({"name": "t", "task": "classification", "target": "y", "columns": [
            {"name": "x", "type": "numeric", "lower": 0, "upper": 1e5, "spikes": [0], "scale": scale},
            {"name": "y", "type": "categorical", "categories": ["a", "b"]}]})
        from dpiw.sdgp.binning import Binning

        published = {"generator": {"bins": 4, "fine": {"binning": Binning(s, {"x": NumericBins(grid, cuts, fine)})
                                                     .to_dict()}}}
        found = crowded(s, published)
        assert len(found) == expect
        if expect:  # the cell after the zero spike: 0.6 of the rows, $0 to $391 (not the spike itself)
            name, share, lo, hi, where = found[0]
            assert name == "x" and share == pytest.approx(0.6) and lo == 0.0 and hi == pytest.approx(1e5 / 255)
            assert where == "first" and "`scale: log`" in crowded_text(*found[0], column=s.column("x"))


def _published(schema, fine, cuts, low=False, high=False, total=10_000.0, noise=None):
    """A generator's published fine histogram of column x: its cells, and its tree's levels as measured (with
    Gaussian noise of sd ``noise`` rows from a seeded stream, or none)."""
    from dpiw.sdgp.binning import Binning, tree_levels

    grid = FineGrid(256, 256, None, low, high)
    rng = np.random.default_rng(0)
    levels = [lv + (0 if noise is None else rng.normal(0, noise, lv.size))
              for lv in tree_levels(np.asarray(fine, float) * total)[1:]]
    return {"generator": {"bins": len(cuts) - 1, "total": total, "fine": {
        "binning": Binning(schema, {"x": NumericBins(grid, np.asarray(cuts), fine)}).to_dict(),
        "levels": {"x": [lv.tolist() for lv in levels]}, "std": {"x": float(noise or 0.0)}}}}


def schooling():
    """Years of schooling on public bounds 0 to 25, 41% of the rows on a coded 12 (its fine cell 122 of 256: 11.91
    to 12.01) and the rest spread over 40 cells: the schema, and its fine histogram."""
    s = parse_schema({"name": "t", "task": "classification", "target": "y", "columns": [
        {"name": "x", "type": "numeric", "lower": 0, "upper": 25},
        {"name": "y", "type": "categorical", "categories": ["a", "b"]}]})
    fine = np.zeros(256)
    fine[100:140] = 0.59 / 40
    fine[122] += 0.41
    return s, fine


def test_a_crowded_cell_is_one_wide_for_the_column_and_its_fix_fits_where_it_is():
    """41% of the rows on one coded value (12 years of schooling on 0 to 25) in a cell of 0.1: narrow for a column
    whose middle half spans 30 cells, so not named; every row in the top cell (a share at 1 on 0 to 1): named,
    with the upper spike as its fix, not a log scale."""
    s, fine = schooling()
    assert crowded(s, _published(s, fine, [0, 100, 122, 123, 140, 256])) == []
    # but a pile: named when a release is made, with the fix for its bounds (25 whole numbers: integer: true)
    found = piles(s, _published(s, fine, [0, 100, 122, 123, 140, 256]))
    assert [(f[0], round(f[1], 3)) for f in found] == [("x", 0.425)]
    text = piles_text(found[:1], s.column("x"), 256)
    assert "42% of its rows are in the fine cell 11.91 to 12.01" in text and "`integer: true`" in text, text
    even = np.zeros(256)
    even[100:140] = 1 / 40
    assert piles(s, _published(s, even, [0, 100, 122, 123, 140, 256])) == []
    # a lump the pruning made (a cell released with 6% of the rows, measured with 0.6%) is no pile; the pile is
    # found through the noise of its measurement (sd 40 rows a node of 10,000)
    lump = even.copy()
    lump[110] = 0.06
    measured = _published(s, even, [0, 100, 122, 123, 140, 256])
    measured["generator"]["fine"]["binning"]["x"]["fine"] = (lump / lump.sum()).tolist()
    assert piles(s, measured) == []
    assert [f[0] for f in piles(s, _published(s, fine, [0, 100, 122, 123, 140, 256], noise=40.0))] == ["x"]


def test_dpiw_release_names_a_pile_of_rows(tmp_path, capsys):
    """The line `dpiw release` prints after a release whose published fine histogram has a pile."""
    import json

    from dpiw.commands.release import _crowded

    s, fine = schooling()
    (tmp_path / "measurements.json").write_text(json.dumps(_published(s, fine, [0, 100, 122, 123, 140, 256])))
    _crowded(tmp_path, s)
    out = capsys.readouterr().out
    assert out.startswith("dpiw release: column 'x': 42% of its rows are in the fine cell") and "integer: true" in out
    top = np.zeros(256)
    top[-1] = 1.0
    found = crowded(s, _published(s, top, [0, 255, 256]))
    assert [f[-1] for f in found] == ["last"]
    text = crowded_text(*found[0], column=s.column("x"))
    assert "`spikes: [25]`" in text and "scale: log" not in text
    # a cell inside, far from the lower bound (a trial's net assets on -1000 to 2000, 52% at -3.9 to 7.8): a log
    # scale's cells there are wider than the linear ones, so it is not advised; near the lower bound it is
    assets = Column("nettfa", "numeric", -1000.0, 2000.0)
    far = crowded_text("nettfa", 0.52, -3.906, 7.812, "inside", column=assets)
    assert "`scale: log` would widen this cell" in far and "or `scale: log` for a skewed" not in far
    near = crowded_text("nettfa", 0.52, -990.0, -978.0, "inside", column=assets)
    assert "or `scale: log` for a skewed column" in near


def test_a_log_columns_bins_are_labelled_in_its_units():
    grid = FineGrid(256, 256, None, True, False)
    nb = NumericBins(grid, np.array([0, 1, 64, 128, 256]))
    c = Column("x", "numeric", 0.0, 1e5, spikes=("lower",), scale="log")
    # 255 cells after the spike's: cut 64 is exp(63/255 log(1 + 100,000)) - 1 = 16.19
    assert _bin_labels(nb, c) == ["0", "above 0 to 16.2", "16.2 to 308", "308 to 100,000"]
    whole = Column("n", "numeric", 0.0, 1e5, integer=True, scale="log")  # a log grid: continuous, values rounded
    g = FineGrid.of(whole, 256)
    assert g.span is None
    # each whole number in the bin its scaled value falls in: the edges are 16.8 and 315.2
    assert _bin_labels(NumericBins(g, np.array([0, 64, 128, 256])), whole) == ["0 to 16", "17 to 315",
                                                                                 "316 to 100,000"]
    # spikes at both ends: each bound alone, and every whole number in the bin the datasheet counts it in
    visits = Column("v", "numeric", 0.0, 365.0, integer=True, spikes=("lower", "upper"), scale="log")
    nb = NumericBins(FineGrid.of(visits, 256), np.array([0, 1, 30, 60, 90, 150, 255, 256]))
    labels = _bin_labels(nb, visits)
    assert labels == ["0", "(no whole number)", "1 to 2", "3 to 6", "7 to 30", "31 to 364", "365"]
    spans = [(0, 0), None, (1, 2), (3, 6), (7, 30), (31, 364), (365, 365)]
    for k, span in enumerate(spans):
        if span is not None:
            x = np.arange(span[0], span[1] + 1, dtype=float)
            assert set(nb.cells(visits.to_unit(x)).tolist()) == {k}


@pytest.mark.parametrize("upper", [195.0, 200.0, 307.0])
def test_the_bounds_are_exactly_the_ends_of_a_log_scale(upper):
    """numpy's log1p and math's may differ in the last bit (upper 195 scaled to 0.9999999999999998 on one
    machine), and a top code at the upper bound then missed its spike's leaf: the bounds are exactly 0 and 1."""
    c = Column("x", "numeric", 0.0, upper, spikes=("upper",), scale="log")
    u = c.to_unit(np.array([0.0, upper, upper * (1 + 1e-12)]))
    assert list(u) == [0.0, 1.0, 1.0]
    grid = FineGrid.of(c, 256)
    assert grid.leaf(u[1:2])[0] == grid.cells - 1  # the spike's leaf
    s = parse_schema({"name": "t", "task": "classification", "target": "y", "columns": [
        {"name": "x", "type": "numeric", "lower": 0, "upper": upper, "scale": "log"},
        {"name": "y", "type": "categorical", "categories": ["a", "b"]}]})
    assert decode_frame(pd.DataFrame({"x": [1.0], "y": [0]}), s).x[0] == upper


def test_the_bins_tilt_in_the_units_of_a_log_column():
    """A subgroup whose share grows with the column, rows released as the generator does (bin, then a value from
    the fine histogram inside it): the within-bin estimate with the log map to the units finds the release's
    error in the units (to first order, a fifth), and with a linear map equals the width's."""
    col = Column("x", "numeric", 0.0, 1e4, scale="log")
    # a lognormal-like column on the log scale; the release's error within S in the column's units
    nb, x, s, model_error = tilted_release(0.45, 0.12, [0, 16, 24, 28, 32, 36, 40, 48, 64])
    error = model_error(col.from_unit)
    assert error < -1.0
    est = within_bin_bias(nb, x, np.ones(len(x)), s, col.from_unit)
    assert est == pytest.approx(error, rel=0.2), (est, error)
    lin = within_bin_bias(nb, x, np.ones(len(x)), s, 7.0)
    assert within_bin_bias(nb, x, np.ones(len(x)), s, lambda u: 3.0 + 7.0 * u) == pytest.approx(lin, rel=1e-9)


def test_piles_of_one_column_are_one_line_and_a_cell_without_a_whole_number_is_not_told_integer(tmp_path, capsys):
    """Two piles in one column (fine cells 105 and 135 of 0 to 25: 10.25 to 10.35 and 13.18 to 13.28, no whole
    number in either, as wind speeds in knots read in mph): `dpiw release` prints one line naming both, and says
    the value is lost rather than suggest `integer: true`, which could not keep it."""
    import json

    from dpiw.commands.release import _crowded

    s, _ = schooling()
    fine = np.zeros(256)
    fine[100:140] = 0.5 / 40
    fine[105] += 0.25
    fine[135] += 0.25
    (tmp_path / "measurements.json").write_text(json.dumps(_published(s, fine, [0, 100, 105, 106, 135, 136, 140,
                                                                                   256])))
    _crowded(tmp_path, s)
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "column 'x': 2 fine cells hold piles of its rows" in out, out
    assert "10.25 to 10.35: 26%" in out and "13.18 to 13.28: 26%" in out, out
    assert "it is lost unless its values are public" in out and "integer: true" not in out, out



def test_piles_with_different_fixes_keep_each_its_own():
    """A pile on a whole number (11.91 to 12.01 holds 12) and one between them (10.25 to 10.35): one line, the
    first told `integer: true`, the second that it is lost."""
    s, _ = schooling()
    text = piles_text([("x", 0.3, 11.9140625, 12.01171875), ("x", 0.2, 10.25390625, 10.3515625)], s.column("x"), 256)
    assert "`integer: true` in the schema keeps it, if it is a whole number (11.91 to 12.01: 30%)" in text, text
    lost = ("it is lost unless its values are public (a codebook's band midpoints or codes) and the column is "
            "declared a category listing them; values read off the rows are not public (10.25 to 10.35: 20%)")
    assert lost in text, text


def test_a_pile_at_a_bound_no_spike_keeps_is_told_the_spike():
    """A pile in the first fine cell of card balances on 0 to 10,000 (5% of them exactly 0): `spikes: [0]` keeps it,
    not `integer: true` (10,001 whole numbers: 0 would get no cell of its own); at the upper bound its spike. A cell
    inside, or at a bound already spiked: on bounds of at most four times the fine cells' whole numbers (0 to 1,000),
    bounds a whole number a cell; wider (a trial's earnings on 0 to 100,000 were told "bounds spanning at most 256
    whole numbers"), only a public code as a bound, or a category, keeps it."""
    s = parse_schema({"name": "t", "task": "classification", "target": "y", "columns": [
        {"name": "x", "type": "numeric", "lower": 0, "upper": 10000},
        {"name": "z", "type": "numeric", "lower": 0, "upper": 10000, "spikes": [0]},
        {"name": "n", "type": "numeric", "lower": 0, "upper": 1000},
        {"name": "y", "type": "categorical", "categories": ["a", "b"]}]})
    first = pile_fix(s.column("x"), 256, 0.0, 39.0625)
    assert first.startswith("`spikes: [0]` in the schema keeps it, if it is 0 (the lower bound); else it is kept only "
                            "where its value is public: a codebook's top or bottom code as that bound"), first
    assert pile_fix(s.column("x"), 256, 9960.9375, 10000.0).startswith("`spikes: [10000]`")
    for inside in (pile_fix(s.column("x"), 256, 39.0625, 78.125), pile_fix(s.column("z"), 256, 0.0, 39.0625)):
        assert inside.startswith("it is kept only where its value is public") and "spikes: [0]" not in inside
    assert pile_fix(s.column("n"), 256, 39.0625, 42.96875).startswith("public bounds spanning at most 256 whole")


def test_dpiw_release_names_the_columns_no_marginal_measured_with_the_target(tmp_path, capsys):
    """A trial's weeks off work were measured with medical costs alone, and every estimate of them within a
    subgroup warned: the release's own output says so, and what would measure them."""
    import json

    from dpiw.commands.release import _crowded
    from dpiw.data.schema import parse_schema

    s = parse_schema({"name": "t", "task": "regression", "target": "y", "columns": [
        {"name": "y", "type": "numeric", "lower": 0, "upper": 1},
        {"name": "a", "type": "categorical", "categories": ["0", "1"]},
        {"name": "b", "type": "categorical", "categories": ["0", "1"]},
        {"name": "c", "type": "categorical", "categories": ["0", "1"]}]})
    tree = {"generator": {"columns": ["y", "a", "b", "c"], "measurements": [
        {"clique": [0, 1]}, {"clique": [1, 2]}, {"clique": [2, 3]}]}}
    (tmp_path / "measurements.json").write_text(json.dumps(tree))
    _crowded(tmp_path, s)
    assert capsys.readouterr().out == (
        "dpiw release: the target 'y' was measured together with a, not with b, c: an estimate of it within their "
        "subgroups, or a fit of it on them, shows the generator's model of that relation, which no interval covers "
        "(the estimate warns); MST's `--tree target` measures every column with the target\n")
    tree["weights"] = {"columns": ["y", "a", "b", "c"], "measurements": [{"clique": [0, 2]}, {"clique": [0, 3]}]}
    (tmp_path / "measurements.json").write_text(json.dumps(tree))
    _crowded(tmp_path, s)
    assert capsys.readouterr().out == ""  # the weights measured the rest
    # a `missing: indicator` column's 0/1 column measured with the target says whether x is empty, not how x goes
    # with it (b.fit marks x's coefficient †): x is named among the rest
    s2 = parse_schema({"name": "t", "task": "regression", "target": "y", "columns": [
        {"name": "y", "type": "numeric", "lower": 0, "upper": 1},
        {"name": "x", "type": "numeric", "lower": 0, "upper": 1, "missing": "indicator"},
        {"name": "a", "type": "categorical", "categories": ["0", "1"]}]})
    (tmp_path / "measurements.json").write_text(json.dumps({"generator": {"columns": s2.names, "measurements": [
        {"clique": [0, 2]}, {"clique": [0, 3]}, {"clique": [1, 3]}]}}))
    _crowded(tmp_path, s2)
    assert "measured together with a, not with x:" in capsys.readouterr().out
