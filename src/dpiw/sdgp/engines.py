"""Where the private rows are counted: one :class:`dpiw.sdgp.counting.Counter` interface, three engines, chosen
here and nowhere else (:func:`open_counter`).

- ``local``: :class:`dpiw.sdgp.counting.PartitionedCounter`, the parquet dataset's record batches in this
  process.
- ``duckdb``: the count tables as SQL over the parquet files (:class:`DuckDBCounter`): out of core, on every
  core this process may use. Each row's cell is computed in SQL with the same float64 arithmetic as
  :meth:`dpiw.sdgp.binning.NumericBins.cells` (tests/stages/test_engines.py checks that they agree).
- ``dask``: the same batches counted on a ``dask.distributed`` cluster, one task per parquet row group
  (:class:`DaskCounter`); ``dask=ADDRESS`` names a running scheduler, plain ``dask`` starts a local cluster of
  :data:`DASK_LOCAL_WORKERS` worker processes for the run, and ``dask=slurm`` (``dask=slurm:N``) starts the
  workers as SLURM jobs (dask-jobqueue) with the scheduler here. Only the count tables and the row count leave
  the workers.

The mechanisms and their noise stay where the stage runs: an engine returns exact counts, the noise is added
once to the sums, never per partition, and the engine never keys the noise (the same rows give the same counts
on every engine, so the same release under a fixed seed).

The source is a parquet dataset of scaled rows (the schema's columns: numeric in [0, 1], categories as codes),
a file or a folder of files, hive-partitioned or not.
"""

from __future__ import annotations

import atexit
import logging
import math
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from dpiw import DpiwError
from dpiw.data.schema import Schema
from dpiw.sdgp.counting import Clique, PartitionedCounter, check_columns, dataset_of

#: the counting engines (``--engine``, the config's ``engine``); the first is the default
ENGINES = ("local", "duckdb", "dask")
#: the most columns one DuckDB pass groups by (its GROUPING SETS take at most 64; a wider call makes more passes)
GROUPING_COLUMNS = 48
#: count tables asked together whose columns' joint table has at most this many cells are summed from it (one
#: GROUP BY of all their columns) rather than grouped one by one
JOINT_CELLS = 1 << 18
#: worker processes of the local Dask cluster that ``--engine dask`` starts when it names no scheduler (and the
#: SLURM worker jobs of ``dask=slurm``)
DASK_LOCAL_WORKERS = 2
#: each SLURM worker job's memory and time limit, and how long a run waits for the jobs to start
SLURM_WORKER_MEMORY, SLURM_WORKER_WALLTIME, SLURM_WAIT_SECONDS = "4GB", "02:00:00", 300


def parse_engine(text: str) -> tuple[str, str | None]:
    """``local``, ``duckdb``, ``dask``, ``dask=ADDRESS`` or ``dask=slurm[:N]`` as (engine, address or None)."""
    name, _, address = str(text).partition("=")
    if name not in ENGINES or (address and name != "dask") or (_ and not address):
        raise DpiwError(f"engine: {text!r} is not one of {', '.join(ENGINES)}, dask=SCHEDULER_ADDRESS "
                        "(e.g. dask=tcp://10.0.0.5:8786) or dask=slurm[:WORKERS]")
    return name, address or None


def fragments(dataset) -> list[tuple[str, dict, object]]:
    """Each file of a parquet dataset: its absolute path, the columns its hive partition path gives (relative to
    the folder, as pyarrow reads them) and its pyarrow fragment."""
    import pyarrow.dataset as ds

    return [(str(Path(f.path).resolve()), ds.get_partition_keys(f.partition_expression), f)
            for f in dataset.get_fragments()]


def _rebinned(counter, binning):
    """The same rows counted on ``binning``'s cells: a shallow copy (its connection or client, its row total),
    without another pass over the rows."""
    import copy

    from dpiw.sdgp.binning import as_binning

    other = copy.copy(counter)
    other.bins = as_binning(counter.schema, binning)
    other.cards = other.bins.cards
    return other


def open_counter(source, schema: Schema, bins, engine: str = "local"):
    """The counter of the parquet dataset ``source`` on ``engine`` (:func:`parse_engine`)."""
    name, address = parse_engine(engine)
    if name == "duckdb":
        return DuckDBCounter(source, schema, bins)
    if name == "dask":
        return DaskCounter(source, schema, bins, address=address)
    return PartitionedCounter(source, schema, bins)


# --- DuckDB -----------------------------------------------------------------------------------------------------


def _number(x: float) -> str:
    """A float64 as a DuckDB DOUBLE literal that reads back as the same bits."""
    return f"CAST('{float(x)!r}' AS DOUBLE)"


def leaf_sql(column: str, grid) -> str:
    """SQL for :meth:`dpiw.sdgp.binning.FineGrid.leaf` of a scaled column (the same float64 products)."""
    v = f'CAST("{column}" AS DOUBLE)'
    off, m = grid.offset, grid.middle
    if grid.span is None:  # numpy: off + clip((v * m).astype(int64), 0, m - 1); v >= 0, so trunc is floor
        leaf = f"least(greatest(CAST(trunc({v} * {_number(m)}) AS BIGINT), 0), {m - 1})"
        edge = (f"{v} <= 0", f"{v} >= 1")
    else:
        span = int(grid.span)  # numpy: k = clip(rint(v * span), 0, span), rint rounding half to even
        k = f"least(greatest(CAST(round_even({v} * {_number(span)}, 0) AS BIGINT), 0), {span})"
        if grid.per_integer:
            return k
        a, b = int(grid.low), span + 1 - int(grid.high)
        leaf = f"least((({k}) - {a}) * {m} // {b - a}, {m - 1})" if a else f"least(({k} * {m}) // {b}, {m - 1})"
        edge = (f"{k} = 0", f"{k} = {span}")
    leaf = f"{off} + {leaf}" if off else leaf
    cases = [f"WHEN {edge[0]} THEN 0"] * grid.low + [f"WHEN {edge[1]} THEN {grid.cells - 1}"] * grid.high
    return f"(CASE {' '.join(cases)} ELSE {leaf} END)" if cases else leaf


def cell_sql(column: str, nb) -> str:
    """SQL for :meth:`dpiw.sdgp.binning.NumericBins.cells`: the fine leaf, then its coarse bin (a lookup list)."""
    leaf = leaf_sql(column, nb.grid)
    cuts = np.asarray(nb.cuts, np.int64)
    if np.array_equal(cuts, np.arange(nb.grid.cells + 1)):
        return leaf
    of_leaf = np.searchsorted(cuts, np.arange(nb.grid.cells), side="right") - 1
    return f"list_extract([{', '.join(map(str, of_leaf.tolist()))}], ({leaf}) + 1)"


class DuckDBCounter:
    """Counts as SQL over the parquet files (DuckDB: out of core, every core of the machine)."""

    def __init__(self, source, schema: Schema, bins):
        import duckdb

        from dpiw.sdgp.binning import as_binning

        self.dataset = dataset_of(source)
        check_columns(self.dataset, source, schema)
        self.source, self.schema = source, schema
        self.bins = as_binning(schema, bins)
        self.cards = self.bins.cards
        # the cores this process may run on (SLURM and taskset narrow them), not every core of the node
        self.con = duckdb.connect(config={"threads": max(1, len(os.sched_getaffinity(0)))})
        self._view()
        self._check_finite()
        self.total = int(self._sql("SELECT count(*) FROM rows").fetchone()[0])

    def _view(self) -> None:
        """The view ``rows``: the files' columns, and a folder's hive partition columns taken from the paths
        relative to it (pyarrow's reading of them, joined by file name: never a key=value above the folder)."""
        import pandas as pd

        parts = fragments(self.dataset)
        files, keys = [path for path, _, _ in parts], [k for _, k, _ in parts]
        wanted = [c for c in self.schema.names if any(c in k for k in keys)]
        scan = self.con.read_parquet(files, hive_partitioning=False, filename=bool(wanted))
        if not wanted:
            scan.create_view("rows")
            return
        self.con.register("partition_keys", pd.DataFrame(
            {"filename": files, **{c: [k.get(c) for k in keys] for c in wanted}}))
        scan.create_view("files")
        columns = ", ".join(f'k."{c}"' if c in wanted else f'f."{c}"' for c in self.schema.names)
        self.con.execute(f"CREATE TEMP VIEW rows AS SELECT {columns} FROM files f JOIN partition_keys k "
                         "USING (filename)")

    def _sql(self, query: str):
        """A query's result; DuckDB's own errors may quote a value of the rows, so they are not shown."""
        import duckdb

        try:
            return self.con.execute(query)
        except duckdb.Error as exc:
            raise DpiwError(f"{self.source}: DuckDB could not count these rows ({type(exc).__name__}); they must be "
                            "the scaled rows the scale stage writes (numbers in [0, 1], category codes)") from None

    def _check_finite(self) -> None:
        from dpiw.io import empty_values_error

        # every column of the scaled rows is numeric (categories as codes): NaN, inf and NULL are empty values
        parts = [f'count(*) FILTER (WHERE "{c}" IS NULL OR NOT isfinite(CAST("{c}" AS DOUBLE)))'
                 for c in self.schema.names]
        counts = self._sql(f"SELECT {', '.join(parts)} FROM rows").fetchone()
        found = dict(zip(self.schema.names, map(int, counts), strict=True))
        if any(found.values()):
            raise empty_values_error(found, where=str(self.source), numeric=set(self.schema.names))

    def _cell(self, j: int) -> str:
        c = self.schema.columns[j]
        # a category code truncated as NumPy's astype(int64) does
        return cell_sql(c.name, self.bins.numeric[c.name]) if c.is_numeric else \
            f'CAST(trunc(CAST("{c.name}" AS DOUBLE)) AS BIGINT)'

    def _grouped(self, exprs: dict[str, str], sets: list[tuple[str, ...]], sizes: dict[str, int]
                 ) -> dict[tuple[str, ...], np.ndarray]:
        """Each set's count table (row-major over its columns, ``sizes`` cells each): GROUP BY GROUPING SETS
        over the columns' cell expressions, one pass over the rows per :data:`GROUPING_COLUMNS` columns."""
        out, batch, names = {}, [], set()
        for s in dict.fromkeys(sets):
            if batch and len(names | set(s)) > GROUPING_COLUMNS:
                out.update(self._grouping_pass(exprs, batch, sizes))
                batch, names = [], set()
            batch.append(s)
            names |= set(s)
        if batch:
            out.update(self._grouping_pass(exprs, batch, sizes))
        return out

    def _grouping_pass(self, exprs, sets, sizes) -> dict[tuple[str, ...], np.ndarray]:
        names = sorted({a for s in sets for a in s})
        inner = ", ".join(f"{exprs[a]} AS {a}" for a in names)
        grouping = ", ".join("(" + ", ".join(s) + ")" for s in sets)
        got = self._sql(f"SELECT {', '.join(names)}, GROUPING({', '.join(names)}) AS g, count(*) AS n "
                        f"FROM (SELECT {inner} FROM rows) GROUP BY GROUPING SETS ({grouping})").fetchnumpy()
        bit = {a: 1 << (len(names) - 1 - i) for i, a in enumerate(names)}  # GROUPING: 1 = not grouped
        full = (1 << len(names)) - 1
        out = {}
        for s in sets:
            rows = np.asarray(got["g"]).astype(np.int64) == full - sum(bit[a] for a in set(s))
            dims = tuple(sizes[a] for a in s)
            cells = [np.asarray(got[a])[rows].astype(np.int64) for a in s]
            if any(c.size and (c.min() < 0 or c.max() >= k) for c, k in zip(cells, dims, strict=True)):
                raise DpiwError(f"{self.source}: a cell outside the schema's (a category code or a scaled value "
                                "out of range): count the scaled rows the scale stage writes")
            table = np.zeros(int(np.prod(dims)), dtype=float)
            if rows.any():
                np.add.at(table, np.ravel_multi_index(cells, dims), np.asarray(got["n"])[rows].astype(float))
            out[s] = table
        return out

    def counts(self, cliques: Sequence[Clique]) -> dict[Clique, np.ndarray]:
        cliques = [tuple(cl) for cl in cliques]
        union = sorted({j for cl in cliques for j in cl})
        exprs = {f"c{j}": self._cell(j) for j in union}
        sizes = {f"c{j}": self.cards[j] for j in union}
        if len(cliques) > 1 and all(len(set(cl)) == len(cl) for cl in cliques) and \
                math.prod(self.cards[j] for j in union) <= JOINT_CELLS:
            # one GROUP BY over every column the cliques name, each clique's table a sum of it: one hash
            # aggregate of few groups instead of one grouping set per clique (1e8 rows, 15 cliques: 14 -> 4 s)
            names = tuple(f"c{j}" for j in union)
            joint = self._grouping_pass(exprs, [names], sizes)[names].reshape([self.cards[j] for j in union])
            out = {}
            for cl in cliques:
                kept = [j for j in union if j in cl]  # the axes left, in column order; the table in the clique's
                table = joint.sum(axis=tuple(i for i, j in enumerate(union) if j not in cl))
                out[cl] = np.transpose(table, [kept.index(j) for j in cl]).ravel()
            return out
        got = self._grouped(exprs, [tuple(f"c{j}" for j in cl) for cl in cliques], sizes)
        return {cl: got[tuple(f"c{j}" for j in cl)] for cl in cliques}

    def fine_counts(self, grids: dict) -> dict[str, np.ndarray]:
        alias = {name: f"f{i}" for i, name in enumerate(grids)}
        exprs = {alias[name]: leaf_sql(name, grid) for name, grid in grids.items()}
        got = self._grouped(exprs, [(a,) for a in alias.values()], {alias[n]: g.cells for n, g in grids.items()})
        return {name: got[(alias[name],)] for name in grids}

    def with_binning(self, binning) -> DuckDBCounter:
        return _rebinned(self, binning)

    def close(self) -> None:
        self.con.close()


# --- Dask -------------------------------------------------------------------------------------------------------

_CLIENTS: dict[str | None, object] = {}


def dask_client(address: str | None):
    """A ``dask.distributed`` client of the scheduler at ``address``, of SLURM worker jobs (``slurm[:N]``), or of
    a local cluster of :data:`DASK_LOCAL_WORKERS` processes; made once per process, closed when it exits."""
    if address in _CLIENTS:
        return _CLIENTS[address]
    from distributed import Client, LocalCluster

    if address and address.startswith("slurm"):
        client = _slurm_client(address)
    elif address:
        try:
            client = Client(address, timeout="30s")
        except OSError as exc:
            raise DpiwError(f"engine dask={address}: no Dask scheduler answers there ({exc}); start one "
                            "(`dask scheduler` and `dask worker`), or use --engine dask (a local cluster) or "
                            "dask=slurm (workers as SLURM jobs)") from exc
    else:
        # a free port for its dashboard (several may run); the workers' own logs silenced: a task's error (a bad
        # value, one line) reaches the release as its exception, not as a worker's traceback on the terminal
        cluster = LocalCluster(n_workers=DASK_LOCAL_WORKERS, threads_per_worker=1, processes=True,
                               dashboard_address=":0", silence_logs=logging.CRITICAL)
        client = Client(cluster)
        atexit.register(cluster.close)
    atexit.register(client.close)
    _CLIENTS[address] = client
    return client


def gathered(client, futures) -> list:
    """The futures' results; when one fails, the others are cancelled before its error is raised (nothing is
    left computing, and no worker is torn down mid-task when the process exits)."""
    try:
        return client.gather(futures)
    except BaseException:
        client.cancel(futures)
        raise


def _slurm_client(address: str):
    """``slurm`` or ``slurm:N``: a scheduler here and N (default :data:`DASK_LOCAL_WORKERS`) Dask workers started
    as SLURM jobs (dask-jobqueue), one core each, with this interpreter; they must reach this machine."""
    import sys

    from distributed import Client

    workers = address.partition(":")[2] or str(DASK_LOCAL_WORKERS)
    if not workers.isdigit() or int(workers) < 1:
        raise DpiwError(f"engine dask={address}: say how many SLURM worker jobs, e.g. dask=slurm:4")
    try:
        from dask_jobqueue import SLURMCluster
    except ImportError as exc:  # pragma: no cover - dask-jobqueue comes with the pipeline's dependencies
        raise DpiwError("engine dask=slurm needs dask-jobqueue (pip install dask-jobqueue)") from exc
    import tempfile

    # the worker jobs' logs in a folder of their own, never in the working directory (a checkout, a project)
    logs = tempfile.mkdtemp(prefix="dpiw-dask-slurm-")
    cluster = SLURMCluster(cores=1, processes=1, memory=SLURM_WORKER_MEMORY, walltime=SLURM_WORKER_WALLTIME,
                           python=sys.executable, scheduler_options={"dashboard_address": None},
                           job_name="dpiw-dask-worker", log_directory=logs)
    atexit.register(cluster.close)
    cluster.scale(jobs=int(workers))
    client = Client(cluster)
    try:
        client.wait_for_workers(int(workers), timeout=SLURM_WAIT_SECONDS)
    except TimeoutError as exc:
        client.close()
        cluster.close()
        raise DpiwError(f"engine dask={address}: {workers} SLURM worker job(s) did not start within "
                        f"{SLURM_WAIT_SECONDS} s (`squeue -n dpiw-dask-worker`); is the partition busy?") from exc
    return client


def _file_counts(part: tuple[str, dict, int], schema: Schema, bins, cliques, grids, where: str
                 ) -> tuple[int, dict, dict]:
    """One row group's rows, count tables and fine counts (runs on a worker); ``part``: its file, the columns a
    hive-partitioned folder holds in that file's path, and the row group's index."""
    path, constants, row_group = part
    part = PartitionedCounter(path, schema, bins, constants=constants, row_group=row_group, where=where)
    return part.total, part.counts(cliques) if cliques else {}, part.fine_counts(grids) if grids else {}


class DaskCounter:
    """Counts of each parquet row group on a ``dask.distributed`` worker, summed here: only count tables and
    row counts come back."""

    def __init__(self, source, schema: Schema, bins, *, address: str | None = None):
        from dpiw.sdgp.binning import as_binning

        self.dataset = dataset_of(source)
        check_columns(self.dataset, source, schema)
        self.source, self.schema, self.address = source, schema, address
        self.bins = as_binning(schema, bins)
        self.cards = self.bins.cards
        # a task per row group: the workflow's train split is one file of many row groups
        self.parts = [(path, keys, g) for path, keys, f in fragments(self.dataset)
                      for g in range(f.metadata.num_row_groups)]
        self.total = int(self._run((), {})[0])

    def _run(self, cliques, grids) -> tuple[int, dict, dict]:
        client = dask_client(self.address)
        futures = client.map(_file_counts, self.parts, schema=self.schema, bins=self.bins, cliques=list(cliques),
                             grids=grids, where=str(self.source), pure=False)
        total, counts, fine = 0, {}, {}
        for n, c, f in gathered(client, futures):
            total += n
            for key, v in c.items():
                counts[key] = counts.get(key, 0) + v
            for key, v in f.items():
                fine[key] = fine.get(key, 0) + v
        return total, counts, fine

    def counts(self, cliques: Sequence[Clique]) -> dict[Clique, np.ndarray]:
        cliques = [tuple(cl) for cl in cliques]
        got = self._run(cliques, {})[1]
        return {cl: got[cl] for cl in cliques}

    def fine_counts(self, grids: dict) -> dict[str, np.ndarray]:
        return self._run((), grids)[2]

    def with_binning(self, binning) -> DaskCounter:
        return _rebinned(self, binning)


# --- the table's identity and row checks ------------------------------------------------------------------------


def _identity_part(part: tuple[str, dict], schema: Schema, keys, sets, drops, checks, where: str, arrow_schema,
                   digests: bool = True):
    """One parquet file's :class:`dpiw.privacy.identity.Partial` and its row checks (runs on a worker): sums,
    sketches and counts; the checks' distinct values go back as keyed digests, never as values (``digests``
    False: as values, to a process of this machine)."""
    from dpiw.data.datasets import BadRows, RowChecks, iter_fragment
    from dpiw.privacy.identity import measure_frames

    path, constants = part
    mine = RowChecks(schema, out_of_bounds=checks.out_of_bounds, clip_fix=checks.clip_fix)
    frames = iter_fragment(schema, path, constants, where, arrow_schema=arrow_schema)
    try:
        partial = measure_frames(schema, frames, keys, sets, drops, each=mine.add)
    except BadRows as bad:  # a result, not an error: the driver adds every file's counts (one pass's line)
        partial = bad
    if digests:
        mine.seen = {name: {keys.seen(v) for v in values} for name, values in mine.seen.items()}
    return partial, mine


def measure_table(schema, path, secret: str, *, also=(), checks=None, engine: str = "local"):
    """The table's identity (:func:`dpiw.privacy.identity.measure`) with its row checks (``checks``: a
    :class:`dpiw.data.datasets.RowChecks`, added to). A folder of parquet files is measured a file per task: on
    ``dask`` on the workers, elsewhere in forked processes here (one per core, :func:`local_pool`), with row keys
    derived from the store's secret (the secret itself stays in this process): each task returns its rows'
    partial sums, sketches and check counts (never a row or a value), combined here into the identity one pass
    over the same rows would give."""
    from dpiw.data.datasets import _where, parquet_folder
    from dpiw.privacy.identity import RowKeys, column_sets, combine, measure

    name, address = parse_engine(engine)
    folder = parquet_folder(path)
    pool = None if folder is None or name == "dask" else local_pool(folder)
    if folder is None or (name != "dask" and pool is None):
        return measure(schema, path, secret, also=also, each=None if checks is None else checks.add)

    from dpiw.data.datasets import RowChecks, count_rows

    try:
        rows = count_rows(schema, str(path))  # also refuses a folder with no rows, or without a column
        sets, drops = column_sets(schema, also, rows)
        parts = [(path, keys) for path, keys, _ in fragments(folder)]
        if checks is not None and checks.rows:
            raise DpiwError("measure_table: give it fresh row checks (its distinct values are counted as digests)")
        checks = checks if checks is not None else RowChecks(schema, out_of_bounds="clip")
        task = dict(schema=schema, keys=RowKeys.of(secret, schema, sets), sets=sets, drops=drops, checks=checks,
                    where=_where(schema, path), arrow_schema=folder.schema)
        if pool is None:
            client = dask_client(address)
            results = gathered(client, client.map(_identity_part, parts, **task, pure=False))
        else:
            import functools
            from concurrent.futures.process import BrokenProcessPool

            try:
                results = list(pool.map(functools.partial(_identity_part, **task, digests=False), parts))
            except BrokenProcessPool:  # a worker that died (killed for memory, say): measured in this process
                return measure(schema, path, secret, also=also, each=checks.add)
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    from dpiw.data.datasets import BadRows

    partials, bad = [], None
    for partial, part_checks in results:
        checks.merge(part_checks)
        if isinstance(partial, BadRows):
            bad = partial if bad is None else bad.plus(partial)
        partials.append(partial)
    if bad is not None:  # every file's bad rows, counted as one pass counts them
        raise bad
    return combine(partials, secret, sets[0], drops)


def local_pool(folder):
    """Forked worker processes for a folder's files (:func:`dpiw.privacy.identity.hash_workers` of them), or None
    where there is one file, one core, or no safe fork (dpiw.privacy.identity._fork_context): measured here."""
    from dpiw.privacy.identity import _fork_context, hash_workers

    workers = min(hash_workers(), len(folder.files))
    context = _fork_context() if workers > 1 else None
    if context is None:
        return None
    from concurrent.futures import ProcessPoolExecutor

    return ProcessPoolExecutor(workers, mp_context=context)
