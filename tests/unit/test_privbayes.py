"""PrivBayes: structure recovery, the spend record, the noise scale on counts, reproducibility, guards."""

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from dpiw import DpiwError
from dpiw.data.schema import parse_schema
from dpiw.sdgp.privbayes import PrivBayes, mi_sensitivity, mutual_information

SCHEMA3 = parse_schema({
    "name": "chain", "task": "regression", "target": "c", "provenance": "test",
    "columns": [{"name": n, "type": "numeric", "lower": 0, "upper": 1} for n in ("a", "b", "c")]})


def chain(n: int, seed: int, keep: float = 0.85) -> pd.DataFrame:
    """a -> b -> c on 3 cells each: copy the parent's cell with probability `keep`, else uniform."""
    r = np.random.default_rng(seed)
    a = r.integers(3, size=n)
    b = np.where(r.uniform(size=n) < keep, a, r.integers(3, size=n))
    c = np.where(r.uniform(size=n) < keep, b, r.integers(3, size=n))
    return pd.DataFrame({k: (v + 0.5) / 3 for k, v in (("a", a), ("b", b), ("c", c))})


def cells(df):
    return np.minimum((df.to_numpy() * 3).astype(int), 2)


@pytest.mark.parametrize("seed", range(4))
def test_large_epsilon_recovers_the_network_and_its_marginals(seed):
    data = chain(20_000, seed)
    pb = PrivBayes(bins=3, degree=1).fit(data, SCHEMA3, epsilon=1e7, delta=0, rng=np.random.default_rng(seed))
    edges = {frozenset((x, p)) for x, pa in pb.parents_.items() for p in pa}
    assert edges == {frozenset((0, 1)), frozenset((1, 2))}  # a-b, b-c; never a-c
    s = cells(pb.sample(20_000, rng=np.random.default_rng(seed + 1)))
    d = cells(data)
    for i, j in itertools.combinations(range(3), 2):  # every 2-way marginal within total variation 0.03
        p = np.bincount(d[:, i] * 3 + d[:, j], minlength=9) / len(d)
        q = np.bincount(s[:, i] * 3 + s[:, j], minlength=9) / len(s)
        assert 0.5 * np.abs(p - q).sum() < 0.03, (i, j)


def test_spend_record_is_the_sum_of_its_mechanisms():
    eps = 2.0
    pb = PrivBayes(bins=4, degree=2, structure_epsilon_fraction=0.3).fit(
        chain(300, 0), SCHEMA3, epsilon=eps, delta=1e-3, rng=np.random.default_rng(0))
    r = pb.privacy_
    st, tb = r.noise["structure"], r.noise["tables"]
    d, k = 3, 2
    assert st["steps"] == d - 1 and st["epsilon_per_step"] * st["steps"] == pytest.approx(0.3 * eps)
    assert tb["n_tables"] == d - k and tb["scale"] == pytest.approx(2 * (d - k) / (0.7 * eps))
    eps_tables = tb["n_tables"] * 2.0 / tb["scale"]  # each table: sensitivity 2 / scale
    assert r.epsilon == pytest.approx(st["epsilon_per_step"] * st["steps"] + eps_tables) == pytest.approx(eps)
    assert r.delta == 0 and r.details["structure_epsilon"] + r.details["tables_epsilon"] == pytest.approx(eps)


def test_count_noise_has_scale_sensitivity_over_epsilon():
    """Over many fits, noisy count - true count has mean 0 and variance 2 b^2 with b = 2 (d - k) / eps2
    (on counts, not on probabilities: scaled to the probability it would be n times smaller)."""
    data = chain(200, 1)
    eps = 1.0
    resid, scale = [], None
    for i in range(400):
        pb = PrivBayes(bins=3, degree=1).fit(data, SCHEMA3, epsilon=eps, delta=0, rng=np.random.default_rng(i))
        scale = pb.scale_
        c = cells(data)
        for spec, noisy in pb.noisy_counts_.items():
            true = np.zeros([3] * len(spec))
            np.add.at(true, tuple(c[:, j] for j in spec), 1.0)
            resid.append((noisy - true).ravel())
    resid = np.concatenate(resid)
    assert scale == pytest.approx(2 * (3 - 1) / 0.7)
    se = math.sqrt(2) * scale / math.sqrt(resid.size)
    assert abs(resid.mean()) < 4 * se
    assert resid.var() == pytest.approx(2 * scale**2, rel=0.06)  # ~7000 draws: sd of the ratio ~ 0.04


def test_same_seed_same_rows_and_network():
    data = chain(500, 2)

    def run(seed):
        pb = PrivBayes(bins=5, degree=2).fit(data, SCHEMA3, epsilon=1.0, delta=0, rng=np.random.default_rng(seed))
        return pb.order_, pb.sample(300, rng=np.random.default_rng(seed))

    (o1, s1), (o2, s2) = run(3), run(3)
    assert o1 == o2
    pd.testing.assert_frame_equal(s1, s2)


@pytest.mark.parametrize("eps", [1e-4, 0.01])
def test_tiny_epsilon_still_gives_valid_rows(eps):
    pb = PrivBayes(bins=4, degree=2).fit(chain(50, 0), SCHEMA3, epsilon=eps, delta=0, rng=np.random.default_rng(0))
    s = pb.sample(100, rng=np.random.default_rng(1))
    assert s.shape == (100, 3) and s.notna().all().all() and ((s >= 0) & (s <= 1)).all().all()


def test_table_size_guard_fails_before_work():
    with pytest.raises(DpiwError, match="max_cells"):
        PrivBayes(bins=1000, degree=2, max_cells=10**6).fit(chain(50, 0), SCHEMA3, epsilon=1.0, delta=0,
                                                            rng=np.random.default_rng(0))


def test_mi_sensitivity_bounds_random_neighbours():
    """Replacing one row never moves I(X; Y) by more than the lemma's bound (binary and 3-valued)."""
    rng = np.random.default_rng(0)
    n = 30
    for card in (2, 3):
        bound = mi_sensitivity(n, binary=card == 2)
        worst = 0.0
        for _ in range(3000):
            c = rng.integers(card, size=(n, 2))
            c2 = c.copy()
            c2[rng.integers(n)] = rng.integers(card, size=2)
            diff = abs(mutual_information(c, 0, (1,), [card, card]) - mutual_information(c2, 0, (1,), [card, card]))
            worst = max(worst, diff)
        assert worst <= bound + 1e-12
        assert worst > 0.3 * bound  # the search gets near the bound: the test can fail


def test_root_target_starts_the_network_at_the_target_and_random_draws_it():
    data = chain(300, 0)
    firsts = {PrivBayes(bins=3, root="random").fit(data, SCHEMA3, epsilon=1.0, delta=0,
                                                   rng=np.random.default_rng(s)).order_[0] for s in range(12)}
    assert firsts == {0, 1, 2}  # uniform over the columns
    for s in range(4):
        pb = PrivBayes(bins=3, root="target").fit(data, SCHEMA3, epsilon=1.0, delta=0, rng=np.random.default_rng(s))
        assert pb.order_[0] == 2 and pb.privacy_.details["root"] == "target"  # c, the schema's target
    with pytest.raises(DpiwError, match="root must be one of"):
        PrivBayes(root="first").fit(data, SCHEMA3, epsilon=1.0, delta=0, rng=np.random.default_rng(0))
