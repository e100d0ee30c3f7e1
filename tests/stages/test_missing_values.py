"""Empty values as a schema says: `missing: category` (a categorical column's own category) and `missing:
indicator` (a numeric column modelled at its lower bound with a 0/1 column beside it, released empty where that
column is 1); anything else empty is refused, naming every column at once."""

import numpy as np
import pandas as pd
import pytest

from dpiw import DpiwError
from dpiw.data.datasets import RowChecks, read_table
from dpiw.data.schema import parse_schema
from dpiw.scale import decode_frame, scale_frame
from dpiw.sdgp.mst import MST

SCHEMA = {"name": "ward", "task": "classification", "target": "death",
          "columns": [{"name": "age", "type": "numeric", "lower": 40, "upper": 100, "integer": True},
                      {"name": "creatinine", "type": "numeric", "lower": 0, "upper": 15, "missing": "indicator"},
                      {"name": "chapter", "type": "categorical", "categories": ["Circulatory", "Neoplasms"],
                       "missing": "category"},
                      {"name": "death", "type": "categorical", "categories": [0, 1]}]}


def _table(tmp_path, n=400, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"age": rng.integers(50, 95, n), "creatinine": rng.lognormal(0, 0.3, n),
                       "chapter": rng.choice(["Circulatory", "Neoplasms"], n), "death": rng.integers(0, 2, n)})
    df.loc[rng.random(n) < 0.2, "creatinine"] = np.nan
    df.loc[rng.random(n) < 0.6, "chapter"] = np.nan
    path = tmp_path / "ward.csv"
    df.to_csv(path, index=False)
    return df, parse_schema({**SCHEMA, "source": {"kind": "file", "path": str(path)}})


def test_the_schema_adds_the_flag_column_and_reads_back_the_same_from_its_public_form():
    s = parse_schema(SCHEMA)
    assert s.names == ["age", "creatinine", "creatinine_missing", "chapter", "death"]
    assert s.file_names == ["age", "creatinine", "chapter", "death"]
    assert s.column("chapter").categories == ("Circulatory", "Neoplasms", "missing")
    assert parse_schema(s.public_dict()) == s  # a bundle's schema.json gives the same columns, once
    with pytest.raises(DpiwError, match="missing must be 'indicator' for a numeric column"):
        parse_schema({**SCHEMA, "columns": [{**SCHEMA["columns"][0], "missing": "category"}, *SCHEMA["columns"][1:]]})
    with pytest.raises(DpiwError, match="target 'death' may not have missing values"):
        parse_schema({**SCHEMA, "columns": [*SCHEMA["columns"][:3], {**SCHEMA["columns"][3], "missing": "category"}]})


def test_empty_values_become_what_the_schema_says_row_by_row(tmp_path):
    df, s = _table(tmp_path)
    typed = read_table(s, s.source["path"])[s.names]
    empty = df.creatinine.isna().to_numpy()
    assert (typed.creatinine_missing.to_numpy() == np.where(empty, "1", "0")).all()
    assert (typed.creatinine[empty] == 0.0).all() and np.allclose(typed.creatinine[~empty], df.creatinine[~empty])
    assert (typed.chapter[df.chapter.isna()] == "missing").all()
    checks = RowChecks(s, out_of_bounds="fail")
    checks.add(typed)  # nothing empty is left for the row checks
    # decoded, a flagged row's value is empty again (and an integer column stays whole)
    scaled = scale_frame(typed, s, {c.name: (c.lower, c.upper) for c in s.columns if c.is_numeric})
    back = decode_frame(scaled, s)
    assert back.creatinine.isna().to_numpy().tolist() == empty.tolist()
    assert np.allclose(back.creatinine[~empty], df.creatinine[~empty]) and back.age.dtype == np.int64


def test_an_undeclared_empty_value_is_refused_naming_every_column(tmp_path):
    df, _ = _table(tmp_path)
    plain = {**SCHEMA, "columns": [{k: v for k, v in c.items() if k != "missing"} for c in SCHEMA["columns"]]}
    s = parse_schema({**plain, "source": {"kind": "file", "path": str(tmp_path / "ward.csv")}})
    with pytest.raises(DpiwError) as exc:
        RowChecks(s, out_of_bounds="fail").add(read_table(s, s.source["path"]))
    msg = str(exc.value)
    assert "'creatinine' (" in msg and "'chapter' (" in msg and "missing: indicator" in msg
    assert "missing: category" in msg and str(int(df.creatinine.isna().sum())) in msg


def test_mst_ties_a_flag_to_its_column_without_spending_on_the_choice(tmp_path):
    df, s = _table(tmp_path, n=2000)
    typed = read_table(s, s.source["path"])[s.names]
    scaled = scale_frame(typed, s, {c.name: (c.lower, c.upper) for c in s.columns if c.is_numeric})
    for seed in range(3):  # a tiny epsilon: the exponential mechanism alone would pick edges near at random
        mst = MST(fine_cells=64).fit(scaled, s, epsilon=0.05, delta=1e-6, rng=np.random.default_rng(seed))
        assert [1, 2] in [sorted([s.names.index(a), s.names.index(b)]) for a, b in mst.privacy_.details["tree"]]
        assert mst.privacy_.noise["selection"]["rounds"] == len(s.names) - 2
        assert mst.privacy_.noise["selection"]["public_edges"] == 1
        rows = decode_frame(mst.sample(3000, rng=np.random.default_rng(seed)), s)
        flagged = rows.creatinine_missing.astype(int) == 1
        assert rows.creatinine.isna().eq(flagged).all()


def test_no_released_value_sits_at_the_bound_where_only_the_empty_rows_were(tmp_path):
    """creatinine (continuous, no spike at its lower bound 0) holds its empty rows alone in its lowest bin. At a
    tiny epsilon the model puts rows with a value in that bin too (the noise of an empty cell): a mean of the
    values would count them as 0. Each gets the bin of another row with a value: no value at 0, the empty rows
    and the flag as drawn."""
    df, s = _table(tmp_path, n=2000)
    typed = read_table(s, s.source["path"])[s.names]
    scaled = scale_frame(typed, s, {c.name: (c.lower, c.upper) for c in s.columns if c.is_numeric})
    mst = MST(fine_cells=64).fit(scaled, s, epsilon=0.05, delta=1e-6, rng=np.random.default_rng(0))
    nb = mst.binning_.numeric["creatinine"]
    assert nb.empty_only(s.column("creatinine"))
    cells = {c.name: np.asarray(v) for c, v in zip(s.columns, mst.binning_.cells(scaled).T, strict=True)}
    n = 4000
    rng = np.random.default_rng(1)
    drawn = {name: rng.choice(v, n) for name, v in cells.items()}  # rows apart from each other, as noise could
    present = drawn["creatinine_missing"] == 0
    stray = present & (drawn["creatinine"] == 0)
    assert stray.sum() > 100
    rows = decode_frame(mst.binning_.rows(drawn, np.random.default_rng(2)), s)
    assert (rows.creatinine[present] > 0).all() and rows.creatinine[~present].isna().all()
    assert rows.creatinine_missing.astype(int).eq((~present).astype(int)).all()
    kept = pd.Series(nb.cells(mst.binning_.rows(drawn, np.random.default_rng(2)).creatinine.to_numpy()))
    share = kept[stray].value_counts(normalize=True).sort_index()  # the strays' bins follow the other rows'
    others = pd.Series(drawn["creatinine"][present & ~stray]).value_counts(normalize=True).sort_index()
    assert np.abs(share.reindex(others.index, fill_value=0) - others).max() < 0.1


def test_number_categories_stay_numbers_beside_the_missing_category():
    s = parse_schema({**SCHEMA, "columns": [*SCHEMA["columns"][:2],
                                            {"name": "ecog", "type": "categorical", "categories": [0, 1, 2],
                                             "missing": "category"}, SCHEMA["columns"][3]]})
    col = s.column("ecog")
    assert col.labels == [0, 1, 2, "missing"] and col.categories == ("0", "1", "2", "missing")
    assert parse_schema(s.public_dict()) == s


def test_a_clipped_share_counts_the_values_a_column_holds_not_its_empty_cells(tmp_path):
    """creatinine half empty, 8% of the values it holds above the public bound: 4% of the rows, 8% of the values.
    The 5% guard counts values (the empty cells, held at the lower bound, are no value inside the bounds)."""
    from dpiw.scale import check_clipping

    rng = np.random.default_rng(3)
    n = 1000
    value = np.where(rng.random(n) < 0.08, 20.0, 1.0)
    df = pd.DataFrame({"age": rng.integers(50, 95, n), "creatinine": np.where(np.arange(n) % 2 == 0, value, np.nan),
                       "chapter": rng.choice(["Circulatory", "Neoplasms"], n), "death": rng.integers(0, 2, n)})
    path = tmp_path / "ward.csv"
    df.to_csv(path, index=False)
    s = parse_schema({**SCHEMA, "source": {"kind": "file", "path": str(path)}})
    typed = read_table(s, s.source["path"])[s.names]
    share = float((value[::2] > 15).mean())
    checks = RowChecks(s, out_of_bounds="clip")
    checks.add(typed)
    checks.finish()
    assert checks.clipped(max_fraction=1.0)["creatinine"] == pytest.approx(share)
    for clipped in (lambda: checks.clipped(max_fraction=0.05), lambda: check_clipping(typed, s, max_fraction=0.05)):
        with pytest.raises(DpiwError, match=r"\d+% of column 'creatinine' lies outside its public bounds"):
            clipped()


def test_which_lowest_bins_hold_the_empty_rows_alone():
    """A whole-number column of more values than the fine cells (test scores on 200 to 900, none of them 200) has
    its bound's own leaf, as a continuous one does; one of a leaf per whole number (ages 12 to 18) holds 12-year-olds
    in the same leaf as the empty rows, and a declared spike at the bound says rows hold it."""
    from dpiw.sdgp.binning import FineGrid, NumericBins

    def lowest_alone(**column) -> bool:
        c = parse_schema({"name": "s", "task": "classification", "target": "y", "columns": [
            {"name": "x", "type": "numeric", "missing": "indicator", **column},
            {"name": "y", "type": "categorical", "categories": [0, 1]}]}).column("x")
        grid = FineGrid.of(c, 256)
        return NumericBins(grid, np.array([0, 1, grid.support // 2, grid.support])).empty_only(c)

    assert lowest_alone(lower=200, upper=900, integer=True)
    assert lowest_alone(lower=20, upper=200)
    assert not lowest_alone(lower=12, upper=18, integer=True)
    assert not lowest_alone(lower=0, upper=900, integer=True, spikes=[0])
