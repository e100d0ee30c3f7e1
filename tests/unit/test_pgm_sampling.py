"""dpiw.sdgp.pgm_sampling against mbi's own randomised rounding: the same rows from the same model and the same
state of numpy's global generator, on a tree (MST's case), on a model whose junction tree joins triples
(AIM's case) and with more rows than the model's total; and the rows' histograms are the model's marginals
rounded (the rounding's own property, whoever draws them)."""

import numpy as np
import pytest

from dpiw.sdgp import mirror_descent as md
from dpiw.sdgp import pgm_sampling
from dpiw.sdgp.pgm import mbi_module

CARDS = [6, 5, 2, 4, 3, 7]
TREE = [(0, 1), (1, 2), (1, 3), (3, 4), (4, 5)]
TRIPLES = [(0, 1, 2), (1, 2, 3), (3, 4), (0, 5), (2, 5)]


def model(cliques, seed: int) -> md.Model:
    rng = np.random.default_rng(seed)
    true = rng.dirichlet(np.full(int(np.prod(CARDS)), 0.3)).reshape(CARDS) * 3_000
    measured = [((j,), true.sum(axis=tuple(i for i in range(len(CARDS)) if i != j)), 5.0) for j in range(len(CARDS))]
    for cl in cliques:
        m = true.sum(axis=tuple(i for i in range(len(CARDS)) if i not in cl))
        measured.append((cl, m.ravel() + rng.normal(0, 8.0, m.size), 8.0))
    return md.estimate(mbi_module(), CARDS, measured, total=3_000.0, iters=100)


@pytest.mark.parametrize("cliques", [TREE, TRIPLES], ids=["tree", "triples"])
@pytest.mark.parametrize("rows", [3_000, 4_321, 0])  # 0: the model's total, as mbi
def test_the_rows_are_mbis(cliques, rows):
    mbi = mbi_module()
    m = model(cliques, seed=len(cliques) + rows)
    state = np.random.get_state()  # noqa: NPY002
    try:
        for seed in (0, 1):
            np.random.seed(seed)  # noqa: NPY002
            ours = pgm_sampling.synthetic_data(mbi, m, rows)
            after = np.random.get_state()[1].copy()  # noqa: NPY002
            np.random.seed(seed)  # noqa: NPY002
            theirs = md.to_mbi(mbi, m).synthetic_data(rows=rows)
            for j in range(len(CARDS)):
                assert np.array_equal(ours[j], np.asarray(theirs.data[str(j)])), j
            # the same draws, no more and no fewer: the generator is left where mbi leaves it
            assert np.array_equal(after, np.random.get_state()[1])  # noqa: NPY002
    finally:
        np.random.set_state(state)  # noqa: NPY002


def test_a_one_way_marginal_is_rounded_to_the_rows():
    m = model(TREE, seed=3)
    tree = md.Tree(mbi_module(), CARDS, list(m.theta))
    first = tree.elimination_order[-1]  # the first column drawn: its one-way marginal, rounded
    holder = md.smallest_holding((first,), tree.node_order, CARDS)
    counts = md.Factor(holder, tree.node_marginals(m.theta, m.total)[holder]).summed((first,))
    rows = pgm_sampling.synthetic_data(mbi_module(), m, 3_000)[first]
    got = np.bincount(rows, minlength=CARDS[first])
    assert got.sum() == 3_000
    assert np.all(np.abs(got - counts) < 1.0)
