"""What an analyst estimates from a release: the targets of the usefulness study, from (weighted) rows.

A release is judged by the estimates an analyst would make from it, against the same estimates on the private
table. The targets, on the scaled columns (every name says what it is):

- ``mean c``: every numeric column's mean; ``share c=k``: every category's share;
- ``y | c=g``: the target's mean (numeric target) or the rate of each of its classes but the first
  (categorical) in every subgroup g of every other column;
- ``y | a=i, b=j``: the same in every cell of the cross-tab of every pair (a, b) of other columns, so the cells
  of every 3-way cross-tab with the target;
- ``coef y ~ c[=k]``: the coefficients of the (weighted) least-squares regression of the target (or of each
  class indicator but the first) on every other column, categoricals one-hot without their first category;
- ``pair b | a=g``: relations without the target: every other column b's mean (numeric) or the rate of each of
  its categories but the first, in every subgroup g of every other non-target column a (the weights are fitted on
  marginals that hold the target, and an analyst asks of these relations too).

Subgroups of a numeric column are ``SUBGROUP_BINS`` public equal-width bins of its scaled range [0, 1]. An
estimate with no (weighted) rows behind it is NaN; a comparison drops a target that is NaN in any release.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from dpiw.data.schema import Schema

#: public equal-width bins of a numeric column's scaled range when it defines subgroups
SUBGROUP_BINS = 4


def _codes(frame: pd.DataFrame, schema: Schema) -> dict[str, tuple[np.ndarray, list[str]]]:
    """Every non-target column as subgroup codes and their labels."""
    out = {}
    for c in schema.columns:
        if c.name == schema.target:
            continue
        v = frame[c.name].to_numpy()
        if c.is_numeric:
            code = np.clip((v.astype(float) * SUBGROUP_BINS).astype(np.int64), 0, SUBGROUP_BINS - 1)
            labels = [f"[{k / SUBGROUP_BINS:g},{(k + 1) / SUBGROUP_BINS:g})" for k in range(SUBGROUP_BINS)]
        else:
            code, labels = v.astype(np.int64), [str(k) for k in c.categories]
        out[c.name] = (code, labels)
    return out


def _responses(frame: pd.DataFrame, schema: Schema, name: str | None = None) -> dict[str, np.ndarray]:
    """A column (the target by default) as one or more responses: its value (numeric) or the indicator of each
    class but the first."""
    name = schema.target if name is None else name
    col = schema.column(name)
    y = frame[name].to_numpy()
    if col.is_numeric:
        return {name: y.astype(float)}
    return {f"{name}={label}": (y == k).astype(float) for k, label in enumerate(col.categories) if k > 0}


def _design(frame: pd.DataFrame, schema: Schema) -> tuple[np.ndarray, list[str]]:
    cols, names = [np.ones(len(frame))], ["(intercept)"]
    for c in schema.columns:
        if c.name == schema.target:
            continue
        v = frame[c.name].to_numpy()
        if c.is_numeric:
            cols.append(v.astype(float))
            names.append(c.name)
        else:
            for k, label in enumerate(c.categories[1:], start=1):
                cols.append((v == k).astype(float))
                names.append(f"{c.name}={label}")
    return np.column_stack(cols), names


def analyst_targets(frame: pd.DataFrame, schema: Schema, w: np.ndarray | None = None) -> dict[str, float]:
    """The analyst's estimates (module docstring) from ``frame``'s rows weighted by ``w`` (unit weights if None).

    >>> from dpiw.data.schema import parse_schema
    >>> s = parse_schema({"name": "t", "task": "classification", "target": "y", "columns": [
    ...     {"name": "y", "type": "categorical", "categories": ["no", "yes"]},
    ...     {"name": "g", "type": "categorical", "categories": ["a", "b"]}]}, path="t")
    >>> f = pd.DataFrame({"y": [0, 1, 1, 1], "g": [0, 0, 1, 1]})
    >>> t = analyst_targets(f, s)
    >>> t["y=yes | g=a"], t["share g=b"], round(t["coef y=yes ~ g=b"], 6)
    (0.5, 0.5, 0.5)
    """
    w = np.ones(len(frame)) if w is None else np.asarray(w, float)
    total = w.sum()
    out: dict[str, float] = {}
    for c in schema.columns:
        v = frame[c.name].to_numpy()
        if c.is_numeric:
            out[f"mean {c.name}"] = float(v.astype(float) @ w / total)
        else:
            for k, label in enumerate(c.categories):
                out[f"share {c.name}={label}"] = float(w[v == k].sum() / total)
    responses, codes = _responses(frame, schema), _codes(frame, schema)

    def cell_means(prefix: str, code: np.ndarray, labels: list[str], of: dict = responses, lead: str = "") -> None:
        mass = np.bincount(code, weights=w, minlength=len(labels))
        for rname, r in of.items():
            s = np.bincount(code, weights=w * r, minlength=len(labels))
            with np.errstate(invalid="ignore", divide="ignore"):
                m = np.where(mass > 0, s / mass, np.nan)
            for k, label in enumerate(labels):
                out[f"{lead}{rname} | {prefix.format(label)}"] = float(m[k])

    for name, (code, labels) in codes.items():
        cell_means(f"{name}={{}}", code, labels)
    others = {b: _responses(frame, schema, b) for b in codes}  # relations without the target
    for a, (code, labels) in codes.items():
        for b, of in others.items():
            if b != a:
                cell_means(f"{a}={{}}", code, labels, of, "pair ")
    for (a, (ca, la)), (b, (cb, lb)) in itertools.combinations(codes.items(), 2):
        labels = [f"{a}={i}, {b}={j}" for i in la for j in lb]
        cell_means("{}", ca * len(lb) + cb, labels)
    X, names = _design(frame, schema)
    sw = np.sqrt(w)[:, None]
    for rname, r in responses.items():
        coef = np.linalg.lstsq(X * sw, r * sw[:, 0], rcond=None)[0]
        for n, b in zip(names[1:], coef[1:], strict=True):
            out[f"coef {rname} ~ {n}"] = float(b)
    return out
