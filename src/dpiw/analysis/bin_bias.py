"""How far a mean (or a share above a value) within a subgroup is off because values are drawn inside their bins
from the column's own histogram: a first-order estimate from the released rows (post-processing: no privacy
cost); and how far a share may be off where its threshold splits a fine cell that rows pile up in
(:func:`cell_reach`).

A zCDP generator models a numeric column's coarse bins; inside a bin, every released row draws its value from
the column's fine histogram restricted to the bin, whatever its other columns say (:mod:`dpiw.sdgp.binning`). The
weighted mean of ``x`` over a subgroup S is then sum_b P(b | S) E[x | b], where the private rows give
sum_b P(b | S) E[x | b, S]. Inside a bin, S's rows sit where P(S | x) is larger: where P(S | x) grows with x
(deaths with a marker), the release's mean within S is too low by sum_b P(b | S) (E[x | b, S] - E[x | b]).

The estimate: the released rows' P(S | b) per bin (weighted: the weights' view of the table), its logarithm
interpolated linearly between the bins' means (flat past the first and the last), and E[x | b, S] as the bin's
fine histogram tilted by exp(that interpolation). It assumes P(S | x) is smooth across bins; it is exact to
first order when log P(S | x) is linear over neighbouring bins, and 0 when S does not depend on x (every bin's
P(S | b) alike). Past the outer bins' means it takes P(S | x) flat, which understates a share still growing
there (75% of the bias with 4 bins on tests/unit/test_bin_bias.py's populations, 85-100% with 8). A subgroup
defined by the column itself (``mean x where x > 5``) has a step inside a bin: no estimate (0), since the
within-bin values then decide who is in S. Not covered: a `missing: indicator` column's empty rows sit at its
lower bound in the fine histogram, a spike the estimate takes as part of the column's shape.

On bench/interval_coverage.py's skewed population at 200,000 rows (mean kappa among the deaths, 13-14 bins) it finds
-0.010 of a -0.013 error, which the noise-aware interval did not see before (84% covered, now 90%).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

#: points per fine cell of a continuous column on which the tilt is evaluated (an integer cell: its whole numbers,
#: or this many of them spread over it)
POINTS = 8


def value_text(x: float) -> str:
    """A value in a column's units for a person: four significant digits, a large one whole with thousands'
    commas (20,510 and 10,140, not 2.051e+04 and 1.014e+04).

    >>> value_text(20510.4), value_text(9989.2), value_text(7.9453), value_text(0.00012345)
    ('20,510', '9,989', '7.945', '0.0001234')
    """
    return f"{x:,.0f}" if abs(x) >= 1e4 else f"{x:,.4g}"


def bin_text(lo: float, hi: float) -> str:
    """A bin of :meth:`dpiw.analysis.Bundle.bins` for a person: "8 to 40", or "12" for a bin of one value."""
    return value_text(lo) if lo == hi else f"{value_text(lo)} to {value_text(hi)}"


def binning_of(schema, measurements: dict | None):
    """The released bins of a bundle's generator (its fine histograms' cut points, or equal-width bins), or None
    when the bundle publishes no generator measurements."""
    gen = (measurements or {}).get("generator")
    if not gen or schema is None:
        return None
    return part_binning(schema, gen)


def part_binning(schema, part: dict):
    """The bins one published part of measurements.json was taken on (its fine histograms' cut points, or
    equal-width bins), or None where it names neither."""
    from dpiw.sdgp.binning import Binning

    fine = part.get("fine") or {}
    if fine.get("binning"):
        return Binning.from_dict(schema, fine["binning"])
    return Binning.equal_width(schema, int(part["bins"])) if "bins" in part else None


#: a fine cell (not a spike's) holding more than this share of a column's rows: its values are drawn evenly
#: across it, so the column's shape inside is lost (a skewed column on wide bounds: spending on 0 to 100,000)
CROWDED = 0.2


def crowded(schema, measurements: dict | None) -> list[tuple[str, float, float, float, str]]:
    """Per numeric column on a linear scale whose published fine histogram (a DP output) puts more than
    :data:`CROWDED` of its rows in one fine cell (not a spike's, not a whole number's own cell) that is wide for
    the column (at least half its interquartile range, by the same histogram: a column whose rows sit on a few
    coded values in narrow cells is not crowded): the column, that share, the cell's range in the column's units
    and where the cell is ("first", "last" or "inside" the equal-width cells)."""
    binning = binning_of(schema, measurements)
    out = []
    for name, nb in ({} if binning is None else binning.numeric).items():
        col, grid = schema.column(name), nb.grid
        if nb.fine is None or col.scale != "linear" or grid.per_integer:
            continue
        mass = np.asarray(nb.fine, float)[: grid.support]
        mass = mass / mass.sum() if mass.sum() > 0 else mass
        inner = np.arange(grid.offset, grid.offset + grid.middle)  # the equal-width cells, between the spikes
        k = int(inner[np.argmax(mass[inner])])
        cdf = np.cumsum(mass)
        q1, q3 = (int(np.searchsorted(cdf, q)) for q in (0.25, 0.75))
        if mass[k] > CROWDED and q3 - q1 <= 2:  # the middle half of the rows within two cells or fewer
            if grid.span is None:
                below, above = grid.edges()
                lo, hi = float(col.from_unit(below[k])), float(col.from_unit(above[k]))
            else:  # runs of whole numbers: the cell's first and last
                first = grid.first()
                lo, hi = col.lower + float(first[k]), col.lower + float(first[k + 1] - 1)
            where = "first" if k == grid.offset else "last" if k == inner[-1] else "inside"
            out.append((name, float(mass[k]), lo, hi, where))
    return out


def crowded_text(name: str, share: float, lo: float, hi: float, where: str, column=None) -> str:
    """What :func:`crowded` found, for a person, with the fix that fits where the cell is."""
    lower, upper = ("the lower bound", "the upper bound") if column is None else (f"{column.lower:g}",
                                                                                  f"{column.upper:g}")
    spiked = () if column is None else column.spikes
    # `scale: log` (log(1 + x - lower)) narrows a cell at x only where 1 + x - lower is under the span over its log:
    # near the lower bound (a trial's net assets on -1000 to 2000, crowded at 0: a log cell there is 31 wide, not 12)
    span = None if column is None else column.upper - column.lower
    log = span is None or (1 + (lo + hi) / 2 - column.lower) * math.log1p(span) < span
    fix = {"first": ("" if "lower" in spiked else f"if many rows hold exactly {lower}, `spikes: [{lower}]` in the "
                                                   "schema keeps them; ")
                    + ("a skewed column gets narrow cells near the lower bound with `scale: log`" if log else
                       "else narrower public bounds"),
           "last": f"if many rows hold exactly {upper} (a top code), `spikes: [{upper}]` in the schema keeps them; "
                   "else narrower public bounds",
           "inside": "narrower public bounds" + (", or `scale: log` for a skewed column" if log else
                                                 f" (`scale: log` would widen this cell: its cells are narrow only "
                                                 f"near the lower bound, {lower})")}[where]
    above = "above " if where == "first" and "lower" in spiked else ""  # the cell after a lower spike's own
    return (f"column '{name}': {share:.0%} of its rows are in one fine cell ({above}{value_text(lo)} to "
            f"{value_text(hi)}) of its public bounds, where values are drawn evenly across the cell: its shape there "
            f"is lost and its mean can be far off; {fix}")


#: rows past a stretch of empty fine cells at least FAR[1] times as long as the middle 90% of the column's released
#: rows span, whose measured mass is under FAR[0] noise sds (dpiw.sdgp.binning.outer_noise), are said to be
#: perhaps the noise's (:func:`far_rows`)
FAR = (2.0, 1.0)


def far_rows(schema, measurements: dict | None) -> list[tuple[str, float, float, float]]:
    """Per numeric column, the released rows its published fine histogram puts far out past a long stretch it
    measured empty (longer than the middle 90% of its rows span), where its tree's own measurement
    (:func:`leaf_estimates`) does not tell them from noise (:func:`dpiw.sdgp.binning.outer_noise` at
    :data:`FAR`): the column, their share of its rows and their range in
    its units. A trial's count of hospital visits on public bounds 0-200 came back with 0.7% of its rows at 144-200
    (none above 51 in the table): its mean 8 times the table's. DP outputs only."""
    from dpiw.sdgp.binning import outer_noise

    binning = binning_of(schema, measurements)
    out = []
    for name, nb in ({} if binning is None else binning.numeric).items():
        leaves = leaf_estimates(measurements, name)
        if nb.fine is None or leaves is None:
            continue
        grid, col = nb.grid, schema.column(name)
        mass = np.maximum(np.asarray(nb.fine, float), 0.0)
        mass[grid.support:] = 0.0
        if not mass.sum() > 0:
            continue
        mass = mass / mass.sum()
        cdf = np.cumsum(mass)
        middle = float(np.searchsorted(cdf, 0.95) - np.searchsorted(cdf, 0.05) + 1)  # leaves the middle 90% span
        kept = outer_noise(mass, np.asarray(leaves[0], float), leaves[1], FAR[0], grid.support, gap=FAR[1],
                           width=middle)
        far = np.flatnonzero((mass > 0) & (kept == 0))
        if not far.size:
            continue
        if grid.span is None:
            below, above = grid.edges()
            lo, hi = float(col.from_unit(below[far[0]])), float(col.from_unit(above[far[-1]]))
        else:
            first = grid.first()
            lo, hi = col.lower + float(first[far[0]]), col.lower + float(first[far[-1] + 1] - 1)
        out.append((name, float(mass[far].sum()), lo, hi))
    return out


def far_text(name: str, share: float, lo: float, hi: float, column=None) -> str:
    """What :func:`far_rows` found, for a person, with the fix."""
    bound = "" if column is None else f" than {column.lower:g} to {column.upper:g}"
    return (f"column '{name}': {share:.2%} of its rows lie at {bin_text(lo, hi)}, beyond a long stretch its fine "
            "histogram measured empty, and its measurement there is within 2 noise sds of nothing: they may be the "
            "noise's, or a few of the table's far rows put where the noise left them (the measurement cannot tell), "
            "and its mean, a share above a high value or a high quantile can be far off; if the codebook bounds the "
            f"column tighter{bound} (a bound no row can pass, not the rows' own largest), give the schema that bound")


def _points(nb) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each supported fine cell's points in scaled units, their mass (the cell's, spread evenly) and their cell."""
    grid = nb.grid
    fine = np.ones(grid.cells) if nb.fine is None else np.maximum(np.asarray(nb.fine, float), 0.0)
    fine = fine[: grid.support]
    if grid.span is None:
        cell = np.repeat(np.arange(grid.support), POINTS)
        pos = grid.at(cell, (np.tile(np.arange(POINTS), grid.support) + 0.5) / POINTS)  # a spike's: its bound
        return pos, fine[cell] / POINTS, cell
    first = grid.first()[: grid.support + 1]
    counts = np.diff(first)
    points = np.minimum(counts, POINTS)  # every whole number of a cell, or POINTS of them spread over it, centred
    cell = np.repeat(np.arange(grid.support), points)
    j = np.arange(cell.size) - np.repeat(np.cumsum(points) - points, points)
    pos = (first[cell] + ((2 * j + 1) * counts[cell]) // (2 * np.maximum(points[cell], 1))) / grid.span
    return pos, fine[cell] / np.maximum(points[cell], 1), cell


#: how within_bin_bias models P(S | x) inside the bins: linear in "log" P or in "logit" P between the bins' centres,
#: and "flat" or continuing the end "slope" past the first and last centres. Logit with the end slopes
#: (bench/tilt_ends.py: 36 cases of density, shape of P(S | x) and bins; of the 26 whose error is at least 0.002,
#: within 75-125% of it in 23, against 14 for log and flat, the earlier rule, which saw a fifth to a half of the
#: error where the last bin is wide: a skewed column's bins of equal mass, a trial's defaulters' balance)
TILT_SCALE = "logit"
TILT_ENDS = "slope"


def _tilt(pos: np.ndarray, centre: np.ndarray, share: np.ndarray) -> np.ndarray:
    """P(S | x) at ``pos`` up to a constant factor, from the subgroup's ``share`` of the rows of each bin whose
    centre is ``centre`` (increasing): :data:`TILT_SCALE`, :data:`TILT_ENDS`."""
    if np.ptp(share) == 0:  # no tilt (every row in the subgroup, say): exactly none, not one in the last bit
        return np.ones_like(pos)
    f = np.log(share) if TILT_SCALE == "log" else np.log(share) - np.log1p(-np.minimum(share, 1 - 1e-9))
    g = np.interp(pos, centre, f)
    if TILT_ENDS == "slope" and centre.size >= 2:
        lo, hi = pos < centre[0], pos > centre[-1]
        g[lo] = f[0] + (pos[lo] - centre[0]) * (f[1] - f[0]) / (centre[1] - centre[0])
        g[hi] = f[-1] + (pos[hi] - centre[-1]) * (f[-1] - f[-2]) / (centre[-1] - centre[-2])
    return np.exp(g) if TILT_SCALE == "log" else 1.0 / (1.0 + np.exp(-np.clip(g, -700.0, 700.0)))


def within_bin_bias(nb, scaled: np.ndarray, weights: np.ndarray, mask: np.ndarray, width) -> float:
    """The estimate (in the column's units: ``width`` = upper - lower, or a function from scaled values to what
    is averaged: :meth:`dpiw.data.schema.Column.from_unit` for a column with ``scale: log``, an indicator of the
    values above a threshold for a share) of the weighted mean of ``scaled`` (or of ``width(scaled)``) over
    ``mask`` minus the one whose within-bin values follow the subgroup (the module's text); positive: too high.

    ``nb`` is the column's :class:`dpiw.sdgp.binning.NumericBins`, ``scaled`` its released values in [0, 1],
    ``weights`` the rows' weights, ``mask`` the subgroup (rows with a value only)."""
    cell = nb.cells(scaled)
    card = nb.card
    w_all = np.bincount(cell, weights=weights, minlength=card)
    w_in = np.bincount(cell[mask], weights=weights[mask], minlength=card)
    pos, mass, fcell = _points(nb)
    if callable(width):  # a function of the values (a log scale's units, a share's indicator); the tilt stays on
        # the scaled positions
        at, width = width(pos), 1.0
    else:
        at = pos
    bin_of = np.searchsorted(nb.cuts, fcell, side="right") - 1
    bin_mass = np.bincount(bin_of, weights=mass, minlength=card)
    centre = np.bincount(bin_of, weights=mass * pos, minlength=card) / np.where(bin_mass > 0, bin_mass, 1.0)
    centre_at = centre if at is pos else np.bincount(bin_of, weights=mass * at, minlength=card) / np.where(
        bin_mass > 0, bin_mass, 1.0)
    seen = (w_all > 0) & (w_in > 0) & (bin_mass > 0)
    if seen.sum() < 2:
        return 0.0
    # P(S | x): logit-linear between the bins' means and past the first and the last (:data:`TILT_SCALE`,
    # :data:`TILT_ENDS`; log-linear end slopes over-corrected a saturating share, 110-170% of the bias on
    # tests/unit/test_bin_bias.py's populations, and flat ends saw a fifth to a half of it under a wide last bin)
    tilt = _tilt(pos, centre[seen], w_in[seen] / w_all[seen])
    tilted_mass = np.bincount(bin_of, weights=mass * tilt, minlength=card)
    tilted = np.bincount(bin_of, weights=mass * tilt * at, minlength=card) / np.where(tilted_mass > 0,
                                                                                       tilted_mass, 1.0)
    share = w_in / w_in.sum()  # P(b | S) as released
    use = (bin_mass > 0) & (tilted_mass > 0)
    return float(width * (share[use] @ (centre_at[use] - tilted[use])))


def depends_on(where, data: pd.DataFrame, column: str, nb, spec) -> bool:
    """Whether the subgroup ``where`` (None, a mapping, or a function of the rows) changes when ``column``'s
    values move inside their bins: to each bin's lowest point, to its highest, and drawn again. Then it is
    defined by the column itself. ``spec``: the column's :class:`dpiw.data.schema.Column` (its bounds, scale
    and whether it holds whole numbers)."""
    if where is None:
        return False
    if isinstance(where, dict):
        return column in where
    return bool(flipped(where, data, column, nb, spec).any())


#: an integer column with more whole numbers in its bounds than this has its bins' ends from their edges
WHOLE_NUMBERS_MAX = 1 << 20


def bin_ends(nb, spec) -> tuple[np.ndarray, np.ndarray]:
    """Each bin's lowest and highest value in the column's units: for an integer column the first and last whole
    numbers the bin holds (where each whole number of the bounds lands: right on a log scale too), NaN for a bin
    that holds none; else just inside its edges (:meth:`dpiw.sdgp.binning.NumericBins.ends`)."""
    if not spec.integer:
        return tuple(np.asarray(spec.from_unit(e), float) for e in nb.ends())
    if np.floor(spec.upper) - np.ceil(spec.lower) + 1 > WHOLE_NUMBERS_MAX:  # a dollar amount on 0 to 3e9: not every
        # whole number (22 GiB: a trial's MemoryError), the ones just inside each bin's edges
        lowest, highest = (np.asarray(spec.from_unit(e), float) for e in nb.ends())
        lowest, highest = np.ceil(lowest), np.floor(highest)
        highest[-1] = max(highest[-1], np.floor(spec.upper))  # the bound itself lands in the last bin
        none = lowest > highest
        return np.where(none, np.nan, lowest), np.where(none, np.nan, highest)
    whole = np.arange(np.ceil(spec.lower), np.floor(spec.upper) + 1)
    cell = nb.cells(spec.to_unit(whole))
    lowest, highest = np.full(nb.card, np.nan), np.full(nb.card, np.nan)
    np.fmin.at(lowest, cell, whole)
    np.fmax.at(highest, cell, whole)
    return lowest, highest


def flipped(where, data: pd.DataFrame, column: str, nb, spec) -> np.ndarray:
    """The rows whose membership of the subgroup ``where`` changes when ``column``'s values move inside their
    bins (to each bin's lowest value, to its highest, and for a continuous column drawn again): where the
    subgroup cuts inside a bin, whose rows the release draws with the bin's relation to every other column, not
    their own."""
    from dpiw.analysis.noise_aware import subgroup

    if where is None or (isinstance(where, dict) and column not in where):
        return np.zeros(len(data), dtype=bool)
    x = data[column].to_numpy(float)
    has = ~np.isnan(x)
    cell = nb.cells(spec.to_unit(x[has]))
    lowest, highest = bin_ends(nb, spec)
    moves = [lowest[cell], highest[cell]]
    if not spec.integer:
        moves.append(spec.from_unit(nb.values(cell, np.random.default_rng(0))))
    base, out = subgroup(data, where), np.zeros(len(data), dtype=bool)
    for value in moves:
        moved = x.copy()
        moved[has] = value
        kept = pd.Series(moved, index=data.index).astype(data[column].dtype) if spec.integer else moved
        out |= base != subgroup(data.assign(**{column: kept}), where)
    return out


def cut_bins(where, data: pd.DataFrame, weights: np.ndarray, column: str, nb, spec) -> tuple[float, dict]:
    """How much of the subgroup ``where`` sits in bins of ``column`` that it cuts: each bin's rows in the
    subgroup, times the share of the bin's rows the subgroup would hold if the column were all that decided
    (the rest, :func:`flipped` into it by a move inside the bin, are what it leaves out), summed over the bins and
    over the subgroup's rows. A bin the subgroup holds nearly whole counts little (its rows' relation is nearly
    the bin's own), one it takes half of counts half. Returns that share and, per cut bin, (the subgroup's share
    of the bin's rows, the bin's share of the subgroup)."""
    from dpiw.analysis.noise_aware import subgroup

    base = subgroup(data, where)
    total = float(weights[base].sum())
    flips = flipped(where, data, column, nb, spec)
    if not total > 0 or not flips.any():
        return 0.0, {}
    x = data[column].to_numpy(float)
    cell = np.full(len(x), -1)
    has = ~np.isnan(x)
    cell[has] = nb.cells(spec.to_unit(x[has]))
    inside = np.bincount(cell[base & has], weights[base & has], minlength=nb.card)
    left = np.bincount(cell[flips & ~base & has], weights[flips & ~base & has], minlength=nb.card)
    held = np.divide(inside, inside + left, out=np.ones(nb.card), where=inside + left > 0)
    part = inside * (1 - held)
    cut = {int(b): (float(held[b]), float(inside[b]) / total) for b in np.nonzero(part > 0)[0]}
    return float(part.sum()) / total, cut


#: a fine cell its tree measured with at least PILE_NAMED of a column's rows, more than PILE times the median of
#: the AROUND cells on either side and PILE_SDS noise sds, is a pile: rows may sit on one value inside it (a coded
#: 12 among 0-25), which the values drawn evenly across it do not show; a share's threshold splitting it reaches
#: over the cell's rows where they are at least PILE_SHARE of the subgroup's
PILE_SHARE = 0.01
PILE = 2.0
PILE_NAMED = 0.05
AROUND = 3
#: ... beyond this many noise sds of a level: about one false pile in ten releases of 11 numeric columns of 256
#: cells (on Ecdat's MedExp at epsilon 1, 5,574 rows, every cell found at 3 sds or less held 1.2% of the rows or
#: fewer, and every one at 4 or more a real pile of 7-40%)
PILE_SDS = 4.0
#: the pile test of a share's own threshold (:func:`cell_reach`): one cell the analyst named, not a search over every
#: cell of every column, so at least PILE_SHARE of the rows and 2 noise sds (bench/heaped_shares.py: 30% of an
#: income's rows rounded to tens, P(x > 50) at 20,000 rows was covered in 0% of releases, now 100%, and no false
#: pile on the same column unrounded; the datasheet's 5% and 4 sds missed a trial's 2.1% of rows at exactly 50.0)
REACH_NAMED = PILE_SHARE
REACH_SDS = 2.0
#: ... or one that holds at least REACH_HEAVY of the rows (and REACH_SDS noise sds), whatever the cells around it
#: hold, warns (without reaching over it): where every whole number heaps, its neighbours are piles too and none is
#: twice their median (a trial's weeks off work on 0-200, cells 0.78 wide: 15.6% of the rows at exactly 1.0 in the
#: cell 0.78-1.56, 7-14% in the cells around it; P(weeks > 1) read 0.88-0.90 in 3 releases of 3 against 0.77,
#: unwarned). Reaching over such a cell took a heaped column's shares at thresholds in such cells from 0-53% covered
#: to 100% (one in a lighter cell stayed at 33%) but made a smooth one's intervals 2-8 times wider
#: (bench/heaped_shares.py --weeks): the interval reaches over a pile only. None: neighbours only
REACH_HEAVY: float | None = 0.05
#: whether the interval reaches over such a cell too (bench/heaped_shares.py --weeks, arm ``heavy``: not adopted)
HEAVY_REACHES = False


def heavy_only(nb, spec, value: float, leaves: tuple[np.ndarray, float] | None) -> bool:
    """Whether the fine cell holding ``value`` is a pile for a share's own threshold (:func:`pile_at`) only by its
    weight (:data:`REACH_HEAVY`), not over twice the cells around it: a share or quantile there warns, and its
    interval reaches over the cell only with :data:`HEAVY_REACHES`."""
    grid = nb.grid
    leaf = int(grid.leaf(spec.to_unit(np.array([float(value)])))[0])
    return bool(leaf < grid.support and _piled(grid, leaves, leaf, REACH_NAMED, REACH_SDS, REACH_HEAVY)
                and not _piled(grid, leaves, leaf, REACH_NAMED, REACH_SDS))


def pile_words(heavy: bool) -> str:
    """Why a cell is a pile for a share's own threshold, for a warning (``heavy``: :func:`heavy_only`)."""
    if not heavy:
        return "piled over twice the cells around it"
    return (f"and the column's tree measured {REACH_HEAVY:.0%} or more of all its rows there (no pile over twice "
            "the cells around it)")


def pile_at(nb, spec, value: float, x: np.ndarray, weights: np.ndarray, mask: np.ndarray,
            leaves: tuple[np.ndarray, float] | None) -> tuple[float, tuple[float, float] | None]:
    """The fine cell that holds ``value`` where rows pile up in it (as :func:`cell_reach` tests, wherever in the
    cell the value lies, its edges included): the weighted share of the subgroup's released rows in it and its
    range in the column's units; (0, None) where it is no pile or holds one value. Arguments as for
    :func:`cell_reach`."""
    grid = nb.grid
    leaf = int(grid.leaf(spec.to_unit(np.array([float(value)])))[0])
    if leaf >= grid.support:
        return 0.0, None
    lo, hi, ends = cell_range(grid, spec, leaf)
    if lo == hi or ends[0] == ends[1] or not _piled(grid, leaves, leaf, REACH_NAMED, REACH_SDS, REACH_HEAVY):
        return 0.0, None
    share = float(weights[mask & (grid.leaf(spec.to_unit(x)) == leaf)].sum() / weights[mask].sum())
    return (share, (lo, hi)) if share >= PILE_SHARE else (0.0, None)


def cell_reach(nb, spec, threshold: float, compare, x: np.ndarray, weights: np.ndarray, mask: np.ndarray,
               leaves: tuple[np.ndarray, float] | None) -> tuple[float, float, tuple[float, float] | None]:
    """How far the share of a subgroup's rows whose value is ``compare``-ed to ``threshold`` may be off because
    the threshold falls inside a fine cell where rows pile up (:data:`PILE`): the released values are spread
    evenly across the cell, the table's may all lie on one side of the threshold. Returns the weighted share of
    the subgroup's released rows in that cell on the share's side and on the other (how far the share may be
    too high and too low), and the cell's range in the column's units; (0, 0, None) where every value the cell
    can hold is on one side of the threshold (a spike's cell, a cell of one whole number, a threshold at an edge
    the comparison does not split: ``<`` or ``>=`` at a cell's lowest value), or the cell is no pile.

    ``nb`` is the column's :class:`dpiw.sdgp.binning.NumericBins`, ``spec`` its schema column, ``x`` the
    released values in the column's units (rows with a value), ``weights`` their weights, ``mask`` the
    subgroup, ``leaves`` its measured fine cells (:func:`leaf_estimates`)."""
    grid = nb.grid
    leaf = int(grid.leaf(spec.to_unit(np.array([float(threshold)])))[0])
    if leaf >= grid.support:
        return 0.0, 0.0, None
    _, _, ends = cell_range(grid, spec, leaf)
    # the table's rows in the cell may lie anywhere in it, the lowest edge included (values drawn never are there)
    if compare(ends[0], threshold) == compare(ends[1], threshold):
        return 0.0, 0.0, None
    _, cell = pile_at(nb, spec, threshold, x, weights, mask, leaves)
    if cell is None:
        return 0.0, 0.0, None
    here = mask & (grid.leaf(spec.to_unit(x)) == leaf)
    total = weights[mask].sum()
    hit = compare(x, threshold)
    return float(weights[here & hit].sum() / total), float(weights[here & ~hit].sum() / total), cell


def cell_range(grid, spec, leaf: int) -> tuple[float, float, tuple[float, float]]:
    """A fine cell's range in the column's units, and the least and largest value a release draws in it: [lo, hi)
    (rounded for a whole-number column), or its first and last whole number."""
    if grid.span is None:
        below, above = grid.edges()
        lo, hi = float(spec.from_unit(below[leaf])), float(spec.from_unit(above[leaf]))
        top = float(np.nextafter(hi, -np.inf))
        return lo, hi, ((float(np.rint(lo)), float(np.rint(top))) if spec.integer else (lo, top))
    first = grid.first()
    lo, hi = spec.lower + float(first[leaf]), spec.lower + float(first[leaf + 1] - 1)
    return lo, hi, (lo, hi)


def leaf_estimates(measurements: dict | None, name: str) -> tuple[np.ndarray, float] | None:
    """A numeric column's fine cells as its published tree measured them, before the pruning (the consistent
    least-squares leaves of :func:`dpiw.sdgp.binning.consistent`: unbiased, noisy), as shares of the rows, and
    one level's noise sd as a share; None where the bundle publishes no tree levels."""
    from dpiw.sdgp.binning import consistent

    gen = (measurements or {}).get("generator") or {}
    fine = gen.get("fine") or {}
    levels = (fine.get("levels") or {}).get(name)
    if not levels or not gen.get("total"):
        return None
    total = float(gen["total"])
    est = consistent([np.array([total])] + [np.asarray(lv, float) for lv in levels], total)[-1]
    return est / total, float(fine["std"][name]) / total


def _piled(grid, leaves: tuple[np.ndarray, float] | None, leaf: int, named: float = PILE_NAMED,
           sds: float = PILE_SDS, heavy: float | None = None) -> bool:
    """Whether the column's measured fine cells (:func:`leaf_estimates`, before the pruning) put at least
    ``named`` of the rows in ``leaf`` (:data:`PILE_NAMED` by default; a share's threshold asks
    :data:`REACH_NAMED`), and more than :data:`PILE` times the median of the :data:`AROUND` cells on either side
    plus ``sds`` noise sds (:data:`PILE_SDS`, or :data:`REACH_SDS`; a spike's leaf left out: one value, not a
    stretch of the column).
    Measured, not pruned: the pruning gives a node's mass to the one child above the threshold, so a sparse
    stretch comes back as a comb of lumps and emptied cells (a cell released with 5% of the rows that holds
    0.6%); and the median, not the nearest cell, since two piles may sit side by side. With ``heavy`` (a share's
    own threshold: :data:`REACH_HEAVY`), a cell of at least that share of the rows and ``sds`` noise sds is one
    too, whatever its neighbours hold."""
    if leaves is None:
        return False
    est, sd = leaves
    est = np.asarray(est, float)[: grid.support]
    spikes = ({0} if grid.low and grid.offset == 1 else set()) | (
        {grid.support - 1} if grid.high and not grid.per_integer else set())
    around = [max(est[k], 0.0) for k in range(leaf - AROUND, leaf + AROUND + 1)
              if k != leaf and 0 <= k < grid.support and k not in spikes]
    if heavy is not None and est[leaf] >= heavy and est[leaf] > sds * sd:
        return True
    return bool(est[leaf] >= named and est[leaf] > PILE * (np.median(around) if around else 0.0) + sds * sd)


def piles(schema, measurements: dict | None) -> list[tuple[str, float, float, float]]:
    """Per numeric column, the fine cells its published tree measured as piles (:func:`_piled`): not a spike's,
    nor of one whole number (those keep their value), nor a crowded cell (:func:`crowded` names those). The
    column, the cell's measured share of the rows, its range."""
    binning = binning_of(schema, measurements)
    named = {found[0] for found in crowded(schema, measurements)}
    out = []
    for name, nb in ({} if binning is None else binning.numeric).items():
        leaves = leaf_estimates(measurements, name)
        if leaves is None or nb.grid.per_integer or name in named:
            continue
        col, grid = schema.column(name), nb.grid
        for leaf in np.nonzero(np.asarray(leaves[0])[: grid.support] >= PILE_NAMED)[0]:
            lo, hi, ends = cell_range(grid, col, int(leaf))
            if lo != hi and ends[0] != ends[1] and _piled(grid, leaves, int(leaf)):  # not a spike's one value
                out.append((name, float(leaves[0][leaf]), lo, hi))
    return out


def pile_fix(column, cells: int, lo: float, hi: float) -> str:
    """What keeps a column's pile of rows on one value in the cell ``lo`` to ``hi``: in a cell at a bound no spike
    keeps, `spikes: [that bound]` (no debt, a top code), then as elsewhere: `integer: true` where that gives the
    value a cell of its own (bounds spanning at most ``cells`` whole numbers; on a log scale, a cell narrower than
    1, whose values round to one whole number), else narrower bounds or a category; on bounds of more than
    :data:`WIDE` times ``cells`` whole numbers, only a public code as a bound or a category."""
    # a trial's card balances on 0 to 10,000, 5% of them exactly 0: told `integer: true`, which gives 0 no cell of its
    # own on bounds of 10,001 whole numbers; a spike at the bound does
    ends = [(bound, value) for bound, value, at in (("lower", column.lower, lo <= column.lower),
                                                    ("upper", column.upper, hi >= column.upper))
            if at and bound not in column.spikes]
    if ends:
        bound, value = ends[0]
        other = _pile_fix(column, cells, lo, hi)
        return (f"`spikes: [{value:g}]` in the schema keeps it, if it is {value:g} (the {bound} bound)"
                + (f"; else {other}" if other else ""))
    return _pile_fix(column, cells, lo, hi)


#: bounds spanning more than this many times the fine cells' whole numbers: narrowing them to a whole number a cell
#: is no fix to offer (a trial's earnings on 0 to 100,000 were told "bounds spanning at most 256 whole numbers")
WIDE = 4


def _pile_fix(column, cells: int, lo: float, hi: float) -> str:
    if not column.integer and np.floor(hi) < lo:  # no whole number inside: `integer: true` has none to keep
        return ""
    if column.scale == "log":
        if hi - lo < 1 and not column.integer:
            return "`integer: true` in the schema keeps it, if it is a whole number"
        return "a category, or public bounds that give it a narrower cell, keeps it"
    span = int(round(column.upper - column.lower)) + 1
    if span > WIDE * cells:  # earnings on 0 to 100,000: bounds of 256 dollars are no fix
        return ("it is kept only where its value is public: a codebook's top or bottom code as that bound, with "
                "`spikes:` there, or a category listing the column's values; values read off the rows are not public")
    if span > cells:
        return (f"public bounds spanning at most {cells} whole numbers (with `integer: true`) give each one a cell, "
                "or a category keeps it")
    return "" if column.integer else "`integer: true` in the schema keeps it, if it is a whole number"


#: a pile no schema change of the column's bounds, scale or whole numbers keeps: a value between whole numbers (a band's
#: midpoint, a trial's ages of 0.19, 0.32...); only a category keeps it (it was "it is lost" until a trial's curator
#: found no fix in the message)
LOST = ("it is lost unless its values are public (a codebook's band midpoints or codes) and the column is declared a "
        "category listing them; values read off the rows are not public")


def piles_text(found: list[tuple], column, cells: int) -> str:
    """The piles :func:`piles` found in one column (``found``: its entries), in one line for a person."""
    fixes = [pile_fix(column, cells, lo, hi) for _, _, lo, hi in found]
    if len(found) == 1:
        _, share, lo, hi = found[0]
        said = (f"{share:.0%} of its rows are in the fine cell {value_text(lo)} to {value_text(hi)}, over twice the "
                "cells around it, and are drawn evenly across it: if many rows hold one value there, "
                + (fixes[0] or LOST))
    else:  # each cell with its own fix, the same fix said once
        groups: dict[str, list[str]] = {}
        for (_, share, lo, hi), fix in zip(found, fixes, strict=True):
            groups.setdefault(fix or LOST, []).append(f"{value_text(lo)} to {value_text(hi)}: {share:.0%}")
        said = (f"{len(found)} fine cells hold piles of its rows, over twice the cells around them, each drawn evenly "
                "across it: if many rows hold one value there, " + "; ".join(
                    f"{fix} ({', '.join(cells_)})" for fix, cells_ in groups.items()))
    return (f"column '{found[0][0]}': {said}; a share or quantile at {'one' if len(found) > 1 else 'it'} warns and its "
            "interval reaches over the cell")


def pile_lines(schema, measurements: dict | None) -> dict[str, str]:
    """Each numeric column with :func:`piles`, and its one line for a person (:func:`piles_text`)."""
    by_column: dict[str, list] = {}
    for found in piles(schema, measurements):
        by_column.setdefault(found[0], []).append(found)
    if not by_column:
        return {}
    binning = binning_of(schema, measurements)
    return {name: piles_text(found, schema.column(name), binning.numeric[name].grid.cells)
            for name, found in by_column.items()}


def _threshold_bin(nb, spec, threshold: float, compare) -> tuple[int, int, int, np.ndarray]:
    """The coarse bin holding ``threshold`` (its index and its first and past-last supported fine cell) and, per
    fine cell of it, the share of its values (as a release gives them: a whole-number column's rounded) that are
    ``compare``-ed true to the threshold."""
    grid = nb.grid
    pos, _, cell = _points(nb)
    value = np.asarray(spec.from_unit(pos), float)
    hit = compare(np.rint(value) if spec.integer else value, float(threshold)).astype(float)
    points = np.bincount(cell, minlength=grid.support)
    frac = np.bincount(cell, weights=hit, minlength=grid.support) / np.maximum(points, 1)
    leaf = int(grid.leaf(spec.to_unit(np.array([float(threshold)])))[0])
    b = int(np.searchsorted(nb.cuts, min(leaf, grid.support - 1), side="right") - 1)
    lo, hi = int(nb.cuts[b]), min(int(nb.cuts[b + 1]), grid.support)
    return b, lo, hi, frac[lo:hi]


def _pruned_side(pruned: np.ndarray, frac: np.ndarray) -> float:
    """The share of a bin's pruned mass (``pruned``, per fine cell) on the threshold's side (``frac``: each cell's
    share of values there): exactly 0 or 1 where every cell holding mass lies on one side (a dot product and a sum
    may differ in their last bit)."""
    if not (pruned * frac).any():
        return 0.0
    if not (pruned * (1.0 - frac)).any():
        return 1.0
    return float(pruned @ frac / pruned.sum())


def _across_sd(leaves: tuple[np.ndarray, float], lo: int, frac: np.ndarray, g_pruned: float) -> float:
    """The noise sd of the sum of the measured fine cells, from ``lo`` on, on the other side of a threshold from a
    pruned bin wholly on one side of it (``g_pruned`` 0 or 1; ``frac`` as :func:`_threshold_bin` gives it):
    ``leaves``' sd per node times the square root of the cells' canonical nodes (least squares does no worse)."""
    from dpiw.sdgp.binning import canonical

    other = np.flatnonzero((frac if g_pruned == 0.0 else 1.0 - frac) > 0)
    return leaves[1] * math.sqrt(max(canonical(lo + other[0], lo + other[-1] + 1), 1))


def pruning_reach(nb, spec, threshold: float, compare, x: np.ndarray, weights: np.ndarray, mask: np.ndarray,
                  leaves: tuple[np.ndarray, float] | None) -> tuple[float, float]:
    """How far the share of a subgroup's rows whose value is ``compare``-ed to ``threshold`` may be off because the
    fine histogram the values are drawn from was pruned: the release empties every node of its tree measured
    below its noise and gives that node's rows to its sibling, so in a sparse stretch the rows come back as a
    comb of lumps (whole numbers 9 and 10 emptied, their rows drawn at 11), and a threshold between a lump and
    the cells it took rows from counts them on the wrong side. The tree's own measured cells before the pruning
    (:func:`leaf_estimates`: unbiased, noisy) say where those rows were.

    Only the coarse bin holding the threshold matters (the model gives each bin its rows; inside it the values
    follow the pruned histogram): its share of the subgroup's released rows times the difference between the
    share of its pruned and of its measured mass on the threshold's side. Returns how far the share may be too
    high and too low (one of them 0, but where the bin's measured mass is within one noise sd of nothing: the
    measured split then says nothing, and the bin's rows may be on either side; and where the pruned bin lies wholly
    on one side and the measured cells across the threshold have a noise sd (:func:`_across_sd`) of at least the
    bin's measured mass, it reaches over the whole bin to the other side). ``x``, ``weights``, ``mask``: as for
    :func:`cell_reach`."""
    if leaves is None or nb.fine is None:
        return 0.0, 0.0
    b, lo, hi, frac = _threshold_bin(nb, spec, threshold, compare)
    if np.all(frac == frac[0]) and frac[0] in (0.0, 1.0):  # the whole bin on one side: its rows are the model's
        return 0.0, 0.0
    pruned = np.maximum(np.asarray(nb.fine, float)[lo:hi], 0.0)
    measured = np.asarray(leaves[0], float)[lo:hi]
    if pruned.sum() <= 0:
        return 0.0, 0.0
    g_pruned = _pruned_side(pruned, frac)
    total = float(measured.sum())
    here = mask & (nb.cells(spec.to_unit(x)) == b)
    p_bin = float(weights[here].sum() / max(weights[mask].sum(), 1e-300))
    if total <= leaves[1]:  # nothing measured in the bin beyond its noise: its rows may lie either side
        return p_bin * g_pruned, p_bin * (1.0 - g_pruned)
    if g_pruned in (0.0, 1.0) and _across_sd(leaves, lo, frac, g_pruned) >= total:
        # the pruned bin wholly on one side, and the measured cells across the threshold as noisy as the whole bin:
        # their sum says nothing of how many of its rows lie there (a trial's nondocco >= 4: the cells above 3 summed
        # to 0.0003 of the rows, noise sd 0.035, truth 0.019), so its rows may lie on the other side
        return p_bin * g_pruned, p_bin * (1.0 - g_pruned)
    d = p_bin * (g_pruned - min(max(float(measured @ frac) / total, 0.0), 1.0))
    return max(d, 0.0), max(-d, 0.0)


def measured_shape(nb, spec, threshold: float, x: np.ndarray, weights: np.ndarray,
                   leaves: tuple[np.ndarray, float]) -> tuple[np.ndarray, np.ndarray]:
    """A subgroup's values (``x``, ``weights``: its rows with a value) with those in the coarse bin holding
    ``threshold`` given the shape the tree measured there before the pruning: the bin's weight spread over its fine
    cells by the distribution function their measured counts give (:func:`leaf_estimates`: the running sum of the
    cells, unbiased, kept within 0 and the bin's measured total and never falling; evenly where that total is within
    one noise sd of nothing), each cell's over its points as :func:`_points` places them (a whole-number column's
    whole numbers). The running sum, not each cell's count clipped at zero: in a wide bin of many empty cells, the
    clipped noise of each would add up to a mass far out that the table does not hold. Where the pruning emptied a
    sparse stretch and gave its rows to one cell, the released rows there are a lump whose distribution function
    jumps where the table's rises slowly; a quantile's interval carried back through this one as well holds where
    the table's may lie (Bundle.quantile)."""
    b, lo, hi, _ = _threshold_bin(nb, spec, threshold, np.less_equal)
    inside = nb.cells(spec.to_unit(x)) == b
    pos, _, cell = _points(nb)
    keep = (cell >= lo) & (cell < hi)
    pos, cell = pos[keep], cell[keep]
    measured = np.asarray(leaves[0], float)[lo:hi]
    total = float(measured.sum())
    if total > leaves[1]:  # within one noise sd of nothing (pruning_reach's test) the measured shape says nothing
        rising = np.maximum.accumulate(np.clip(np.cumsum(measured), 0.0, total))
        m = np.diff(np.concatenate([[0.0], rising]))
    else:
        m = np.ones(hi - lo)
    per = np.bincount(cell - lo, minlength=hi - lo)
    mass = m[cell - lo] / np.maximum(per[cell - lo], 1) / m.sum() * float(weights[inside].sum())
    value = np.asarray(spec.from_unit(pos), float)
    value = np.rint(value) if spec.integer else value
    return np.concatenate([x[~inside], value]), np.concatenate([weights[~inside], mass])


def pruning_variance(nb, spec, threshold: float, compare, x: np.ndarray, weights: np.ndarray, mask: np.ndarray,
                     leaves: tuple[np.ndarray, float] | None) -> float:
    """The variance a share gets from the measured cells across its threshold where the pruned coarse bin holding
    the threshold lies wholly on one side of it: every bootstrap replicate prunes that bin alike, so their spread
    says nothing of how many of its rows the measured cells on the other side hold (a trial's income share above
    20: "0 (95% interval 0 to 0)" against 0.0003). Their sum's noise sd (``leaves``' sd per node, times the square
    root of the cells' canonical nodes: least squares does no worse), as a share of the bin's measured mass and
    times the bin's share of the subgroup's rows; 0 where the pruned bin has rows on both sides (the replicates see
    it) or :func:`pruning_reach` reaches over the whole bin."""
    if leaves is None or nb.fine is None:
        return 0.0
    b, lo, hi, frac = _threshold_bin(nb, spec, threshold, compare)
    pruned = np.maximum(np.asarray(nb.fine, float)[lo:hi], 0.0)
    total = float(np.asarray(leaves[0], float)[lo:hi].sum())
    if (np.all(frac == frac[0]) and frac[0] in (0.0, 1.0)) or pruned.sum() <= 0 or total <= leaves[1]:
        return 0.0
    g_pruned = _pruned_side(pruned, frac)
    if g_pruned not in (0.0, 1.0):
        return 0.0
    sd = _across_sd(leaves, lo, frac, g_pruned)
    here = mask & (nb.cells(spec.to_unit(x)) == b)
    p_bin = float(weights[here].sum() / max(weights[mask].sum(), 1e-300))
    return (p_bin * sd / total) ** 2
