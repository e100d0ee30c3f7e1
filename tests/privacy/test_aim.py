"""AIM on Private-PGM: its budget schedule against a reference computation of the paper's rules, its zCDP
total against Google's dp-accounting, its measurement noise against the recorded std, the model's marginals
against mbi's own inference, and an empirical audit on neighbouring datasets (Clopper-Pearson lower bound below
the claim)."""

import math
import sys

import numpy as np
import pytest
from audit import audit, replaced_row_counts
from helpers import random_frame

from dpiw import DpiwError
from dpiw.data.schema import load_schema
from dpiw.privacy import accounting
from dpiw.privacy.accounting import zcdp_rho
from dpiw.sdgp import mirror_descent as md
from dpiw.sdgp.aim import AIM, PGMEstimator, candidates, workload
from dpiw.sdgp.counting import InProcessCounter
from dpiw.sdgp.mst import simplex_projection
from dpiw.sdgp.pgm import mbi_module


class Independent:
    """A cheap estimator for the tests (post-processing, so any estimator keeps the guarantee): the product of
    the latest one-way measurements, each projected onto the simplex."""

    def __call__(self, measured, cards, n, warm):
        one = {}
        for cl, y, _ in measured:
            if len(cl) == 1:
                one[cl[0]] = simplex_projection(np.asarray(y, float), n) / n
        return _Product(one, n)


class _Product:
    def __init__(self, one, n):
        self.one, self.n = one, n

    def marginal(self, cl):
        p = np.ones(())
        for j in cl:
            p = np.multiply.outer(p, self.one[j])
        return self.n * p.ravel()


def reference_schedule(rho, d, big_t, annealed, l2):
    """The paper's schedule (Algorithm 1 with budget annealing), written out again from the recorded annealing
    decisions: the std and eps_em of every round and the rho they spend."""
    sigma = math.sqrt(big_t * l2**2 / (2 * 0.9 * rho))
    eps = math.sqrt(8 * 0.1 * rho / big_t)
    used = d * l2**2 / (2 * sigma**2)
    out = []
    for was_annealed in annealed:
        if rho - used < 2 * (l2**2 / (2 * sigma**2) + eps**2 / 8):
            sigma, eps = math.sqrt(l2**2 / (2 * 0.9 * (rho - used))), math.sqrt(8 * 0.1 * (rho - used))
        used += l2**2 / (2 * sigma**2) + eps**2 / 8
        out.append((sigma, eps))
        if was_annealed:
            sigma, eps = sigma / 2, eps * 2
    return out, used


@pytest.fixture(scope="module")
def iris_like(root):
    schema = load_schema(root / "data/schemas/iris.yaml")
    return schema, random_frame(schema, 300)


def test_workload_and_candidate_weights():
    work = workload([4, 4, 3], 2, target_triples=True, max_cells=1000)
    assert work == [(0, 1), (0, 2), (1, 2), (0, 1, 2)]
    assert workload([4, 4, 3], 2, target_triples=True, max_cells=40) == [(0, 1), (0, 2), (1, 2)]
    cand = candidates(work)
    # w_r = sum over the workload of |r & s|, counted by hand
    assert cand[(0,)] == 3 and cand[(2,)] == 3 and cand[(0, 1)] == 2 + 1 + 1 + 2 and cand[(0, 1, 2)] == 2 + 2 + 2 + 3
    assert len(cand) == 7


@pytest.mark.parametrize("neighbours, l2", [("replace_one", math.sqrt(2)), ("add_remove", 1.0)])
def test_schedule_and_record_match_the_reference(iris_like, neighbours, l2):
    import dp_accounting

    from dpiw.privacy.neighbours import RowCount

    schema, frame = iris_like
    eps, delta = 2.0, 1e-4
    rows = RowCount.exact(len(frame)) if neighbours == "replace_one" else RowCount(neighbours, len(frame))
    a = AIM(bins=4, rounds=12, estimator=Independent()).fit(frame, schema, epsilon=eps, delta=delta,
                                                             rng=np.random.default_rng(3), rows=rows)
    rho, d = zcdp_rho(eps, delta), len(schema.columns)
    ref, used = reference_schedule(rho, d, 12, [r["annealed"] for r in a.rounds_], l2)
    assert [v for r in a.rounds_ for v in (r["std"], r["epsilon_em"])] == pytest.approx(
        [v for pair in ref for v in pair], rel=1e-12)
    assert used == pytest.approx(rho, rel=1e-12)
    rec = a.privacy_
    assert rec.noise["one_way"]["std"] == pytest.approx(math.sqrt(12 * l2**2 / (2 * 0.9 * rho)))
    assert sum(ev["rho"] for ev in rec.rdp) == pytest.approx(rho, rel=1e-12)
    assert not a.rounds_[-1]["annealed"] and len(a.measurements_) == d + len(a.rounds_)
    composed = accounting.rdp_to_dp(accounting.compose(rec.rdp), delta)[0]
    assert composed == pytest.approx(rec.epsilon, rel=1e-9) and rec.epsilon <= eps * (1 + 1e-9)
    acc = dp_accounting.rdp.RdpAccountant()  # rho-zCDP is the Gaussian mechanism of noise multiplier 1/sqrt(2 rho)
    acc.compose(dp_accounting.GaussianDpEvent(1 / math.sqrt(2 * rho)))
    assert 0.99 * eps <= acc.get_epsilon(delta) <= eps * (1 + 1e-6)


def test_measurement_noise_has_the_recorded_std(iris_like):
    """Over many fits, a measured count minus the true count is N(0, std^2) with the recorded std."""
    schema, frame = iris_like
    counter = InProcessCounter.of(frame, schema, 4)
    truth = counter.counts([(j,) for j in range(len(schema.columns))])
    z = []
    for seed in range(200):
        a = AIM(bins=4, rounds=6, estimator=Independent()).fit_counts(
            counter, schema, epsilon=1.0, delta=1e-4, rng=np.random.default_rng(seed))
        for cl, y, sd in a.measurements_[:len(schema.columns)]:
            z.extend((y - truth[cl]) / sd)
    z = np.array(z)
    assert abs(z.mean()) < 4 / math.sqrt(len(z)) and abs(z.std() - 1) < 0.03


def test_numpy_marginals_equal_mbi_inference_and_rows_sample(iris_like):
    schema, frame = iris_like
    a = AIM(bins=4, iters=100).fit(frame, schema, epsilon=8.0, delta=1e-4, rng=np.random.default_rng(1))
    assert any(len(r["clique"]) >= 2 for r in a.rounds_)
    model = a.model_.model  # a small model is estimated in numpy (dpiw.sdgp.mirror_descent): ask mbi's inference
    assert isinstance(model, md.Model)
    for cl in [(0,), (1, 2), (0, 3, 4), (2, 4), (0, 1, 2, 3)]:
        ref = np.asarray(md.to_mbi(mbi_module(), model).project(tuple(map(str, cl))).datavector())
        np.testing.assert_allclose(a.model_.marginal(cl), ref, rtol=1e-9, atol=1e-9)
    out = a.sample(80, rng=np.random.default_rng(2))
    assert list(out.columns) == schema.names and len(out) == 80
    for c in schema.columns:
        v = out[c.name].to_numpy()
        assert ((v >= 0) & (v <= 1)).all() if c.is_numeric else set(v) <= set(range(len(c.categories)))


def test_domain_guard_refuses_before_reading(root):
    schema = load_schema(root / "data/schemas/breast.yaml")
    with pytest.raises(Exception, match="candidate marginals hold .* cells"):
        AIM(bins=200, max_cells=10**5).check_domain(schema)


def test_fewer_rounds_than_columns_are_refused(iris_like):
    """With T < d the one-way marginals alone would spend more than rho: one line naming the key, not a math error."""
    schema, frame = iris_like
    with pytest.raises(DpiwError, match=r"sdgp.aim.rounds must be 0 \(16 per column\) or at least the 5 columns"):
        AIM(rounds=4).fit(frame, schema, epsilon=1.0, delta=1e-5, rng=np.random.default_rng(0))


def _audit(root, spent: float) -> float:
    """Two columns: the candidates are the two one-way marginals and their pair, each round's pick adaptive.
    Score: the noisy counts at the replaced row's new cells minus those at its old cells, over every
    measurement; the fits spend ``spent`` times the claimed epsilon of 1. The audit's lower bound on epsilon."""
    schema = load_schema(root / "data/schemas/toy.yaml")
    bins, delta = 2, 1e-3
    d, d_prime = (InProcessCounter.of(f, schema, bins) for f in replaced_row_counts(bins)[:2])
    moved = replaced_row_counts(bins)[2]

    def score(neighbour, rng):
        a = AIM(bins=bins, rounds=3, estimator=Independent()).fit_counts(
            d_prime if neighbour else d, schema, epsilon=spent, delta=delta, rng=rng)
        return moved([(cl, y) for cl, y, _ in a.measurements_])

    return audit(score, n_choose=2000, n_test=10000, seed=11, delta=delta)


@pytest.mark.audit
def test_audit_of_aim(root):
    lb = _audit(root, spent=1.0)
    assert lb <= 1.0, lb


@pytest.mark.audit
def test_the_aim_audit_has_power(root):
    """The same audit of a run that spends 4 times the epsilon it claims finds it: lower bound above the claim."""
    assert _audit(root, spent=4.0) > 1.0


def test_every_estimate_may_drop_compiled_programs_and_that_changes_nothing(iris_like, monkeypatch):
    """Each Private-PGM estimate (AIM's first and every round's) first calls relieve_maps; dropping JAX's
    in-memory programs frees the process's memory maps (a long-lived process otherwise reaches the kernel's
    limit and dies), and a fit after the drop gives the same rows as one before it."""
    from dpiw.sdgp import pgm

    schema, frame = iris_like
    calls = []
    real = pgm.relieve_maps
    monkeypatch.setattr(pgm, "relieve_maps", lambda: calls.append(1) or real())

    def rows():
        a = AIM(bins=4, iters=50, rounds=6)
        a.estimator = PGMEstimator(50, numpy_cells=0)  # every estimate by mbi (compiled programs)
        a.fit(frame, schema, epsilon=4.0, delta=1e-4, rng=np.random.default_rng(3))
        return a, a.sample(60, rng=np.random.default_rng(4))

    a, before = rows()
    assert len(calls) == 1 + len(a.rounds_)
    maps = pgm.memory_maps()
    if maps is not None:  # the count needs /proc; the rows after a drop are checked either way
        assert not real(share=1.0)
        assert real(share=0.0) and pgm.memory_maps()[0] < maps[0]
    else:
        real(share=0.0)
    _, after = rows()
    assert after.equals(before)
    assert maps is not None or sys.platform != "linux", "no /proc on Linux: the memory maps were not counted"
