"""AIM, an adaptive and iterative mechanism (McKenna, Mullins, Sheldon and Miklau 2022), on Private-PGM (the
`mbi` package), for replace-one (default) or add/remove neighbours.

1. Discretise every scaled column into public cells (as MST does): ``bins`` equal-width bins on [0, 1] for a
   numeric column, the categories of a categorical one.
2. The workload W: every pair of columns and, with ``target_triples``, every triple that holds the schema's
   target (a public choice), less any marginal of more than ``max_cells`` cells. The candidates are W's
   downward closure; candidate r weighs w_r = sum over s in W of |r & s| (how much of the workload it covers).
3. Budget: the SDGP's (eps, delta) becomes the largest zCDP rho whose RDP curve converts to at most eps at
   delta (:func:`dpiw.privacy.accounting.zcdp_rho`). With T = ``rounds`` (0: 16 d), the first noise scale is
   sigma = sqrt(T Delta^2 / (2 * 0.9 rho)) and the first selection's eps_em = sqrt(8 * 0.1 rho / T); Delta is a
   marginal's L2 sensitivity (sqrt 2 under replace-one, 1 under add/remove).
4. The d one-way marginals are measured with Gaussian noise of std sigma (d Delta^2 / (2 sigma^2) of rho), and
   Private-PGM estimates a model from them.
5. Rounds, until rho is spent: if what is left is less than two rounds' worth, this round takes all of it
   (0.9 on the measurement, 0.1 on the selection) and is the last. The exponential mechanism (eps_em^2 / 8 of
   rho) picks the candidate r with quality w_r (||x_r - m_r||_1 - sqrt(2/pi) sigma |r|), the L1 error of the
   model's marginal m_r less the noise a measurement would add, among the candidates whose model stays under
   ``max_model_size`` MB times the share of rho spent so far; the quality moves by at most
   max w_r * (2 under replace-one, 1 under add/remove) when a row changes. The pick is measured with std sigma
   (Delta^2 / (2 sigma^2)), and the model re-estimated from all measurements (warm-started; in numpy while its
   junction tree is small, :class:`PGMEstimator`). If the new model
   moved the pick's marginal by less than the noise's expected L1 size, sqrt(2/pi) sigma |r|, sigma halves and
   eps_em doubles (budget annealing): later rounds are fewer and sharper.
6. Private-PGM's final model samples N_G rows (mbi's randomised rounding; in numpy for a numpy model); a numeric
   cell maps back to a value inside its bin (from the fine histogram where there is one, else uniform).

Every choice after a measurement reads only noisy measurements and public quantities (post-processing). The
record lists every round's std and eps_em and the zCDP parts as RDP events, summing to rho.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import numpy as np
import pandas as pd

from dpiw import DpiwError
from dpiw._docs import SDGP_FIT, SDGP_SAMPLE, shared_doc
from dpiw.data.schema import Schema
from dpiw.privacy.accounting import zcdp_rho, zcdp_to_dp
from dpiw.privacy.neighbours import RowCount, count_l1, count_l2
from dpiw.privacy.spend import PrivacySpend
from dpiw.sdgp.binning import Binning, check_fine, fine_details, fine_events, fine_first, fine_noise
from dpiw.sdgp.counting import Clique, Counter, InProcessCounter
from dpiw.sdgp.pgm import estimate_model, mbi_module, model_size_mb, sample_rows
from dpiw.sdgp.pgm import numpy_cells as pgm_numpy_cells

#: the share of each round's rho that goes to its measurement (the rest to its selection), as in the paper
MEASURE_SHARE = 0.9
#: the cells of all candidate marginals together, at most this many times sdgp.aim.max_cells (a domain guard)
CANDIDATE_CELLS_PER_MAX = 200


def workload(cards: list[int], target: int | None, *, target_triples: bool, max_cells: int) -> list[Clique]:
    """Every pair of columns and (``target_triples``) every triple holding ``target``, less those over
    ``max_cells`` cells (public: the schema and the bins decide)."""
    d = len(cards)
    out = list(itertools.combinations(range(d), 2))
    if target_triples and target is not None:
        out += [tuple(sorted((target, a, b))) for a, b in itertools.combinations(
            [j for j in range(d) if j != target], 2)]
    return [cl for cl in out if math.prod(cards[j] for j in cl) <= max_cells]


def candidates(work: list[Clique]) -> dict[Clique, float]:
    """The workload's downward closure, each clique r weighted by sum over s in the workload of |r & s|: the sum
    over r's columns of how many workload marginals hold each."""
    closure = sorted({sub for cl in work for r in range(1, len(cl) + 1) for sub in itertools.combinations(cl, r)},
                     key=lambda c: (len(c), c))
    holding: dict[int, int] = {}
    for cl in work:
        for j in cl:
            holding[j] = holding.get(j, 0) + 1
    return {cl: float(sum(holding[j] for j in cl)) for cl in closure}


class AIM:
    """See the module docstring.

    Parameters
    ----------
    bins : int
        Public equal-width bins per numeric column.
    iters : int
        Mirror-descent iterations of each Private-PGM estimate (warm-started from the round before).
    rounds : int
        T, the number of rounds the first noise scale is set for (0: 16 times the number of columns).
    max_model_size : float
        The model's size cap in MB (its junction tree's cells x 8 bytes), reached as rho is spent.
    max_cells : int
        Leave workload marginals of more cells than this out.
    target_triples : bool
        Add the triples holding the schema's target to the workload of all pairs.
    estimator : callable, optional
        ``estimator(measurements, cards, n, warm) -> model`` with ``model.marginal(clique)`` (row-major counts):
        Private-PGM by default. Post-processing: any estimator keeps the guarantee (the audit uses an exact one).
    """

    def __init__(self, *, bins: int = 8, iters: int = 500, rounds: int = 0, max_model_size: float = 80.0,
                 max_cells: int = 10_000, target_triples: bool = True, estimator: Callable | None = None,
                 fine_cells: int = 0, fine_fraction: float = 0.2):
        self.bins, self.iters, self.rounds, self.max_model_size = bins, iters, rounds, max_model_size
        self.fine_cells, self.fine_fraction = fine_cells, fine_fraction
        self.max_cells, self.target_triples = max_cells, target_triples
        self.estimator = estimator or PGMEstimator(iters)

    def _cards(self, schema: Schema) -> list[int]:
        return [self.bins if c.is_numeric else len(c.categories) for c in schema.columns]

    def _workload(self, schema: Schema, cards: list[int]) -> dict[Clique, float]:
        target = schema.names.index(schema.target) if schema.target in schema.names else None
        work = workload(cards, target, target_triples=self.target_triples, max_cells=self.max_cells)
        if not work:
            raise DpiwError(f"AIM on '{schema.name}': every workload marginal has more than sdgp.aim.max_cells="
                            f"{self.max_cells} cells; lower sdgp.aim.bins or raise max_cells")
        return candidates(work)

    def check_domain(self, schema: Schema) -> None:
        """Refuse, before any row is read, a table whose candidate marginals would not fit in memory (public
        quantities only: the schema's categories and the bins)."""
        cards = self._cards(schema)
        if len(cards) < 2:
            raise DpiwError(f"AIM on '{schema.name}' needs at least 2 columns")
        cells = sum(math.prod(cards[j] for j in cl) for cl in self._workload(schema, cards))
        limit = CANDIDATE_CELLS_PER_MAX * self.max_cells
        if cells > limit:
            raise DpiwError(f"AIM on '{schema.name}': its candidate marginals hold {cells:.3g} cells, more than "
                            f"{limit:.3g} ({CANDIDATE_CELLS_PER_MAX} x sdgp.aim.max_cells): set "
                            "sdgp.aim.target_triples: false, drop columns, or lower sdgp.aim.bins")

    def _check(self, schema: Schema, epsilon: float) -> None:
        if not (isinstance(self.bins, int) and 2 <= self.bins <= 1000):
            raise DpiwError(f"sdgp.aim.bins must be an integer in [2, 1000], got {self.bins!r}")
        if not (isinstance(self.rounds, int) and self.rounds >= 0):
            raise DpiwError(f"sdgp.aim.rounds must be an integer >= 0 (0: 16 per column), got {self.rounds!r}")
        if 0 < self.rounds < len(schema.columns):  # the one-way marginals alone would spend more than rho
            raise DpiwError(f"sdgp.aim.rounds must be 0 (16 per column) or at least the {len(schema.columns)} "
                            f"columns of '{schema.name}', got {self.rounds}")
        if not (self.max_model_size > 0 and math.isfinite(self.max_model_size)):
            raise DpiwError(f"sdgp.aim.max_model_size must be a positive number of MB, got {self.max_model_size!r}")
        if not (epsilon > 0 and math.isfinite(epsilon)):
            raise DpiwError(f"AIM needs a positive finite epsilon, got {epsilon}")
        check_fine(self.fine_cells, self.fine_fraction, "sdgp.aim")
        self.check_domain(schema)

    @shared_doc(SDGP_FIT, "The rounds of selection, measurement and estimation (:meth:`fit_counts`).")
    def fit(self, train: pd.DataFrame, schema: Schema, *, epsilon: float, delta: float,
            rng: np.random.Generator, rows: RowCount | None = None) -> AIM:
        return self.fit_counts(InProcessCounter.of(train, schema, self.bins), schema, epsilon=epsilon, delta=delta,
                               rng=rng, rows=rows)

    def fit_counts(self, counter: Counter, schema: Schema, *, epsilon: float, delta: float,
                   rng: np.random.Generator, rows: RowCount | None = None) -> AIM:
        """:meth:`fit` from a counter (dpiw.sdgp.counting): AIM reads the private rows only through the
        candidates' counts, taken in one pass."""
        self._check(schema, epsilon)
        rows = rows or RowCount.exact(counter.total)
        l2, l1 = count_l2(rows.neighbours), count_l1(rows.neighbours)
        rho_all = zcdp_rho(epsilon, delta)
        # the fine histograms first (with fine_cells): the bins follow the rows, the rounds get what is left
        counter, self.fine_, rho = fine_first(self, counter, schema, rho=rho_all, l2=l2, total=rows.n, rng=rng)
        self.binning_ = self.fine_.binning if self.fine_ else Binning.equal_width(schema, self.bins)
        cards = list(counter.cards)
        cand = self._workload(schema, cards)
        answers = counter.counts(list(cand))
        self.schema_, self.cards_, self.n_ = schema, cards, rows.n
        d = len(cards)
        big_t = self.rounds or 16 * d
        sigma = math.sqrt(big_t * l2**2 / (2 * MEASURE_SHARE * rho))
        eps_em = math.sqrt(8 * (1 - MEASURE_SHARE) * rho / big_t)

        def noisy(cl, sd):
            x = answers[cl]
            return cl, x + rng.normal(0.0, sd, size=x.size), sd

        # the one-way marginals: measured, or for a numeric column the fine histogram's sums over its bins
        fine_one = self.fine_.one_way if self.fine_ else {}
        measured = [((j,), *fine_one[c.name]) if c.name in fine_one else noisy((j,), sigma)
                    for j, c in enumerate(schema.columns)]
        rho_one_way = (d - len(fine_one)) * l2**2 / (2 * sigma**2)
        rho_used, sigma0 = rho_one_way, sigma
        model = self.estimator(measured, cards, float(rows.n), None)
        rounds, terminate = [], False
        while not terminate:
            round_rho = l2**2 / (2 * sigma**2) + eps_em**2 / 8
            if rho - rho_used < 2 * round_rho:  # the last round takes what is left
                left = rho - rho_used
                sigma = math.sqrt(l2**2 / (2 * MEASURE_SHARE * left))
                eps_em = math.sqrt(8 * (1 - MEASURE_SHARE) * left)
                terminate = True
            rho_used += l2**2 / (2 * sigma**2) + eps_em**2 / 8
            cl = self._select(cand, answers, [m[0] for m in measured], cards, model, sigma=sigma, eps_em=eps_em,
                              l1=l1, size_limit=self.max_model_size * rho_used / rho, rng=rng)
            measured.append(noisy(cl, sigma))
            before = model.marginal(cl)
            model = self.estimator(measured, cards, float(rows.n), model)
            cells = math.prod(cards[j] for j in cl)
            annealed = (not terminate and float(np.abs(model.marginal(cl) - before).sum())
                        <= sigma * math.sqrt(2 / math.pi) * cells)
            rounds.append({"clique": list(cl), "std": sigma, "epsilon_em": eps_em, "annealed": bool(annealed)})
            if annealed:
                sigma, eps_em = sigma / 2, eps_em * 2
        self.model_, self.measurements_ = model, measured
        self._record(schema, rows, epsilon, delta, rho_all, big_t, rho_one_way, rounds, sigma0, l1, l2)
        return self

    def _select(self, cand: dict, answers: dict, measured: list[Clique], cards: list[int], model, *,
                sigma: float, eps_em: float, l1: float, size_limit: float, rng: np.random.Generator) -> Clique:
        """The exponential mechanism over the candidates the model can take, with quality
        w_r (||x_r - m_r||_1 - sqrt(2/pi) sigma |r|) and sensitivity l1 max_r w_r over all candidates (at least the
        allowed ones' maximum: never sharper than the paper's). A draw the model cannot take (its junction tree
        would pass ``size_limit`` MB) is set aside and the draw repeated among the rest: the pick has the
        exponential mechanism's law restricted to the allowed candidates, and only drawn candidates are sized."""
        cls = list(cand)
        w = np.array([cand[cl] for cl in cls])
        err = np.array([np.abs(answers[cl] - model.marginal(cl)).sum() for cl in cls])
        size = np.array([answers[cl].size for cl in cls], dtype=float)
        q = w * (err - math.sqrt(2 / math.pi) * sigma * size)
        logits = eps_em * q / (2.0 * l1 * w.max())
        free = {sub for cl in measured for r in range(1, len(cl) + 1) for sub in itertools.combinations(cl, r)}
        # any junction tree over d columns holds at most d times the full domain's cells
        everything_fits = len(cards) * math.prod(cards) * 8 / 2**20 <= size_limit
        alive = np.ones(len(cls), dtype=bool)
        while alive.any():
            p = np.where(alive, np.exp(logits - logits[alive].max()), 0.0)
            i = int(rng.choice(len(cls), p=p / p.sum()))
            if everything_fits or cls[i] in free or model_size_mb(cards, [*measured, cls[i]]) <= size_limit:
                return cls[i]
            alive[i] = False
        raise DpiwError("AIM: no candidate marginal fits sdgp.aim.max_model_size; raise it")

    def _record(self, schema, rows, epsilon, delta, rho, big_t, rho_one_way, rounds, sigma0, l1, l2) -> None:
        names = schema.names
        rho_select = sum(r["epsilon_em"] ** 2 / 8 for r in rounds)
        rho_measure = sum(l2**2 / (2 * r["std"] ** 2) for r in rounds)
        self.rounds_ = rounds
        fine_rho = self.fine_.rho if self.fine_ else 0.0
        self.privacy_ = PrivacySpend(
            stage="synthesize", mechanism="AIM: Gaussian marginals chosen by exponential mechanisms, budget annealing",
            epsilon=float(zcdp_to_dp(fine_rho + rho_one_way + rho_select + rho_measure, delta)), delta=float(delta),
            sensitivity={"marginal_l2": l2, "quality_l1_error": l1}, neighbours=rows.neighbours,
            noise={**fine_noise(self.fine_),
                   "one_way": {"distribution": "gaussian", "std": sigma0,
                               "marginals": len(self.cards_) - len(self.fine_.one_way if self.fine_ else ())},
                   "rounds": [{"clique": [names[j] for j in r["clique"]], "std": r["std"],
                               "epsilon_em": r["epsilon_em"], "annealed": r["annealed"]} for r in rounds]},
            accountant="zCDP (Gaussian: Delta^2 / (2 sigma^2); exponential: eps^2 / 8), converted to (eps, delta) "
                       "through its RDP curve", reads_private=("train",), basis="",
            details={"generator": "aim", "bins": self.bins, "rho": rho, "T": big_t, "iters": self.iters,
                     "max_model_size_mb": self.max_model_size, "target_triples": self.target_triples,
                     **fine_details(self), "measured": [[names[j] for j in r["clique"]] for r in rounds]},
            rdp=(*fine_events(self.fine_), {"kind": "zcdp", "rho": rho_one_way, "about": "one-way marginals"},
                 {"kind": "zcdp", "rho": rho_select, "about": f"selection ({len(rounds)} exponential mechanisms)"},
                 {"kind": "zcdp", "rho": rho_measure, "about": f"measurements ({len(rounds)} Gaussian marginals)"}))

    @shared_doc(SDGP_SAMPLE)
    def sample(self, n: int, *, rng: np.random.Generator) -> pd.DataFrame:
        return sample_rows(self.model_.model, self.schema_, self.binning_, n, rng)


class PGMEstimator:
    """Private-PGM's mirror descent from the measurements with the known total, warm-started from the last
    model; :meth:`PGMModel.marginal` answers any clique (by variable elimination outside the model's cliques).
    A model of at most ``numpy_cells`` junction-tree cells is estimated in numpy (:mod:`dpiw.sdgp.mirror_descent`,
    the same steps without compiling one program per round), a larger one by mbi (:func:`estimate_model`)."""

    def __init__(self, iters: int, numpy_cells: float | None = None):
        self.iters = iters
        self.numpy_cells = pgm_numpy_cells(iters) if numpy_cells is None else numpy_cells  # 200,000 at 500 steps

    def __call__(self, measured, cards, n, warm):
        return PGMModel(estimate_model(mbi_module(), cards, measured, total=n, iters=self.iters,
                                       warm=None if warm is None else warm.model, max_numpy_cells=self.numpy_cells))


def _logsumexp(a: np.ndarray, axis=None) -> np.ndarray:
    m = np.max(a, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    out = np.log(np.sum(np.exp(a - m), axis=axis, keepdims=True)) + m
    return out.squeeze(axis=axis) if axis is not None else out.reshape(())


def _join(factors: list, cards: list[int]) -> tuple[tuple[int, ...], np.ndarray]:
    """The sum of log-factors (vars, array) on the union of their variables (in sorted order)."""
    union = tuple(sorted({v for vs, _ in factors for v in vs}))
    out = np.zeros([cards[v] for v in union])
    for vs, a in factors:
        order = sorted(range(len(vs)), key=lambda i: vs[i])
        shape = [cards[v] if v in vs else 1 for v in union]
        out = out + np.transpose(a, order).reshape(shape)
    return union, out


def _marginal_probabilities(factors: list, query: tuple[int, ...], cards: list[int]) -> np.ndarray:
    """Variable elimination in log space: the normalised marginal of ``query`` (axes in its order) under the
    product of ``factors``, eliminating the cheapest variable first (the smallest joined table)."""
    fs = list(factors)
    elim = {v for vs, _ in fs for v in vs} - set(query)
    while elim:
        def cost(z, fs=fs):
            return math.prod(cards[v] for v in {v for vs, _ in fs if z in vs for v in vs}), z

        z = min(elim, key=cost)
        union, arr = _join([f for f in fs if z in f[0]], cards)
        fs = [f for f in fs if z not in f[0]]
        ax = union.index(z)
        fs.append((union[:ax] + union[ax + 1:], _logsumexp(arr, axis=ax)))
        elim.discard(z)
    union, arr = _join([f for f in fs if f[0]], cards)
    for v in query:  # a variable in no factor: uniform
        if v not in union:
            union, arr = union + (v,), np.repeat(arr[..., None], cards[v], axis=-1)
    arr = np.transpose(arr, [union.index(v) for v in query])
    return np.exp(arr - _logsumexp(arr))


class PGMModel:
    """An estimated model and its marginals, computed in numpy from its potentials: a marginal factorises over the
    connected components of the model's cliques, and each component's part is found by variable elimination
    (cached for the model's life)."""

    def __init__(self, model):
        from dpiw.sdgp import mirror_descent as md

        self.model = model
        if isinstance(model, md.Model):
            self.cards, self.factors, self.total = list(model.cards), model.factors, float(model.total)
        else:
            pots = model.potentials
            self.cards = [int(model.domain[a]) for a in model.domain.attributes]
            self.factors = [(tuple(int(a) for a in pots[cl].domain.attributes), np.asarray(pots[cl].values, float))
                            for cl in pots.cliques]
            self.total = float(model.total)
        comp = list(range(len(self.cards)))

        def root(a):
            while comp[a] != a:
                comp[a] = comp[comp[a]]
                a = comp[a]
            return a

        for vs, _ in self.factors:
            for v in vs[1:]:
                comp[root(v)] = root(vs[0])
        self.component = [root(v) for v in range(len(self.cards))]
        self._cache: dict = {}

    def marginal(self, cl: Clique) -> np.ndarray:
        """The model's counts on clique ``cl`` (row-major over its columns, summing to the total)."""
        groups: dict[int, list[int]] = {}
        for v in cl:
            groups.setdefault(self.component[v], []).append(v)
        order, prob = (), np.ones(())
        for c, vs in groups.items():
            key = tuple(vs)
            if key not in self._cache:
                mine = [f for f in self.factors if self.component[f[0][0]] == c]
                self._cache[key] = _marginal_probabilities(mine, key, self.cards)
            order, prob = order + key, np.multiply.outer(prob, self._cache[key])
        return self.total * np.transpose(prob, [order.index(v) for v in cl]).ravel()
