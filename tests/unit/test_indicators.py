"""marginal matching's products A v and A^T l (dpiw.weights.indicators): the compiled loops, on one thread or
several, give scipy's sparse products to the last bit (16-bit and 32-bit cell numbers), so a fit's weights are the
same with or without numba and on any number of cores."""

import numpy as np
import pytest

from dpiw.weights import indicators
from dpiw.weights.indicators import Indicators


@pytest.mark.parametrize("big", [False, True])
def test_the_compiled_products_are_scipys_to_the_last_bit(big):
    rng = np.random.default_rng(5)
    groups = 30_000
    sizes = [2, 7, 40, 1500] + ([70_000] if big else [300])  # a marginal past 2^16 cells: 32-bit numbers
    # sorted groups (as np.unique gives them): long runs of one cell in the first marginals
    index = [np.sort(rng.integers(0, s, groups)) if k < 2 else rng.integers(0, s, groups)
             for k, s in enumerate(sizes)]
    v = rng.lognormal(0, 2, groups)
    lam = rng.normal(0, 3, sum(sizes))
    ref = Indicators(index, sizes, compiled=False)
    for n_threads in (1, 2, 3):
        a = Indicators(index, sizes, compiled=True, n_threads=n_threads)
        a.n_threads = n_threads  # past the size below which one thread does it
        assert a.cells.dtype == (np.int32 if big else np.uint16)
        assert np.array_equal(a.dot(v), ref.dot(v)) and np.array_equal(a.tdot(lam), ref.tdot(lam))


def test_marginal_match_weights_are_the_same_with_and_without_numba(monkeypatch):
    import pandas as pd

    from dpiw.data.schema import parse_schema
    from dpiw.weights.marginal_match import MarginalMatch

    schema = parse_schema({"name": "t", "task": "classification", "target": "y", "columns": [
        {"name": "a", "type": "numeric", "lower": 0, "upper": 1},
        {"name": "b", "type": "categorical", "categories": [str(i) for i in range(30)]},
        {"name": "c", "type": "numeric", "lower": 0, "upper": 1},
        {"name": "y", "type": "categorical", "categories": ["no", "yes"]}]})
    rng = np.random.default_rng(0)
    n = 20_000
    real = pd.DataFrame({"a": rng.beta(2, 5, n), "b": rng.integers(0, 30, n), "c": rng.random(n),
                         "y": rng.integers(0, 2, n)})
    synth = pd.DataFrame({"a": rng.random(n), "b": rng.integers(0, 30, n), "c": rng.random(n),
                          "y": rng.integers(0, 2, n)})
    fits = []
    for compiled in (True, False):
        monkeypatch.setattr(indicators, "njit", indicators.njit if compiled else None)
        mm = MarginalMatch(bins=8, degree=3).measure(real, schema, epsilon=2.0, delta=1e-6,
                                                     rng=np.random.default_rng(1))
        fits.append(mm.reweight(synth))
    assert fits[0].tau_ < float("inf") and np.array_equal(fits[0].log_ratio_, fits[1].log_ratio_)


def test_no_thread_outlives_a_product_and_bad_cells_are_refused():
    """A process that ran a fit keeps no thread of it (a process with threads is not forked for the row checks);
    a cell past its marginal's size is refused before a compiled loop (which checks no bound) could write there."""
    import threading

    from dpiw import DpiwError

    rng = np.random.default_rng(1)
    index, sizes = [rng.integers(0, 50, 5000) for _ in range(4)], [50] * 4
    before = threading.active_count()
    a = Indicators(index, sizes, compiled=True, n_threads=3)
    a.n_threads = 3
    a.dot(np.ones(5000)), a.tdot(np.ones(200))
    assert threading.active_count() == before
    with pytest.raises(DpiwError, match="marginal 1's cells are not those of a table of 50 cells"):
        Indicators([index[0], index[1] + 1, index[2], index[3]], sizes)
