"""dpiw.sdgp.mirror_descent against mbi's MirrorDescent: the same estimate (to rounding) from the same noisy
marginals, cold and warm-started, on a model whose junction tree has several cliques; and an AIM fit that
picks the same cliques either way."""

import numpy as np
import pandas as pd
import pytest

from dpiw.data.schema import parse_schema
from dpiw.sdgp import mirror_descent as md
from dpiw.sdgp.aim import AIM, PGMEstimator, PGMModel
from dpiw.sdgp.pgm import estimate, mbi_module

CARDS = [6, 5, 2, 4, 3]


def noisy(true: np.ndarray, cl, sd: float, rng) -> tuple:
    m = true.sum(axis=tuple(i for i in range(true.ndim) if i not in cl))
    return tuple(cl), m.ravel() + rng.normal(0, sd, m.size), sd


@pytest.fixture(scope="module")
def measured():
    rng = np.random.default_rng(5)
    true = rng.dirichlet(np.full(int(np.prod(CARDS)), 0.5)).reshape(CARDS) * 5_000
    first = [noisy(true, (j,), 15.0, rng) for j in range(len(CARDS))]
    first += [noisy(true, cl, sd, rng) for cl, sd in (((0, 1), 20.0), ((1, 2, 4), 25.0), ((2, 3), 10.0),
                                                         ((0, 3), 30.0))]
    more = first + [noisy(true, (1, 3), 12.0, rng)]  # a round's new clique: a new junction tree
    return first, more


def gap(numpy_model: md.Model, mbi_model) -> float:
    ref = PGMModel(mbi_model)
    return max(float(np.abs(ref.marginal(cl) - numpy_model.mu[cl].ravel()).max()) for cl in numpy_model.mu)


def test_the_estimate_is_mbis_to_rounding_cold_and_warm(measured):
    first, more = measured
    mbi = mbi_module()
    # 50 steps (one of mbi's blocks): the line search's accept/reject decisions are the same throughout
    a = estimate(mbi, CARDS, first, total=5_000.0, iters=50)
    b = md.estimate(mbi, CARDS, first, total=5_000.0, iters=50)
    assert gap(b, a) < 1e-8
    a2 = estimate(mbi, CARDS, more, total=5_000.0, iters=50, warm_start=a)
    b2 = md.estimate(mbi, CARDS, more, total=5_000.0, iters=50, warm=b)
    assert gap(b2, a2) < 1e-8
    # and from mbi's model (a fit that crosses from one estimator to the other)
    assert gap(md.estimate(mbi, CARDS, more, total=5_000.0, iters=50, warm=md.from_mbi(a)), a2) < 1e-8


def test_the_model_is_consistent_and_sums_to_the_total(measured):
    _, more = measured
    b = md.estimate(mbi_module(), CARDS, more, total=5_000.0, iters=200)
    for mu in b.mu.values():
        assert mu.sum() == pytest.approx(5_000.0)
        assert np.all(mu >= 0)
    # every clique holding column 1 gives the same one-way marginal of it
    ones = [md.Factor(cl, mu).summed((1,)) for cl, mu in b.mu.items() if 1 in cl]
    assert len(ones) >= 2
    for o in ones[1:]:
        np.testing.assert_allclose(o, ones[0], rtol=1e-9)


def test_mbis_sampling_reads_the_numpy_model(measured):
    """to_mbi gives mbi a model with the same distribution: its randomised rounding reproduces the marginals."""
    first, _ = measured
    mbi = mbi_module()
    b = md.estimate(mbi, CARDS, first, total=5_000.0, iters=100)
    np.random.seed(0)  # noqa: NPY002 - mbi samples from the legacy global generator
    data = md.to_mbi(mbi, b).synthetic_data(rows=5_000).data
    rows = pd.DataFrame({k: np.asarray(data[k]) for k in ("0", "1")})
    counts = rows.groupby(["0", "1"]).size().reindex(pd.MultiIndex.from_product([range(6), range(5)]), fill_value=0)
    mu = b.mu[(0, 1)].ravel()
    assert np.all(np.abs(counts.to_numpy() - mu) <= 3 * np.sqrt(mu) + 2)


def test_aim_picks_the_same_cliques_with_either_estimator():
    schema = parse_schema({"name": "t", "task": "classification", "target": "y", "columns": [
        {"name": "a", "type": "categorical", "categories": ["p", "q", "r"]},
        {"name": "x", "type": "numeric", "lower": 0, "upper": 1},
        {"name": "b", "type": "categorical", "categories": ["u", "v"]},
        {"name": "y", "type": "categorical", "categories": ["no", "yes"]}]})
    rng = np.random.default_rng(2)
    a = rng.integers(0, 3, 3_000)
    x = np.clip(rng.normal(0.3 + 0.2 * a, 0.15), 0, 0.999)
    b = (rng.uniform(size=3_000) < 0.3 + 0.2 * (x > 0.5)).astype(int)
    y = (rng.uniform(size=3_000) < 0.2 + 0.4 * b).astype(int)
    rows = pd.DataFrame({"a": a, "x": x, "b": b, "y": y})
    picks = []
    for cells in (0, 10**9):  # mbi throughout; numpy throughout
        gen = AIM(bins=4, iters=100, rounds=8)
        gen.estimator = PGMEstimator(100, numpy_cells=cells)
        gen.fit(rows, schema, epsilon=2.0, delta=1e-6, rng=np.random.default_rng(9))
        picks.append([tuple(r["clique"]) for r in gen.rounds_])
    assert picks[0] == picks[1]


def test_mbi_warm_started_from_a_numpy_model_is_mbi_warm_started_from_its_own(measured):
    """An AIM fit whose model outgrows numpy_cells hands a numpy model to mbi as its warm start."""
    first, more = measured
    mbi = mbi_module()
    a = estimate(mbi, CARDS, first, total=5_000.0, iters=50)
    b = md.estimate(mbi, CARDS, first, total=5_000.0, iters=50)
    from_mbi = PGMModel(estimate(mbi, CARDS, more, total=5_000.0, iters=50, warm_start=a))
    from_numpy = PGMModel(estimate(mbi, CARDS, more, total=5_000.0, iters=50, warm_start=md.to_mbi(mbi, b)))
    for cl in [(0, 1), (1, 2, 4), (1, 3)]:
        np.testing.assert_allclose(from_numpy.marginal(cl), from_mbi.marginal(cl), atol=1e-6)
