"""MST (McKenna, Miklau and Sheldon 2021), the winner of NIST's 2018 DP synthetic data challenge, on
Private-PGM (the `mbi` package; small trees in numpy, :mod:`dpiw.sdgp.mirror_descent`), for replace-one (default)
or add/remove neighbours.

1. Discretise every scaled column into public cells: ``bins`` equal-width bins on [0, 1] for a numeric
   column, the categories of a categorical one.
2. Budget: the SDGP's (eps, delta) becomes the largest zCDP rho whose RDP curve (alpha * rho) converts to at
   most eps at delta with the conversion the ledger uses (:func:`zcdp_rho`). A third of rho goes to each of
   (a) the d one-way marginals, (b) the choice of the tree, (c) the d - 1 two-way marginals of the tree (``split``
   weighs them otherwise; bench/README.md measured three other splits and kept the thirds).
3. (a) and (c): Gaussian noise of std sigma on every count. One replaced row moves a marginal's count vector
   by -1 in one cell and +1 in another: L2 sensitivity Delta = sqrt(2) per marginal (1 under add/remove, MST's
   own relation), so m marginals measured with std sigma are (m Delta^2 / (2 sigma^2))-zCDP:
   sigma = sqrt(m Delta^2 / (2 rho_part)).
4. (b) A model fitted on the one-way measurements only (Private-PGM, mirror descent) predicts every pair's
   two-way counts; each pair is scored by the L1 distance between its true counts and the prediction (a
   replaced row moves it by at most 2, an added one by 1). d - 1 rounds of the exponential mechanism, each
   among the pairs that
   join two components of the forest so far (Kruskal), each at eps_em = sqrt(8 rho_sel / (d - 1)): an
   eps-DP exponential mechanism is (eps^2 / 8)-zCDP (bounded range: Cesar and Rogers 2021).
5. Private-PGM estimates a graphical model from all the measurements with the total N_D (public under
   replace-one neighbours; the stage's noisy count under add/remove, which the tree's prediction uses too)
   and samples N_G rows from it (mbi's randomised rounding); a numeric cell maps back to a value inside its
   bin (from the fine histogram where there is one, else uniform). A tree of at most
   :func:`dpiw.sdgp.pgm.numpy_cells` cells is estimated and sampled in numpy (the same steps and draws as
   mbi's, without compiling a program per tree).

MST's domain compression of rare one-way values is left out (the bins are coarse already). The release is
(eps', delta)-DP with eps' <= eps; the record lists its zCDP parts as RDP events for the run's ledger.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd

from dpiw import DpiwError
from dpiw._docs import SDGP_FIT, SDGP_SAMPLE, shared_doc
from dpiw.data.schema import Schema
from dpiw.privacy.accounting import zcdp_rho, zcdp_to_dp
from dpiw.privacy.neighbours import RowCount, count_l1, count_l2
from dpiw.privacy.spend import PrivacySpend
from dpiw.registry import MST_TREES as TREES
from dpiw.sdgp.binning import (
    Binning,
    check_fine,
    fine_details,
    fine_events,
    fine_first,
    fine_noise,
    grown_bins,
    with_fine,
)
from dpiw.sdgp.counting import Counter, InProcessCounter
from dpiw.sdgp.pgm import estimate_model, mbi_module, numpy_cells, sample_rows


def simplex_projection(y: np.ndarray, total: float) -> np.ndarray:
    """The Euclidean projection of ``y`` onto {x >= 0, sum x = total} (sort-based, Held et al. 1974).

    >>> simplex_projection(np.array([3.0, -1.0, 0.5]), 2.0).tolist()
    [2.0, 0.0, 0.0]
    """
    u = np.sort(y)[::-1]
    css = np.cumsum(u) - total
    k = np.nonzero(u - css / np.arange(1, len(u) + 1) > 0)[0][-1]
    return np.maximum(y - css[k] / (k + 1), 0.0)


def public_edges(schema: Schema) -> list[tuple[int, int]]:
    """The pairs of columns tied by the schema itself, not by the rows: each `missing: indicator` column's 0/1
    column with its numeric column. Choosing them reads no private value.

    >>> from dpiw.data.schema import parse_schema
    >>> public_edges(parse_schema({"name": "t", "task": "regression", "target": "y", "columns": [
    ...     {"name": "x", "type": "numeric", "lower": 0, "upper": 1, "missing": "indicator"},
    ...     {"name": "y", "type": "numeric", "lower": 0, "upper": 1}]}))
    [(0, 1)]
    """
    index = {c.name: j for j, c in enumerate(schema.columns)}
    return [(index[c.indicator_of], j) for j, c in enumerate(schema.columns) if c.indicator_of]


def star_edges(schema: Schema, fixed: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``fixed`` (:func:`public_edges`) and every other column joined to the schema's target, as far as no cycle
    forms (a `missing: indicator` column already tied to its numeric column is reached through it): a spanning
    tree chosen from the schema alone.

    >>> from dpiw.data.schema import parse_schema
    >>> schema = parse_schema({"name": "t", "task": "regression", "target": "y", "columns": [
    ...     {"name": "x", "type": "numeric", "lower": 0, "upper": 1, "missing": "indicator"},
    ...     {"name": "y", "type": "numeric", "lower": 0, "upper": 1},
    ...     {"name": "g", "type": "categorical", "categories": ["a", "b"]}]})
    >>> schema.names, star_edges(schema, public_edges(schema))
    (['x', 'x_missing', 'y', 'g'], [(0, 1), (0, 2), (2, 3)])
    """
    t = schema.names.index(schema.target)
    forest = Forest(len(schema.columns), fixed)
    out = list(fixed)
    for j in range(len(schema.columns)):
        if j != t and forest.apart(j, t):
            out.append((min(j, t), max(j, t)))
            forest.join(j, t)
    return out


class Forest:
    """The components of a forest over ``d`` columns as its edges are added (Kruskal's check), from ``edges``."""

    def __init__(self, d: int, edges=()):
        self.parent = list(range(d))
        for a, b in edges:
            self.join(a, b)

    def root(self, a: int) -> int:
        while self.parent[a] != a:
            a = self.parent[a]
        return a

    def apart(self, a: int, b: int) -> bool:
        """Whether an edge (a, b) joins two components (adds no cycle)."""
        return self.root(a) != self.root(b)

    def join(self, a: int, b: int) -> None:
        self.parent[self.root(a)] = self.root(b)


#: the cells of all pairs of columns MST scores, at most this many times sdgp.mst.max_cells (a domain guard)
PAIR_CELLS_PER_MAX = 200


class MST:
    """See the module docstring.

    Parameters
    ----------
    bins : int
        Public equal-width bins per numeric column.
    iters : int
        Mirror-descent iterations of the final Private-PGM estimate (the selection's model takes a quarter).
    max_cells : int
        Refuse a two-way marginal larger than this (memory guard): lower ``bins``.
    fine_cells : int
        0: ``bins`` equal-width bins per numeric column, values uniform inside. A power of two: every numeric
        column's fine tree histogram on that many cells (:mod:`dpiw.sdgp.binning`) first, ``bins`` bins of
        least spread chosen from it, values drawn from it; its coarse sums stand in for the column's one-way
        marginal.
    fine_fraction : float
        The share of rho the fine histograms take (with ``fine_cells``).
    max_bins : int
        With the fine histograms, a large table's numeric columns get more than ``bins`` bins, up to this many
        (:meth:`grown_bins`); None: ``bins`` (never more).
    split : tuple of 3 floats
        The weights of rho (after the fine histograms) for the one-way marginals, the tree's selection and the
        two-way marginals; MST's own (1, 1, 1) by default. A part with nothing to spend on (no one-way marginal
        left, a public tree) is left out of the split, as MST leaves it.
    sized_scores : bool
        Score each pair as AIM does (McKenna et al. 2022): its L1 error less the noise's expected L1 on its
        cells, sqrt(2 / pi) * sigma * cells (public), so the tree prefers pairs whose cells stand above the noise.
    tree : str
        ``"chosen"``: MST's own, d - 1 pairs chosen by the exponential mechanism. ``"target"``: a public star,
        every column joined to the schema's target (:func:`star_edges`): nothing is spent on the choice (its
        share of ``split`` goes to the one-way and two-way marginals), every relation with the target is
        measured, and none between two other columns.
    """

    def __init__(self, *, bins: int = 8, iters: int = 1000, max_cells: int = 100_000, fine_cells: int = 0,
                 fine_fraction: float = 0.2, max_bins: int | None = None, split=(1.0, 1.0, 1.0),
                 sized_scores: bool = False, tree: str = "chosen"):
        self.bins, self.iters, self.max_cells = bins, iters, max_cells
        self.tree = tree
        self.max_bins = bins if max_bins is None else max_bins
        self.fine_cells, self.fine_fraction = fine_cells, fine_fraction
        self.split, self.sized_scores = tuple(split), sized_scores

    def _rhos(self, rho: float, one_way: bool, selection: bool = True) -> tuple[float, float, float, float]:
        """The zCDP rho of the one-way marginals, the selection and the two-way marginals out of ``rho`` (what the
        fine histograms left), and their sum. The selection's share is kept out of the others even when the
        tree is public by the schema's `missing: indicator` ties alone (then unspent); a star on the target
        (``tree="target"``) gives it to them. Computed as rho / (sum of the weights) * weight, so MST's thirds give
        the same bits as rho / 3 (the noise of a benchmark's runs is keyed by its measurements' bytes)."""
        w1, ws, w2 = (float(x) for x in self.split)
        w1 = w1 if one_way else 0.0
        ws = 0.0 if self.tree == "target" else ws  # a public star: the choice's share goes to the measurements
        unit = rho / (w1 + ws + w2)
        return unit * w1, (unit * ws if selection else 0.0), unit * w2, unit * (w1 + (ws if selection else 0.0) + w2)

    def _pair_cells(self, schema: Schema, cards: list[int]) -> tuple[int, int, int]:
        """Of the pairs MST counts (every pair, which it scores; a public star's own), with ``cards`` cells per
        column: their cells together, how many, and the largest one's cells."""
        if self.tree == "target":
            sizes = [cards[a] * cards[b] for a, b in star_edges(schema, public_edges(schema))]
            return sum(sizes), len(sizes), max(sizes, default=0)
        total, squares = sum(cards), sum(c * c for c in cards)
        big = sorted(cards)[-2:]
        return (total * total - squares) // 2, len(cards) * (len(cards) - 1) // 2, big[0] * big[-1]

    @staticmethod
    def _cards(schema: Schema, bins: int) -> list[int]:
        return [bins if c.is_numeric else len(c.categories) for c in schema.columns]

    def fits_domain(self, schema: Schema, bins: int) -> bool:
        """Whether ``bins`` bins per numeric column pass :meth:`check_domain` and ``max_cells``."""
        pair_cells, _, largest = self._pair_cells(schema, self._cards(schema, bins))
        return pair_cells <= PAIR_CELLS_PER_MAX * self.max_cells and largest <= self.max_cells

    def check_domain(self, schema: Schema) -> None:
        """Refuse, before any row is read, a table whose marginals would not fit (public quantities only: the
        schema's categories and the bins). MST scores every pair of columns: the cells of all pairs together
        are capped at :data:`PAIR_CELLS_PER_MAX` times ``max_cells`` (a public star's pairs only, with
        ``tree="target"``)."""
        cards = self._cards(schema, self.bins)
        pair_cells, pairs, _ = self._pair_cells(schema, cards)
        limit = PAIR_CELLS_PER_MAX * self.max_cells
        if pair_cells > limit:
            raise DpiwError(f"MST on '{schema.name}': its {len(cards)} columns make {pairs} pairs holding "
                            f"{pair_cells:.3g} cells, more than {limit:.3g} ({PAIR_CELLS_PER_MAX} x sdgp.mst.max_cells)"
                            ": drop columns from the schema, merge categories, or lower sdgp.mst.bins")

    def _check(self, schema: Schema, cards: list[int], epsilon: float, delta: float) -> None:
        if not (isinstance(self.bins, int) and 2 <= self.bins <= 1000):
            raise DpiwError(f"sdgp.mst.bins must be an integer in [2, 1000], got {self.bins!r}")
        if not (isinstance(self.max_bins, int) and self.bins <= self.max_bins <= 1000):
            raise DpiwError(f"sdgp.mst.max_bins must be an integer in [sdgp.mst.bins, 1000] (= bins: never more), "
                            f"got {self.max_bins!r}")
        if not (len(self.split) == 3 and all(isinstance(x, (int, float)) and x > 0 for x in self.split)):
            raise DpiwError(f"sdgp.mst.split must be three weights > 0 (one-way, selection, two-way), got "
                            f"{list(self.split)!r}")
        if self.tree not in TREES:
            raise DpiwError(f"sdgp.mst.tree must be one of {list(TREES)}, got {self.tree!r}")
        if self.tree == "target" and schema.target not in schema.names:
            raise DpiwError(f"sdgp.mst.tree: 'target' joins every column to the schema's target, and "
                            f"'{schema.name}' names none among its columns; name one (target: ...) or use 'chosen'")
        if not (isinstance(self.iters, int) and self.iters >= 1):
            raise DpiwError(f"sdgp.mst.iters must be an integer >= 1, got {self.iters!r}")
        if len(cards) < 2:
            raise DpiwError(f"MST on '{schema.name}' needs at least 2 columns")
        largest = self._pair_cells(schema, cards)[2]
        if largest > self.max_cells:
            raise DpiwError(f"MST on '{schema.name}': a two-way marginal can hold {largest} cells > "
                            f"max_cells={self.max_cells}; lower sdgp.mst.bins")
        if not (epsilon > 0 and math.isfinite(epsilon)):
            raise DpiwError(f"MST needs a positive finite epsilon, got {epsilon}")
        check_fine(self.fine_cells, self.fine_fraction, "sdgp.mst")
        self.check_domain(schema)

    @shared_doc(SDGP_FIT, "Measures (:meth:`measure`), then estimates the graphical model from the measurements "
                "(post-processing).")
    def fit(self, train: pd.DataFrame, schema: Schema, *, epsilon: float, delta: float,
            rng: np.random.Generator, rows: RowCount | None = None) -> MST:
        return self.fit_counts(InProcessCounter.of(train, schema, self.bins), schema, epsilon=epsilon, delta=delta,
                               rng=rng, rows=rows)

    def fit_counts(self, counter: Counter, schema: Schema, *, epsilon: float, delta: float,
                   rng: np.random.Generator, rows: RowCount | None = None) -> MST:
        """:meth:`fit` from a counter (dpiw.sdgp.counting): MST reads the private rows only through their marginal
        counts, so a table counted part by part (a partitioned parquet dataset) fits the same model."""
        self.measure_counts(counter, schema, epsilon=epsilon, delta=delta, rng=rng, rows=rows)
        self.model_ = estimate_model(mbi_module(), self.cards_, self.measurements_, total=self.n_, iters=self.iters,
                                     max_numpy_cells=numpy_cells(self.iters))
        return self

    def measure(self, train: pd.DataFrame, schema: Schema, *, epsilon: float, delta: float,
                rng: np.random.Generator, rows: RowCount | None = None) -> MST:
        """The private part: the noisy one-way marginals, the tree, the noisy two-way marginals and the record.
        ``measurements_`` holds (clique, noisy counts, std) with the counts of a clique (a, b) row-major."""
        return self.measure_counts(InProcessCounter.of(train, schema, self.bins), schema, epsilon=epsilon,
                                   delta=delta, rng=rng, rows=rows)

    def measure_counts(self, counter: Counter, schema: Schema, *, epsilon: float, delta: float,
                       rng: np.random.Generator, rows: RowCount | None = None) -> MST:
        """:meth:`measure` from a counter: the fine histograms of the numeric columns (with ``fine_cells``), then
        every one- and two-way count on the bins they give, in one pass over the rows."""
        self._check(schema, list(counter.cards), epsilon, delta)
        rows = rows or RowCount.exact(counter.total)
        marginal_l2, score_l1 = count_l2(rows.neighbours), count_l1(rows.neighbours)
        rho = zcdp_rho(epsilon, delta)
        self.bins_ = self.grown_bins(schema, rows.n, rho, marginal_l2)
        counter, self.fine_, rho_rest = fine_first(self, counter, schema, rho=rho, l2=marginal_l2, total=rows.n,
                                                   rng=rng, bins=self.bins_)
        self.binning_ = self.fine_.binning if self.fine_ else Binning.equal_width(schema, self.bins)
        cards = list(counter.cards)
        d = len(cards)
        self.schema_, self.cards_, self.n_ = schema, cards, rows.n
        # the one-way marginals MST measures: every column's, less the numeric ones the fine histograms gave
        measured = [j for j, c in enumerate(schema.columns) if not (self.fine_ and c.is_numeric)]
        # public edges first: a `missing: indicator` column and its numeric column are tied by construction (the
        # value sits at its lower bound where the flag is 1), so the tree holds that pair without spending on it
        fixed = public_edges(schema)
        if self.tree == "target":
            fixed = star_edges(schema, fixed)
        rounds = d - 1 - len(fixed)
        rho1, rho_sel, rho2, rho_parts = self._rhos(rho_rest, bool(measured), bool(rounds))
        sigma1 = math.sqrt(len(measured) * marginal_l2**2 / (2 * rho1)) if measured else None
        sigma2 = math.sqrt((d - 1) * marginal_l2**2 / (2 * rho2))    # d - 1 two-way marginals
        eps_em = math.sqrt(8.0 * rho_sel / rounds) if rounds else 0.0

        pairs = list(itertools.combinations(range(d), 2))
        # every pair is scored for the choice; a public tree needs only its own counted
        table = counter.counts([*((j,) for j in range(d)), *(pairs if rounds else sorted(set(map(tuple, fixed))))])

        def measure(cliques, sigma):
            out = []
            for cl in cliques:
                x = table[cl]
                out.append((cl, x + rng.normal(0.0, sigma, size=x.size), sigma))
            return out

        one_way = measure([(j,) for j in measured], sigma1)
        if self.fine_:  # the numeric columns' one-way marginals: the fine histograms' sums over the bins (free)
            one_way += [((j,), *self.fine_.one_way[c.name]) for j, c in enumerate(schema.columns) if c.is_numeric]
            one_way.sort(key=lambda m: m[0])
        scores = self._tree_scores(table, one_way, pairs) if len(pairs) > 1 and rounds else {p: 0.0 for p in pairs}
        if self.sized_scores:  # AIM's penalty: the noise's expected L1 on the pair's cells (public)
            scores = {(a, b): q - math.sqrt(2 / math.pi) * sigma2 * cards[a] * cards[b] for (a, b), q in scores.items()}
        forest, tree = Forest(d, fixed), list(fixed)
        for _ in range(rounds):
            cand = [e for e in pairs if forest.apart(*e)]
            q = np.array([scores[e] for e in cand])
            logits = eps_em * q / (2.0 * score_l1)
            p = np.exp(logits - logits.max())
            a, b = cand[int(rng.choice(len(cand), p=p / p.sum()))]
            tree.append((a, b))
            forest.join(a, b)
        self.tree_ = tree
        self.measurements_ = one_way + measure(tree, sigma2)
        names = schema.names
        events = ((*fine_events(self.fine_), {"kind": "zcdp", "rho": len(measured) * marginal_l2**2 / (2 * sigma1**2),
                                               "about": "one-way marginals"}) if measured else fine_events(self.fine_))
        events += ({"kind": "zcdp", "rho": rounds * eps_em**2 / 8, "about": "tree selection"},
                   {"kind": "zcdp", "rho": (d - 1) * marginal_l2**2 / (2 * sigma2**2), "about": "two-way marginals"})
        rho_spent = rho_parts + (self.fine_.rho if self.fine_ else 0.0)  # no selection spend: a public tree
        self.privacy_ = PrivacySpend(
            stage="synthesize", mechanism=("MST: Gaussian marginals of a public tree (every column with the target)"
                                           if self.tree == "target" else
                                           "MST: Gaussian marginals + exponential mechanism (maximum spanning tree)"),
            epsilon=float(zcdp_to_dp(rho_spent, delta)), delta=float(delta),
            sensitivity={"marginal_l2": marginal_l2, "tree_score_l1_error": score_l1}, neighbours=rows.neighbours,
            noise={**fine_noise(self.fine_),
                   "one_way": {"distribution": "gaussian", "std": sigma1, "marginals": len(measured)},
                   "selection": {"mechanism": "exponential", "epsilon_per_round": eps_em, "rounds": rounds,
                                 "public_edges": len(fixed),
                                 **({"tree": self.tree} if self.tree != "chosen" else {})},  # older records' bytes
                   "two_way": {"distribution": "gaussian", "std": sigma2, "marginals": d - 1}},
            accountant="zCDP (Gaussian: Delta^2 / (2 sigma^2); exponential: eps^2 / 8), converted to (eps, delta) "
                       "through its RDP curve", reads_private=("train",), basis="",
            details={"generator": "mst", "bins": self.bins, "bins_used": self.bins_, "rho": rho_spent,
                     "iters": self.iters,
                     **fine_details(self), "tree": [[names[a], names[b]] for a, b in tree]},
            rdp=events)
        return self

    def grown_bins(self, schema: Schema, n: float, rho: float, l2: float) -> int:
        """The bins per numeric column of this fit: ``bins``, grown towards ``max_bins`` with the fine histograms
        where a two-way cell of two numeric columns stays at :data:`dpiw.sdgp.binning.BIN_SNR` noise sds
        (:func:`dpiw.sdgp.binning.grown_bins`: public quantities only), and never past the domain guard."""
        if not with_fine(self, schema):
            return self.bins
        d = len(schema.columns)
        one_way = any(not c.is_numeric for c in schema.columns)  # the one-way marginals MST still measures
        rho_two = self._rhos(rho * (1 - self.fine_fraction), one_way)[2]
        sigma2 = math.sqrt((d - 1) * l2**2 / (2 * rho_two))
        k = grown_bins(self.bins, self.max_bins, n, sigma2)
        while k > self.bins and not self.fits_domain(schema, k):
            k -= 1
        return k

    def _tree_scores(self, table, one_way, pairs) -> dict:
        """Each pair's L1 distance between its true two-way counts and the prediction of the model fitted on the
        noisy one-way marginals alone (the exponential mechanism's quality score). That model is the product of
        its one-way marginals, each the Euclidean projection of the noisy counts onto {x >= 0, sum x = N}: what
        Private-PGM's L2 fit converges to for disjoint cliques, computed here in closed form (no JAX program to
        compile for each of the d (d - 1) / 2 pairs)."""
        n = self.n_  # public: N_D (replace-one) or the noisy count (add/remove)
        marg = {cl[0]: simplex_projection(y, float(n)) / n for cl, y, _ in one_way}
        scores = {}
        for a, b in pairs:
            pred = n * np.outer(marg[a], marg[b]).reshape(-1)
            scores[a, b] = float(np.abs(table[a, b] - pred).sum())
        return scores

    @shared_doc(SDGP_SAMPLE)
    def sample(self, n: int, *, rng: np.random.Generator) -> pd.DataFrame:
        return sample_rows(self.model_, self.schema_, self.binning_, n, rng)
