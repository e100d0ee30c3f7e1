"""Write a bundle's rows in their units and labels, with one weight per row, to a CSV or parquet file that R,
Stata or a spreadsheet reads.

The file holds the schema's columns (numeric ones in their units, integer ones as integers, categories as their
labels) and a last column ``weight`` (scaled to mean 1): in R, ``d <- read.csv("clinic.csv")`` then
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


def export(bundle_path: str | Path, out: str | Path, *, force: bool = False) -> Path:
    """The rows and weights of a bundle, written atomically to ``out`` (.csv or .parquet)."""
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
    if "weight" in b.data.columns:
        raise DpiwError(f"{folder}: the table has a column named 'weight'; the export's weight column would clash")
    frame = b.data.assign(weight=b.weights * len(b.weights) / b.weights.sum())
    write_table(frame, out)  # atomic, and readable as the user's other files are (the umask), not 0600
    return out


def main(args) -> None:
    out = export(args.bundle, args.out, force=args.force)
    print(f"dpiw: {out} written (the rows in their units and labels, and a 'weight' column)", file=sys.stderr)
