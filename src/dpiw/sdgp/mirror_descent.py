"""Private-PGM's mirror descent (McKenna, Sheldon and Miklau 2019, Algorithm 1) in numpy, step for step as
`mbi` 2.0's ``MirrorDescent`` runs it, for models small enough that numpy is quicker than compiling.

mbi compiles one XLA program per set of measured cliques. AIM measures a new clique every round, so an AIM fit
on a 5-column table spent 16.5 of its 25 s compiling 16 programs that each ran for a fraction of a second.
Here nothing is compiled:

- the potentials theta live on the measured cliques that no other measured clique holds (mbi's
  ``maximal_subset``, in its order); the junction tree is mbi's (``make_junction_tree``, plain Python);
- the marginals mu(theta) come from Shafer-Shenoy message passing in log space on the tree's cliques, each
  normalised to the known total, then summed down to the potentials' cliques;
- the loss is sum over measurements of (1/2) ||(P_c mu - y) / sd||^2 (P_c sums a potential's clique down to
  the measurement's), its gradient in mu broadcast back; the step size starts at 2 / (L total), L the loss's
  Lipschitz constant from the measurements (mbi's ``calculate_l2_lipschitz_from_metadata``), and every step
  is Armijo's: theta - alpha dL is kept, and alpha grows by 1.01, if the loss falls by at least
  alpha/2 dL . (mu - mu'), else alpha halves and theta stays;
- it runs ``iters`` steps rounded up to mbi's blocks of 50, warm-started from an earlier model's potentials
  (each added to the new potential that holds its clique, as mbi's ``CliqueVector.expand``).

The result agrees with mbi's to rounding (tests/unit/test_mirror_descent.py). :func:`to_mbi` makes an mbi model
of it (a warm start for mbi's estimate); its rows are drawn in numpy (:mod:`dpiw.sdgp.pgm_sampling`).
"""

from __future__ import annotations

import math

import numpy as np

#: mbi runs its steps in blocks of this many (its CALLBACK_EVERY)
BLOCK = 50


def _lse(a: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """log sum exp over ``axes`` (kept as size-1 axes)."""
    if not axes:
        return a
    m = np.maximum.reduce(a, axis=axes, keepdims=True)  # ndarray.max and .sum without numpy's wrappers
    m = np.where(np.isfinite(m), m, 0.0)
    return np.log(np.add.reduce(np.exp(a - m), axis=axes, keepdims=True)) + m


def smallest_holding(c: tuple[int, ...], cliques, cards: list[int]) -> tuple[int, ...]:
    """The clique of ``cliques`` with the fewest cells that holds ``c`` (the first of equals), as mbi's
    ``clique_mapping`` routes a table: a potential to its tree clique, a measurement to its potential."""
    return min((n for n in cliques if set(c) <= set(n)), key=lambda n: math.prod(cards[v] for v in n))


def as_numpy(model) -> Model:
    """A :class:`Model` (as it is) or an mbi model's potentials as one."""
    return model if isinstance(model, Model) else from_mbi(model)


def as_mbi(mbi, model):
    """An mbi model (as it is) or a :class:`Model` as one."""
    return to_mbi(mbi, model) if isinstance(model, Model) else model


class Factor:
    """A table over ``vars`` (ints), axis i for ``vars[i]``."""

    __slots__ = ("vars", "values")

    def __init__(self, vars_: tuple[int, ...], values: np.ndarray):
        self.vars, self.values = tuple(vars_), values

    def aligned(self, to: tuple[int, ...], cards: list[int]) -> np.ndarray:
        """The values broadcast onto the axes of ``to`` (a superset of ``vars``)."""
        return Aligned(self.vars, to, cards)(self.values)

    def summed(self, to: tuple[int, ...]) -> np.ndarray:
        """The values summed down to ``to`` (a subset of ``vars``), axes in ``to``'s order."""
        return Summed(self.vars, to)(self.values)


class Aligned:
    """:meth:`Factor.aligned` from ``vars_`` onto ``to`` worked out once: a step of the mirror descent aligns the
    same tables thousands of times, and the axes' bookkeeping cost more than the numpy call."""

    __slots__ = ("order", "shape")

    def __init__(self, vars_: tuple[int, ...], to: tuple[int, ...], cards: list[int]):
        self.order = sorted(range(len(vars_)), key=lambda i: to.index(vars_[i]))
        self.shape = [cards[v] if v in vars_ else 1 for v in to]

    def __call__(self, values: np.ndarray) -> np.ndarray:
        return values.transpose(self.order).reshape(self.shape)


class Summed:
    """:meth:`Factor.summed` from ``vars_`` down to ``to``, worked out once (see :class:`Aligned`)."""

    __slots__ = ("axes", "order")

    def __init__(self, vars_: tuple[int, ...], to: tuple[int, ...]):
        self.axes = tuple(i for i, v in enumerate(vars_) if v not in to)
        kept = [v for v in vars_ if v in to]
        self.order = [kept.index(v) for v in to]

    def __call__(self, values: np.ndarray) -> np.ndarray:
        return np.add.reduce(values, axis=self.axes).transpose(self.order)


class Tree:
    """The junction tree of a set of cliques with what message passing needs, built once per set of cliques."""

    def __init__(self, mbi, cards: list[int], cliques: list[tuple[int, ...]]):
        from mbi import junction_tree

        from dpiw.sdgp.pgm import domain

        self.cards = cards
        jt, order = junction_tree.make_junction_tree(domain(mbi, cards), [tuple(map(str, c)) for c in cliques])
        to_int = {n: tuple(int(a) for a in n) for n in jt.nodes}
        self.nodes = [to_int[n] for n in junction_tree.maximal_cliques(jt)]
        self.node_order = [to_int[n] for n in jt.nodes]  # the order mbi's sampling looks cliques up in
        self.elimination_order = [int(a) for a in order]
        self.order = [(to_int[a], to_int[b]) for a, b in junction_tree.message_passing_order(jt)]
        self.neighbours = {to_int[n]: [to_int[k] for k in jt.neighbors(n)] for n in jt.nodes}
        # each potential's clique goes to the smallest tree clique that holds it (mbi's clique_mapping)
        self.home = {c: smallest_holding(c, self.nodes, cards) for c in cliques}
        self.cliques = list(cliques)
        # every table's moves, worked out once: the potentials onto their tree cliques, each message (its
        # incoming messages, the axes it sums out, onto the receiver's axes), the tree cliques down to the
        # potentials'
        self._onto = [(c, self.home[c], Aligned(c, self.home[c], cards)) for c in self.cliques]
        self._messages = []
        for i, j in self.order:
            sep = set(i) & set(j)
            kept = tuple(v for v in i if v in sep)
            self._messages.append((i, j, [k for k in self.neighbours[i] if k != j],
                                   tuple(a for a, v in enumerate(i) if v not in sep), [cards[v] for v in kept],
                                   Aligned(kept, j, cards)))
        self._down = [(c, self.home[c], Summed(self.home[c], c)) for c in self.cliques]

    def marginals(self, theta: dict, total: float) -> dict:
        """mu(theta) on the potentials' cliques: Shafer-Shenoy in log space, each tree clique normalised to
        ``total``."""
        out = self.node_marginals(theta, total)
        return {c: down(out[home]) for c, home, down in self._down}

    def node_marginals(self, theta: dict, total: float) -> dict:
        """mu(theta) on the tree's own cliques (:meth:`marginals` sums them down)."""
        cards = self.cards
        belief = {n: np.zeros([cards[v] for v in n]) for n in self.nodes}
        for c, n, onto in self._onto:
            belief[n] = belief[n] + onto(theta[c])
        msg = {}
        for i, j, incoming, axes, kept_shape, onto in self._messages:
            tau = belief[i]
            for k in incoming:
                tau = tau + msg[(k, i)]
            msg[(i, j)] = onto(_lse(tau, axes).reshape(kept_shape))  # the message on j's axes
        out = {}
        log_total = math.log(total) if total > 0 else -np.inf
        for n in self.nodes:
            b = belief[n]
            for k in self.neighbours[n]:
                b = b + msg[(k, n)]
            b = b - _lse(b, tuple(range(b.ndim))) + log_total
            out[n] = np.exp(b)
        return out


class Loss:
    """sum over measurements of (1/2) ||(P_c mu - y) / sd||^2 on the potentials' cliques, its gradient, and its
    Lipschitz constant."""

    def __init__(self, cards: list[int], measurements, cliques: list[tuple[int, ...]]):
        self.cards = cards
        self.terms = []
        blocks: dict = {}
        for cl, y, sd in measurements:
            cl = tuple(cl)
            home = smallest_holding(cl, cliques, cards)
            sd = max(float(sd), 1e-12)
            self.terms.append((cl, home, np.asarray(y, float).reshape([cards[v] for v in cl]), sd, Summed(home, cl),
                               Aligned(cl, home, cards)))
            blocks[home] = blocks.get(home, 0.0) + math.prod(cards[v] for v in home) / (
                math.prod(cards[v] for v in cl) * sd**2)
        self.lipschitz = max(blocks.values()) if blocks else 1.0

    def value(self, mu: dict) -> float:
        out = 0.0
        for _, home, y, sd, down, _ in self.terms:
            d = (down(mu[home]) - y) / sd
            out += 0.5 * float(np.vdot(d, d))
        return out

    def value_and_grad(self, mu: dict) -> tuple[float, dict]:
        out, grad = 0.0, {c: np.zeros_like(v) for c, v in mu.items()}
        for _, home, y, sd, down, onto in self.terms:
            d = (down(mu[home]) - y) / sd
            out += 0.5 * float(np.vdot(d, d))
            grad[home] = grad[home] + onto(d / sd)
        return out, grad


def _dot(a: dict, b: dict) -> float:
    return float(sum(np.vdot(a[c], b[c]) for c in a))


class Model:
    """A numpy mirror-descent estimate: the potentials (log-space, on ``cliques``), its marginals on them and
    the total; ``factors`` as :class:`dpiw.sdgp.aim.PGMModel` reads them."""

    def __init__(self, cards: list[int], theta: dict, mu: dict, total: float):
        self.cards, self.theta, self.mu, self.total = cards, theta, mu, total

    @property
    def factors(self) -> list[tuple[tuple[int, ...], np.ndarray]]:
        return [(c, v) for c, v in self.theta.items()]


def potential_cliques(measurements) -> list[tuple[int, ...]]:
    """The measured cliques that no other measured clique holds, in mbi's order (``maximal_subset``)."""
    from mbi.clique_utils import maximal_subset

    return [tuple(int(a) for a in c) for c in maximal_subset([tuple(map(str, cl)) for cl, _, _ in measurements])]


def estimate(mbi, cards: list[int], measurements, *, total: float, iters: int, warm: Model | None = None) -> Model:
    """The mirror-descent estimate from (clique, noisy counts, std) triples with the known total (module text)."""
    cliques = potential_cliques(measurements)
    tree = Tree(mbi, cards, cliques)
    loss = Loss(cards, measurements, cliques)
    theta = {c: np.zeros([cards[v] for v in c]) for c in cliques}
    if warm is not None:  # each old potential added to the smallest new clique that holds it
        for c, v in warm.theta.items():
            home = smallest_holding(c, cliques, cards)
            theta[home] = theta[home] + Factor(c, v).aligned(home, cards)
    alpha = 2.0 / (loss.lipschitz * total)
    # mbi computes mu(theta) again at the start of every step; it is the accepted step's mu2, or the last mu
    mu = tree.marginals(theta, total)
    value, grad = loss.value_and_grad(mu)
    for _ in range(math.ceil(iters / BLOCK) * BLOCK):
        theta2 = {c: theta[c] - alpha * grad[c] for c in cliques}
        mu2 = tree.marginals(theta2, total)
        value2, grad2 = loss.value_and_grad(mu2)
        if value - value2 >= 0.5 * alpha * _dot(grad, {c: mu[c] - mu2[c] for c in cliques}):
            alpha, theta, mu, value, grad = 1.01 * alpha, theta2, mu2, value2, grad2
        else:
            alpha = 0.5 * alpha
    return Model(cards, theta, mu, float(total))


def to_mbi(mbi, model: Model):
    """An mbi MarkovRandomField with the model's potentials (for mbi's ``synthetic_data``)."""
    import jax.numpy as jnp

    from dpiw.sdgp.pgm import domain

    dom = domain(mbi, model.cards)
    names = {c: tuple(map(str, c)) for c in model.theta}

    def vector(tables: dict):  # an mbi CliqueVector of tables on the potentials' cliques
        factors = {names[c]: mbi.Factor(dom.project(names[c]), jnp.asarray(t)) for c, t in tables.items()}
        return mbi.CliqueVector(dom, list(names.values()), factors)

    pots, mus = vector(model.theta), vector(model.mu)
    return mbi.MarkovRandomField(potentials=pots, marginals=mus, total=model.total)


def from_mbi(model) -> Model:
    """A :class:`Model` with an mbi model's potentials and marginals (to warm-start from it)."""
    cards = [int(model.domain[a]) for a in model.domain.attributes]

    def tables(vec):
        return {tuple(int(a) for a in vec[c].domain.attributes): np.asarray(vec[c].values, float) for c in vec.cliques}

    return Model(cards, tables(model.potentials), tables(model.marginals), float(model.total))
