"""The partitioned counting path (dpiw.sdgp.counting): a parquet dataset of several files, read one record batch
at a time, gives exactly the in-process counts, and MST fitted from it makes the same measurements."""

import itertools

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pytest

from dpiw import DpiwError
from dpiw.data import load_raw, load_schema
from dpiw.scale import column_bounds, scale_frame
from dpiw.sdgp.counting import InProcessCounter, PartitionedCounter
from dpiw.sdgp.mst import MST


@pytest.fixture
def housing(root, tmp_path):
    schema = load_schema(root / "data/schemas/housing.yaml")
    raw = load_raw(schema)
    train = scale_frame(raw, schema, column_bounds(raw, schema, bounds="schema"))
    # four files, partitioned by a column's cell as a cluster job would write them, small record batches
    part = train.assign(part=(np.arange(len(train)) % 4))
    ds.write_dataset(pa.Table.from_pandas(part, preserve_index=False), tmp_path / "d", format="parquet",
                     partitioning=ds.partitioning(pa.schema([("part", pa.int64())]), flavor="hive"))
    return schema, train, tmp_path / "d"


def test_partitioned_counts_equal_the_in_process_counts(housing):
    schema, train, folder = housing
    assert len(list(folder.rglob("*.parquet"))) == 4
    local = InProcessCounter.of(train, schema, 8)
    parts = PartitionedCounter(folder, schema, 8, batch_rows=1000)
    assert parts.total == local.total == len(train) and parts.cards == local.cards
    d = len(schema.columns)
    cliques = [*((j,) for j in range(d)), *itertools.combinations(range(d), 2), (0, 3, d - 1)]
    a, b = local.counts(cliques), parts.counts(cliques)
    for cl in cliques:
        assert np.array_equal(a[cl], b[cl]), cl
        assert a[cl].sum() == len(train)


def test_mst_fitted_from_the_partitioned_counts_makes_the_same_measurements(housing):
    schema, train, folder = housing
    kw = dict(epsilon=1.0, delta=1e-5)
    local = MST(bins=8, iters=10).measure(train, schema, rng=np.random.default_rng(3), **kw)
    parts = MST(bins=8, iters=10).measure_counts(PartitionedCounter(folder, schema, 8, batch_rows=999), schema,
                                                  rng=np.random.default_rng(3), **kw)
    assert local.tree_ == parts.tree_ and local.privacy_ == parts.privacy_
    for (c1, y1, s1), (c2, y2, s2) in zip(local.measurements_, parts.measurements_, strict=True):
        assert c1 == c2 and s1 == s2 and np.array_equal(y1, y2)


def test_a_partitioned_source_missing_a_column_is_refused(housing, tmp_path):
    schema, train, _ = housing
    ds.write_dataset(pa.Table.from_pandas(train.drop(columns=[schema.names[0]])), tmp_path / "x", format="parquet")
    with pytest.raises(DpiwError, match=f"column\\(s\\) \\['{schema.names[0]}'\\] of schema 'housing' are missing"):
        PartitionedCounter(tmp_path / "x", schema, 8)


def test_the_scaling_page_example_releases_rows_from_a_partitioned_folder(housing, root):
    """docs/scaling.md's example, as written, on a partitioned folder of scaled rows (its paths replaced)."""
    import re

    schema, train, folder = housing
    code = re.search(r"```python\n(.*?)```", (root / "docs/scaling.md").read_text(), re.S).group(1)
    assert 'load_schema("data/schemas/my_table.yaml")' in code and '"s3-mirror/my_table_scaled/"' in code
    code = code.replace('"data/schemas/my_table.yaml"', repr(str(root / "data/schemas/housing.yaml")))
    code = code.replace('"s3-mirror/my_table_scaled/"', repr(str(folder)))
    space: dict = {}
    exec(code, space)  # noqa: S102 (the doc's own lines)
    rows, model = space["rows"], space["model"]
    assert len(rows) == len(train) and list(rows.columns) == schema.names
    assert model.privacy_.epsilon <= 1.0 + 1e-9
