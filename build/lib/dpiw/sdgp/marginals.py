"""DP marginals: noisy histograms with the Laplace mechanism, sampled back to rows.

``structure="independent"`` releases one histogram per column; ``structure="naive_bayes"`` releases
the target's histogram and one 2-way histogram (target, column) per other column, i.e. a degree-1
Bayesian network with the target as the root (a fixed, data-independent structure, so no budget is
spent choosing it).

Privacy: under replace-one neighbours a replaced row moves one count down and one up in every table
(L1 sensitivity 2); under add/remove an added row moves one count up (L1 sensitivity 1;
dpiw.privacy.neighbours). The budget is split evenly over the T tables (basic composition), so each count gets
Laplace noise of scale 2T/epsilon (or T/epsilon), and the release is (epsilon, 0)-DP. Clipping negative
counts, normalising and sampling are post-processing.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpiw import DpiwError
from dpiw._docs import SDGP_FIT, SDGP_SAMPLE, shared_doc
from dpiw.data.schema import Schema
from dpiw.privacy.neighbours import RowCount, count_l1
from dpiw.privacy.spend import PrivacySpend

STRUCTURES = ("independent", "naive_bayes")


def discretise(df: pd.DataFrame, schema: Schema, bins) -> tuple[np.ndarray, list[int]]:
    """Scaled frame -> integer cells and each column's cardinality: ``bins`` public equal-width bins on [0, 1] per
    numeric column, or a :class:`dpiw.sdgp.binning.Binning` (bins shaped by a DP fine histogram)."""
    from dpiw.sdgp.binning import as_binning

    binning = as_binning(schema, bins)
    return binning.cells(df), binning.cards


def noisy_probabilities(counts: np.ndarray, scale: float, rng: np.random.Generator) -> np.ndarray:
    """Laplace-noised counts, clipped at 0 and normalised along the last axis (uniform if all <= 0)."""
    return normalise_counts(counts + rng.laplace(0.0, scale, size=counts.shape))


def normalise_counts(noisy: np.ndarray) -> np.ndarray:
    """Post-processing of noisy counts: clip at 0, normalise along the last axis (uniform if all <= 0)."""
    noisy = np.clip(noisy, 0.0, None)
    totals = noisy.sum(axis=-1, keepdims=True)
    uniform = np.full_like(noisy, 1.0 / noisy.shape[-1])
    return np.where(totals > 0, noisy / np.where(totals > 0, totals, 1.0), uniform)


def _sample_categorical(probs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One draw per row of ``probs`` (rows sum to 1) by inverse CDF."""
    cdf = np.cumsum(probs, axis=-1)
    cdf[..., -1] = 1.0
    u = rng.uniform(size=probs.shape[:-1] + (1,))
    return (u > cdf).sum(axis=-1)


class DPMarginals:
    """Laplace-noised histograms (see the module docstring).

    Parameters
    ----------
    bins : public number of equal-width bins per numeric column on [0, 1].
    structure : "independent" or "naive_bayes" (target as the root).
    max_cells : refuse tables larger than this (memory guard).
    """

    def __init__(self, *, bins: int = 20, structure: str = "naive_bayes", max_cells: int = 1_000_000):
        self.bins = bins
        self.structure = structure
        self.max_cells = max_cells

    @shared_doc(SDGP_FIT)
    def fit(self, train: pd.DataFrame, schema: Schema, *, epsilon: float, delta: float,
            rng: np.random.Generator, rows: RowCount | None = None) -> DPMarginals:
        if not (isinstance(self.bins, int) and 2 <= self.bins <= 1000):
            raise DpiwError(f"sdgp marginals: bins must be an integer in [2, 1000], got {self.bins}")
        if self.structure not in STRUCTURES:
            raise DpiwError(f"sdgp marginals: structure must be one of {STRUCTURES}, got {self.structure!r}")
        if not (epsilon > 0):
            raise DpiwError(f"sdgp marginals needs a positive epsilon, got {epsilon}")
        cells, cards = discretise(train, schema, self.bins)
        self.schema_, self.cards_ = schema, cards
        names = schema.names
        if self.structure == "independent":
            self.root_ = None
            specs = [(j,) for j in range(len(names))]
        else:
            self.root_ = names.index(schema.target)
            specs = [(self.root_,)] + [(self.root_, j) for j in range(len(names)) if j != self.root_]
        for spec in specs:
            size = int(np.prod([cards[j] for j in spec]))
            if size > self.max_cells:
                raise DpiwError(f"sdgp marginals: table over {[names[j] for j in spec]} has {size} cells > "
                                f"max_cells={self.max_cells}; lower bins")
        n_tables = len(specs)
        neighbours = (rows or RowCount.exact(len(train))).neighbours
        l1 = count_l1(neighbours)
        scale = l1 * n_tables / epsilon
        self.tables_, self.noisy_counts_ = {}, {}  # noisy counts kept for audits (they are DP outputs)
        for spec in specs:
            shape = tuple(cards[j] for j in spec)
            counts = np.zeros(shape)
            np.add.at(counts, tuple(cells[:, j] for j in spec), 1.0)
            self.noisy_counts_[spec] = counts + rng.laplace(0.0, scale, size=shape)
            self.tables_[spec] = normalise_counts(self.noisy_counts_[spec])
        self.privacy_ = PrivacySpend(
            stage="synthesize", mechanism="laplace histograms", epsilon=float(epsilon), delta=0.0,
            sensitivity={"l1_per_table": l1}, neighbours=neighbours,
            noise={"distribution": "laplace", "scale": scale, "per_count": True},
            accountant="basic composition over tables (pure epsilon-DP)",
            reads_private=("train",), basis="",
            details={"generator": "marginals", "structure": self.structure, "bins": self.bins,
                     "n_tables": n_tables, "epsilon_per_table": epsilon / n_tables,
                     "unused_delta": float(delta)},
            rdp=({"kind": "laplace", "epsilon": epsilon / n_tables, "count": n_tables},))
        return self

    @shared_doc(SDGP_SAMPLE)
    def sample(self, n: int, *, rng: np.random.Generator) -> pd.DataFrame:
        names = self.schema_.names
        cells = np.zeros((n, len(names)), dtype=np.int64)
        if self.root_ is None:
            for (j,), p in self.tables_.items():
                cells[:, j] = _sample_categorical(np.broadcast_to(p, (n, p.size)).copy(), rng)
        else:
            r = self.root_
            p_root = self.tables_[(r,)]
            cells[:, r] = _sample_categorical(np.broadcast_to(p_root, (n, p_root.size)).copy(), rng)
            for spec, p in self.tables_.items():
                if len(spec) == 2:
                    cells[:, spec[1]] = _sample_categorical(p[cells[:, r]], rng)
        out = {}
        for j, c in enumerate(self.schema_.columns):
            if c.is_numeric:  # uniform within the bin
                out[c.name] = (cells[:, j] + rng.uniform(size=n)) / self.bins
            else:
                out[c.name] = cells[:, j]
        return pd.DataFrame(out)[names]
