"""Numeric columns shaped by the data under DP: a fine hierarchical histogram per numeric column, coarse bins
chosen from it, and values drawn from it.

Public bounds are wide on purpose (a curator must not use the data's minimum and maximum), so equal-width bins
of them put a skewed column's rows in one or two bins, and uniform draws inside a bin lose its shape (a
lognormal column's mean comes back two to three times too large). Here every numeric column is measured once,
finely, and the coarse cells the generators model follow the rows:

1. **Fine cells (public).** ``fine_cells`` (a power of two) equal-width cells of the scaled range [0, 1]; an
   integer column (``integer: true`` in the schema, integer bounds) has one cell per integer when it has no more
   values than that, else ``fine_cells`` cells of consecutive integers. A cell holding no integer is known to be
   empty. A bound the schema names in ``spikes`` (a value many rows hold exactly: no debt, a top code) takes a
   leaf of its own at its end of the grid, and a coarse bin of its own (:func:`grid_cuts`), so its rows come
   back as that value, not spread over a cell.
2. **A tree histogram (the DP part).** The cells are the leaves of a binary tree of L = log2(cells) levels below
   the root; every level is a histogram of the rows, measured with Gaussian noise of one std sigma. One replaced
   row moves two counts of a level by one (L2 sensitivity sqrt(2); 1 under add/remove), so the L levels of one
   column are (L Delta^2 / (2 sigma^2))-zCDP: sigma = sqrt(L Delta^2 / (2 rho_column)), rho_column the column's
   equal share of the histograms' rho. The root is the row total (public under replace-one; the stage's noisy
   count under add/remove).
3. **Post-processing** (no budget). Hay et al. (2010)'s least-squares consistency makes every node the sum of its
   children; then, from the root down, a child whose estimate is below ``THRESHOLD`` sigma is set to zero (an
   empty tail stays empty instead of collecting noise) and each node's mass goes to its children in proportion
   to their estimates (evenly when none is above the threshold). The leaves' mass is the column's fine
   histogram ``fine``.
4. **Coarse bins** (post-processing): ``bins`` bins, each a run of consecutive fine cells, chosen to minimise
   the spread of ``fine`` inside them (:func:`cut_points`), at most one per integer value. MST, AIM and
   ``marginal_match`` model these cells; a column's coarse one-way marginal is the tree's sum over each bin
   (the generator does not measure it again).
5. **Values** inside a coarse bin are drawn from ``fine`` restricted to the bin (a fine cell with probability in
   proportion to its mass, then uniform inside it, or a uniform integer of the cell): the weights move mass
   between coarse cells and never change the shape inside one.

The published part (``to_dict``: the noisy levels, their std, the cut points and ``fine``) is a DP output.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpiw import DpiwError
from dpiw.data.schema import Column, Schema

#: a node of the consistent tree whose estimate is below THRESHOLD noise stds holds no row (set before any data
#: was seen, on simulated lognormal, exponential, uniform and bimodal columns of 1e3 to 2e5 rows: bench/binning.py)
THRESHOLD = 1.0

#: a node whose mass is below FLOOR noise stds splits it evenly down to the leaves (0: in proportion to the
#: children's estimates however small the node)
FLOOR = 0.0

#: every coarse bin holds at least MIN_BIN_SHARE / bins of the rows (an eighth of an equal-mass bin's share), so its
#: counts stay above the generator's noise: set among floors of 0, 1%, 1.6%, 2% and 6.25% of the rows and equal
#: mass, on the simulated populations of bench/interval_coverage.py (bench/README.md)
MIN_BIN_SHARE = 1 / 8
#: a zCDP generator's numeric columns get more than ``bins`` bins (up to ``max_bins``) where the rows allow it: as many
#: as keep a cell of a two-way marginal of two numeric columns at BIN_SNR times the generator's noise sd or more.
#: Set on bench/interval_coverage.py's simulated populations (bench/README.md): at 200,000 rows and epsilon 1, 16 bins
#: (a cell at 26 sds) cut the bias of a numeric mean within a class four-fold, 32 (7 sds) and 16 at 20,000 rows
#: (3 sds) made it worse
BIN_SNR = 25.0
#: at most this many points enter the search for the bins (filled fine cells, grouped past it)
RUN_POINTS = 1024

#: where no ``bins`` runs can each hold MIN_BIN_SHARE / bins of the mass (nearly all of it in a few cells), the most
#: runs that can (True) or ``bins`` runs with no floor (False: the least-variance runs then give the far tail's
#: crumbs bins of their own, which the generator's noise fills)
FEWER = False


@dataclass(frozen=True)
class FineGrid:
    """The public fine cells of one numeric column: ``cells`` leaves (a power of two), of which the first
    ``support`` can hold rows; an integer column's leaf i holds the integers ``first[i]`` .. ``first[i + 1] - 1``
    (offsets from the lower bound), a continuous column's leaf i the scaled values [i / cells, (i + 1) / cells).

    ``low`` / ``high`` (the schema's ``spikes``): the first / last leaf holds exactly the lower / upper bound (a
    point mass: no debt, a top code), and the equal-width leaves (``middle`` of them) share what is between; a
    value drawn in a spike's leaf is the bound itself. A `missing: indicator` column's lower bound is one too (its
    empty rows are held there). On a grid of a leaf per whole number each value already is a leaf: there the
    flags only give the bound's leaf a coarse bin of its own (:func:`grid_cuts`)."""

    cells: int
    support: int
    span: float | None = None  # integer columns: upper - lower (an integer); None for a continuous column
    low: bool = False
    high: bool = False

    @classmethod
    def of(cls, column: Column, fine_cells: int) -> FineGrid:
        # a `missing: indicator` column holds its empty rows at the lower bound: a leaf (and a bin) of their own
        low = "lower" in column.spikes or column.missing == "indicator"
        high = "upper" in column.spikes
        if not column.integer or column.scale == "log":  # a log scale's cells: continuous, rounded when drawn
            return cls(fine_cells, fine_cells, None, low, high)
        span = int(round(column.upper - column.lower))
        values = span + 1
        if values <= fine_cells:  # a leaf per whole number already: the spikes only mark a bin of their own
            return cls(1 << max(1, math.ceil(math.log2(values))), values, float(span), low, high)
        return cls(fine_cells, fine_cells, float(span), low, high)

    @property
    def levels(self) -> int:
        return int(round(math.log2(self.cells)))

    @property
    def per_integer(self) -> bool:
        return self.span is not None and self.support == int(self.span) + 1

    @property
    def offset(self) -> int:
        """The first equal-width leaf (1 after a spike leaf at the lower bound; 0 on a leaf-per-value grid)."""
        return int(self.low and not self.per_integer)

    @property
    def middle(self) -> int:
        """The equal-width leaves, between the spike leaves (all of them on a leaf-per-value grid)."""
        return self.cells if self.per_integer else self.cells - int(self.low) - int(self.high)

    def first(self) -> np.ndarray:
        """Integer columns: the first integer offset of each supported leaf, and one past the last."""
        values = int(self.span) + 1
        if self.per_integer:
            return np.arange(values + 1)
        a, b, m = int(self.low), values - int(self.high), self.middle
        mid = a - (-np.arange(m + 1) * (b - a) // m)  # a + ceil(i * (b - a) / m)
        return np.concatenate([[0]] * self.low + [mid] + [[values]] * self.high).astype(np.int64)

    def leaf(self, v: np.ndarray) -> np.ndarray:
        """The fine cell of each scaled value."""
        v = np.asarray(v, dtype=float)
        off, m, last = self.offset, self.middle, self.cells - 1
        if self.span is None:
            leaf = off + np.clip((v * m).astype(np.int64), 0, m - 1)
            edge = (v <= 0.0, v >= 1.0)
        else:
            span = int(self.span)
            k = np.clip(np.rint(v * span).astype(np.int64), 0, span)
            if self.per_integer:
                return k
            a, b = int(self.low), span + 1 - int(self.high)
            leaf = off + np.minimum((k - a) * m // (b - a), m - 1)
            edge = (k == 0, k == span)
        if self.low:
            leaf = np.where(edge[0], 0, leaf)
        if self.high:
            leaf = np.where(edge[1], last, leaf)
        return leaf

    def edges(self) -> tuple[np.ndarray, np.ndarray]:
        """A continuous column's leaves in scaled units: each one's lower and upper edge (a spike leaf: its bound,
        twice)."""
        leaf = np.arange(self.cells)
        lo, hi = (leaf - self.offset) / self.middle, (leaf - self.offset + 1) / self.middle
        if self.low:
            lo[0] = hi[0] = 0.0
        if self.high:
            lo[-1] = hi[-1] = 1.0
        return lo, hi

    def draw(self, leaf: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """A scaled value inside each given fine cell: uniform, a uniform integer of the cell, or a spike's bound."""
        u = rng.uniform(size=len(leaf))
        if self.span is None:
            return self.at(leaf, u)
        first = self.first()
        lo, hi = first[leaf], first[leaf + 1]
        k = lo + np.minimum((u * (hi - lo)).astype(np.int64), hi - lo - 1)
        return k / self.span

    def at(self, leaf: np.ndarray, u: np.ndarray) -> np.ndarray:
        """A continuous column's scaled value a share ``u`` of the way through each leaf (a spike leaf: its
        bound)."""
        v = (leaf - self.offset + u) / self.middle
        if self.low:
            v = np.where(leaf == 0, 0.0, v)
        if self.high:
            v = np.where(leaf == self.cells - 1, 1.0, v)
        return v


def tree_levels(leaf_counts: np.ndarray) -> list[np.ndarray]:
    """The counts of every level of the binary tree over ``leaf_counts`` (a power of two of them): level l has
    2^l nodes, level 0 is the root."""
    out = [np.asarray(leaf_counts, float)]
    while out[-1].size > 1:
        out.append(out[-1].reshape(-1, 2).sum(axis=1))
    return out[::-1]


def consistent(noisy: list[np.ndarray], total: float) -> list[np.ndarray]:
    """Hay et al. (2010)'s least-squares estimate of a binary tree's counts from noisy levels 1..L of equal
    variance (``noisy[0]`` is ignored: the root is ``total``): a bottom-up weighted average, then a top-down
    split of each parent's difference, so every node is the sum of its children."""
    levels = len(noisy) - 1
    z = [np.zeros(1)] + [None] * levels
    z[levels] = np.asarray(noisy[levels], float)
    for lv in range(levels - 1, 0, -1):
        h = levels - lv + 1  # height above the leaves (leaves: 1)
        a = (2.0**h - 2.0 ** (h - 1)) / (2.0**h - 1.0)
        z[lv] = a * np.asarray(noisy[lv], float) + (1 - a) * z[lv + 1].reshape(-1, 2).sum(axis=1)
    est = [np.array([float(total)])]
    for lv in range(1, levels + 1):
        parent = est[-1]
        gap = parent - z[lv].reshape(-1, 2).sum(axis=1)
        est.append(z[lv] + np.repeat(gap / 2.0, 2))
    return est


def prune(est: list[np.ndarray], total: float, threshold: float, support: int, floor: float = 0.0) -> np.ndarray:
    """The leaves' mass, from the root down: a node's mass goes to its children in proportion to their
    estimates, a child below ``threshold`` (or past the ``support``) getting none; evenly over the supported
    children when none is above it, or when the node's own mass is below ``floor`` (its children's shares would
    be mostly noise: below it the mass is spread evenly down to the leaves)."""
    mass = np.array([float(total)])
    cells = est[-1].size
    for lv in range(1, len(est)):
        width = cells >> lv  # leaves under each node of this level
        starts = np.arange(est[lv].size) * width
        supported = starts < support
        e = np.where(supported & (est[lv] >= threshold), np.maximum(est[lv], 0.0), 0.0).reshape(-1, 2)
        s = e.sum(axis=1, keepdims=True)
        even = supported.reshape(-1, 2) / np.maximum(supported.reshape(-1, 2).sum(axis=1, keepdims=True), 1)
        share = np.where((s > 0) & (mass[:, None] >= floor), e / np.where(s > 0, s, 1.0), even)
        mass = (mass[:, None] * share).ravel()
    return mass


def _optimal_runs(mass: np.ndarray, x: np.ndarray, k: int, least: float) -> np.ndarray | None:
    """The first point of each of ``k`` runs of consecutive points (positions ``x``, masses ``mass``) minimising
    the sum over runs of the mass-weighted variance of ``x`` inside the run, every run holding at least
    ``least`` of the mass: exact, by dynamic programming over the run ends. None when no such runs exist."""
    n = len(mass)
    c0, c1, c2 = (np.concatenate([[0.0], np.cumsum(mass * x**p)]) for p in (0, 1, 2))
    i, j = np.arange(n + 1)[:, None], np.arange(n + 1)[None, :]
    w, s1, s2 = c0[j] - c0[i], c1[j] - c1[i], c2[j] - c2[i]
    with np.errstate(divide="ignore", invalid="ignore"):
        cost = np.where(w > 0, s2 - s1 * s1 / np.where(w > 0, w, 1.0), 0.0)
    cost = np.where((j > i) & (w >= least * c0[-1] * (1 - 1e-9)), np.maximum(cost, 0.0), np.inf)
    best, arg = np.zeros(n + 1), np.zeros((k + 1, n + 1), np.int64)
    best[1:] = np.inf  # best[j]: the least cost of the runs so far ending at point j
    for r in range(1, k + 1):
        total = best[:, None] + cost
        arg[r] = np.argmin(total, axis=0)
        best = total[arg[r], np.arange(n + 1)]
    if not np.isfinite(best[n]):
        return None
    ends = [n]
    for r in range(k, 0, -1):
        ends.append(int(arg[r][ends[-1]]))
    return np.array(ends[::-1][:-1], np.int64)


def cut_points(fine: np.ndarray, bins: int, support: int) -> np.ndarray:
    """``bins`` runs of consecutive fine cells (at most one per cell that holds mass): the runs that minimise
    the mass-weighted variance of the cells inside them (optimal 1-D quantisation of the fine histogram), each
    holding at least ``MIN_BIN_SHARE / bins`` of the mass. Returns the first cell of each run and one past the
    last supported cell (strictly increasing).

    Why not equal mass: a value inside a bin is drawn from the column's own histogram, so a mean within a
    subgroup (a class of the target) is off by how far the subgroup's values sit from the column's inside each
    bin, which the bins' spread bounds. Equal-mass bins of a skewed column leave one bin over the whole tail
    (mean kappa among deaths: 7% low); the least-variance bins split the tail and keep the bulk's bins
    where the rows are. The floor keeps every bin's count above the generator's noise."""
    mass = np.maximum(np.asarray(fine[:support], float), 0.0)
    filled = np.nonzero(mass > 0)[0]
    if not filled.size:
        filled, mass = np.arange(support), np.ones(support)
    # runs start at a filled cell; past RUN_POINTS filled cells, at every g-th (the program is quadratic in them)
    g = -(-filled.size // RUN_POINTS)
    firsts = filled[::g]
    m = np.add.reduceat(mass[filled], np.arange(0, filled.size, g))
    x = np.add.reduceat(mass[filled] * (filled + 0.5), np.arange(0, filled.size, g)) / m
    k = min(bins, firsts.size)
    starts = _optimal_runs(m, x, k, MIN_BIN_SHARE / bins)
    while starts is None and FEWER and k > 1:  # too few cells hold mass for the floor: fewer runs
        k -= 1
        starts = _optimal_runs(m, x, k, MIN_BIN_SHARE / bins)
    if starts is None:  # too few cells hold mass for the floor
        starts = _optimal_runs(m, x, k, 0.0)
    # the empty cells between two bins go to the bin whose filled cell is nearer in the tree (their lowest
    # common node is lower): the pruning gave an emptied node's mass to its sibling, so a private row in a cell
    # the histogram emptied is counted in the bin that holds its mass
    first, before = firsts[starts], filled[np.maximum(starts * g - 1, 0)]
    cuts = np.array([_tree_split(int(b), int(f)) for b, f in zip(before, first, strict=True)], np.int64)
    cuts[0] = 0
    return np.concatenate([cuts, [support]]).astype(np.int64)


def grid_cuts(fine: np.ndarray, bins: int, grid: FineGrid) -> np.ndarray:
    """:func:`cut_points` on a grid: a spike's leaf is a bin of its own (its rows are one value, and a `missing:
    indicator` column's empty rows sit in the lower one: a bin shared with small values would draw those values
    at the bound as often as the empty rows are), and the other leaves get the other ``bins``."""
    if not (grid.low or grid.high):
        return cut_points(fine, bins, grid.support)
    start, end = int(grid.low), grid.support - int(grid.high)  # the leaves between the spikes' leaves
    if end <= start:  # a whole-number column of two values with both flags: a bin each
        return np.arange(grid.support + 1, dtype=np.int64)
    inner = start + cut_points(np.asarray(fine, float)[start:end], max(1, bins - grid.low - grid.high), end - start)
    return np.concatenate([[0]] * grid.low + [inner] + [[grid.support]] * grid.high).astype(np.int64)


def _tree_split(before: int, first: int) -> int:
    """The first cell of (before, first] closer in the binary tree to ``first`` than to ``before`` (the height
    of the lowest node holding both; ties to the nearer one, then to ``first``)."""
    for e in range(before + 1, first + 1):
        up, down = (e ^ before).bit_length(), (e ^ first).bit_length()
        if down < up or (down == up and first - e <= e - before):
            return e
    return first


@dataclass
class NumericBins:
    """One numeric column's public discretisation: its fine grid, the cut points of its coarse bins (in fine
    cells) and the fine histogram's mass (None: uniform over the supported cells)."""

    grid: FineGrid
    cuts: np.ndarray
    fine: np.ndarray | None = None

    @property
    def card(self) -> int:
        return len(self.cuts) - 1

    def cells(self, v: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.cuts, self.grid.leaf(v), side="right") - 1

    def values(self, cell: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """A scaled value for each coarse cell: a fine cell of the bin drawn by its mass, then a value inside."""
        cell = np.asarray(cell, np.int64)
        if self.fine is None and np.all(np.diff(self.cuts) == 1):  # one fine cell per bin: uniform inside it
            return self.grid.draw(self.cuts[cell], rng)
        mass = np.ones(self.grid.cells) if self.fine is None else np.asarray(self.fine, float).copy()
        mass[self.grid.support:] = 0.0
        leaf = np.empty(len(cell), np.int64)
        u = rng.uniform(size=len(cell))
        for b in range(self.card):
            rows = np.nonzero(cell == b)[0]
            if not rows.size:
                continue
            lo, hi = int(self.cuts[b]), int(self.cuts[b + 1])
            m = mass[lo:hi]
            if not m.sum() > 0:
                m = np.ones(hi - lo)
            cdf = np.cumsum(m) / m.sum()
            leaf[rows] = lo + np.minimum(np.searchsorted(cdf, u[rows], side="right"), hi - lo - 1)
        return self.grid.draw(leaf, rng)

    def void(self) -> np.ndarray:
        """Per bin, whether the fine histogram (a DP measurement, pruned where under its noise) holds no mass in
        it: no bin is void without a fine histogram."""
        if self.fine is None:
            return np.zeros(self.card, bool)
        mass = np.asarray(self.fine, float).copy()
        mass[self.grid.support:] = 0.0
        return ~(self.coarse(mass) > 0)

    def empty_only(self, column) -> bool:
        """Whether the lowest bin holds a `missing: indicator` column's empty rows alone: the lower bound's own leaf
        is a bin of its own, no spike is declared there, and the bound is one value among a continuum or among more
        whole numbers than the fine cells (test scores on 200 to 900). On a grid of a leaf per whole number the
        lowest is a value like the others (ages 12 to 18: 12), and equal-width bins share the bound with small
        values."""
        return (column.missing == "indicator" and self.grid.low and not self.grid.per_integer
                and "lower" not in column.spikes and len(self.cuts) > 1 and int(self.cuts[1]) == 1)

    def ends(self) -> tuple[np.ndarray, np.ndarray]:
        """Each bin's lowest and highest scaled value (its first and last whole number on an integer grid; just
        below its upper edge on a continuous one, or the spike itself)."""
        lo, hi = self.cuts[:-1], self.cuts[1:]
        if self.grid.span is None:
            below, above = self.grid.edges()
            lowest, highest = below[lo], above[hi - 1]
            if self.grid.low:  # the leaf after a lower spike is open at the bound: its lowest value is just above
                lowest = np.where((lo == self.grid.offset) & (lowest == 0.0), 1e-9 / self.grid.cells, lowest)
            return lowest, np.where(highest > lowest, highest - 1e-9 / self.grid.cells, highest)
        first = self.grid.first()
        return first[lo] / self.grid.span, (first[hi] - 1) / self.grid.span

    def coarse(self, leaf_values: np.ndarray) -> np.ndarray:
        """Per-leaf values summed over each coarse bin."""
        return np.add.reduceat(np.asarray(leaf_values, float)[: self.cuts[-1]], self.cuts[:-1])


class Binning:
    """The discretisation of every column of a schema: :class:`NumericBins` for a numeric column, None for a
    categorical one (its categories are its cells)."""

    def __init__(self, schema: Schema, numeric: dict[str, NumericBins]):
        self.schema = schema
        self.numeric = numeric

    @classmethod
    def equal_width(cls, schema: Schema, bins: int) -> Binning:
        """``bins`` equal-width bins of [0, 1] per numeric column, values uniform inside (dpiw's discretisation
        before the fine histograms; PrivBayes and the marginal SDGPs keep it)."""
        return cls(schema, {c.name: NumericBins(FineGrid(bins, bins), np.arange(bins + 1)) for c in schema.columns
                            if c.is_numeric})

    @property
    def cards(self) -> list[int]:
        return [self.numeric[c.name].card if c.is_numeric else len(c.categories) for c in self.schema.columns]

    def cells(self, df: pd.DataFrame) -> np.ndarray:
        cols = []
        for c in self.schema.columns:
            v = df[c.name].to_numpy()
            cols.append(self.numeric[c.name].cells(v) if c.is_numeric else v.astype(np.int64))
        return np.stack(cols, axis=1) if cols else np.zeros((len(df), 0), np.int64)

    def rows(self, cells: dict[str, np.ndarray], rng: np.random.Generator) -> pd.DataFrame:
        """Scaled rows from each column's cells: numeric values drawn inside their bins (in schema order, one
        uniform stream per numeric column), category codes as they are.

        Two kinds of a numeric column's rows get the bin of another of its rows, drawn at random (the model's
        noise put them where the column's own measurement says no row is; they keep their other columns):
        rows in a bin the fine histogram holds no mass in (:meth:`NumericBins.void`: a far tail measured empty,
        which the noise of the two-way marginals fills), and, for a `missing: indicator` column whose lowest bin
        holds its empty rows alone (:meth:`NumericBins.empty_only`), rows with a value (their 0/1 column 0) in
        that bin, so no released value sits at the bound where only empty rows were. The bins they get come from
        a stream jumped ahead of ``rng`` (which it leaves where it was), so the values drawn after them follow the
        same random numbers whether or not rows moved: the noise-aware bootstrap's replicates share theirs."""
        flags = {c.indicator_of: c.name for c in self.schema.columns if c.indicator_of}
        out = {}
        for c in self.schema.columns:
            cell = np.asarray(cells[c.name], dtype=np.int64)
            if c.is_numeric:
                nb = self.numeric[c.name]
                void = nb.void()[cell]
                stray, pool = void, ~void
                if c.name in flags and nb.empty_only(c):
                    present = np.asarray(cells[flags[c.name]]) == 0
                    stray, pool = stray | (present & (cell == 0)), pool & present & (cell > 0)
                if stray.any() and pool.any():  # from a stream of its own: the values' stream stays as it was
                    cell = cell.copy()
                    cell[stray] = np.random.Generator(rng.bit_generator.jumped()).choice(cell[pool], int(stray.sum()))
            out[c.name] = self.numeric[c.name].values(cell, rng) if c.is_numeric else cell
        return pd.DataFrame(out)[self.schema.names]

    def to_dict(self) -> dict:
        return {name: {"fine_cells": nb.grid.cells, "support": nb.grid.support, "span": nb.grid.span,
                       **({"spikes": [b for b, on in (("lower", nb.grid.low), ("upper", nb.grid.high)) if on]}
                          if nb.grid.low or nb.grid.high else {}),
                       "cuts": [int(x) for x in nb.cuts],
                       "fine": None if nb.fine is None else [float(x) for x in nb.fine]}
                for name, nb in self.numeric.items()}

    @classmethod
    def from_dict(cls, schema: Schema, d: dict) -> Binning:
        numeric = {}
        for c in schema.columns:
            if not c.is_numeric:
                continue
            if c.name not in d:
                raise DpiwError(f"binning: no cut points for numeric column '{c.name}'")
            e = d[c.name]
            spikes = e.get("spikes") or ()
            grid = FineGrid(int(e["fine_cells"]), int(e["support"]), e.get("span"), "lower" in spikes,
                            "upper" in spikes)
            numeric[c.name] = NumericBins(grid, np.asarray(e["cuts"], np.int64),
                                          None if e.get("fine") is None else np.asarray(e["fine"], float))
        return cls(schema, numeric)


def as_binning(schema: Schema, bins) -> Binning:
    """A :class:`Binning` from an int (equal-width bins) or a Binning (as it is)."""
    return bins if isinstance(bins, Binning) else Binning.equal_width(schema, int(bins))


def check_fine(fine_cells, fine_fraction, key: str) -> None:
    """Refuse a bad ``<key>.fine_cells`` or ``<key>.fine_fraction`` with the fix."""
    if not (isinstance(fine_cells, int) and not isinstance(fine_cells, bool)
            and (fine_cells == 0 or (4 <= fine_cells <= 4096 and fine_cells & (fine_cells - 1) == 0))):
        raise DpiwError(f"{key}.fine_cells must be 0 (equal-width bins) or a power of two in [4, 4096], "
                        f"got {fine_cells!r}")
    if fine_cells and not (isinstance(fine_fraction, int | float) and 0 < fine_fraction < 1):
        raise DpiwError(f"{key}.fine_fraction must be a share of rho in (0, 1), got {fine_fraction!r}")


def grown_bins(bins: int, max_bins: int, rows: float, sigma: float) -> int:
    """The bins per numeric column for ``rows`` rows when the generator's two-way marginals carry Gaussian noise
    of sd ``sigma``: the most k in [bins, max_bins] with rows / k^2 >= BIN_SNR * sigma (public quantities only).

    >>> [grown_bins(8, 32, n, 30.0) for n in (20_000, 200_000, 1_000_000, 10_000_000)]
    [8, 16, 32, 32]
    """
    k = math.isqrt(int(rows / (BIN_SNR * sigma))) if sigma > 0 else max_bins
    return max(bins, min(max_bins, k))


def with_fine(gen, schema: Schema) -> bool:
    """Whether a zCDP generator measures fine histograms on this schema."""
    return bool(gen.fine_cells) and any(c.is_numeric for c in schema.columns)


def fine_first(gen, counter, schema: Schema, *, rho: float, l2: float, total: float, rng: np.random.Generator,
               bins: int | None = None):
    """What a zCDP generator with ``fine_cells`` and ``fine_fraction`` does before its own measurements: the
    fine histograms (``fine_fraction`` of ``rho``) when the schema has a numeric column, and ``bins`` (default
    ``gen.bins``) bins cut from each. Returns the counter on the new bins, the :class:`FineMeasurement` (None
    without one) and the rho left to the generator."""
    if not with_fine(gen, schema):
        return counter, None, rho
    rho_fine = gen.fine_fraction * rho
    fine = measure_fine(counter, schema, fine_cells=gen.fine_cells, bins=bins or gen.bins, rho=rho_fine, l2=l2,
                        total=total, rng=rng)
    return counter.with_binning(fine.binning), fine, rho - rho_fine


def fine_events(fine: FineMeasurement | None) -> tuple:
    """The fine histograms' zCDP event for a record's ``rdp`` (none without them)."""
    return () if fine is None else ({"kind": "zcdp", "rho": fine.rho,
                                     "about": "fine histograms of the numeric columns"},)


def fine_noise(fine: FineMeasurement | None) -> dict:
    """The fine histograms' part of a record's ``noise``."""
    if fine is None:
        return {}
    return {"fine_histograms": {"distribution": "gaussian", "structure": "binary tree, every level measured",
                                "std": dict(fine.std),
                                "levels": {k: len(v) - 1 for k, v in fine.levels.items()}}}


def fine_details(gen) -> dict:
    return {"fine_cells": gen.fine_cells, "fine_fraction": gen.fine_fraction if gen.fine_cells else None}


@dataclass
class FineMeasurement:
    """What :func:`measure_fine` measured: the binning, the noisy levels and std per numeric column, the
    column's coarse one-way marginal (the tree summed over its bins, for the generator) and the zCDP rho."""

    binning: Binning
    levels: dict[str, list[np.ndarray]]
    std: dict[str, float]
    one_way: dict[str, tuple[np.ndarray, float]]
    rho: float

    def published(self) -> dict:
        """The DP outputs (levels 1..L and their std) with the binning they gave."""
        return {"threshold": THRESHOLD, "binning": self.binning.to_dict(),
                "levels": {k: [lv.tolist() for lv in v[1:]] for k, v in self.levels.items()}, "std": self.std}


def fine_budget(schema: Schema, fine_cells: int, rho: float, l2: float) -> dict[str, float]:
    """Each numeric column's noise std: the histograms' ``rho`` in equal shares, L levels per column."""
    numeric = [c for c in schema.columns if c.is_numeric]
    out = {}
    for c in numeric:
        grid = FineGrid.of(c, fine_cells)
        out[c.name] = math.sqrt(grid.levels * l2**2 / (2 * rho / len(numeric)))
    return out


def canonical(lo: int, hi: int) -> int:
    """How many nodes of a binary tree over the leaves make up the leaves [lo, hi) (its canonical decomposition;
    0 for an empty range).

    >>> [canonical(0, 8), canonical(3, 5), canonical(1, 7), canonical(4, 4)]
    [1, 2, 4, 0]
    """
    count, lo, hi = 0, int(lo), int(hi)
    while lo < hi:
        if lo & 1:
            count, lo = count + 1, lo + 1
        if hi & 1:
            count, hi = count + 1, hi - 1
        lo, hi = lo >> 1, hi >> 1
    return count


def outer_noise(mass: np.ndarray, leaves: np.ndarray, std: float, z: float, support: int,
                gap: float = 0.0, width: float | None = None) -> np.ndarray:
    """``mass`` (the pruned leaves) without the outer runs of filled leaves that noise alone explains: on each
    side of the heaviest run, the innermost stretch of empty leaves at least ``gap`` times as long as the heaviest
    run is wide past which the leaves, to the end, have consistent estimates that sum to under ``z`` sds of that
    sum (the sd bounded by ``std`` times the square root of the range's canonical nodes: least squares does no
    worse than summing them); the runs past it hold none. The mass dropped goes to the rest in proportion.
    ``width``: the yardstick of the stretches in leaves, instead of the heaviest run's width."""
    filled = np.asarray(mass[:support], float) > 0
    if not filled.any():
        return mass
    edges = np.flatnonzero(np.diff(np.concatenate([[0], filled.astype(np.int8), [0]])))
    runs = list(zip(edges[::2], edges[1::2], strict=True))  # [start, end) of each run of filled leaves
    if len(runs) < 2:
        return mass
    heavy = int(np.argmax([mass[a:b].sum() for a, b in runs]))
    out = np.asarray(mass, float).copy()

    def noise(a: int, b: int) -> bool:
        return float(np.sum(leaves[a:b])) < z * std * math.sqrt(canonical(a, b))

    far = gap * (runs[heavy][1] - runs[heavy][0] if width is None else width)  # the shortest stretch to look past
    upper = [k for k in range(heavy + 1, len(runs))  # the upper tail from run k (after a long stretch) to the end
             if runs[k][0] - runs[k - 1][1] >= far and noise(runs[k][0], runs[-1][1])]
    if upper:
        out[runs[upper[0]][0]:] = 0.0
    lower = [k for k in range(heavy)  # the lower tail from the start to run k (before a long stretch)
             if runs[k + 1][0] - runs[k][1] >= far and noise(runs[0][0], runs[k][1])]
    if lower:
        out[:runs[lower[-1]][1]] = 0.0
    return out * (np.sum(mass) / max(out.sum(), 1e-300))


#: the outer runs of a fine histogram that noise alone explains hold no row (:func:`outer_noise`'s ``z`` and
#: ``gap``); None: kept as the pruning leaves them
OUTER: tuple[float, float] | None = None


def shape(grid: FineGrid, noisy: list[np.ndarray], total: float, std: float) -> tuple[np.ndarray, np.ndarray]:
    """One column's noisy tree levels post-processed as a release does: the fine histogram (the pruned leaves'
    mass, normalised) and the consistent leaf estimates (unclipped)."""
    est = consistent(noisy, total)
    mass = prune(est, total, THRESHOLD * std, grid.support, floor=FLOOR * std)
    if OUTER is not None:
        mass = outer_noise(mass, est[-1], std, OUTER[0], grid.support, gap=OUTER[1])
    return mass / max(mass.sum(), 1e-300), est[-1]


def estimate_fine(schema: Schema, fine_cells: int, bins: int, noisy: dict[str, list[np.ndarray]],
                  std: dict[str, float], total: float, rho: float) -> FineMeasurement:
    """Post-processing of noisy tree levels (``noisy[name][0]`` unused: the root is ``total``) into the fine
    histograms, the coarse bins and the coarse one-way marginals."""
    numeric, levels, one_way = {}, {}, {}
    for c in schema.columns:
        if not c.is_numeric:
            continue
        grid = FineGrid.of(c, fine_cells)
        fine, leaves = shape(grid, noisy[c.name], total, std[c.name])
        nb = NumericBins(grid, grid_cuts(fine, bins, grid), fine)
        numeric[c.name], levels[c.name] = nb, noisy[c.name]
        # the bins' counts from the consistent tree (unclipped: Private-PGM weighs them by their std); a range
        # of leaves of a consistent tree has variance at most about sigma^2 (its canonical nodes' averages)
        one_way[c.name] = (nb.coarse(leaves), float(std[c.name]))
    return FineMeasurement(Binning(schema, numeric), levels, dict(std), one_way, rho)


def measure_fine(counter, schema: Schema, *, fine_cells: int, bins: int, rho: float, l2: float, total: float,
                 rng: np.random.Generator) -> FineMeasurement:
    """The DP part: every numeric column's tree levels with Gaussian noise (:func:`fine_budget`), from the
    counter's fine counts, then :func:`estimate_fine`."""
    std = fine_budget(schema, fine_cells, rho, l2)
    grids = {c.name: FineGrid.of(c, fine_cells) for c in schema.columns if c.is_numeric}
    leaves = counter.fine_counts(grids)
    noisy = {}
    for c in schema.columns:
        if not c.is_numeric:
            continue
        true = tree_levels(leaves[c.name])
        noise = [lv + rng.normal(0.0, std[c.name], size=lv.size) for lv in true[1:]]
        noisy[c.name] = [np.array([float(total)]), *noise]  # the root: the public (or noisy) total
    return estimate_fine(schema, fine_cells, bins, noisy, std, total, rho)
