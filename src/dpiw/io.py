"""Atomic artifact writers and checked readers.

Every artifact is written to a temporary file in the target directory and renamed into place, so a
crash mid-write leaves either the old file or none, never a truncated one. A file whose new bytes equal
its old ones is left as it was (same modification time), so that what reads it need not run again.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from dpiw import DpiwError

if TYPE_CHECKING:  # pandas costs ~0.4 s to import; stages that need no frame should not pay it
    import pandas as pd


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def remove_stale_temps(path: Path) -> None:
    """Remove the temporary files or folders a killed writer of ``path`` left behind (SIGKILL runs no
    cleanup)."""
    for stale in path.parent.glob(f".{path.name}.*.tmp"):
        if stale.is_dir():
            shutil.rmtree(stale, ignore_errors=True)
        else:
            stale.unlink(missing_ok=True)


def _atomic(path: Path, write: Callable[[Path], None]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(Path(tmp))
        if _same_bytes(Path(tmp), path):
            Path(tmp).unlink()
            return
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the file the usual permissions
        os.replace(tmp, path)  # same directory, so the rename is atomic
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _same_bytes(new: Path, old: Path) -> bool:
    import filecmp

    if not old.is_file() or old.stat().st_size != new.stat().st_size:
        return False
    return filecmp.cmp(new, old, shallow=False)  # block by block: an artifact may be larger than memory


def write_table(df: pd.DataFrame, path: str | Path) -> None:
    """``df`` as a CSV (no index) or a parquet file by ``path``'s suffix, written atomically with the usual
    permissions (a file meant to be shared: ``dpiw export``)."""
    path = Path(path)
    if path.suffix.lower() == ".csv":
        _atomic(path, lambda tmp: df.to_csv(tmp, index=False))
    else:
        write_parquet(df, path)


def write_parquet(df: pd.DataFrame, path: str | Path) -> None:
    """Write ``df`` to parquet atomically (no index, deterministic bytes for equal frames)."""
    _atomic(Path(path), lambda tmp: df.to_parquet(tmp, index=False, engine="pyarrow"))


def write_parquet_chunks(chunks: Iterable[pd.DataFrame], path: str | Path) -> int:
    """Write frames of the same columns and dtypes to one parquet file atomically, a row group each, holding
    one in memory at a time; nothing is left at ``path`` if a chunk raises. Returns the rows written."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = 0

    def write(tmp: Path) -> None:
        nonlocal rows
        writer = None
        try:
            for df in chunks:
                table = pa.Table.from_pandas(df, preserve_index=False)
                if writer is None:
                    writer = pq.ParquetWriter(tmp, table.schema)
                writer.write_table(table)
                rows += len(df)
        finally:
            if writer is not None:
                writer.close()
        if writer is None:
            raise DpiwError(f"{path}: no rows to write")

    _atomic(Path(path), write)
    return rows


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None  # strict JSON has no inf/nan; null means "not available"
    return obj


def write_json(obj: Any, path: str | Path) -> None:
    """Write ``obj`` as indented, key-sorted, strict JSON atomically."""
    text = json.dumps(_jsonable(obj), indent=2, sort_keys=True, allow_nan=False) + "\n"
    _atomic(Path(path), lambda tmp: tmp.write_text(text))


def write_text(text: str, path: str | Path) -> None:
    """Write ``text`` atomically (a file whose bytes do not change keeps its modification time)."""
    _atomic(Path(path), lambda tmp: tmp.write_text(text))


def read_json(path: str | Path) -> Any:
    path = Path(path)
    if not path.is_file():
        raise DpiwError(f"{path}: file not found")
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise DpiwError(f"{path}: not valid JSON ({exc})") from exc


def parquet_rows(path: str | Path) -> int:
    """The row count of a parquet artifact, from its footer (no row is read)."""
    import pyarrow.parquet as pq

    path = Path(path)
    if not path.is_file():
        raise DpiwError(f"{path}: file not found")
    try:
        return int(pq.ParquetFile(path).metadata.num_rows)
    except (ValueError, OSError) as exc:
        raise DpiwError(f"{path}: not a readable parquet file ({str(exc).splitlines()[0][:200]}); truncated by a "
                        "crash or an interrupted copy? Delete it and rerun the stage that wrote it") from None


def read_parquet(path: str | Path, *, columns: list[str] | None = None, finite: bool = True) -> pd.DataFrame:
    """Read a parquet artifact; with ``finite`` every numeric column must be free of NaN/inf."""
    import pandas as pd

    path = Path(path)
    if not path.is_file():
        raise DpiwError(f"{path}: file not found")
    try:
        df = pd.read_parquet(path)
    except (ValueError, OSError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise DpiwError(f"{path}: not a readable parquet file ({str(exc).splitlines()[0][:200]}); truncated by a "
                        "crash or an interrupted copy? Delete it and rerun the stage that wrote it") from None
    if columns is not None:
        missing = [c for c in columns if c not in df.columns]
        if missing:
            raise DpiwError(f"{path}: missing column(s) {missing}; found {list(df.columns)}")
    if finite:
        check_finite(df, where=str(path))
    return df


def read_log_weights(path: str | Path, column: str) -> np.ndarray:
    """A (row, <column>) parquet of log weights: -inf (a zero weight) is allowed, NaN, +inf or all zero not."""
    lw = read_parquet(path, columns=["row", column], finite=False)[column].to_numpy(float)
    bad = np.flatnonzero(np.isnan(lw) | np.isposinf(lw))
    if bad.size:
        raise DpiwError(f"{path}: column '{column}' has {bad.size} NaN or +inf value(s); rerun the stage that "
                        "wrote it")
    if lw.size and np.isneginf(lw).all():
        raise DpiwError(f"{path}: every weight in '{column}' is zero")
    return lw


def check_finite(df: pd.DataFrame, *, where: str) -> None:
    """Raise one DpiwError naming every column holding NaN or inf and how many rows do (never a value or a
    row's position: the rows may be private)."""
    counts, numeric = nonfinite_counts(df)
    if any(counts.values()):
        raise empty_values_error(counts, where=where, numeric=numeric)


def nonfinite_counts(df: pd.DataFrame) -> tuple[dict[str, int], set[str]]:
    """Each column's count of NaN or inf (numeric columns) or empty values (the rest), and the numeric columns."""
    import pandas as pd

    counts, numeric = {}, set()
    for col in df.columns:
        if pd.api.types.is_numeric_dtype(df[col]):
            numeric.add(col)
            counts[col] = int((~np.isfinite(df[col].to_numpy(dtype=float))).sum())
        else:
            counts[col] = int(df[col].isna().sum())
    return counts, numeric


def empty_values_error(counts: dict, *, where: str, numeric) -> DpiwError:
    """:func:`check_finite`'s error from each column's count of empty values (``numeric``: the columns where
    inf counts too), wherever they were counted (DuckDB: dpiw.sdgp.engines)."""
    return DpiwError(f"{where}: {empty_values_text(counts, numeric=numeric)}")


def empty_values_text(counts: dict, *, numeric, kind: str | None = None, target: str | None = None) -> str:
    """:func:`empty_values_error`'s line without its place (``kind``: what every count is called, else "missing
    or infinite" in a ``numeric`` column and "missing" elsewhere). The ``target`` gets a line of its own: a
    `missing:` rule does not apply to it.

    >>> empty_values_text({"bmi": 3, "y": 2}, numeric={"bmi"}, target="y")  # doctest: +NORMALIZE_WHITESPACE
    "column 'bmi' (3 missing or infinite) has empty values; say in the schema what an empty value is (`missing:
    category` for a categorical column, `missing: indicator` for a numeric one), or remove them; the target 'y'
    has 2 empty value(s): a release models every row's target, so remove those rows from the file"
    """
    found = [f"'{col}' ({n} {kind or ('missing or infinite' if col in numeric else 'missing')})"
             for col, n in counts.items() if n and col != target]
    lines = [f"column{'s' if len(found) > 1 else ''} {', '.join(found)} {'have' if len(found) > 1 else 'has'} "
             "empty values; say in the schema what an empty value is (`missing: category` for a categorical "
             "column, `missing: indicator` for a numeric one), or remove them"] if found else []
    if counts.get(target):
        lines.append(f"the target '{target}' has {counts[target]} empty value(s): a release models every row's "
                     "target, so remove those rows from the file")
    return "; ".join(lines)


def write_dir_atomic(path: str | Path, fill: Callable[[Path], None]) -> None:
    """Create directory ``path`` with the files ``fill(tmpdir)`` writes, all at once: the files are
    written into a temporary sibling that then takes the name (an old ``path`` is removed first)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(path)
    tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"))
    try:
        fill(tmp)
        os.chmod(tmp, 0o777 & ~_umask())
        if path.exists():
            shutil.rmtree(path)
        os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
