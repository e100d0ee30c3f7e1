"""A table's identity for the lifetime ledger: its rows as the schema reads them, not its bytes.

Each row's canonical decoded values (the schema's columns only, in name order: a number as a float64 with -0
made 0, so ``85`` and ``85.0`` agree; a category as its label) are hashed with BLAKE2b under a key derived from
the store's secret and the column names. The table's identity is an HMAC of the column names, the row count and
the sums modulo 2^64 of the two halves of the row hashes: the same rows in any order, with the columns in any
order, as CSV or parquet, are one table, and the sums can be computed a part at a time (per chunk, per
partition) and added. The key never leaves the private store, so an identity or a row hash seen elsewhere says
nothing about the rows.

Beside it, a bottom-k MinHash sketch (the :data:`SKETCH_K` smallest row hashes) estimates how many rows two
tables share (:func:`overlap`): a corrected or appended copy of a ledgered table, one with a column added
(hashed over the earlier table's columns) or, for tables of at most :data:`DROP_SKETCH_COLUMNS` columns and
:data:`DROP_SKETCH_ROWS` rows, one with a column dropped (compared with the earlier table's sketch without that
column), shares most of its rows with it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

#: the row hashes a sketch keeps (its estimate of a share of rows has a standard error of about 0.5/sqrt(k))
SKETCH_K = 512
#: the share of the smaller table's rows that makes two tables one population (charged to one ledger)
OVERLAP = 0.3
#: a table of at most this many columns and rows is also sketched without each one of its columns (a later copy
#: that drops a column is then found); each costs one more pass of row hashing, so larger tables are not
DROP_SKETCH_COLUMNS = 12
DROP_SKETCH_ROWS = 200_000


def _key(secret: str, columns: Iterable[str]) -> bytes:
    text = "\0".join(columns)
    return hmac.new(bytes.fromhex(secret), b"dpiw-rows\0" + text.encode(), hashlib.sha256).digest()[:32]


@dataclass
class _Accumulator:
    """The row hashes of one column set, summed and sketched a chunk at a time."""

    columns: tuple[str, ...]
    key: bytes
    sums: np.ndarray = field(default_factory=lambda: np.zeros(2, dtype=np.uint64))
    sketch: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.uint64))

    def blocks(self, words: dict[str, np.ndarray]) -> list[tuple[bytes, int]]:
        """The rows' canonical bytes over this column set, in blocks of at most :data:`TASK_BYTES`."""
        block = np.ascontiguousarray(np.stack([words[c] for c in self.columns], axis=1)).view(np.uint8)
        width = block.shape[1]
        step = max(1, TASK_BYTES // max(width, 1))
        return [(block[i:i + step].tobytes(), width) for i in range(0, block.shape[0], step)]

    def merge(self, sums: np.ndarray, sketch: np.ndarray) -> None:
        with np.errstate(over="ignore"):
            self.sums += sums
        self.sketch = bottom_k(np.concatenate([self.sketch, sketch]), SKETCH_K)


#: rows are hashed in tasks of at most this many bytes (a worker process gets one at a time)
TASK_BYTES = 1 << 25
#: rows a chunk when a table is read to be measured (the identity does not depend on it): a table of more than
#: one chunk is hashed in worker processes
CHUNK_ROWS = 1 << 20


#: a block of at least this many rows is hashed by the compiled kernel (dpiw.privacy.rowhash: the same digests;
#: loading it costs about half a second a process, compiling it once per machine several seconds)
COMPILED_ROWS = 1 << 16


def _digest(raw: bytes, width: int, key: bytes) -> tuple[np.ndarray, np.ndarray]:
    """The keyed BLAKE2b hash of each row of ``raw`` (rows of ``width`` bytes): their sum modulo 2^64 (two
    halves) and the bottom k of their first halves. Runs here or in a worker process (:func:`measure_frames`)."""
    n = len(raw) // width
    if n >= COMPILED_ROWS:
        from dpiw.privacy.rowhash import blake2b_rows

        halves = blake2b_rows(np.frombuffer(raw, dtype="<u8").reshape(n, width // 8), key)
    else:
        digests = b"".join(hashlib.blake2b(raw[i * width:(i + 1) * width], key=key, digest_size=16).digest()
                           for i in range(n))
        halves = np.frombuffer(digests, dtype="<u8").reshape(n, 2)
    with np.errstate(over="ignore"):
        sums = halves.sum(axis=0, dtype=np.uint64)
    return sums, bottom_k(halves[:, 0], SKETCH_K)


def bottom_k(values: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` smallest distinct values, sorted: ``np.unique(values)[:k]`` without sorting all of them (the
    4k smallest values, with their repeats, hold every distinct value up to the largest of them; when fewer
    than k are distinct there, the whole array is sorted).

    >>> v = np.array([9, 3, 3, 7, 1, 1, 5, 8, 2, 2, 6], dtype=np.uint64)
    >>> bottom_k(v, 3).tolist(), bottom_k(v, 2).tolist() == np.unique(v)[:2].tolist()
    ([1, 2, 3], True)
    """
    m = 4 * k
    if values.size > m:
        small = np.unique(np.partition(values, m - 1)[:m])
        if small.size >= k:
            return small[:k]
    return np.unique(values)[:k]


@dataclass(frozen=True)
class TableId:
    """A table measured under a store's secret: its identity key, columns, row count and sketches (its own, and
    over the column sets it was asked for)."""

    key: str
    columns: tuple[str, ...]
    rows: int
    sketch: tuple[int, ...]
    over: dict[tuple[str, ...], tuple[int, ...]]
    #: the columns the schema read as categories (a label hashes apart from the same number: a column declared
    #: the other way in a later schema is compared without it, :func:`retyped`)
    categorical: tuple[str, ...] = ()

    def without(self, column: str) -> tuple[int, ...] | None:
        """The sketch over every column but ``column`` (measured for tables of few columns), or None."""
        return self.over.get(tuple(c for c in self.columns if c != column))

    def to_dict(self) -> dict:
        """Everything measured (private, as the store's entries are), for :meth:`from_dict`."""
        return {"table": self.key, "columns": list(self.columns), "rows": self.rows, "sketch": list(self.sketch),
                "over": [[list(cols), list(sk)] for cols, sk in self.over.items()]}

    @classmethod
    def from_dict(cls, d: dict) -> TableId:
        return cls(key=d["table"], columns=tuple(d["columns"]), rows=int(d["rows"]),
                   sketch=tuple(int(v) for v in d["sketch"]),
                   over={tuple(cols): tuple(int(v) for v in sk) for cols, sk in d["over"]})

    def covers(self, schema, also: Iterable[Iterable[str]]) -> bool:
        """Whether it was measured over ``schema``'s columns and sketched over every ``also`` set that
        :func:`column_sets` would ask of them (a table ledgered since may ask for one more)."""
        columns = tuple(sorted(schema.names))
        return self.columns == columns and _asked(columns, also) <= set(self.over)

    def record(self) -> dict:
        """What the store keeps of the table (private: the store holds the secret that keys it): its identity,
        columns, row count, sketch, and its sketches without each column (``drop``), where they were measured."""
        drop = {c: list(self.without(c)) for c in self.columns if self.without(c) is not None}
        return {"table": self.key, "columns": list(self.columns), "rows": self.rows, "sketch": list(self.sketch),
                **({"drop": drop} if drop else {}), "categorical": list(self.categorical)}


@dataclass(frozen=True)
class RowKeys:
    """The keys that hash a table's rows, derived from the store's secret (which never leaves the process that
    holds the store: a Dask worker gets these, and the table's identity is keyed by the secret itself)."""

    sets: dict[tuple[str, ...], bytes]  # each column set's row key
    category: dict[str, bytes]  # each categorical column's label key
    values: bytes  # the key of :meth:`seen`

    @classmethod
    def of(cls, secret: str, schema, sets) -> RowKeys:
        return cls({s: _key(secret, s) for s in sets},
                   {c.name: _key(secret, ("category", c.name)) for c in schema.columns if not c.is_numeric},
                   _key(secret, ("checked values",)))

    def seen(self, value) -> bytes:
        """A value's keyed digest: a row check's distinct values, counted where they were read and compared
        elsewhere without being shown."""
        return hashlib.blake2b(repr(value).encode(), key=self.values, digest_size=16).digest()


def _words(frame, schema, columns: Iterable[str], keys: RowKeys) -> dict[str, np.ndarray]:
    """Each column's canonical values as 64-bit words: a number's float64 bits, a category's keyed hash."""
    out = {}
    by_name = {c.name: c for c in schema.columns}
    for name in columns:
        col = frame[name]
        if by_name[name].is_numeric:
            x = col.to_numpy(dtype=np.float64) + 0.0  # -0.0 -> 0.0
            out[name] = x.view(np.uint64)
        else:
            import pandas as pd

            # each distinct label hashed once (a hash table, not a sort of every row's label; no row turned into a
            # Python string: an empty value is its own code, hashed as the text "nan")
            inverse, uniq = pd.factorize(col, sort=False, use_na_sentinel=False)
            key = keys.category[name]
            table = np.array([int.from_bytes(hashlib.blake2b(str(u).encode(), key=key, digest_size=8).digest(),
                                             "little") for u in uniq], dtype=np.uint64)
            out[name] = table[inverse]
    return out


@dataclass
class Partial:
    """What one part of a table gives its identity: its rows, and each column set's sums and sketch (parts of
    one table combine exactly: sums add modulo 2^64, a sketch of the union is the bottom k of the sketches)."""

    rows: int
    sums: dict[tuple[str, ...], np.ndarray]
    sketch: dict[tuple[str, ...], np.ndarray]


def _asked(columns: tuple[str, ...], also: Iterable[Iterable[str]]) -> set[tuple[str, ...]]:
    """The ``also`` sets a table of ``columns`` is sketched over: its proper subsets, sorted."""
    return {tuple(sorted(s)) for s in also if set(s) <= set(columns) and tuple(sorted(s)) != columns}


def column_sets(schema, also: Iterable[Iterable[str]], rows: int | None
                ) -> tuple[list[tuple[str, ...]], set[tuple[str, ...]]]:
    """The column sets a table is sketched over: all its columns first, the ``also`` sets (subsets of its
    columns), and for a table of few columns and at most :data:`DROP_SKETCH_ROWS` rows (``rows`` None: not yet
    known), every set without one column."""
    columns = tuple(sorted(schema.names))
    asked = _asked(columns, also)
    drops = set()
    if 2 <= len(columns) <= DROP_SKETCH_COLUMNS and (rows is None or rows <= DROP_SKETCH_ROWS):
        drops = {tuple(c for c in columns if c != dropped) for dropped in columns} - asked
    return [columns, *sorted(asked), *sorted(drops)], drops


def hash_workers() -> int:
    """Worker processes for the row hashes of a table read here: the process's cores, at most 8 (none on one
    core: the hashing stays in the reading process)."""
    import os

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return min(cores, 8) if cores > 1 else 0


def _fork_context():
    """The fork start method, where there is one and this process runs no other thread (forking a threaded process
    can copy a held lock); else None. Not spawn: a spawned worker re-imports the caller's main module, which a
    script without an ``if __name__ == "__main__"`` guard cannot survive."""
    import multiprocessing as mp
    import threading

    if "fork" not in mp.get_all_start_methods() or threading.active_count() > 1:
        return None
    return mp.get_context("fork")


class _Hashing:
    """Where the row hashes are computed: here, or (``workers`` > 1) in that many forked worker processes, started
    when a second frame shows the table is more than one chunk (a small table is hashed here: no start-up to pay;
    a process with other threads hashes here too).
    The sums and sketches combine in any order, so the result is the same either way."""

    def __init__(self, workers: int):
        self.workers, self.pool, self.held, self.pending = workers, None, [], []

    @staticmethod
    def _here(a, raw: bytes, width: int) -> None:
        a.merge(*_digest(raw, width, a.key))

    def add(self, jobs: list) -> None:
        """``jobs``: (accumulator, raw, width) of one frame."""
        if self.workers < 2:
            for job in jobs:
                self._here(*job)
            return
        if self.pool is None and not self.held:
            self.held = jobs  # the first frame: hashed here if it is the only one
            return
        if self.pool is None:
            context = _fork_context()
            if context is None:  # hashed here after all
                self.workers = 0
                self.add(self.held + jobs)
                self.held = []
                return
            from concurrent.futures import ProcessPoolExecutor

            self.pool = ProcessPoolExecutor(self.workers, mp_context=context)
            jobs, self.held = self.held + jobs, []
        from concurrent.futures.process import BrokenProcessPool

        for a, raw, width in jobs:
            try:
                self.pending.append((a, raw, width, self.pool.submit(_digest, raw, width, a.key)))
            except BrokenProcessPool:  # the workers are gone: hashed here
                self._here(a, raw, width)
                continue
            while len(self.pending) > 2 * self.workers:  # memory: a few tasks in flight
                self._collect(self.pending.pop(0))

    def _collect(self, job) -> None:
        from concurrent.futures.process import BrokenProcessPool

        a, raw, width, future = job
        try:
            a.merge(*future.result())
        except BrokenProcessPool:  # a worker died (killed for memory, say): the task is hashed here instead
            self._here(a, raw, width)

    def finish(self) -> None:
        for job in self.held:
            self._here(*job)
        self.held = []
        for job in self.pending:
            self._collect(job)
        self.pending = []

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)


def measure_frames(schema, frames, keys: RowKeys, sets: list[tuple[str, ...]], drops: set, *, each=None,
                   workers: int = 0) -> Partial:
    """The :class:`Partial` of some of a table's rows (``frames``: typed frames of the schema's columns) over
    :func:`column_sets`'s sets, hashed with ``keys`` (in ``workers`` processes when there are two or more and
    the rows fill more than one frame); ``each`` is called with every frame too."""
    columns = sets[0]
    acc = {s: _Accumulator(s, keys.sets[s]) for s in sets}
    rows = 0
    hashing = _Hashing(workers)
    try:
        for frame in frames:
            if each is not None:
                each(frame)
            words = _words(frame, schema, columns, keys)
            rows += len(frame)
            if rows > DROP_SKETCH_ROWS:  # a large table: its sketches without each column are not kept
                for s in drops:
                    acc.pop(s, None)
            hashing.add([(a, raw, width) for a in acc.values() for raw, width in a.blocks(words)])
        hashing.finish()
    finally:
        hashing.close()
    return Partial(rows, {s: a.sums for s, a in acc.items()}, {s: a.sketch for s, a in acc.items()})


def combine(parts: Iterable[Partial], secret: str, columns: tuple[str, ...], drops: set) -> TableId:
    """The table's :class:`TableId` from the partials of all its rows (in any order, in any parts)."""
    parts = list(parts)
    rows = sum(p.rows for p in parts)
    kept = set.intersection(*(set(p.sums) for p in parts)) if parts else {columns}
    if rows > DROP_SKETCH_ROWS:  # as one pass over the rows would have: no sketches without a column
        kept -= drops
    sums, sketch = {}, {}
    for s in kept:
        with np.errstate(over="ignore"):
            sums[s] = np.sum([p.sums[s] for p in parts], axis=0, dtype=np.uint64) if parts else np.zeros(2, np.uint64)
        sketch[s] = bottom_k(np.concatenate([p.sketch[s] for p in parts]) if parts else np.zeros(0, np.uint64),
                             SKETCH_K)
    body = json.dumps({"columns": columns, "rows": rows, "sums": [int(v) for v in sums[columns]]}).encode()
    key = hmac.new(bytes.fromhex(secret), b"dpiw-table\0" + body, hashlib.sha256).hexdigest()
    return TableId(key=key, columns=columns, rows=rows, sketch=tuple(int(v) for v in sketch[columns]),
                   over={s: tuple(int(v) for v in sketch[s]) for s in sorted(kept) if s != columns})


def measure(schema, file, secret: str, *, also: Iterable[Iterable[str]] = (), each=None,
            chunk_rows: int | None = None) -> TableId:
    """Read ``file`` under ``schema`` a chunk at a time (dpiw.data.datasets.iter_table: the same checks as the
    scale stage) and measure it; ``also``: other column sets (subsets of the schema's) to sketch it over;
    ``each``: called with every chunk too (the row checks of dpiw.data.datasets.RowChecks, in the same pass);
    ``chunk_rows``: rows a chunk (default :data:`CHUNK_ROWS`). A table of more than one chunk is hashed in worker
    processes (:func:`hash_workers`) while this one reads: the same identity."""
    from dpiw.data.datasets import iter_table

    chunk_rows = chunk_rows or CHUNK_ROWS
    sets, drops = column_sets(schema, also, None)
    part = measure_frames(schema, iter_table(schema, str(file), chunk_rows=chunk_rows),
                          RowKeys.of(secret, schema, sets), sets, drops, each=each, workers=hash_workers())
    return combine([part], secret, sets[0], drops)


def retyped(table: TableId, record: dict) -> str | None:
    """The one column that ``record`` (a ledgered table's :meth:`TableId.record`, over the same columns) and
    ``table`` read as different kinds (a number in one schema, a category in the other: their values hash apart,
    so the two tables share no row over all their columns); None where no column or more than one differs, or
    the record is from before the kinds were kept."""
    if "categorical" not in record or tuple(record["columns"]) != table.columns:
        return None
    differ = set(record["categorical"]) ^ set(table.categorical)
    return differ.pop() if len(differ) == 1 else None


def distinct(sketch: Iterable[int]) -> float:
    """The distinct rows a bottom-k sketch of 64-bit row hashes stands for: its size when it holds fewer than
    :data:`SKETCH_K` (every distinct row), else (k - 1) 2^64 / its largest hash."""
    values = sorted(int(v) for v in sketch)
    if len(values) < SKETCH_K:
        return float(len(values))
    return (len(values) - 1) * 2.0**64 / max(values[-1], 1)


def overlap(a: Iterable[int], rows_a: int, b: Iterable[int], rows_b: int) -> float:
    """The estimated share of the smaller table's rows that the other one holds too, from two bottom-k sketches of
    row hashes over the same columns (Broder's estimate of the Jaccard index J on the k smallest hashes of the
    union; shared rows = J (n_a + n_b) / (1 + J)).

    >>> round(overlap(range(100), 100, range(50, 150), 100), 9)
    0.5
    """
    a, b = set(a), set(b)
    k = min(SKETCH_K, len(a | b))
    if not k or not rows_a or not rows_b:
        return 0.0
    union = sorted(a | b)[:k]
    jaccard = sum(1 for h in union if h in a and h in b) / k
    shared = jaccard * (rows_a + rows_b) / (1 + jaccard)
    return min(1.0, shared / min(rows_a, rows_b))


def files_state(path) -> list[list]:
    """The state of a table's file, or of every file under its folder (path order, through linked folders as
    Arrow reads them): name, device, inode, size, and the modification and change times in nanoseconds. Cheap (no
    byte is read); a table measured once keeps it, and its identity is reused only while the state is the same
    (a file rewritten, replaced, renamed, touched back, or re-pointed through a link changes it)."""
    import os
    from pathlib import Path

    path = Path(path)
    if path.is_dir():
        files = sorted(Path(root) / name for root, _, names in os.walk(path, followlinks=True) for name in names)
    else:
        files = [path]
    out = []
    for f in files:
        st = f.stat()
        out.append([str(f.relative_to(path)) if path.is_dir() else f.name, st.st_dev, st.st_ino, st.st_size,
                    st.st_mtime_ns, st.st_ctime_ns])
    return out


def _tag(secret: str, kept: dict) -> str:
    body = json.dumps(kept, sort_keys=True).encode()
    return hmac.new(bytes.fromhex(secret), b"dpiw-measured\0" + body, hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class Measured:
    """A table's identity measured earlier (:func:`save_measured`): the identity, the table's path and its files'
    state when it was measured, and the tag that binds them to the secret they were measured under."""

    table: TableId
    path: str
    files: list
    tag: str

    def under(self, secret: str) -> bool:
        body = {"identity": self.table.to_dict(), "path": self.path, "files": self.files}
        return isinstance(self.tag, str) and hmac.compare_digest(self.tag, _tag(secret, body))


def save_measured(table: TableId, secret: str, data, files: list, out) -> None:
    """Keep a table's identity, measured from ``data`` under ``secret`` while its files were in the state
    ``files`` (:func:`files_state`, taken before its rows were read), for :func:`load_measured`; the tag binds
    the identity, the path and the state to the secret (a file copied from another table's release does not
    pass)."""
    from pathlib import Path

    from dpiw.io import write_json

    body = {"identity": table.to_dict(), "path": str(Path(data).resolve()), "files": files}
    write_json({**body, "tag": _tag(secret, body)}, out)


def load_measured(file, data) -> Measured:
    """The identity :func:`save_measured` kept, or a DpiwError naming the fix when ``data``'s files changed since
    it was measured (the ledger would be charged for other rows than the ones released)."""
    from pathlib import Path

    from dpiw import DpiwError
    from dpiw.io import read_json

    if not Path(file).is_file():
        raise DpiwError(f"privacy.measured_table {file}: no such file (`dpiw release` sets it for its own runs; "
                        "elsewhere leave it out)")
    try:
        kept = read_json(file)
        measured = Measured(TableId.from_dict(kept["identity"]), str(kept["path"]), kept["files"], kept["tag"])
    except (KeyError, TypeError, ValueError):
        raise DpiwError(f"privacy.measured_table {file}: not what `dpiw release` keeps; run the release "
                        "again") from None
    if measured.path != str(Path(data).resolve()) or measured.files != files_state(data):
        raise DpiwError(f"{data} changed while its release ran (its files differ from when its rows were measured): "
                        "leave the table as it is and run the release again")
    return measured
