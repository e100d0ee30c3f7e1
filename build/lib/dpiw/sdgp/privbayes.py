"""PrivBayes (Zhang, Cormode, Procopiuc, Srivastava, Xiao, TODS 2017): a DP Bayesian network.

1. Discretise every scaled column into public cells (``bins`` equal-width bins on [0, 1] for numeric
   columns, the category list for categorical ones).
2. Structure (budget eps1 = ``structure_epsilon_fraction`` * eps): GreedyBayes. X_1 is drawn uniformly
   (data-free); for i = 2..d one exponential mechanism with eps1/(d-1) picks a pair (X, Pi), X not yet
   in the network, Pi a set of min(k, |V|) attributes already in it, with probability
   ~ exp(eps1/(d-1) * I(X; Pi) / (2 S)). I is the empirical mutual information in bits and S its
   replace-one sensitivity (the paper's Lemma): (1/n) log2 n + ((n-1)/n) log2(n/(n-1)) when X or Pi is
   binary, else (2/n) log2((n+1)/2) + ((n-1)/n) log2((n+1)/(n-1)).
3. Parameters (budget eps2 = eps - eps1): the d - k joint count tables (X_i, Pi_i), i = k+1..d, each
   with Laplace noise of scale 2 (d - k) / eps2 on every COUNT (replace-one L1 sensitivity 2 per
   table; noise on normalised probabilities would need scale 2 (d - k) / (n eps2)). Clipping at 0 and
   normalising are post-processing. X_1..X_{k+1} are sampled from the (k+1)-th joint table (its
   parents are all of X_1..X_k), every later X_i from its noisy conditional given Pi_i.
4. Sampling is ancestral; a numeric cell maps back to a uniform value inside its bin.

The release is (eps, 0)-DP under replace-one neighbours (basic composition of d - 1 exponential
mechanisms and d - k Laplace mechanisms). Under add/remove neighbours (dpiw.privacy.neighbours) a count table's
L1 sensitivity is 1 and N_D is private; the structure's score is then N_D I (in bits times rows), whose
sensitivity :func:`dpiw.privacy.neighbours.count_mi_sensitivity_add_remove` is taken at an upper bound of N_D from
the stage's noisy count, which fails with probability delta / 2: the release is (eps, delta / 2)-DP.
Table sizes are capped by ``max_cells``: a config that asks for more fails before any work.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd

from dpiw import DpiwError
from dpiw._docs import SDGP_FIT, SDGP_SAMPLE, shared_doc
from dpiw.data.schema import Schema
from dpiw.privacy.neighbours import RowCount, count_l1, count_mi_sensitivity_add_remove
from dpiw.privacy.spend import PrivacySpend
from dpiw.sdgp.marginals import _sample_categorical, discretise, normalise_counts

#: sdgp.privbayes.root: how the first attribute of the network is chosen (both data-free)
ROOTS = ("random", "target")


def mi_sensitivity(n: int, binary: bool) -> float:
    """Replace-one sensitivity (bits) of the empirical mutual information on n rows (PrivBayes Lemma)."""
    if n < 2:
        raise DpiwError("PrivBayes needs at least 2 training rows")
    if binary:
        return (1 / n) * math.log2(n) + ((n - 1) / n) * math.log2(n / (n - 1))
    return (2 / n) * math.log2((n + 1) / 2) + ((n - 1) / n) * math.log2((n + 1) / (n - 1))


def _codes(cells: np.ndarray, cols: tuple[int, ...], cards: list[int]) -> tuple[np.ndarray, int]:
    """One integer per row for the joint value of ``cols`` (row-major), and the number of joint values."""
    code = np.zeros(len(cells), dtype=np.int64)
    size = 1
    for j in cols:
        code = code * cards[j] + cells[:, j]
        size *= cards[j]
    return code, size


def mutual_information(cells: np.ndarray, x: int, parents: tuple[int, ...], cards: list[int]) -> float:
    """Empirical I(X; Pi) in bits."""
    n = len(cells)
    px_code, _ = _codes(cells, (x,), cards)
    pp_code, pp_size = _codes(cells, parents, cards)
    joint = np.bincount(px_code * pp_size + pp_code, minlength=cards[x] * pp_size).reshape(cards[x], pp_size) / n
    px, pp = joint.sum(axis=1, keepdims=True), joint.sum(axis=0, keepdims=True)
    nz = joint > 0
    return float((joint[nz] * np.log2(joint[nz] / (px @ pp)[nz])).sum())


def joint_counts(cells: np.ndarray, cols: tuple[int, ...], cards: list[int]) -> np.ndarray:
    code, size = _codes(cells, cols, cards)
    return np.bincount(code, minlength=size).astype(float).reshape([cards[j] for j in cols])


class PrivBayes:
    """See the module docstring.

    Parameters
    ----------
    bins : public equal-width bins per numeric column.
    degree : k, the maximum number of parents.
    structure_epsilon_fraction : beta, the share of epsilon for the structure (the paper's 0.3).
    root : "random" (X_1 drawn uniformly, as in the PrivBayes paper) or "target" (X_1 is the schema's target, a
        public, data-free choice: every later attribute may then take it as a parent).
    max_cells : refuse any joint table larger than this (memory guard).
    max_candidates : refuse a structure search with more (X, Pi) candidates than this in one step.
    """

    def __init__(self, *, bins: int = 4, degree: int = 1, structure_epsilon_fraction: float = 0.3,
                 max_cells: int = 1_000_000, max_candidates: int = 200_000, root: str = "random"):
        self.bins, self.degree, self.root = bins, degree, root
        self.structure_epsilon_fraction = structure_epsilon_fraction
        self.max_cells, self.max_candidates = max_cells, max_candidates

    def _check(self, schema: Schema, cards: list[int], epsilon: float) -> None:
        if not (isinstance(self.bins, int) and 2 <= self.bins <= 1000):
            raise DpiwError(f"sdgp.privbayes.bins must be an integer in [2, 1000], got {self.bins!r}")
        if self.root not in ROOTS:
            raise DpiwError(f"sdgp.privbayes.root must be one of {ROOTS}, got {self.root!r}")
        if self.root == "target" and schema.target is None:
            raise DpiwError(f"sdgp.privbayes.root: target, but schema '{schema.name}' names no target; "
                            "set root: random")
        if not (isinstance(self.degree, int) and self.degree >= 1):
            raise DpiwError(f"sdgp.privbayes.degree must be an integer >= 1, got {self.degree!r}")
        if not (0 < self.structure_epsilon_fraction < 1):
            raise DpiwError("sdgp.privbayes.structure_epsilon_fraction must lie strictly between 0 and 1, got "
                            f"{self.structure_epsilon_fraction}")
        if not (epsilon > 0 and math.isfinite(epsilon)):
            raise DpiwError(f"PrivBayes needs a positive finite epsilon, got {epsilon}")
        d = len(cards)
        worst = max(cards) * math.prod(sorted(cards)[-min(self.degree, d - 1):]) if d > 1 else cards[0]
        if worst > self.max_cells:
            raise DpiwError(f"PrivBayes on '{schema.name}': a table of degree {self.degree} can hold {worst} cells "
                            f"> max_cells={self.max_cells}; lower sdgp.privbayes.bins or degree")
        most = max(((d - i) * math.comb(i, min(self.degree, i)) for i in range(1, d)), default=0)
        if most > self.max_candidates:
            raise DpiwError(f"PrivBayes on '{schema.name}': one structure step would score {most} candidates > "
                            f"max_candidates={self.max_candidates}; lower sdgp.privbayes.degree")

    @shared_doc(SDGP_FIT)
    def fit(self, train: pd.DataFrame, schema: Schema, *, epsilon: float, delta: float,
            rng: np.random.Generator, rows: RowCount | None = None) -> PrivBayes:
        cells, cards = discretise(train, schema, self.bins)
        self._check(schema, cards, epsilon)
        _, d = cells.shape
        rows = rows or RowCount.exact(len(train))
        l1 = count_l1(rows.neighbours)
        # N_D private (add/remove): the score is N_D I, whose sensitivity grows (slowly) with N_D; it is taken
        # at an upper bound of N_D from the stage's noisy count, wrong with probability delta / 2
        failure = delta / 2.0 if rows.noisy else 0.0
        if rows.noisy:
            n_bound, score_weight = rows.upper_bound(failure), float(len(cells))

            def sensitivity(x, pa):
                return count_mi_sensitivity_add_remove(n_bound)
        else:
            n_bound, score_weight = rows.n, 1.0

            def sensitivity(x, pa):
                return mi_sensitivity(n_bound, cards[x] == 2 or math.prod(cards[j] for j in pa) == 2)
        k = min(self.degree, d - 1) if d > 1 else 0
        self.schema_, self.cards_, self.k_ = schema, cards, k
        eps1 = epsilon * self.structure_epsilon_fraction if d > 1 else 0.0
        eps2 = epsilon - eps1
        # -- structure: GreedyBayes with the exponential mechanism
        first = schema.names.index(schema.target) if self.root == "target" else int(rng.integers(d))
        order, parents = [first], {first: ()}
        eps_step = eps1 / (d - 1) if d > 1 else 0.0
        self.selections_ = []
        for _ in range(d - 1):
            V = sorted(order)
            cand = [(x, pa) for x in range(d) if x not in parents
                    for pa in itertools.combinations(V, min(k, len(V)))]
            scores = score_weight * np.array([mutual_information(cells, x, pa, cards) for x, pa in cand])
            sens = np.array([sensitivity(x, pa) for x, pa in cand])
            logits = eps_step * scores / (2.0 * sens)
            p = np.exp(logits - logits.max())
            x, pa = cand[int(rng.choice(len(cand), p=p / p.sum()))]
            order.append(x)
            parents[x] = pa
            self.selections_.append({"x": x, "parents": list(pa), "n_candidates": len(cand)})
        self.order_, self.parents_ = order, parents
        # -- parameters: d - k noisy joint count tables
        n_tables = max(d - k, 1)
        scale = l1 * n_tables / eps2
        self.scale_ = scale
        head = tuple(order[: k + 1])  # X_1..X_{k+1}: Pi_{k+1} = {X_1..X_k}
        specs = [head] + [(x, *parents[x]) for x in order[k + 1:]]
        self.noisy_counts_, self.tables_ = {}, {}
        for spec in specs:
            counts = joint_counts(cells, spec, cards)
            self.noisy_counts_[spec] = counts + rng.laplace(0.0, scale, size=counts.shape)
        # head: one flat distribution over the joint cells; others: conditional of the first axis given the rest
        h = self.noisy_counts_[head]
        self.tables_[head] = normalise_counts(h.reshape(-1))
        for spec in specs[1:]:
            c = np.moveaxis(self.noisy_counts_[spec], 0, -1)  # parents first, X last
            self.tables_[spec] = normalise_counts(c)
        self.specs_ = specs
        names = schema.names
        if rows.noisy:
            mi_bounds = {"score": "N_D I(X; Pi)", "n_upper_bound": n_bound,
                         "sensitivity": count_mi_sensitivity_add_remove(n_bound),
                         "bound_failure_probability": failure}
        else:
            mi_bounds = {"binary": mi_sensitivity(n_bound, True), "non_binary": mi_sensitivity(n_bound, False)}
        self.privacy_ = PrivacySpend(
            stage="synthesize", mechanism="PrivBayes: exponential mechanism (structure) + Laplace (count tables)",
            epsilon=float(epsilon), delta=failure, neighbours=rows.neighbours,
            sensitivity={"mutual_information_bits": mi_bounds, "count_table_l1": l1},
            noise={"structure": {"mechanism": "exponential", "epsilon_per_step": eps_step, "steps": d - 1},
                   "tables": {"distribution": "laplace", "scale": scale, "per_count": True,
                              "n_tables": n_tables}},
            accountant="basic composition (pure epsilon-DP)", reads_private=("train",), basis="",
            details={"generator": "privbayes", "degree": k, "bins": self.bins,
                     "structure_epsilon": eps1, "tables_epsilon": eps2, "root": self.root,
                     "unused_delta": float(delta) - failure,
                     "network": [{"x": names[x], "parents": [names[j] for j in parents[x]]} for x in order]},
            rdp=({"kind": "pure", "epsilon": eps_step, "count": d - 1, "about": "exponential mechanism"},
                 {"kind": "laplace", "epsilon": l1 / scale, "count": n_tables},
                 *([{"kind": "failure", "probability": failure, "about": "the row count's upper bound"}]
                   if rows.noisy else [])))
        return self

    @shared_doc(SDGP_SAMPLE)
    def sample(self, n: int, *, rng: np.random.Generator) -> pd.DataFrame:
        d = len(self.cards_)
        cells = np.zeros((n, d), dtype=np.int64)
        head = self.specs_[0]
        flat = _sample_categorical(np.broadcast_to(self.tables_[head], (n, self.tables_[head].size)).copy(), rng)
        for j in reversed(head):  # unravel row-major codes
            cells[:, j] = flat % self.cards_[j]
            flat //= self.cards_[j]
        for spec in self.specs_[1:]:
            x, pa = spec[0], spec[1:]
            probs = self.tables_[spec][tuple(cells[:, j] for j in pa)]
            cells[:, x] = _sample_categorical(probs, rng)
        out = {}
        for j, c in enumerate(self.schema_.columns):
            out[c.name] = (cells[:, j] + rng.uniform(size=n)) / self.bins if c.is_numeric else cells[:, j]
        return pd.DataFrame(out)[self.schema_.names]
