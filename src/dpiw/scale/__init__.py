"""Seeded train/test split and the map of every column to [0, 1] with public bounds."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpiw import DpiwError
from dpiw.data.schema import Schema

BOUNDS = ("schema", "data")


def split_rows(df: pd.DataFrame, schema: Schema, *, test_fraction: float, seed: int
               ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Seeded split, stratified on the target for classification."""
    from sklearn.model_selection import train_test_split

    if not (0 < test_fraction < 1):
        raise DpiwError(f"scale.test_fraction must be in (0, 1), got {test_fraction}")
    stratify = df[schema.target] if schema.task == "classification" else None
    n_test = int(round(len(df) * test_fraction))
    if n_test < 2 or len(df) - n_test < 2:
        raise DpiwError(f"dataset '{schema.name}' has {len(df)} rows: too few for a "
                        f"{1 - test_fraction:.0%}/{test_fraction:.0%} split")
    if stratify is not None:
        counts = stratify.value_counts()
        if len(counts) < 2:
            raise DpiwError(f"dataset '{schema.name}': target '{schema.target}' has a single class in the data; "
                            "classification needs at least two")
        if counts.min() < 2:
            raise DpiwError(f"dataset '{schema.name}': {int((counts < 2).sum())} class(es) of '{schema.target}' have "
                            "fewer than 2 rows; a stratified split needs at least 2 per class")
    train, test = train_test_split(df, test_size=n_test, random_state=seed, stratify=stratify)
    return train.reset_index(drop=True), test.reset_index(drop=True)


def split_public(train: pd.DataFrame, schema: Schema, *, n_public: int, seed: int
                 ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Take ``n_public`` rows out of the private split as the slice declared public (seeded,
    stratified for classification); with n_public = 0 the split is untouched and the slice empty."""
    if n_public == 0:
        return train, train.iloc[:0].copy()
    from sklearn.model_selection import train_test_split

    if n_public < 2 or len(train) - n_public < 2:
        raise DpiwError(f"dataset '{schema.name}': {len(train)} rows left after the test split cannot give "
                        f"{n_public} public rows and keep a private split; lower scale.public_fraction")
    stratify = train[schema.target] if schema.task == "classification" else None
    if stratify is not None and (stratify.value_counts().min() < 2 or n_public < stratify.nunique()):
        raise DpiwError(f"dataset '{schema.name}': scale.public_fraction gives {n_public} public rows, too few "
                        f"to hold every class of '{schema.target}'; raise it or set it to 0")
    rest, public = train_test_split(train, test_size=n_public, random_state=seed + 7919, stratify=stratify)
    return rest.reset_index(drop=True), public.reset_index(drop=True)


def check_clipping(df: pd.DataFrame, schema: Schema, *, max_fraction: float) -> dict[str, float]:
    """Share of each numeric column's values outside its public bounds (they will be clipped); refuses a
    column above ``max_fraction`` (most often a unit error: every value pinned to one bound).

    >>> from dpiw.data.schema import parse_schema
    >>> s = parse_schema({"name": "t", "task": "regression", "target": "y", "columns": [
    ...     {"name": "x", "type": "numeric", "lower": 0, "upper": 10},
    ...     {"name": "y", "type": "numeric", "lower": -1, "upper": 1}]})
    >>> check_clipping(pd.DataFrame({"x": [5.0, 20.0], "y": [0.0, 0.5]}), s, max_fraction=0.6)
    {'x': 0.5, 'y': 0.0}
    """
    from dpiw.data.datasets import holds_value

    fractions = {}
    for c in schema.columns:
        if c.is_numeric and c.indicator_of is None:
            v = c.held(pd.to_numeric(df[c.name], errors="coerce").to_numpy(dtype=float))
            v = v[holds_value(df, schema, c.name)]  # of the values there: an empty cell is no value in the bounds
            fractions[c.name] = float(np.mean((v < c.lower) | (v > c.upper))) if v.size else 0.0
    return clip_verdict(fractions, schema, max_fraction=max_fraction)


def share_text(share: float) -> str:
    """A share for a person: one decimal of a percent, and "<0.1%" (not "0.0%") for a few values.

    >>> share_text(0.0234), share_text(2e-5), share_text(0.0)
    ('2.3%', '<0.1%', '0.0%')
    """
    return "<0.1%" if 0 < share < 0.0005 else f"{share:.1%}"


def part_text(share: float) -> str:
    """A part of a whole in percent for a person: whole percents from 10%, else two significant digits.

    >>> part_text(0.3), part_text(0.0234), part_text(0.002), part_text(0.9996)
    ('30%', '2.3%', '0.2%', '100%')
    """
    pct = 100 * share
    return f"{pct:.0f}%" if pct >= 10 else f"{pct:.2g}%"


def clip_verdict(fractions: dict[str, float], schema: Schema, *, max_fraction: float) -> dict[str, float]:
    """``fractions`` (each numeric column's share outside its bounds), or the refusal of the first column above
    ``max_fraction``."""
    if not (0 <= max_fraction <= 1):
        raise DpiwError(f"scale.max_clip_fraction must be in [0, 1], got {max_fraction}")
    for c in schema.columns:
        frac = fractions.get(c.name)
        if frac is not None and frac > max_fraction:
            raise DpiwError(f"dataset '{schema.name}': {frac:.0%} of column '{c.name}' lies outside its public bounds "
                            f"[{c.lower:g}, {c.upper:g}] and would be clipped (scale.max_clip_fraction = "
                            f"{max_fraction:g}); check the column's units or the schema's bounds")
    return fractions


def column_bounds(train: pd.DataFrame, schema: Schema, *, bounds: str) -> dict[str, tuple[float, float]]:
    """Per numeric column (lower, upper): from the schema (public) or, only if asked, from the data."""
    if bounds not in BOUNDS:
        raise DpiwError(f"scale.bounds must be one of {BOUNDS}, got {bounds!r}")
    out = {}
    for c in schema.columns:
        if not c.is_numeric:
            continue
        if bounds == "schema":
            out[c.name] = (c.lower, c.upper)
        else:  # the paper's min-max: reads the private rows, so it is NOT DP
            lo, hi = float(train[c.name].min()), float(train[c.name].max())
            out[c.name] = (lo, hi if hi > lo else lo + 1.0)
    return out


def scale_frame(df: pd.DataFrame, schema: Schema, bounds: dict[str, tuple[float, float]]) -> pd.DataFrame:
    """Map numeric columns to [0, 1] with ``bounds`` (clipping), classification labels to codes 0..K-1.

    >>> from dpiw.data.schema import parse_schema
    >>> s = parse_schema({"name": "t", "task": "regression", "target": "y", "columns": [
    ...     {"name": "x", "type": "numeric", "lower": 0, "upper": 10},
    ...     {"name": "y", "type": "numeric", "lower": -1, "upper": 1}]})
    >>> scale_frame(pd.DataFrame({"x": [5.0, 20.0], "y": [0.0, -3.0]}), s, {"x": (0, 10), "y": (-1, 1)})
         x    y
    0  0.5  0.5
    1  1.0  0.0
    """
    out = {}
    for c in schema.columns:
        if c.is_numeric:
            lo, hi = bounds[c.name]
            v = pd.to_numeric(df[c.name], errors="coerce").to_numpy(dtype=float)
            if not np.isfinite(v).all():
                raise DpiwError(f"dataset '{schema.name}': column '{c.name}' has {int((~np.isfinite(v)).sum())} "
                                "missing, non-numeric or infinite value(s); remove or impute them")
            v = c.held(v)  # a whole-number column: 45.7 is read as 46 (RowChecks.rounded() says how many)
            out[c.name] = np.clip(c.to_unit(v, lo, hi), 0.0, 1.0)  # linear, or log(1 + x - lower) (`scale`)
        else:
            from dpiw.data.datasets import public_list

            lookup = {cat: i for i, cat in enumerate(c.categories)}
            # each distinct value's text looked up once, then taken by every row's code (a per-row map of text
            # costs about a second a million rows)
            which, uniques = pd.factorize(df[c.name], use_na_sentinel=False)
            codes = np.array([lookup.get(str(v), -1) for v in uniques], dtype=np.int64)[which]
            if (codes < 0).any():
                raise DpiwError(f"dataset '{schema.name}': column '{c.name}' has {int((codes < 0).sum())} value(s) "
                                f"outside its declared categories {public_list(c.labels)}")
            out[c.name] = codes
    return pd.DataFrame(out)[schema.names]


def decode_frame(df: pd.DataFrame, schema: Schema) -> pd.DataFrame:
    """The inverse of :func:`scale_frame` with the schema's public bounds: numeric columns back in their units (lower +
    v (upper - lower); with `scale: log`, lower + exp(v log(1 + upper - lower)) - 1), category codes back to their
    labels (a pandas Categorical in the schema's order); a `missing: indicator` column is empty (NaN; pandas'
    nullable Int64 for an integer column) where its 0/1 column is 1.

    >>> from dpiw.data.schema import parse_schema
    >>> s = parse_schema({"name": "t", "task": "classification", "target": "y", "columns": [
    ...     {"name": "x", "type": "numeric", "lower": 10, "upper": 20},
    ...     {"name": "y", "type": "categorical", "categories": ["no", "yes"]}]})
    >>> decode_frame(pd.DataFrame({"x": [0.5, 1.0], "y": [1, 0]}), s)
          x    y
    0  15.0  yes
    1  20.0   no
    """
    out = {}
    flags = {c.indicator_of: df[c.name].to_numpy().astype(np.int64) == 1 for c in schema.columns if c.indicator_of}
    for c in schema.columns:
        v = df[c.name].to_numpy()
        if c.is_numeric:
            x = c.from_unit(v.astype(float))
            x = np.where(v == 1, c.upper, x)  # an upper spike is the bound itself, not one ulp off it
            if c.name in flags:  # `missing: indicator`: empty where the row's 0/1 column says so
                x = np.where(flags[c.name], np.nan, x)
                out[c.name] = pd.array(np.rint(x), dtype="Int64") if c.integer else x
                continue
            out[c.name] = np.rint(x).astype(np.int64) if c.integer else x
        else:
            codes = v.astype(np.int64)
            if codes.size and (codes.min() < 0 or codes.max() >= len(c.categories)):
                raise DpiwError(f"column '{c.name}': codes outside its {len(c.categories)} categories")
            out[c.name] = pd.Categorical.from_codes(codes, categories=c.labels)
    return pd.DataFrame(out, index=df.index)[schema.names]


def _scaled_part(part: tuple[str, dict, list[int]], schema: Schema, bounds, out_of_bounds: str, clip_fix: str,
                 where: str, arrow_schema, chunk_rows: int):
    """Some row groups of one parquet file of a folder read, checked and scaled (in a worker process,
    :func:`iter_scaled`): their scaled frames and their row checks."""
    from dpiw.data.datasets import BadRows, RowChecks, iter_fragment

    path, constants, groups = part
    mine = RowChecks(schema, out_of_bounds=out_of_bounds, clip_fix=clip_fix)
    frames = []
    try:  # after a bad row (BadRows, or an empty or infinite value) only counted: its frames would be dropped
        for frame in iter_fragment(schema, path, constants, where, arrow_schema=arrow_schema, chunk_rows=chunk_rows,
                                   row_groups=groups):
            mine.add(frame)
            if not mine.bad:  # an empty or infinite value: counted, the table refused by RowChecks.finish
                frames.append(scale_frame(frame, schema, bounds))
    except BadRows as bad:  # counted with the other tasks' (the line one pass gives)
        return bad, mine
    return frames, mine


def _row_group_parts(parts, chunk_rows: int) -> list[tuple[str, dict, list[int]]]:
    """The folder's files (path, hive keys, pyarrow fragment) as tasks of consecutive row groups of at most
    ``chunk_rows`` rows (or one larger row group): a worker holds a task's scaled rows, not a whole file's."""
    tasks = []
    for path, keys, fragment in parts:
        fragment.ensure_complete_metadata()  # the footer's row groups
        groups = [rg.num_rows for rg in fragment.row_groups]
        held, rows = [], 0
        for i, n in enumerate(groups):
            if held and rows + n > chunk_rows:
                tasks.append((path, keys, held))
                held, rows = [], 0
            held.append(i)
            rows += n
        if held:
            tasks.append((path, keys, held))
    return tasks


def iter_scaled(schema: Schema, path, checks, bounds: dict[str, tuple[float, float]], *, chunk_rows: int):
    """The rows of the table at ``path`` read (dpiw.data.datasets.iter_table), checked (``checks``: a fresh
    :class:`dpiw.data.datasets.RowChecks`, added to) and scaled (:func:`scale_frame`), as frames of exactly
    ``chunk_rows`` rows but the last. A parquet folder is read, checked and scaled a few row groups per task in
    forked worker processes (dpiw.sdgp.engines.local_pool; a few tasks ahead of the writer, in the files' order)
    and cut into the same frames: the same rows in the same order, so the same bytes once written. Bad rows are
    refused with the line one pass gives (every bad row of the table counted; an empty or infinite value by
    ``checks.finish()``, nothing scaled after it); a worker that dies leaves the rest to this process."""
    from dpiw.data.datasets import _open_checked, _where, iter_table, parquet_folder
    from dpiw.sdgp.engines import fragments, local_pool

    folder = parquet_folder(path)
    pool = None if folder is None else local_pool(folder)
    if pool is None:
        for chunk in iter_table(schema, str(path), chunk_rows=chunk_rows):
            checks.add(chunk)
            if not checks.bad:  # an empty or infinite value: counted, the table refused by RowChecks.finish
                yield scale_frame(chunk, schema, bounds)
        return
    import functools

    from dpiw.data.datasets import BadRows

    try:
        _open_checked(schema, path)
        task = functools.partial(_scaled_part, schema=schema, bounds=bounds, out_of_bounds=checks.out_of_bounds,
                                 clip_fix=checks.clip_fix, where=_where(schema, path), arrow_schema=folder.schema,
                                 chunk_rows=chunk_rows)
        held, rows, bad = [], 0, None
        for frames, mine in _in_order(pool, task, _row_group_parts(fragments(folder), chunk_rows)):
            checks.merge(mine)
            if isinstance(frames, BadRows):
                bad = frames if bad is None else bad.plus(frames)
            if bad is not None or checks.bad:  # every task's bad rows counted, nothing more scaled or yielded
                continue
            held += [f for f in frames if len(f)]
            rows += sum(len(f) for f in frames)
            while rows >= chunk_rows:
                table = pd.concat(held, ignore_index=True)
                yield table.iloc[:chunk_rows].reset_index(drop=True)
                rest = table.iloc[chunk_rows:].reset_index(drop=True)
                held, rows = [rest] if len(rest) else [], len(rest)
        if bad is not None:
            raise bad
        if rows:
            yield pd.concat(held, ignore_index=True)
        elif not checks.rows:
            raise DpiwError(f"{_where(schema, path)}: the file has no rows")
    finally:
        pool.shutdown(cancel_futures=True)


def _in_order(pool, task, parts: list):
    """``task`` of each part, in order, computed by ``pool`` a few parts ahead (memory: a few parts' results,
    not the table's); if a worker dies (killed for memory, say), this part and the rest are computed here."""
    import collections
    import itertools
    from concurrent.futures.process import BrokenProcessPool

    def submit(i, part):
        try:
            return i, pool.submit(task, part)
        except BrokenProcessPool:
            return i, None

    ahead = iter(enumerate(parts))
    pending = collections.deque(submit(i, p) for i, p in itertools.islice(ahead, 2 * pool._max_workers))
    while pending:
        i, future = pending.popleft()
        try:
            if future is None:  # not submitted: the pool had broken
                raise BrokenProcessPool
            out = future.result()
        except BrokenProcessPool:
            for p in parts[i:]:
                yield task(p)
            return
        following = next(ahead, None)
        if following is not None:
            pending.append(submit(*following))
        yield out
