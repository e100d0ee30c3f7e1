"""The counting engines (dpiw.sdgp.engines): a hive-partitioned parquet folder of scaled rows gives the same count
tables, fine histograms and row total on every engine as the in-process counts of the same rows, with fine-
histogram bins (an integer column, a continuous one, uneven cuts) and with equal-width bins; MST measured through
each engine makes the same measurements under the same seed; empty values are refused with the same line."""

import itertools
from dataclasses import replace

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pytest

from dpiw import DpiwError
from dpiw.data.schema import parse_schema
from dpiw.scale import scale_frame
from dpiw.sdgp import engines
from dpiw.sdgp.binning import Binning, FineGrid, NumericBins, as_binning
from dpiw.sdgp.counting import InProcessCounter, PartitionedCounter
from dpiw.sdgp.engines import ENGINES, cell_sql, open_counter, parse_engine
from dpiw.sdgp.mst import MST

SCHEMA = parse_schema({"name": "ward", "task": "classification", "target": "ill", "columns": [
    {"name": "age", "type": "numeric", "lower": 0, "upper": 110, "integer": True},
    {"name": "kappa", "type": "numeric", "lower": 0, "upper": 50},
    {"name": "visits", "type": "numeric", "lower": 0, "upper": 2000, "integer": True},
    {"name": "region", "type": "categorical", "categories": ["n", "s", "e", "w"]},
    {"name": "ill", "type": "categorical", "categories": ["no", "yes"]}]})


def rows(n=5000, seed=0):
    rng = np.random.default_rng(seed)
    raw = pd.DataFrame({
        "age": np.clip(np.rint(rng.normal(55, 20, n)), 0, 110),
        "kappa": np.clip(rng.lognormal(0.3, 0.8, n), 0, 50),
        "visits": np.clip(np.rint(rng.lognormal(3, 1.5, n)), 0, 2000),
        "region": rng.choice(["n", "s", "e", "w"], n), "ill": rng.choice(["no", "yes"], n, p=[0.8, 0.2])})
    raw.loc[:20, "kappa"] = [0.0, 50.0, 25.0, 1e-300, 49.999999] + [k / 8 for k in range(16)]  # edges
    return scale_frame(raw, SCHEMA, {c.name: (c.lower, c.upper) for c in SCHEMA.columns if c.is_numeric})


def shaped(scaled, spikes=False):
    """A binning with every kind of numeric grid and uneven cut points, as fine histograms make them (``spikes``:
    the continuous and wide integer grids with a leaf for each bound)."""
    numeric = {}
    for c in SCHEMA.columns:
        if c.is_numeric:
            grid = FineGrid.of(c, 256)
            if spikes and not grid.per_integer:
                grid = replace(grid, low=True, high=True)
            inner = np.unique(np.r_[0, np.sort(np.random.default_rng(1).choice(grid.support, 6, replace=False)),
                                    grid.cells])
            numeric[c.name] = NumericBins(grid, inner)
    return Binning(SCHEMA, numeric)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    scaled = rows()
    root = tmp_path_factory.mktemp("engines") / "ward"
    # several files in hive partitions of a column of the schema, as Spark or Dask write them
    ds.write_dataset(pa.Table.from_pandas(scaled, preserve_index=False), root, format="parquet",
                     partitioning=ds.partitioning(pa.schema([("region", pa.int64())]), flavor="hive"),
                     max_rows_per_file=700, max_rows_per_group=350)  # two row groups a file
    return scaled, root


@pytest.fixture(scope="module")
def cluster():
    """One local Dask cluster of two worker processes for the module (what ``--engine dask`` starts)."""
    from dpiw.sdgp.engines import dask_client

    return dask_client(None)


def test_the_engines_names_are_checked():
    assert parse_engine("local") == ("local", None) and parse_engine("dask=tcp://h:8786") == ("dask", "tcp://h:8786")
    for bad in ("spark", "duckdb=x", "dask=", "Local"):
        with pytest.raises(DpiwError, match="engine"):
            parse_engine(bad)


@pytest.mark.parametrize("engine", ENGINES)
def test_every_engine_gives_the_in_process_counts(folder, engine, cluster, monkeypatch):
    scaled, root = folder
    assert len(list(root.rglob("*.parquet"))) >= 8
    d = len(SCHEMA.columns)
    cliques = [*((j,) for j in range(d)), *itertools.combinations(range(d), 2), (0, 1, 4), (4, 0, 2)]
    for bins, joint in ((shaped(scaled), engines.JOINT_CELLS), (shaped(scaled, spikes=True), engines.JOINT_CELLS),
                        (8, engines.JOINT_CELLS), (8, 0)):
        monkeypatch.setattr(engines, "JOINT_CELLS", joint)  # summed from the joint table, or grouped one by one
        local = InProcessCounter.of(scaled, SCHEMA, bins)
        counter = open_counter(root, SCHEMA, bins, engine)
        assert counter.total == len(scaled) and counter.cards == local.cards
        a, b = local.counts(cliques), counter.counts(cliques)
        for cl in cliques:
            assert np.array_equal(a[cl], b[cl]), (engine, cl)
        grids = {c.name: nb.grid for c, nb in zip(SCHEMA.columns, map(as_binning(SCHEMA, bins).numeric.get,
                                                                       SCHEMA.names), strict=True) if c.is_numeric}
        fa, fb = local.fine_counts(grids), counter.fine_counts(grids)
        assert all(np.array_equal(fa[k], fb[k]) for k in grids)
        rebinned = counter.with_binning(shaped(scaled))  # the same rows on other cells, without a new pass
        assert type(rebinned) is type(counter) and rebinned.total == counter.total
        want = InProcessCounter.of(scaled, SCHEMA, shaped(scaled)).counts(cliques)
        got = rebinned.counts(cliques)
        assert all(np.array_equal(want[cl], got[cl]) for cl in cliques), engine


def test_the_sql_cells_agree_with_numpy_at_every_edge():
    """Scaled values on and next to every fine cell's edges, through DuckDB's SQL and NumPy's cells."""
    import duckdb

    grids = [FineGrid.of(c, 256) for c in SCHEMA.columns if c.is_numeric]
    grids += [replace(g, low=low, high=high) for g in grids if not g.per_integer
              for low, high in ((True, False), (False, True), (True, True))]  # a leaf for a bound (spikes)
    for grid in grids:
        nb = NumericBins(grid, np.unique(np.r_[0, 1, 3, 17, 100, grid.support - 1, grid.support, grid.cells]))
        edges = np.r_[np.arange(grid.cells + 1) / grid.cells, np.arange(grid.middle + 1) / grid.middle,
                      np.arange(int(grid.span or 0) + 1) / (grid.span or 1)]
        v = np.clip(np.unique(np.r_[edges, np.nextafter(edges, 2), np.nextafter(edges, -1),
                                    (np.arange(int(grid.span or 0) + 1) + 0.5) / (grid.span or 1)]), 0, 1)
        con = duckdb.connect()
        con.register("t", pd.DataFrame({"x": v}))
        got = con.execute(f"SELECT {cell_sql('x', nb)} FROM t").fetchnumpy()
        assert np.array_equal(np.asarray(list(got.values())[0], np.int64), nb.cells(v)), grid


@pytest.mark.parametrize("engine", ENGINES)
def test_mst_through_every_engine_makes_the_same_measurements(folder, engine, cluster):
    scaled, root = folder
    kw = dict(epsilon=1.0, delta=1e-5)
    a = MST(bins=8, iters=10).measure(scaled, SCHEMA, rng=np.random.default_rng(3), **kw)
    b = MST(bins=8, iters=10).measure_counts(open_counter(root, SCHEMA, 8, engine), SCHEMA,
                                             rng=np.random.default_rng(3), **kw)
    assert a.tree_ == b.tree_ and a.privacy_ == b.privacy_
    for (c1, y1, s1), (c2, y2, s2) in zip(a.measurements_, b.measurements_, strict=True):
        assert c1 == c2 and s1 == s2 and np.array_equal(y1, y2)


@pytest.mark.parametrize("engine", ENGINES)
def test_empty_values_are_refused_with_the_same_line_on_every_engine(tmp_path, engine, cluster):
    scaled = rows(300)
    scaled.loc[5:7, "kappa"] = np.nan
    scaled.loc[9, "age"] = np.inf
    ds.write_dataset(pa.Table.from_pandas(scaled, preserve_index=False), tmp_path / "bad", format="parquet")
    with pytest.raises(DpiwError) as local:
        PartitionedCounter(tmp_path / "bad", SCHEMA, 8).counts([(0,)])
    with pytest.raises(DpiwError) as other:
        open_counter(tmp_path / "bad", SCHEMA, 8, engine).counts([(0,)])
    assert str(other.value) == str(local.value)
    assert "'age' (1 missing or infinite), 'kappa' (3 missing or infinite) have empty values" in str(local.value)


def test_the_table_identity_on_dask_is_the_csvs(tmp_path, cluster):
    """A folder measured a file per Dask task (partial sums, sketches and row checks combined here) has the
    identity, sketches and row checks of the same rows read from one CSV; a bad value in one file is refused
    with the line a CSV gets."""
    from dataclasses import replace

    from dpiw.data.datasets import RowChecks
    from dpiw.privacy.identity import DROP_SKETCH_ROWS, measure
    from dpiw.sdgp.engines import measure_table

    n = DROP_SKETCH_ROWS + 10_000  # a table whose sketches without a column are dropped on the way
    i = np.arange(n)
    raw = pd.DataFrame({"age": i % 90 + 1.0, "kappa": np.linspace(0, 40, n).round(3), "visits": i % 7 * 1.0,
                        "region": np.array(list("nsew"))[i % 4], "ill": np.where(i % 5 == 0, "yes", "no")})
    raw.to_csv(tmp_path / "t.csv", index=False)
    ds.write_dataset(pa.Table.from_pandas(raw, preserve_index=False), tmp_path / "t", format="parquet",
                     partitioning=ds.partitioning(pa.schema([("region", pa.string())]), flavor="hive"),
                     max_rows_per_file=30_000, max_rows_per_group=30_000)
    secret = "3c" * 32
    schema = replace(SCHEMA, source={"kind": "file", "path": str(tmp_path / "t.csv")})
    checks_csv, checks_dask = (RowChecks(SCHEMA, out_of_bounds="clip") for _ in range(2))
    a = measure(schema, tmp_path / "t.csv", secret, also=[("age", "ill")], each=checks_csv.add)
    b = measure_table(schema, tmp_path / "t", secret, also=[("age", "ill")], checks=checks_dask,
                      engine="dask")
    assert a == b and set(a.over) == {("age", "ill")} and checks_dask.rows == checks_csv.rows == n
    assert checks_dask.outside == checks_csv.outside and {k: len(v) for k, v in checks_dask.seen.items()} == \
        {k: len(v) for k, v in checks_csv.seen.items()}
    # bad labels in three files, bad text in two, an inf in two: every one counted, on Dask as in one pass
    bad = raw.assign(ill=np.where(np.isin(i, [0, n // 2, n - 1]), "maybe", raw.ill),
                     visits=np.where(np.isin(i, [1, n - 2]), "often", raw.visits.astype(str)),
                     kappa=np.where(np.isin(i, [3, n - 3]), np.inf, raw.kappa))
    ds.write_dataset(pa.Table.from_pandas(bad, preserve_index=False), tmp_path / "bad", format="parquet",
                     partitioning=ds.partitioning(pa.schema([("region", pa.string())]), flavor="hive"),
                     max_rows_per_file=30_000, max_rows_per_group=30_000)
    bad.to_csv(tmp_path / "bad.csv", index=False)
    with pytest.raises(DpiwError) as csv:
        measure(schema, tmp_path / "bad.csv", secret)
    with pytest.raises(DpiwError) as dask:
        measure_table(schema, tmp_path / "bad", secret, engine="dask")
    assert str(dask.value).split(":", 1)[1] == str(csv.value).split(":", 1)[1]  # the same line but the path
    assert "'visits' is declared numeric but 2 row(s) hold text" in str(dask.value)
    assert "'ill' has 3 row(s) outside its declared categories" in str(dask.value)
    assert "column 'kappa' has 2 infinite value(s)" in str(dask.value)
    with pytest.raises(DpiwError, match="no rows"):  # a folder of files without rows
        (tmp_path / "none").mkdir()
        raw.iloc[:0].to_parquet(tmp_path / "none" / "part-0.parquet", index=False)
        measure_table(schema, tmp_path / "none", secret, engine="dask")


def test_a_file_in_a_key_value_folder_is_not_hive_partitioned(tmp_path, cluster):
    """The workflow's train split lives at private/<table>/seed=0/train.parquet: a column named like a folder
    above it keeps its own values on every engine (never the path's)."""
    from dpiw.data.schema import parse_schema

    schema = parse_schema({"name": "s", "task": "classification", "target": "y", "columns": [
        {"name": "seed", "type": "numeric", "lower": 0, "upper": 1},
        {"name": "y", "type": "categorical", "categories": ["no", "yes"]}]})
    (tmp_path / "seed=0").mkdir()
    frame = pd.DataFrame({"seed": [0.9, 0.1, 0.95], "y": [0, 1, 1]})
    frame.to_parquet(tmp_path / "seed=0" / "train.parquet", index=False)
    want = InProcessCounter.of(frame, schema, 2).counts([(0,), (0, 1)])
    for engine in ENGINES:
        got = open_counter(tmp_path / "seed=0" / "train.parquet", schema, 2, engine).counts([(0,), (0, 1)])
        assert all(np.array_equal(want[k], got[k]) for k in want), engine


def test_bad_files_of_a_folder_get_the_same_line_on_every_engine(tmp_path, cluster):
    """Values outside the bounds in two files are counted over the whole table (one line naming both columns, as
    from one CSV); a file without a column, or with text where the other files hold numbers, is named with the
    column, from the files' footers, before any row is read, whichever engine reads the rows."""
    import re
    from dataclasses import replace

    from dpiw.data.datasets import RowChecks, count_rows
    from dpiw.sdgp.engines import measure_table

    n = 4000
    i = np.arange(n)
    raw = pd.DataFrame({"age": i % 90 + 1.0, "kappa": np.linspace(0, 40, n).round(3), "visits": i % 7 * 1.0,
                        "region": np.array(list("nsew"))[i % 4], "ill": np.where(i % 5 == 0, "yes", "no")})
    raw.loc[1, "age"], raw.loc[n - 2, "kappa"], raw.loc[n - 6, "kappa"] = 120.0, 60.0, 70.0  # regions s and e
    raw.to_csv(tmp_path / "t.csv", index=False)
    ds.write_dataset(pa.Table.from_pandas(raw, preserve_index=False), tmp_path / "t", format="parquet",
                     partitioning=ds.partitioning(pa.schema([("region", pa.string())]), flavor="hive"))
    schema = replace(SCHEMA, source={"kind": "file", "path": str(tmp_path / "t.csv")})
    lines = []
    for path, engine in ((tmp_path / "t.csv", "local"), (tmp_path / "t", "local"), (tmp_path / "t", "dask")):
        checks = RowChecks(SCHEMA, out_of_bounds="fail", clip_fix="pass --out-of-bounds clip")
        measure_table(schema, path, "3c" * 32, checks=checks, engine=engine)
        with pytest.raises(DpiwError) as exc:
            checks.finish()
        lines.append(str(exc.value))
    assert len(set(lines)) == 1, lines
    assert ("column 'age' has 1 value(s) outside its public bounds [0, 110]; column 'kappa' has 2 value(s) outside "
            "its public bounds [0, 50]; widen the bounds") in lines[0]
    one = replace(schema, columns=tuple(c for c in SCHEMA.columns if c.name != "region"))
    flat = raw.drop(columns="region")
    for name, odd, line in (
            ("gap", flat.drop(columns="visits"),
             "file zz.parquet has no column(s) ['visits']; every file of the folder must hold the schema's columns"),
            ("text", flat.astype({"visits": str}),
             "column 'visits' holds text in file zz.parquet but numbers in the folder's first file")):
        folder = tmp_path / name
        folder.mkdir()
        flat.to_parquet(folder / "aa.parquet", index=False)
        odd.head(10).to_parquet(folder / "zz.parquet", index=False)
        for engine in ("local", "dask"):
            with pytest.raises(DpiwError, match=re.escape(line)):
                measure_table(one, folder, "3c" * 32, engine=engine)
        with pytest.raises(DpiwError, match=re.escape(line)):
            count_rows(one, str(folder))
    # a file whose column holds no value at all (typed null) is read and cast like the rest: not refused
    folder = tmp_path / "nulls"
    folder.mkdir()
    flat.to_parquet(folder / "aa.parquet", index=False)
    flat.head(10).assign(visits=None).to_parquet(folder / "zz.parquet", index=False)
    import pyarrow.parquet as pq

    assert pa.types.is_null(pq.read_schema(folder / "zz.parquet").field("visits").type)
    assert count_rows(one, str(folder)) == n + 10


@pytest.mark.parametrize("case", ["readme", "notes", "truncated", "corrupt", "cast"])
def test_an_unreadable_file_in_a_folder_is_named_on_every_engine(tmp_path, cluster, case):
    """A file of a folder that is not parquet (a README first or last in path order), cut short (no footer), with
    a broken page (its footer whole: found only when the rows are read), or with a value its column's type in the
    folder's first file cannot hold is refused with one line naming the file, by every reader of the folder:
    never a traceback, and the same line in one pass as in worker processes or on Dask."""
    from dataclasses import replace

    import pyarrow.parquet as pq

    from dpiw.data.datasets import count_rows, iter_table
    from dpiw.sdgp.engines import measure_table

    n = 3000
    i = np.arange(n)
    flat = pd.DataFrame({"age": i % 90 + 1.0, "kappa": np.linspace(0, 40, n).round(3), "visits": i % 7 * 1.0,
                         "ill": np.where(i % 5 == 0, "yes", "no")})
    schema = replace(SCHEMA, columns=tuple(c for c in SCHEMA.columns if c.name != "region"),
                     source={"kind": "file", "path": str(tmp_path / "t")})
    folder = tmp_path / "t"
    folder.mkdir()
    for k, name in enumerate(("aa", "mm", "zz")):
        part = flat.iloc[k * 1000:(k + 1) * 1000]
        if case == "cast":  # integers in the first file, a fraction in another
            part = part.astype({"visits": int}) if name == "aa" else part.assign(visits=part.visits + 0.5)
        part.to_parquet(folder / f"{name}.parquet", index=False)
    if case == "cast":
        bad = folder / "mm.parquet"
    elif case in ("readme", "notes"):
        bad = folder / ("README.txt" if case == "readme" else "zz_notes.txt")
        bad.write_text("rows of the ward table, one file a month\n")
    else:
        bad = folder / "mm.parquet"
        data = bytearray(bad.read_bytes())
        if case == "truncated":
            data = data[:len(data) // 2]
        else:  # the page header of a column's data, overwritten
            off = pq.ParquetFile(bad).metadata.row_group(0).column(1).data_page_offset
            data[off:off + 64] = b"\xff" * 64
        bad.write_bytes(bytes(data))
    line = f"file {bad.resolve()} cannot be read as parquet"
    if case == "cast":
        line = f"column 'visits' of file {bad.resolve()} holds values its type in the folder's first file (int64)"
    readers = {"rows": lambda: list(iter_table(schema, str(folder), chunk_rows=700))}
    if case not in ("corrupt", "cast"):  # a broken page or a value is not seen in the footers
        readers["count"] = lambda: count_rows(schema, str(folder))
    for engine in ENGINES:
        readers[engine] = lambda engine=engine: measure_table(schema, folder, "3c" * 32, engine=engine)
    lines = set()
    for name, read in readers.items():
        with pytest.raises(DpiwError) as exc:
            read()
        assert line in str(exc.value) and "\n" not in str(exc.value), (name, str(exc.value))
        if name != "count":
            lines.add(str(exc.value))
    assert len(lines) == 1, lines


@pytest.mark.parametrize("typed", ["same type", "other type"])
def test_a_partition_column_also_in_its_file_is_refused(tmp_path, cluster, typed):
    """region=e/part.parquet holding a column region of its own (which pyarrow would silently overrule with the
    folder's name, or fail to merge) is refused with one line naming the file and the fix."""
    from dataclasses import replace

    from dpiw.data.datasets import count_rows
    from dpiw.sdgp.engines import measure_table

    schema = replace(SCHEMA, source={"kind": "file", "path": str(tmp_path / "t")})
    n = 400
    i = np.arange(n)
    import pyarrow.parquet as pq

    for region in ("e", "w"):
        (tmp_path / "t" / f"region={region}").mkdir(parents=True)
        own = pa.array(np.where(i % 2, "n", "s"), pa.large_string() if typed == "other type" else pa.string())
        pq.write_table(pa.table({"age": i % 90 + 1.0, "kappa": i / 10, "visits": i % 7 * 1.0, "region": own,
                                 "ill": np.where(i % 5 == 0, "yes", "no")}),
                       tmp_path / "t" / f"region={region}" / "part.parquet")
    for read in (lambda: count_rows(schema, str(tmp_path / "t")),
                 *(lambda e=e: measure_table(schema, tmp_path / "t", "3c" * 32, engine=e) for e in ENGINES)):
        with pytest.raises(DpiwError, match=r"file region=e/part.parquet holds column\(s\) \['region'\] that its "
                                            r"folder's name gives too \(region=e\)"):
            read()


def test_a_file_with_bad_rows_sends_back_digests_not_values(tmp_path, monkeypatch):
    """A Dask task whose file has a bad row after its first chunk returns its counts and its row checks' distinct
    values as keyed digests: never a value of the table (the checks of the chunks before the bad one included)."""
    import functools

    from dpiw.data import datasets
    from dpiw.data.datasets import BadRows, RowChecks
    from dpiw.privacy.identity import RowKeys, column_sets

    n = 1000
    i = np.arange(n)
    flat = pd.DataFrame({"age": i % 90 + 1.0, "kappa": i / 100, "visits": i % 7 * 1.0, "region": "n",
                         "ill": np.where(i == n - 1, "maybe", np.where(i % 5 == 0, "yes", "no"))})
    flat.to_parquet(tmp_path / "part.parquet", index=False)
    monkeypatch.setattr(datasets, "iter_fragment", functools.partial(datasets.iter_fragment, chunk_rows=100))
    sets, drops = column_sets(SCHEMA, (), n)
    checks = RowChecks(SCHEMA, out_of_bounds="clip")
    bad, mine = engines._identity_part((str(tmp_path / "part.parquet"), {}), schema=SCHEMA,
                                       keys=RowKeys.of("3c" * 32, SCHEMA, sets), sets=sets, drops=drops,
                                       checks=checks, where="w", arrow_schema=None)
    assert isinstance(bad, BadRows) and bad.counts == {("outside", "ill"): 1}
    assert mine.rows == 900 and all(len(v) == 2 for k, v in mine.seen.items() if k != "region")
    assert all(isinstance(d, bytes) and len(d) == 16 for v in mine.seen.values() for d in v), mine.seen
