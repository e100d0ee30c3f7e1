"""Marginal counts behind one interface: what MST reads of the private rows, and nothing else.

A marginal count is a sum over rows, so it is a sum over any partition of the rows: the counts of a table that
outgrows one machine's memory can be taken part by part (row groups, files, a cluster's partitions) and added.
A counter answers :meth:`Counter.counts` for a list of cliques (tuples of column indices), each count table flat
in row-major order over the columns' cells, and knows the row total.

- :class:`InProcessCounter` (the default): the rows' cells in memory, as the workflow's stages hold them.
- :class:`PartitionedCounter`: a parquet dataset (a file, or a folder of files as Spark, Dask, DuckDB or
  ``pyarrow.dataset`` write them) of the scaled rows, read one record batch at a time; memory grows with the
  batch and the count tables, not with the rows.

Both give the same integer counts (tests/stages/test_counting.py). :mod:`dpiw.sdgp.engines` counts the same
datasets with DuckDB or on a Dask cluster.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np
import pandas as pd

from dpiw import DpiwError
from dpiw.data.schema import Schema
from dpiw.sdgp.marginals import discretise

Clique = tuple[int, ...]


class Counter(Protocol):
    cards: list[int]
    total: int

    def counts(self, cliques: Sequence[Clique]) -> dict[Clique, np.ndarray]: ...

    def fine_counts(self, grids: dict) -> dict[str, np.ndarray]: ...

    def with_binning(self, binning) -> Counter: ...


def _add_fine(frame: pd.DataFrame, grids: dict, out: dict[str, np.ndarray]) -> None:
    for name, grid in grids.items():
        out[name] += np.bincount(grid.leaf(frame[name].to_numpy()), minlength=grid.cells).astype(float)


def _add_counts(cells: np.ndarray, cards: list[int], cliques: Sequence[Clique], out: dict[Clique, np.ndarray]) -> None:
    for cl in cliques:
        code = np.zeros(len(cells), dtype=np.int64)
        size = 1
        for j in cl:
            code = code * cards[j] + cells[:, j]
            size *= cards[j]
        out[cl] += np.bincount(code, minlength=size).astype(float)


class InProcessCounter:
    """Counts of the rows' cells held in memory (``cells``: one integer column per schema column); made
    :meth:`of` a scaled frame, it also answers fine counts and re-bins (:mod:`dpiw.sdgp.binning`)."""

    def __init__(self, cells: np.ndarray, cards: list[int], frame: pd.DataFrame | None = None,
                 schema: Schema | None = None):
        self.cells, self.cards, self.total = cells, list(cards), len(cells)
        self.frame, self.schema = frame, schema

    @classmethod
    def of(cls, train: pd.DataFrame, schema: Schema, bins) -> InProcessCounter:
        return cls(*discretise(train, schema, bins), frame=train, schema=schema)

    def fine_counts(self, grids: dict) -> dict[str, np.ndarray]:
        """Each named numeric column's counts on its fine grid (:class:`dpiw.sdgp.binning.FineGrid`)."""
        out = {name: np.zeros(grid.cells) for name, grid in grids.items()}
        _add_fine(self.frame, grids, out)
        return out

    def with_binning(self, binning) -> InProcessCounter:
        """The same rows, counted on ``binning``'s cells."""
        return InProcessCounter.of(self.frame, self.schema, binning)

    def counts(self, cliques: Sequence[Clique]) -> dict[Clique, np.ndarray]:
        out = {cl: np.zeros(int(np.prod([self.cards[j] for j in cl])), dtype=float) for cl in cliques}
        _add_counts(self.cells, self.cards, cliques, out)
        return out


def dataset_of(source):
    """The parquet dataset at ``source``: a file, or a folder of files, hive-partitioned or not
    (:func:`dpiw.data.datasets.parquet_folder`; a file's own path holds no partitions, e.g. seed=0/)."""
    import pyarrow.dataset as ds

    from dpiw.data.datasets import parquet_folder

    folder = parquet_folder(source)
    if folder is not None:
        return folder
    if not Path(source).is_file():
        raise DpiwError(f"{source}: no parquet dataset there")
    return ds.dataset(str(source), format="parquet")


def check_columns(dataset, source, schema: Schema) -> None:
    missing = [c for c in schema.names if c not in dataset.schema.names]
    if missing:
        raise DpiwError(f"{source}: column(s) {missing} of schema '{schema.name}' are missing")


class PartitionedCounter:
    """Counts summed over the record batches of a parquet dataset of scaled rows (the schema's columns, numeric
    in [0, 1], categories as codes: what the scale stage writes). One pass over the data per call.
    ``constants``: columns that one file of a hive-partitioned folder holds in its path, ``row_group``: one row
    group of that file only, ``where``: the dataset's name in errors (a Dask task's part)."""

    def __init__(self, source: str | Path, schema: Schema, bins, *, batch_rows: int = 1 << 20,
                 constants: dict | None = None, row_group: int | None = None, where: str | None = None):
        from dpiw.sdgp.binning import as_binning

        self.dataset = dataset_of(source)
        self.constants = dict(constants or {})
        if not self.constants:
            check_columns(self.dataset, source, schema)
        self.source, self.schema, self.batch_rows = source, schema, batch_rows
        self.where = where or str(source)  # errors name the dataset, also where this is one of its files
        self.bins = as_binning(schema, bins)
        self.cards = self.bins.cards
        self.row_group = row_group
        if row_group is None:
            self.total = int(self.dataset.count_rows())
        else:
            import pyarrow.parquet as pq

            self.total = int(pq.ParquetFile(source).metadata.row_group(row_group).num_rows)

    def _batches(self):
        from dpiw.io import check_finite

        names = [c for c in self.schema.names if c not in self.constants]
        if self.row_group is None:
            batches = self.dataset.to_batches(columns=names, batch_size=self.batch_rows)
        else:
            import pyarrow.parquet as pq

            batches = pq.ParquetFile(self.source).iter_batches(batch_size=self.batch_rows, columns=names,
                                                               row_groups=[self.row_group])
        for batch in batches:
            frame = batch.to_pandas().assign(**self.constants)[self.schema.names]
            check_finite(frame, where=self.where)
            yield frame

    def fine_counts(self, grids: dict) -> dict[str, np.ndarray]:
        """Each named numeric column's counts on its fine grid, summed over the batches."""
        out = {name: np.zeros(grid.cells) for name, grid in grids.items()}
        for frame in self._batches():
            _add_fine(frame, grids, out)
        return out

    def with_binning(self, binning) -> PartitionedCounter:
        """The same dataset, counted on ``binning``'s cells."""
        return PartitionedCounter(self.source, self.schema, binning, batch_rows=self.batch_rows,
                                  constants=self.constants, row_group=self.row_group, where=self.where)

    def counts(self, cliques: Sequence[Clique]) -> dict[Clique, np.ndarray]:
        out = {cl: np.zeros(int(np.prod([self.cards[j] for j in cl])), dtype=float) for cl in cliques}
        for frame in self._batches():
            _add_counts(self.bins.cells(frame), self.cards, cliques, out)
        return out
