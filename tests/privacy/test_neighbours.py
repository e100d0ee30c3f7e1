"""privacy.neighbours: every mechanism's noise under replace-one and add/remove neighbours against its closed
form (DP-SGD against dp-accounting), the noisy row count and its lower bound (Monte Carlo), the mutual
information's add/remove bound (exhaustive over random small datasets), the logistic minimiser's add/remove
sensitivity (measured on neighbouring datasets), an empirical audit on add/remove neighbours, and the ledger,
manifest and config rules that go with it."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pandas as pd
import pytest
from audit import audit
from scipy.optimize import minimize

from dpiw import DpiwError
from dpiw.data.schema import load_schema
from dpiw.privacy import accounting, neighbours
from dpiw.privacy.mechanisms import analytic_gaussian_sigma
from dpiw.privacy.neighbours import RowCount, count_mi_sensitivity_add_remove, row_count
from dpiw.privacy.spend import Ledger, PrivacySpend, no_spend, run_delta, with_row_count
from dpiw.sdgp.marginals import DPMarginals
from dpiw.sdgp.privbayes import PrivBayes, mi_sensitivity, mutual_information
from dpiw.weights.estimators import BetaNoised
from dpiw.weights.logistic import add_intercept
from dpiw.weights.output_perturbation import BetaDebiasedGauss

RELATIONS = neighbours.NEIGHBOURS


@pytest.fixture(scope="module")
def toy(root):
    schema = load_schema(root / "data/schemas/toy.yaml")
    rng = np.random.default_rng(3)
    return schema, pd.DataFrame({"x1": rng.uniform(0, 1, 200), "x2": rng.uniform(0, 1, 200)})


def _rows(relation, n, eps=0.5, seed=0):
    return row_count(n, neighbours=relation, epsilon=eps, rng=np.random.default_rng(seed))


# --- the noisy row count ------------------------------------------------------------------------------------

def test_replace_one_count_is_exact_and_spends_nothing():
    rows = row_count(123, neighbours="replace_one", epsilon=0.5, rng=np.random.default_rng(0))
    assert rows == RowCount.exact(123) and rows.events() == () and rows.upper_bound(1e-3) == 123


def test_noisy_count_is_laplace_with_scale_one_over_epsilon():
    draws = np.array([row_count(1000, neighbours="add_remove", epsilon=0.25, rng=np.random.default_rng(s)).n
                      for s in range(4000)])
    # Laplace(b = 4): mean 1000, sd sqrt(2) b = 5.66 (rounding adds 1/12 to the variance)
    assert abs(draws.mean() - 1000) < 4 * 5.66 / math.sqrt(4000)
    assert draws.std() == pytest.approx(math.sqrt(2 * 16 + 1 / 12), rel=0.05)
    rows = _rows("add_remove", 1000, eps=0.25)
    assert rows.scale == 4.0 and rows.events() == ({"kind": "laplace", "epsilon": 0.25,
                                                    "about": "noisy row count (add/remove)"},)


def test_upper_bound_is_wrong_at_most_delta_for_either_neighbour():
    """For the pair (N, N + 1) the bound must lie at or above N, from either dataset's count."""
    n, eps, delta, runs = 200, 0.5, 0.05, 20000
    for size in (n, n + 1):
        fails = sum(row_count(size, neighbours="add_remove", epsilon=eps,
                              rng=np.random.default_rng(10_000 * size + s)).upper_bound(delta) < n
                    for s in range(runs))
        assert fails / runs <= delta + 3 * math.sqrt(delta * (1 - delta) / runs), (size, fails)
        if size == n:  # and it is not loose: from N's own count it fails about delta of the time
            assert fails / runs >= delta / 2
    with pytest.raises(DpiwError, match="0 < delta < 1/2"):
        _rows("add_remove", 10).upper_bound(0.0)


def test_count_needs_a_positive_epsilon():
    with pytest.raises(DpiwError, match="count_epsilon_fraction"):
        row_count(10, neighbours="add_remove", epsilon=0.0, rng=np.random.default_rng(0))
    with pytest.raises(DpiwError, match="privacy.neighbours"):
        neighbours.check("swap")


# --- the mutual information's add/remove sensitivity --------------------------------------------------------

def test_count_weighted_mi_bound_holds_on_every_added_row_of_random_small_datasets():
    """|(n + 1) I(D + row) - n I(D)| <= the bound, for every possible added row."""
    rng = np.random.default_rng(0)
    worst = 0.0
    for _ in range(300):
        n = int(rng.integers(1, 25))
        cards = [int(c) for c in rng.integers(2, 5, size=3)]
        cells = np.stack([rng.integers(0, c, size=n) for c in cards], axis=1)
        x, parents = 0, ((1,) if rng.uniform() < 0.5 else (1, 2))
        base = n * mutual_information(cells, x, parents, cards)
        bound = count_mi_sensitivity_add_remove(n)
        for row in itertools.product(*[range(c) for c in cards]):
            grown = (n + 1) * mutual_information(np.vstack([cells, row]), x, parents, cards)
            assert abs(grown - base) <= bound + 1e-9, (n, cards, row)
            worst = max(worst, abs(grown - base) / bound)
    assert worst >= 0.3  # the bound is not vacuous


def test_count_weighted_mi_bound_grows_with_n():
    values = [count_mi_sensitivity_add_remove(n) for n in range(1, 2000)]
    assert all(a <= b for a, b in itertools.pairwise(values))


# --- histogram mechanisms ----------------------------------------------------------------------------------

@pytest.mark.parametrize("relation", RELATIONS)
def test_marginal_histograms_scale(toy, relation):
    schema, d = toy
    m = DPMarginals(bins=5, structure="naive_bayes").fit(d, schema, epsilon=1.0, delta=0.0,
                                                         rng=np.random.default_rng(0), rows=_rows(relation, len(d)))
    n_tables = len(m.noisy_counts_)
    l1 = 2.0 if relation == "replace_one" else 1.0
    assert m.privacy_.noise["scale"] == pytest.approx(l1 * n_tables / 1.0)
    assert m.privacy_.neighbours == relation and m.privacy_.sensitivity["l1_per_table"] == l1


@pytest.mark.parametrize("relation", RELATIONS)
def test_privbayes_tables_and_structure(toy, relation):
    schema, d = toy
    eps, delta = 1.0, 1e-4
    rows = _rows(relation, len(d))
    pb = PrivBayes(bins=4, degree=1).fit(d, schema, epsilon=eps, delta=delta, rng=np.random.default_rng(0),
                                         rows=rows)
    rec = pb.privacy_
    eps2 = eps * (1 - pb.structure_epsilon_fraction)
    l1 = 2.0 if relation == "replace_one" else 1.0
    assert rec.noise["tables"]["scale"] == pytest.approx(l1 * 1 / eps2)  # d - k = 1 table on two columns
    if relation == "replace_one":
        assert rec.delta == 0.0
        assert rec.sensitivity["mutual_information_bits"]["non_binary"] == mi_sensitivity(len(d), False)
    else:  # the score N_D I, its sensitivity at the count's upper bound, which may fail with probability delta / 2
        n_hi = rows.upper_bound(delta / 2)
        mi = rec.sensitivity["mutual_information_bits"]
        assert rec.delta == delta / 2 and mi["n_upper_bound"] == n_hi > rows.n
        assert mi["sensitivity"] == count_mi_sensitivity_add_remove(n_hi)
        assert {"kind": "failure", "probability": delta / 2, "about": "the row count's upper bound"} in rec.rdp


@pytest.mark.parametrize("relation", RELATIONS)
def test_mst_noise_scales(root, relation):
    import importlib.util

    from helpers import unavailable

    if importlib.util.find_spec("mbi") is None:
        unavailable("Private-PGM (mbi) is not installed")
    from dpiw.sdgp.mst import MST, zcdp_rho

    schema = load_schema(root / "data/schemas/iris.yaml")
    rng = np.random.default_rng(1)
    d = pd.DataFrame({c.name: (rng.uniform(size=120) if c.is_numeric else rng.integers(0, len(c.categories), 120))
                      for c in schema.columns})
    eps, delta = 1.0, 1e-5
    rows = _rows(relation, len(d))
    m = MST(bins=4).measure(d, schema, epsilon=eps, delta=delta, rng=np.random.default_rng(0), rows=rows)
    rho, k = zcdp_rho(eps, delta), len(schema.columns)
    sq = 2.0 if relation == "replace_one" else 1.0  # the squared L2 sensitivity of one marginal
    assert m.privacy_.noise["one_way"]["std"] == pytest.approx(math.sqrt(k * sq / (2 * rho / 3)))
    assert m.privacy_.noise["two_way"]["std"] == pytest.approx(math.sqrt((k - 1) * sq / (2 * rho / 3)))
    assert m.privacy_.sensitivity["tree_score_l1_error"] == sq
    assert m.n_ == rows.n and m.privacy_.neighbours == relation


# --- the logistic regression's output perturbation -----------------------------------------------------------

def _logistic_data(seed=0, n=120, m=80):
    rng = np.random.default_rng(seed)
    return rng.uniform(size=(n, 2)) * 0.8, rng.uniform(size=(m, 2))


@pytest.mark.parametrize("relation", RELATIONS)
def test_beta_noised_scale(relation):
    X_real, X_synth = _logistic_data()
    rows = _rows(relation, len(X_real))
    est = BetaNoised(lam=0.5).fit(X_real, X_synth, epsilon=0.5, delta=0.0, rng=np.random.default_rng(0),
                                  rows=rows)
    terms = 2 if relation == "replace_one" else 1
    R, p = math.sqrt(3), 3
    assert est.rho_ == pytest.approx(math.sqrt(p) * terms * R / (rows.n * 0.5 * 0.5))
    assert est.log_prior_odds_ == pytest.approx(math.log(len(X_synth) / rows.n))
    assert est.privacy_.neighbours == relation


@pytest.mark.parametrize("relation", RELATIONS)
def test_gaussian_beta_scale_is_the_analytic_gaussian(relation):
    X_real, X_synth = _logistic_data()
    rows = _rows(relation, len(X_real))
    est = BetaDebiasedGauss(lam=0.5).fit(X_real, X_synth, epsilon=0.5, delta=1e-5, rng=np.random.default_rng(0),
                                         rows=rows)
    terms = 2 if relation == "replace_one" else 1
    assert est.s_ == pytest.approx(analytic_gaussian_sigma(0.5, 1e-5, terms * math.sqrt(3) / (rows.n * 0.5)))


@pytest.mark.parametrize("relation", RELATIONS)
def test_output_perturbation_scales(relation):
    from dpiw.weights.output_perturbation import OutputGauss, OutputLaplace

    X_real, X_synth = _logistic_data(n=400, m=40)
    rows = _rows(relation, len(X_real))
    terms = 2 if relation == "replace_one" else 1
    per_weight = terms * 3.0 / (rows.n * 20.0)  # R^2 = 3 for two columns and the intercept, lambda = 20
    lap = OutputLaplace(lam=20.0).fit(X_real, X_synth, epsilon=1.0, delta=0.0, rng=np.random.default_rng(0),
                                      rows=rows)
    assert lap.scale_ == pytest.approx(len(X_synth) * per_weight / 1.0)
    gauss = OutputGauss(lam=20.0).fit(X_real, X_synth, epsilon=1.0, delta=1e-5, rng=np.random.default_rng(0),
                                      rows=rows)
    assert gauss.scale_ == pytest.approx(analytic_gaussian_sigma(1.0, 1e-5, math.sqrt(len(X_synth)) * per_weight))
    assert lap.privacy_.neighbours == gauss.privacy_.neighbours == relation


def _objective(beta, X, y, divisor, lam):
    z = X @ beta
    return (np.logaddexp(0, z) - y * z).sum() / divisor + 0.5 * lam * beta @ beta


def test_add_remove_objective_uses_the_public_divisor_and_moves_at_most_r_over_d_lambda():
    """Under add/remove the objective is (1/D) sum loss + lambda/2 ||beta||^2 with D = N~ + N_G public; adding
    one row (same public count) moves its minimiser by at most R/(D lambda), half the replace-one bound."""
    X_real, X_synth = _logistic_data(n=60, m=40)
    rows = RowCount("add_remove", 55, 0.5, 2.0)
    lam, R = 2.0, math.sqrt(3)  # a penalty that dominates the curvature: the bound is then nearly attained
    fit = BetaNoised(lam=lam)
    fit._fit_beta(X_real, X_synth, epsilon=1.0, norm_bound=None, rows=rows)
    X = add_intercept(np.vstack([X_real, X_synth]))
    y = np.r_[np.ones(60), np.zeros(40)]
    D = rows.n + len(X_synth)
    ref = minimize(_objective, np.zeros(3), args=(X, y, D, lam), method="BFGS", options={"gtol": 1e-12}).x
    assert np.allclose(fit.coef_, ref, atol=1e-6)
    worst = 0.0
    for x in np.random.default_rng(1).uniform(size=(20, 2)).tolist() + [[1.0, 1.0], [0.0, 0.0]]:
        grown = BetaNoised(lam=lam)
        grown._fit_beta(np.vstack([X_real, x]), X_synth, epsilon=1.0, norm_bound=None, rows=rows)
        worst = max(worst, float(np.linalg.norm(grown.coef_ - fit.coef_)))
    assert worst <= R / (D * lam)
    assert worst > 0.3 * R / (D * lam)  # and the bound is within a small factor of what one row does


# --- DP-SGD: against dp-accounting ---------------------------------------------------------------------------------

@pytest.mark.parametrize("relation", RELATIONS)
def test_dp_mlp_noise_meets_dp_accounting_for_the_relation(relation):
    from helpers import assert_dp_sgd_bracket

    from dpiw.weights.mlp import MLPWeights

    X_real, X_synth = _logistic_data(n=150, m=150)
    rows = _rows(relation, len(X_real), eps=0.2)
    eps, delta = 1.0, 1e-5
    est = MLPWeights(private=True, epochs=2, batch_size=32, neighbours=relation).fit(
        X_real, X_synth, epsilon=eps, delta=delta, rng=np.random.default_rng(0), rows=rows)
    q = 32 / (rows.n + 150)
    steps = math.ceil(2 / q)
    e, d = (eps, delta) if relation == "add_remove" else (eps / 2, delta / (1 + math.exp(eps / 2)))  # k = 2
    assert_dp_sgd_bracket(est.privacy_.noise["noise_multiplier"], q, steps, e, d)  # against dp-accounting
    assert est.privacy_.noise["sample_rate"] == pytest.approx(q) and est.privacy_.neighbours == relation


def test_dpgan_samples_at_the_public_rate_and_meets_dp_accounting(toy):
    from helpers import assert_dp_sgd_bracket

    from dpiw.sdgp import make_sdgp

    schema, d = toy
    rows = RowCount("add_remove", 180, 0.05, 20.0)
    gan = make_sdgp("dpgan", steps=4, keep_last=1, batch_size=32, hidden=8, noise_dim=4, progress=False,
                    neighbours="add_remove")
    gan.fit(d, schema, epsilon=1.0, delta=1e-5, rng=np.random.default_rng(0), rows=rows)
    rec = gan.privacy_
    q, steps = 32 / 180, 4 * gan.n_critic
    assert rec.noise["sample_rate"] == pytest.approx(q)
    assert_dp_sgd_bracket(rec.noise["noise_multiplier"], q, steps, 1.0, 1e-5)  # against dp-accounting
    assert rec.neighbours == "add_remove" and rec.details["n_rows"] == 180


@pytest.mark.parametrize("relation", RELATIONS)
def test_dpcgan_condition_histogram_scale(toy, root, relation):
    from dpiw.sdgp import make_sdgp

    schema = load_schema(root / "data/schemas/iris.yaml")
    rng = np.random.default_rng(0)
    d = pd.DataFrame({c.name: (rng.uniform(size=100) if c.is_numeric else rng.integers(0, len(c.categories), 100))
                      for c in schema.columns})
    gan = make_sdgp("dpcgan", steps=2, keep_last=1, batch_size=16, hidden=8, noise_dim=4, progress=False,
                    neighbours=relation)
    gan.fit(d, schema, epsilon=1.0, delta=1e-5, rng=np.random.default_rng(0), rows=_rows(relation, 100))
    l1 = 2.0 if relation == "replace_one" else 1.0
    eps_label = 1.0 * gan.label_epsilon_fraction
    assert gan.privacy_.noise["condition_histogram_laplace_scale"] == pytest.approx(l1 / eps_label)


def test_pgb_score_sensitivity_is_one_over_the_public_count():
    from dpiw.weights.gan_weights import PGBWeights

    class Discs:
        loss = "cgan"

        def __len__(self):
            return 3

        def outputs(self, frame):
            return np.tile(np.linspace(-1, 1, len(frame)), (3, 1))

    real, synth = pd.DataFrame({"a": np.zeros(40)}), pd.DataFrame({"a": np.zeros(30)})
    rows = RowCount("add_remove", 37, 0.1, 10.0)
    est = PGBWeights(rounds=5).fit_gan(Discs(), real, synth, epsilon=0.5, delta=1e-5, rng=np.random.default_rng(0),
                                       rows=rows)
    assert est.privacy_.sensitivity["delta_U"] == pytest.approx(1 / 37) and est.privacy_.neighbours == "add_remove"


# --- an empirical audit on add/remove neighbours --------------------------------------------------------------

def _add_remove_audit(root, *, l1: float, n_choose: int, n_test: int, seed: int) -> float:
    """D and D plus one row in the far corner (it adds one count to every table: the add/remove worst case);
    the noise is calibrated to the L1 sensitivity ``l1`` (the mechanism's own: 1)."""
    from dpiw.sdgp import marginals as marginals_mod

    schema = load_schema(root / "data/schemas/toy.yaml")
    rng = np.random.default_rng(5)
    d = pd.DataFrame({"x1": rng.uniform(0, 0.5, 20), "x2": rng.uniform(0, 0.5, 20)})
    grown = pd.concat([d, pd.DataFrame({"x1": [0.99], "x2": [0.99]})], ignore_index=True)
    eps = 1.0
    real_l1 = marginals_mod.count_l1

    def score(neighbour, r):
        data = grown if neighbour else d
        marginals_mod.count_l1 = lambda relation: l1 * real_l1(relation)
        try:
            m = DPMarginals(bins=4, structure="naive_bayes").fit(data, schema, epsilon=eps, delta=0.0, rng=r,
                                                                 rows=RowCount("add_remove", 20, 0.1, 10.0))
        finally:
            marginals_mod.count_l1 = real_l1
        return sum(float(c[(3,) * len(spec)]) for spec, c in m.noisy_counts_.items())

    return audit(score, n_choose=n_choose, n_test=n_test, seed=seed)


@pytest.mark.audit
def test_audit_marginals_on_add_remove_neighbours(root):
    """The lower bound from the noisy counts stays below the claim, with half the replace-one noise (seed 4);
    half that noise again (the sensitivity taken as 1/2) is caught with a fifth of the runs (seed 5)."""
    lb = _add_remove_audit(root, l1=1.0, n_choose=10000, n_test=50000, seed=4)
    assert 0.5 < lb <= 1.0, lb
    broken = _add_remove_audit(root, l1=0.5, n_choose=2000, n_test=10000, seed=5)
    assert broken > 1.0, broken


# --- records, ledger, accounting, config ------------------------------------------------------------------------

def test_with_row_count_adds_the_count_to_the_record():
    rec = PrivacySpend(stage="synthesize", mechanism="laplace", epsilon=0.9, delta=0.0, reads_private=("train",),
                       rdp=({"kind": "laplace", "epsilon": 0.9},))
    rows = RowCount("add_remove", 99, 0.1, 10.0)
    out = with_row_count(rec, rows)
    assert out.epsilon == pytest.approx(1.0) and out.neighbours == "add_remove"
    assert out.rdp[-1]["kind"] == "laplace" and out.rdp[-1]["epsilon"] == 0.1
    assert out.details["row_count"]["noisy_n"] == 99
    free = with_row_count(no_spend("synthesize", basis="data-free"), rows)  # N_G still reads the count
    assert free.epsilon == pytest.approx(0.1) and free.rdp == rows.events() and "train" in free.reads_private


def test_ledger_refuses_a_mix_of_relations_and_ignores_free_records():
    a = PrivacySpend(stage="synthesize", mechanism="m", epsilon=0.5, delta=0.0, neighbours="add_remove")
    b = PrivacySpend(stage="fit_weights", mechanism="m", epsilon=0.5, delta=0.0)
    with pytest.raises(DpiwError, match="different neighbouring relations"):
        Ledger((a, b)).check(budget_epsilon=1, budget_delta=1e-5, allow_non_dp=False)
    free = no_spend("scale", basis="public bounds")
    assert Ledger((a, free)).neighbours == "add_remove"


def test_composed_spend_converts_at_delta_less_the_failures():
    ev = [{"kind": "laplace", "epsilon": 0.5}, {"kind": "failure", "probability": 4e-6}]
    rec = PrivacySpend(stage="synthesize", mechanism="m", epsilon=0.5, delta=4e-6, rdp=tuple(ev),
                       neighbours="add_remove")
    out = accounting.composed_spend([rec], 1e-5)
    assert out["epsilon"] == pytest.approx(accounting.rdp_to_dp(accounting.laplace_rdp(0.5), 6e-6)[0])
    assert out["failure_probability"] == 4e-6 and "add_remove" in out["accountant"]
    assert accounting.composed_spend([rec], 3e-6)["epsilon"] is None


def test_delta_under_add_remove_is_a_number_and_never_compared_with_n():
    assert run_delta(0.01, 50, "add_remove") == 0.01  # 0.01 > 1/50 would be refused under replace-one
    with pytest.raises(DpiwError, match="N_D is private"):
        run_delta("paper", 50, "add_remove")


def test_config_rules(root):
    import yaml

    from dpiw.planning.config import validate_params

    schema = yaml.safe_load((root / "workflow/schemas/params.schema.yaml").read_text())
    base = yaml.safe_load((root / "params.yaml").read_text())
    base["privacy"]["neighbours"] = "add_remove"
    with pytest.raises(DpiwError, match="privacy.delta: paper"):
        validate_params(json.loads(json.dumps(base)), schema, schema_dir=root / "data/schemas")
    base["privacy"]["delta"] = 1e-5
    validate_params(json.loads(json.dumps(base)), schema, schema_dir=root / "data/schemas")
    base["privacy"]["accounting"] = "paper"
    with pytest.raises(DpiwError, match="ablation of the replace-one"):
        validate_params(json.loads(json.dumps(base)), schema, schema_dir=root / "data/schemas")
