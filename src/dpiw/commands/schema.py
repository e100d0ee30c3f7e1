"""Write a draft schema for a CSV or parquet file (or a folder of parquet files): the column names and kinds,
with the bounds and category lists left for you to fill in.

The draft is read off the private rows: each column's kind (numeric or not), whether it holds whole numbers
(`integer: true`) or empty values (`missing: ...`), and which column only numbers the rows. The schema is
published with every bundle, so confirm each of these against public documentation before you release. The
bounds and categories must be public knowledge - units, forms, codebooks, documentation - and never the data's
own minimum, maximum or values: those would leak the private rows. The draft does not validate until you fill
them in.

    dpiw schema infer data/mine.csv --target outcome > data/schemas/mine.yaml

A column that only numbers the rows (named like `rownames`, `id` or `Unnamed: 0`, or holding distinct whole
numbers in row order) is left out of the draft, and the command says so: a row's number is not data to release.
So is a column that says whose row each row is where one has several (a person seen in eight years: named like
`nr` or `person_id`, or each of its values on as many rows), and the command says what that means for privacy:
every guarantee of a release is for one row, so a person with k rows has that of a group of k, k times
the epsilon or more. Give each person one row, or divide the epsilon you mean for a person by the most rows one has.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from dpiw import DpiwError
from dpiw.data.schema import FILL


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="schema_command", metavar="infer", required=True)
    infer = sub.add_parser("infer", help="a draft schema for a data file (bounds left for you to fill in)",
                           description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    infer.add_argument("data", metavar="DATA", help="the CSV (with a header), parquet file or folder of parquet files")
    infer.add_argument("--name", help="the dataset's name (default: the file's name, lower case)")
    infer.add_argument("--target", help="the column to predict (default: the last column)")
    infer.add_argument("--out", help="write the draft here instead of to standard output (an existing file is "
                                     "refused without --force)")
    infer.add_argument("--force", action="store_true", help="overwrite the --out file if it exists")


#: a folder of parquet files (a table that may not fit in memory) is drafted from its first rows, in path order
DRAFT_ROWS = 1_000_000


def draft(data: str | Path, *, name: str | None = None, target: str | None = None) -> str:
    """The draft schema's YAML text."""
    return _draft(data, name=name, target=target)[0]


def _draft(data: str | Path, *, name: str | None, target: str | None) -> tuple[str, dict]:
    """The draft's text, and the columns left out as naming whom several rows are of (:func:`unit_columns`)."""
    import pandas as pd

    from dpiw.data.datasets import parquet_folder

    path = Path(data)
    folder = parquet_folder(path) if path.is_dir() else None
    if not path.is_file() and folder is None:
        raise DpiwError(f"{path}: no such file (or folder of parquet files)")
    try:
        if folder is not None:  # a folder of parquet files (hive partitions give their columns): its first rows
            frame = folder.head(DRAFT_ROWS).to_pandas()
        elif path.suffix == ".parquet":
            frame = pd.read_parquet(path)
        else:
            frame = pd.read_csv(path, encoding="utf-8", low_memory=False)
    except UnicodeDecodeError:
        raise DpiwError(f"{path}: is not UTF-8 text; save it as UTF-8 (CSV) or parquet") from None
    except pd.errors.EmptyDataError:
        raise DpiwError(f"{path}: the file is empty; a schema is drafted from a header and rows") from None
    except (ValueError, OSError, pd.errors.ParserError) as exc:  # the message may quote the data: not shown
        if folder is not None:  # which file (read again: for the message only)
            from dpiw.data.datasets import find_unreadable

            find_unreadable(folder, None, str(path))
        raise DpiwError(f"{path}: cannot be read as {'parquet' if path.suffix == '.parquet' or folder else 'CSV'} "
                        f"({type(exc).__name__}); check the file's format") from None
    if frame.empty:
        raise DpiwError(f"{path}: the file has a header but no rows")
    from dpiw.data.datasets import repeated_columns

    if repeated_columns(path):
        raise DpiwError(f"{path}: column name(s) {repeated_columns(path)} appear more than once in the header; give "
                        "every column one name")
    if frame.shape[1] < 2:
        raise DpiwError(f"{path}: {frame.shape[1]} column(s); a schema needs at least a feature and a target")
    name = name or re.sub(r"[^a-z0-9_]", "_", path.stem.lower()).strip("_") or "data"
    given_target = target is not None
    target = target or str(frame.columns[-1])
    if target not in frame.columns:
        raise DpiwError(f"--target {target}: no such column; the columns are {list(map(str, frame.columns))}")
    numeric_target = pd.api.types.is_numeric_dtype(frame[target]) and not pd.api.types.is_bool_dtype(frame[target])
    coded = numeric_target and _looks_like_codes(frame[target])
    if coded:  # a class label written as a small integer code
        numeric_target = False
    ids = row_id_columns(frame, target=target)
    units = unit_columns(frame.drop(columns=ids), target=target)
    frame = frame.drop(columns=ids + list(units))
    if frame.shape[1] < 2:
        raise DpiwError(f"{path}: only {frame.shape[1]} column(s) besides the row numbers {ids}; a schema needs at "
                        "least a feature and a target")
    lines = [f"# Draft schema for {path} written by `dpiw schema infer`. Fill in every {FILL}: bounds and",
             "# categories must be PUBLIC (units, forms, codebooks), never read off the rows. A numeric column",
             "# with few values (a code) may be better declared categorical; `integer: true` (whole-number",
             "# bounds) releases whole numbers; `spikes: [0]` keeps a bound that many rows hold exactly (no",
             "# debt) as it is; `scale: log` gives a skewed column fine cells where most of its values are.",
             "# `integer`, `missing`, `spikes`, `scale` and the kinds were read off the rows:",
             "# the schema is published with every bundle, so keep only what public documentation says too.",
             f"name: {name}",
             f"task: {'regression' if numeric_target else 'classification'}   # classification or regression"
             + (f"; the target holds {frame[target].nunique()} whole numbers, read as class codes: for a count "
                "whose mean matters, write regression and make its column numeric" if coded else ""),
             f"target: {target}",
             f"source: {{kind: file, path: {path.as_posix()}{'/' if folder is not None else ''}}}",
             *([f"# left out as row numbers, not data: {', '.join(map(str, ids))}"] if ids else []),
             *([f"# left out as naming whom several rows are of: {', '.join(map(str, units))} (a release's "
                "guarantee is per row: `dpiw schema infer --help`)"] if units else []),
             "columns:"]
    for col in frame.columns:
        s = frame[col]
        empty = bool(s.isna().any())
        if str(col) == target and empty:
            said = f"--target {target}" if given_target else f"the default target (the last column, {target})"
            raise DpiwError(f"{said}: the column has empty values, and a release models every row's target; drop "
                            "those rows first (the release then speaks only of the rows with a value, which your "
                            "analysts should know), or choose another target with --target (a column with empty "
                            "values can still be one the weights measure with the target)")
        # one value in every row (a trial's region, all "Middle Atlantic"): a release refuses it; said here first
        constant = [CONSTANT_NOTE] if s.dropna().nunique() < 2 and str(col) != target else []
        flag = str(col) != target and pd.api.types.is_numeric_dtype(s) and bool(s.dropna().isin([0, 1]).all()) \
            and s.dropna().nunique() == 2  # a 0/1 flag (married): a category, not a number with a spike at 0
        if pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s) and not flag \
                and not (str(col) == target and not numeric_target):
            # whole numbers: drafted `integer: true`, so releases draw integers (whole bounds)
            whole = ", integer: true" if _whole(s) else ""
            gap = ", missing: indicator" if empty else ""
            # many exact zeros (no debt): a spike keeps them as zeros (on a grid of a cell per whole number, which
            # the bounds not yet filled in decide, it only gives them a bin of their own)
            values = s.dropna()
            spike = (values == 0).mean() >= SPIKE_SHARE and bool((values >= 0).all())  # 0 as the lower bound
            # most values far below the largest (spending): fine cells on log(1 + x) where the rows are
            positive = values[values > 0]
            # (against a high quantile, not the largest: one stray value, a wind of 1,048 mph, is no skew)
            log = bool((values >= 0).all()) and len(positive) > 0 and positive.median() < LOG_SKEW * values.quantile(
                1 - max(1 - LOG_TOP, 2 / len(values)))  # past the two largest at least
            notes = [*(["empty values: released as empty, with a 0/1 column " + f"{col}_missing"] if empty else []),
                     *([("many values are exactly 0: `spikes: [0]` gives them a coarse bin of their own (with lower: "
                         "0; on bounds of no more whole numbers than the fine cells, 256 by default, each already "
                         "has a fine cell of its own)") if whole else
                        "many values are exactly 0: `spikes: [0]` keeps them (with lower: 0)"] if spike else []),
                     *(["most values far below the largest: `scale: log` gives them fine cells"] if log else []),
                     *([pile] if not whole and (pile := _pile_note(values[values != 0] if spike else values))
                       else []),
                     *([CODES_NOTE] if _looks_coded(values) else []), *constant]
            lines.append(f"  - {{name: {col}, type: numeric, lower: {FILL}, upper: {FILL}{whole}{gap}"
                         + (", spikes: [0]" if spike else "") + (", scale: log" if log else "") + "}"
                         + (f"   # {'; '.join(notes)}" if notes else ""))
        else:
            gap = ", missing: category" if empty else ""
            notes = [*(["empty values: the category 'missing'"] if empty else []),
                     *(["two values only, a 0/1 flag: a category (list both)"] if flag else []), *constant]
            lines.append(f"  - {{name: {col}, type: categorical, categories: [{FILL}]{gap}}}"
                         + (f"   # {'; '.join(notes)}" if notes else ""))
    return "\n".join(lines) + "\n", units


#: a numeric column with at least this share of its values exactly 0 (and none below) is drafted with `spikes: [0]`:
#: more than the smallest coarse bin a release makes (an eighth of an equal-mass bin: 1.6% at 8 bins), so the spike's
#: own bin is no noisier than the others (5% until a trial's card balances, 4.99% of them exactly 0, got no spike)
SPIKE_SHARE = 0.025
#: a column of values >= 0 whose positive values' median is below this share of its largest (the LOG_TOP quantile,
#: past the two largest values at least) is drafted with `scale: log` (spending: a median of $60, a largest of $40,000)
LOG_SKEW = 0.02
#: the quantile of the values that stands for the largest in that rule (a stray value alone drafts no log scale)
LOG_TOP = 0.999

#: what a draft says of a column with one value in every row (a release refuses it: datasets.RowChecks)
CONSTANT_NOTE = "one value in every row: it tells nothing, and a release refuses it; leave it out"

#: the values surveys use as codes for a missing or unknown answer (not applicable, refused, don't know)
CODE_VALUES = frozenset({97, 98, 99, 997, 998, 999, 9997, 9998, 9999, 99997, 99998, 99999})
CODES_NOTE = ("its largest values sit far above the rest, as codes for a missing or unknown answer do (98 or 99 in "
              "many surveys): if they are, make them empty in the file and declare `missing: indicator`; the bounds "
              "would clip them to the upper bound, released as values")


def _looks_coded(values) -> bool:
    """Whether a numeric column's one to three largest distinct values are all codes of :data:`CODE_VALUES` and
    the largest value below them is under half the smallest of them (a trial's years of schooling, 0 to 17 and
    98 or 99 for 4.6% of its rows); it names no value."""
    import numpy as np

    distinct = np.unique(np.asarray(values, float))
    top = [v for v in distinct[::-1][:3] if v in CODE_VALUES]
    codes = distinct[::-1][: len(top)]
    if not top or list(codes) != top or len(distinct) <= len(top):
        return False
    return bool(distinct[::-1][len(top)] < 0.5 * min(top))


#: column names that say "row number" (compared in lower case, without spaces, dots and underscores)
ROW_ID_NAMES = {"rownames", "rowname", "rowid", "row", "id", "index", "unnamed0", "x", "x1", "1", ""}


def row_id_columns(frame, *, target: str) -> list:
    """The columns that only number the rows: an R or pandas row-name column (named ``rownames``, ``id``,
    ``Unnamed: 0``, ``...1``), or whole numbers, all distinct and increasing in row order. Never the target."""
    import pandas as pd

    out = []
    for col in frame.columns:
        if str(col) == target:
            continue
        s = frame[col]
        key = re.sub(r"[\s._:]", "", str(col).lower())
        named = key in ROW_ID_NAMES or re.fullmatch(r"unnamed\d+", key) is not None
        numeric = pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)
        whole = numeric and s.notna().all() and bool((s == s.round()).all())
        counting = whole and s.is_unique and s.is_monotonic_increasing and len(s) > MAX_CODES
        if counting or (named and s.is_unique and (whole or not numeric)):
            out.append(col)
    return out


#: column names that say "whose row": a person's, a household's, a case's (lower case, no spaces, dots, underscores)
UNIT_NAMES = {"id", "nr", "pid", "idcode", "ident", "person", "personid", "subject", "subjectid", "patient",
              "patientid", "household", "householdid", "hhid", "case", "caseid", "unit", "unitid", "family", "famid",
              "firm", "firmid", "company", "individual", "respondent", "prof", "chick"}
#: a column named like an identifier is read as one from this many values (a panel of 10 firms)
UNIT_MIN_NAMED = 10
#: column names that say "when" (a balanced panel's years are on as many rows each as its people are)
TIME_NAMES = {"year", "yr", "time", "wave", "period", "quarter", "month", "week", "day", "date", "t", "age"}
#: a column is read as naming units of several rows when it has at least this many values ...
UNIT_MIN_VALUES = 20
#: ... and at most this many rows a value on average (a panel's waves, a patient's visits; not a state's survey)
UNIT_MAX_ROWS = 50


def unit_columns(frame, *, target: str) -> dict:
    """The columns that say whose row each row is, where several rows are of one (a person seen in 8 years):
    whole numbers or text, at least :data:`UNIT_MIN_VALUES` values (:data:`UNIT_MIN_NAMED` for a name like an
    identifier) and at most :data:`UNIT_MAX_ROWS` rows a value on average, not named like a time (``year``), and
    either named like an identifier (``nr``, ``person_id``, ``firm``) with some value on 2 rows or more (an
    unbalanced panel too: people seen 1 to 5 times), or with every value on as many rows, 2 or more (a balanced
    panel).
    Never the target. Returns each column's most rows of one value (printed for the curator, never written in
    the draft)."""
    import pandas as pd

    out = {}
    for col in frame.columns:
        s = frame[col]
        if str(col) == target or s.isna().any() or pd.api.types.is_bool_dtype(s):
            continue
        if pd.api.types.is_numeric_dtype(s) and not bool((s == s.round()).all()):
            continue
        counts = s.value_counts()
        key = re.sub(r"[\s._:-]", "", str(col).lower())
        named = key in UNIT_NAMES or key.endswith("id")
        if counts.max() < 2 or len(counts) < (UNIT_MIN_NAMED if named else UNIT_MIN_VALUES) or \
                len(s) > UNIT_MAX_ROWS * len(counts) or key in TIME_NAMES:
            continue
        if named or (counts.nunique() == 1 and counts.min() >= 2):
            out[col] = int(counts.max())
    return out


#: a numeric target with at most this many distinct integer values is drafted as a classification label
MAX_CODES = 10


def _whole(s) -> bool:
    """Whole numbers: an integer dtype, or floats that are all whole (a column with empty values reads as float,
    and a file written from one holds 151.0 where 151 is meant)."""
    import pandas as pd

    values = s.dropna()
    return pd.api.types.is_integer_dtype(s) or (len(values) > 0 and bool((values == values.round()).all()))


#: a column not all whole numbers with at least this share of its values at one value is noted (:func:`_pile_note`)
PILE_SHARE = 0.1


def _pile_note(values) -> str | None:
    """A note for a column (not all whole numbers) where :data:`PILE_SHARE` or more of the values hold one value
    (at least 90% of them whole numbers, that value one too: `integer: true` keeps them, rounding the few others;
    else another fix): released values are spread evenly across the fine cell that holds it, so a share or
    quantile at it is lost. It names no value."""
    if not len(values):
        return None
    counts = values.value_counts(normalize=True)
    top, share = float(counts.index[0]), float(counts.iloc[0])
    if share < PILE_SHARE:
        return None
    whole = float((values == values.round()).mean())
    end = "largest" if top == values.max() else "smallest" if top == values.min() else None
    bound = "upper" if end == "largest" else "lower"
    # a bound is public or it is not there: the draft never offers a value it read (a trial's curator took "with the
    # public lower bound at it" for advice to set the bound at the rows' smallest tuition, 620 rows at 0.2575)
    if end:
        fix = (f"it is the column's {end} value: if the codebook puts the scale's {bound} end there (a top code, a "
               f"floor), the schema's {bound} bound at that public value with `spikes: [that bound]` keeps it; never "
               "set a bound from the rows")
    elif top == round(top) and whole >= 0.9:
        fix = "`integer: true` keeps whole numbers, on bounds that span at most 256 of them (it rounds the few others)"
    else:
        fix = ("if the column's values are public (a codebook's list of codes or band midpoints), declared a category "
               "listing them, it keeps it; never list values read off the rows")
    # no value or share of the rows in the draft: a schema is published with every bundle
    return f"many rows hold one value, which a release spreads across a fine cell: {fix}"


def _looks_like_codes(s) -> bool:
    values = s.dropna()
    return bool(len(values)) and bool((values == values.round()).all()) and values.nunique() <= MAX_CODES


def main(args) -> None:
    if args.out and Path(args.out).exists() and not args.force:
        raise DpiwError(f"--out {args.out} exists: choose another file, or pass --force to overwrite it")
    text, units = _draft(args.data, name=args.name, target=args.target)
    text += "" if text.endswith("\n") else "\n"  # a file's last line ends, and so does what the shell prints
    left_out = next((line.split(": ", 1)[1] for line in text.splitlines()
                     if line.startswith("# left out as row")), None)
    if left_out:
        print(f"dpiw: left out {left_out}: they number the rows (distinct whole numbers in row order, or a row-name "
              "column); add them back by hand if they are data", file=sys.stderr)
    for col, most in units.items():
        print(f"dpiw: left out {col}: each of its values is on several rows (up to {most}), so it seems to say whose "
              f"row each row is (a person seen several times). A release's guarantee is for one row: a person with "
              f"{most} rows has the guarantee of a group of {most}: {most} times the epsilon or more (group privacy; "
              f"docs/privacy.md, 'One row per person'). Give each person one row, or divide the epsilon you mean "
              f"for a person by {most}; add the column back by hand if it is data", file=sys.stderr)
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
        print(f"dpiw: draft schema written to {args.out}; fill in every {FILL}", file=sys.stderr)
    else:
        sys.stdout.write(text)
