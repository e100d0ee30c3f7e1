"""Write a bundle's rows in their units and labels, with one weight per row, to a CSV or parquet file that R,
Stata or a spreadsheet reads.

The file holds the schema's columns (numeric ones in their units, integer ones as integers, categories as their
labels) and a last column ``weight`` (scaled to mean 1; ``dpiw_weight`` when the table has a ``weight`` of
its own, or the name ``--weight-column`` gives): in R, ``d <- read.csv("clinic.csv")`` then
``weighted.mean(d$bmi, d$weight)`` or ``lm(bmi ~ age, data = d, weights = weight)``. Exporting is
post-processing of the release: it costs no privacy.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dpiw import DpiwError

FORMATS = (".csv", ".parquet")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("bundle", metavar="BUNDLE", help="a release's folder (releases/<name>/<release>) or its bundle")
    p.add_argument("out", metavar="OUT", help="the file to write: a name ending in .csv or .parquet")
    p.add_argument("--force", action="store_true", help="overwrite OUT if it exists")
    p.add_argument("--weight-column", metavar="NAME",
                   help="the name of the weights' column (default 'weight', or 'dpiw_weight' when the table has a "
                        "column named 'weight')")


def weight_column(columns, asked: str | None = None) -> str:
    """The name the weights take beside a table's ``columns``: ``asked``, else 'weight', else (a table with its own
    'weight', a body weight) 'dpiw_weight'; a name the table already uses is refused.

    >>> weight_column(["age"]), weight_column(["age", "weight"])
    ('weight', 'dpiw_weight')
    """
    columns = set(map(str, columns))
    if asked is not None:
        if not asked.strip():
            raise DpiwError("--weight-column: give the weights' column a name")
        if asked in columns:
            raise DpiwError(f"--weight-column {asked}: the table has a column of that name; choose another")
        return asked
    name = "weight"
    while name in columns:
        name = f"dpiw_{name}"
    return name


def export(bundle_path: str | Path, out: str | Path, *, force: bool = False, weight: str | None = None
           ) -> tuple[Path, str]:
    """The rows and weights of a bundle, written atomically to ``out`` (.csv or .parquet); the weights' column is
    named by :func:`weight_column`. Returns the file and that name."""
    import pandas as pd

    from dpiw.analysis import load_bundle
    from dpiw.commands.show import find_manifest
    from dpiw.io import write_table

    out = Path(out)
    if out.suffix.lower() not in FORMATS:
        raise DpiwError(f"{out}: the export's name must end in .csv or .parquet")
    if out.exists() and not force:
        raise DpiwError(f"{out} exists: choose another name, or --force to overwrite it")
    if out.parent != Path("") and not out.parent.is_dir():
        raise DpiwError(f"{out.parent}: no such folder for the export")
    folder = find_manifest(bundle_path).parent
    b = load_bundle(folder, warn=False)
    if b.schema is None:
        raise DpiwError(f"{folder}: a bundle without schema.json cannot be decoded to units and labels")
    name = weight_column(b.data.columns, weight)
    frame = b.data.assign(**{name: b.weights * len(b.weights) / b.weights.sum()})
    if out.suffix.lower() == ".parquet":  # parquet holds one type a column: numbers beside "missing" as text
        for c in frame.columns[frame.dtypes.map(lambda t: isinstance(t, pd.CategoricalDtype))]:
            if len({type(v) for v in frame[c].cat.categories}) > 1:
                frame[c] = frame[c].cat.rename_categories([str(v) for v in frame[c].cat.categories])
    write_table(frame, out)  # atomic, and readable as the user's other files are (the umask), not 0600
    return out, name


def main(args) -> None:
    out, name = export(args.bundle, args.out, force=args.force, weight=args.weight_column)
    print(f"dpiw: {out} written (the rows in their units and labels, and a '{name}' column"
          + (": the table has a 'weight' of its own" if name != "weight" and args.weight_column is None else "")
          + ")", file=sys.stderr)
