"""A subgroup's estimate read straight off a published noisy marginal, to check the released rows against.

`marginal_match` fits its weights until the residual over all its marginals together, and each one's, reaches the
size of their noise (the discrepancy principle). A relation that shows in a few of a marginal's cells and in none of
the rest adds little to that residual, so the weights can stop well short of it while the marginal itself shows it
beyond its noise: on Ecdat's BudgetFood (23,972 households, epsilon 1; before each marginal's residual was held
too) the food share of households of six or more read 0.406 +- 0.019 off the weights' noisy marginal of (food
share, size, town), the table's was 0.392, and the weighted rows gave 0.329.

Where every column an estimate needs (the one it is of and the subgroup's) lies in one published marginal, and
the subgroup is a union of that marginal's cells, the marginal's noisy counts give the estimate directly: the
subgroup's cells' counts weigh the released rows' value in each bin of the estimate's column,

    direct = sum_c y_c v_c / sum_c y_c,   se = std sqrt(sum_c (v_c - direct)^2) / sum_c y_c   (c in the subgroup),

where ``v_c`` is the released rows' weighted mean of the estimated quantity among the subgroup's rows in c's bin
of the column (so the values inside a bin are the release's own, and only the bins' masses come from the
marginal; a bin no released row of the subgroup holds takes every released row's there, and one no released row
holds at all the caller's value for it: a label's own bin 1, a numeric bin its middle). As a ratio of noisy sums it
is unbiased for the table's value to first order (its bias is of the order of its variance over its value), up to
the release's shape inside the bins, and noisier than the released rows' estimate: the analysis uses it only
where the two disagree beyond both their noise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpiw.analysis.bin_bias import part_binning

#: a marginal whose subgroup total is under this many sds of the noise of that total (std sqrt(cells)) is too
#: noisy for a ratio (its denominator's relative error over a quarter)
MIN_SIGNAL = 4.0

#: a bin of the estimate's column whose count within the subgroup the marginal measured under this many noise sds
#: (its cells' std times the square root of how many it sums) is within the noise of nothing: the released rows
#: there may be the noise's (a model fitted to noisy counts, each cell at or above zero, gives every such cell some
#: rows). Two, as for the far rows (:data:`dpiw.analysis.bin_bias.FAR`); set before it was measured
FLOOR_SDS = 2.0


@dataclass(frozen=True)
class Direct:
    """An estimate read off one published noisy marginal (:func:`direct`)."""

    value: float
    se: float
    part: str  # "generator" or "weights": whose marginal
    columns: tuple[str, ...]  # the marginal's columns
    #: the released rows' estimate over the subgroup's bins of the column that the marginal measured above
    #: :data:`FLOOR_SDS` noise sds (None where none is below it, or none above), and the share of the subgroup's
    #: released rows (by weight) in the bins below it (:func:`_floored`)
    floored: float | None = None
    floored_out: float = 0.0


def cells_of(schema, measurements: dict, scaled) -> dict[str, tuple]:
    """Each published part's cells of the released (scaled) rows, its cardinalities and its binning."""
    out = {}
    if scaled is None:
        return out
    for name, part in measurements.items():
        if not isinstance(part, dict) or not part.get("measurements") or part.get("columns") != schema.names:
            continue
        binning = part_binning(schema, part)
        if binning is not None and list(part.get("cards", binning.cards)) == list(binning.cards):
            out[name] = (binning.cells(scaled), binning.cards, binning)
    return out


def direct(schema, measurements: dict, cells: dict, column: str, where_columns: list[str], h: np.ndarray,
           weights: np.ndarray, in_subgroup: np.ndarray, fallback=None, labels=None) -> Direct | None:
    """The estimate of the weighted mean of ``h`` (a value per released row of ``column``, e.g. the column
    itself or whether it is a label; NaN where the row has no value) over the subgroup ``in_subgroup`` (a mask
    of the released rows over ``where_columns``), read off the published marginal that holds ``column`` and
    every subgroup column with the smallest standard error; None where no marginal holds them all, the subgroup
    cuts inside one of the marginal's cells (the released rows of one cell fall on both sides of it), the
    subgroup's noisy total is under :data:`MIN_SIGNAL` noise sds, or the ratio falls outside the values it
    averages (counts below zero: no mean of anything).

    A `missing: indicator` column's empty rows sit in its lowest bin in the private rows (the released rows
    draw theirs anywhere: their value is not released). A marginal that holds the column's 0/1 column is read
    where it is 0. One that does not is read for the estimate's column only where its lowest bin holds nothing
    but the empty rows (:meth:`dpiw.sdgp.binning.NumericBins.empty_only`), left out; and for a subgroup's
    column only where the subgroup leaves out the lowest bin. A subgroup that holds rows without a value of one
    of its columns gets no reading.

    ``cells``: :func:`cells_of`. ``fallback(bin)``: ``h``'s value in a bin of ``column`` that holds no released
    row (default: the subgroup's released estimate). ``labels``: for a subgroup of categories (a dict of labels),
    each subgroup column's codes in it (a boolean per category): its cells then follow the schema's categories,
    also those no released row holds, rather than the released rows."""
    if column in where_columns:
        return None
    names = list(schema.names)
    needed = [column, *where_columns]
    if any(c not in names for c in needed):
        return None
    if any(schema.column(c).indicator_of for c in needed):  # a 0/1 column of empty values: its own question
        return None
    flag = {names.index(c.indicator_of): j for j, c in enumerate(schema.columns) if c.indicator_of}
    jt, js = names.index(column), [names.index(c) for c in where_columns]
    w, h = np.asarray(weights, float), np.asarray(h, float)
    best = None
    for name, (rows, cards, binning) in cells.items():
        empty = {j: rows[:, flag[j]] == 1 for j in js if j in flag}  # the released rows without a value
        if any((e & in_subgroup).any() for e in empty.values()):
            return None
        checked = ~np.logical_or.reduce([*empty.values(), np.zeros(len(rows), bool)])
        for m in measurements[name]["measurements"]:
            clique, std = list(m["clique"]), float(m.get("std") or 0.0)
            shape = [cards[j] for j in clique]
            if not std > 0 or not {jt, *js} <= set(clique) or len(m["counts"]) != math.prod(shape):
                continue
            y = np.asarray(m["counts"], float).reshape(shape)
            known = [np.asarray(labels[c], bool) for c in where_columns] if labels is not None else None
            got = _read(y, clique, cards, std, rows, jt, js, h, w, in_subgroup, checked, fallback,
                        {j: flag[j] for j in (jt, *js) if j in flag}, schema, binning, known)
            if got is not None and (best is None or got[1] < best.se):
                best = Direct(got[0], got[1], name, tuple(names[j] for j in clique), *got[2:])
    return best


def _along(values: np.ndarray, axis: int, ndim: int) -> np.ndarray:
    """A 1-D array shaped to broadcast along ``axis`` of an ``ndim``-dimensional marginal."""
    shape = [1] * ndim
    shape[axis] = values.size
    return values.reshape(shape)


def _read(y, clique, cards, std, rows, jt, js, h, w, in_subgroup, checked, fallback, flags, schema, binning,
          known=None):
    """(value, se) of one marginal ``y`` (axes in ``clique``'s order), or None. ``checked``: the released rows
    whose cells say whether they are in the subgroup; ``flags``: a `missing: indicator` column's 0/1 column;
    ``known``: the subgroup's categories per subgroup column, where it is a dict of labels."""
    axes = {j: a for a, j in enumerate(clique)}
    member = _member(rows, js, cards, in_subgroup, checked, known)
    if member is None or not member.any():
        return None
    member = np.transpose(member, np.argsort([axes[j] for j in js]))  # its axes in the marginal's order
    cells = np.broadcast_to(member.reshape([cards[j] if j in js else 1 for j in clique]), y.shape)
    # the empty rows of a column: where its 0/1 column is 0 if the marginal holds it, else out of its lowest bin
    for j, f in flags.items():
        if f in axes:
            cells = cells & _along(np.arange(cards[f]) == 0, axes[f], y.ndim)
            continue
        if j != jt:  # a subgroup's column: its empty rows are out of it unless it holds their bin
            if member.take(0, axis=sorted(js, key=axes.get).index(j)).any():
                return None
        elif binning.numeric[schema.columns[j].name].empty_only(schema.columns[j]):
            cells = cells & _along(np.arange(cards[j]) > 0, axes[j], y.ndim)
        else:
            return None
    # the estimated quantity in each bin of the column: the subgroup's released rows there, else every row there
    t, card = rows[:, jt], cards[jt]
    has = ~np.isnan(h)
    h = np.where(has, h, 0.0)
    ws, wa = np.where(in_subgroup & has, w, 0.0), np.where(has, w, 0.0)
    num_s, den_s = np.bincount(t, weights=ws * h, minlength=card), np.bincount(t, weights=ws, minlength=card)
    num_a, den_a = np.bincount(t, weights=wa * h, minlength=card), np.bincount(t, weights=wa, minlength=card)
    released = float((ws * h).sum() / ws.sum()) if ws.sum() > 0 else 0.0
    v = np.array([num_s[k] / den_s[k] if den_s[k] > 0 else num_a[k] / den_a[k] if den_a[k] > 0 else
                  (fallback(k) if fallback is not None else released) for k in range(card)])
    values = np.broadcast_to(_along(v, axes[jt], y.ndim), y.shape)
    ys, vs = y[cells], values[cells]
    total = float(ys.sum())
    if not ys.size or not total > MIN_SIGNAL * std * math.sqrt(ys.size):
        return None
    value = float(ys @ vs) / total
    slack = 1e-9 * (float(np.abs(vs).max()) + 1.0)
    if not vs.min() - slack <= value <= vs.max() + slack:
        # noisy counts below zero took the ratio past every value it averages: no mean of anything (a trial's
        # mean wage among those aged 42-47 read 14.75 where every bin's wage was over 60, its se 46)
        return None
    se = std * float(np.sqrt(((vs - value) ** 2).sum())) / total
    # the subgroup's count in each bin of the column, summed over its cells (and the marginal's other columns)
    along = tuple(a for a in range(y.ndim) if a != axes[jt])
    return (value, se, *_floored(np.where(cells, y, 0.0).sum(axis=along), std * np.sqrt(cells.sum(axis=along)),
                                 num_s, den_s))


def _member(rows, js: list[int], cards, in_subgroup, checked, known=None) -> np.ndarray | None:
    """The subgroup as cells of its columns ``js`` (axes in that order): from the schema's categories
    (``known``), else from the released rows (every released row of a cell on the same side; a cell no released
    row holds is outside); None where it cuts inside a cell."""
    sub_shape = [cards[j] for j in js]
    if not js:  # every row: the column's own cells
        return np.ones((), bool)
    if known is not None:
        member = np.ones(sub_shape, bool)
        for a, inside in enumerate(known):
            member &= _along(inside, a, len(js))
        return member
    key = np.ravel_multi_index(tuple(rows[:, j] for j in js), sub_shape)
    size = math.prod(sub_shape)
    held = np.bincount(key[checked], minlength=size)
    inside = np.bincount(key[checked], weights=in_subgroup[checked].astype(float), minlength=size)
    if np.any((inside > 0) & (inside < held)):
        return None
    return (inside > 0).reshape(sub_shape)


def subgroup_size(schema, measurements: dict, cells: dict, where_columns: list[str], in_subgroup: np.ndarray,
                  labels=None, with_column: str | None = None) -> tuple[float, float, str, tuple[str, ...]] | None:
    """The subgroup's count of the table's rows read off the published marginal that holds its columns with the
    least noise: (count, its sd, whose marginal, its columns); None where no marginal holds them, the subgroup cuts
    inside a cell or reads a `missing: indicator` column. ``cells``, ``labels``: as for :func:`direct`.
    ``with_column``: only the marginals that hold that column as well (the count summed over its cells)."""
    names = list(schema.names)
    if not where_columns or any(c not in names or schema.column(c).indicator_of
                                or schema.column(c).missing == "indicator" for c in where_columns):
        return None
    if with_column is not None and (with_column not in names or with_column in where_columns):
        return None
    js = [names.index(c) for c in where_columns]
    also = set() if with_column is None else {names.index(with_column)}
    best = None
    for name, (rows, cards, _) in cells.items():
        member = _member(rows, js, cards, in_subgroup, np.ones(len(rows), bool),
                         None if labels is None else [np.asarray(labels[c], bool) for c in where_columns])
        if member is None:
            return None
        for m in measurements[name]["measurements"]:
            clique, std = list(m["clique"]), float(m.get("std") or 0.0)
            shape = [cards[j] for j in clique]
            if not std > 0 or not {*js, *also} <= set(clique) or len(m["counts"]) != math.prod(shape):
                continue
            y = np.asarray(m["counts"], float).reshape(shape)
            other = tuple(a for a, j in enumerate(clique) if j not in js)
            ys = y.sum(axis=other)  # the subgroup columns' axes, in the clique's order
            order = [j for j in clique if j in js]
            inside = np.transpose(member, [js.index(j) for j in order])
            summed = int(inside.sum()) * math.prod(shape[a] for a in other)
            sd = std * math.sqrt(summed)
            if best is None or sd < best[1]:
                best = (float(ys[inside].sum()), sd, name, tuple(names[j] for j in clique))
    return best


def _floored(measured: np.ndarray, sd: np.ndarray, num: np.ndarray, den: np.ndarray) -> tuple[float | None, float]:
    """The released rows' estimate (``num / den`` per bin of the column, summed) without the bins whose ``measured``
    subgroup count is under :data:`FLOOR_SDS` times its ``sd``, and the share of ``den`` in them; (None, 0) where no
    bin with released rows is under it, or every one is."""
    low = (measured < FLOOR_SDS * sd) & (den > 0)
    kept = (den > 0) & ~low
    if not low.any() or not kept.any():
        return None, 0.0
    return float(num[kept].sum() / den[kept].sum()), float(den[low].sum() / den[den > 0].sum())
