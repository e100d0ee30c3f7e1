"""Rows from a numpy Private-PGM model (:class:`dpiw.sdgp.mirror_descent.Model`) by mbi 2.0's randomised rounding
(``MarkovRandomField.synthetic_data(rows, method="round")``), step for step and with the same draws from numpy's
global generator, but without JAX.

mbi computes the junction tree's marginals with a compiled program whose shape is the tree's, so every new MST tree
or AIM model paid 1.5-3 s of XLA compilation to draw its rows (a cold cache; the rounding itself takes hundredths
of a second). Here the marginals come from :meth:`dpiw.sdgp.mirror_descent.Tree.node_marginals` (the same
Shafer-Shenoy message passing the numpy estimate runs), and the rounding is mbi's:

- columns are drawn in the reverse of the junction tree's elimination order;
- the first column (and any column without an earlier neighbour) is its one-way marginal rounded to the rows:
  the integer parts, then the leftover rows placed without replacement with probability proportional to the
  fractional parts, shuffled;
- every other column is drawn given its earlier neighbours: the rows of each parent configuration get
  stratified uniforms ((rank + u) / count, ranks shuffled within the group) pushed through the conditional CDF.

The marginals agree with mbi's to rounding, so the rows are mbi's unless a count sits within rounding of an
integer (tests/unit/test_pgm_sampling.py).
"""

from __future__ import annotations

import numpy as np

from dpiw.sdgp.mirror_descent import Factor, Model, Tree, smallest_holding


def _rounded(counts: np.ndarray, total: int) -> np.ndarray:
    """mbi's ``synthetic_col`` (method "round"): ``total`` codes whose histogram is ``counts`` rounded."""
    counts = np.asarray(counts, dtype=np.float64)
    options = np.arange(counts.size, dtype=np.min_scalar_type(counts.size))
    if total == 0:
        return np.array([], dtype=int)
    counts = counts * (total / counts.sum())
    frac, integ = np.modf(counts)
    integ = integ.astype(int)
    extra = total - integ.sum()
    if extra > 0:
        idx = np.random.choice(options, extra, False, frac / frac.sum())  # noqa: NPY002 - mbi's draws
        integ[idx] += 1
    vals = np.repeat(options, integ)
    np.random.shuffle(vals)  # noqa: NPY002
    return vals


def synthetic_data(mbi, model: Model, rows: int | None) -> dict[int, np.ndarray]:
    """``rows`` rows of ``model`` (0 or None: the model's total, as mbi) as {column index: codes}, drawn from numpy's
    global generator as mbi draws them."""
    cards, total = model.cards, max(1, int(rows or model.total))
    tree = Tree(mbi, cards, list(model.theta))
    nodes = tree.node_order
    marginals = tree.node_marginals(model.theta, model.total)

    def project(attrs: tuple[int, ...]) -> np.ndarray:
        home = smallest_holding(attrs, nodes, cards)
        return Factor(home, marginals[home]).summed(attrs)

    # mbi names the columns str(j) and takes each column's parents in the order of a set of those names: the
    # same sets here, so the parents come in mbi's order (it decides the groups, and so the draws)
    cliques = [{str(v) for v in n} for n in nodes]
    order = tree.elimination_order[::-1]
    data = {order[0]: _rounded(project((order[0],)), total)}
    used = {str(order[0])}
    for col in order[1:]:
        name = str(col)
        proj = tuple(int(a) for a in used.intersection(set().union(*[cl for cl in cliques if name in cl])))
        used.add(name)
        if not proj:
            data[col] = _rounded(project((col,)), total)
            continue
        parents = np.stack(tuple(data[c] for c in proj), -1)
        marg = project(proj + (col,))
        marg_parents = marg.sum(axis=-1, keepdims=True)
        cond = np.divide(marg, marg_parents, out=np.zeros_like(marg), where=marg_parents != 0)
        cdfs = cond.cumsum(axis=-1)
        uniques, inverse, counts = np.unique(parents, axis=0, return_inverse=True, return_counts=True)
        inverse = inverse.reshape(-1)
        perm = np.argsort(inverse, kind="stable")
        starts = np.zeros(len(counts), dtype=int)
        np.cumsum(counts[:-1], out=starts[1:])
        for s, c in zip(starts, counts, strict=True):  # shuffled within each parent group, as mbi does
            np.random.shuffle(perm[s:s + c])  # noqa: NPY002
        ranks = np.empty(total, dtype=int)
        ranks[perm] = np.arange(total) - starts[inverse[perm]]
        u = (ranks + np.random.rand(total)) / counts[inverse]  # noqa: NPY002
        unique_cdfs = cdfs[tuple(uniques.T)]
        choices = np.empty(total, dtype=np.min_scalar_type(cards[col]))
        u_sorted = u[perm]
        for i, (s, c) in enumerate(zip(starts, counts, strict=True)):
            if c:
                idx = np.searchsorted(unique_cdfs[i], u_sorted[s:s + c], side="right")
                np.minimum(idx, cards[col] - 1, out=idx)
                choices[perm[s:s + c]] = idx
        data[col] = choices
    return data
