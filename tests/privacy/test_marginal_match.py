"""Marginal matching (dpiw.weights.marginal_match): its noise against the closed form and a reference zCDP
accountant, an empirical audit on neighbouring datasets, and weights that recover a known density ratio."""

import math

import numpy as np
import pandas as pd
import pytest
from audit import audit, replaced_row_counts
from helpers import random_frame

from dpiw.data.schema import load_schema
from dpiw.privacy import accounting
from dpiw.privacy.accounting import zcdp_rho
from dpiw.privacy.neighbours import RowCount
from dpiw.weights.marginal_match import MarginalMatch, workload


@pytest.fixture(scope="module")
def iris(root):
    schema = load_schema(root / "data/schemas/iris.yaml")
    return schema, random_frame(schema, 150)


def test_the_workload_holds_the_target_in_every_marginal(iris):
    schema, _ = iris
    t = schema.names.index(schema.target)
    two = workload(schema, degree=2, max_marginals=100)
    three = workload(schema, degree=3, max_marginals=100)
    assert len(two) == 4 and len(three) == 4 + 6 and all(t in cl for cl in three)
    assert workload(schema, degree=3, max_marginals=5) == three[:5]


@pytest.mark.parametrize("neighbours, l2", [("replace_one", math.sqrt(2)), ("add_remove", 1.0)])
def test_noise_and_record_are_the_closed_forms(iris, neighbours, l2):
    """sigma = sqrt(m Delta^2 / (2 rho)) with rho the zCDP of the weight share; the record's RDP event is that rho
    and converts back to its epsilon (at most the share), and Google's accountant agrees."""
    import dp_accounting

    schema, frame = iris
    eps, delta = 0.3, 1e-5
    rows = RowCount.exact(len(frame)) if neighbours == "replace_one" else RowCount("add_remove", 152, 0.05, 20.0)
    mm = MarginalMatch(bins=4).measure(frame, schema, epsilon=eps, delta=delta, rng=np.random.default_rng(1),
                                       rows=rows)
    m, rho = len(mm.cliques_), zcdp_rho(eps, delta)
    rec = mm.privacy_
    assert rec.noise["std"] == pytest.approx(math.sqrt(m * l2**2 / (2 * rho)))
    assert rec.sensitivity["marginal_l2"] == pytest.approx(l2) and rec.neighbours == neighbours
    assert rec.rdp[0]["rho"] == pytest.approx(rho, rel=1e-12)
    composed = accounting.rdp_to_dp(accounting.compose(rec.rdp), delta)[0]
    assert composed == pytest.approx(rec.epsilon, rel=1e-9) and rec.epsilon <= eps * (1 + 1e-9)
    acc = dp_accounting.rdp.RdpAccountant()
    acc.compose(dp_accounting.GaussianDpEvent(rec.noise["std"] / (l2 * math.sqrt(m))))  # m Gaussians, one event
    assert acc.get_epsilon(delta) <= eps * (1 + 1e-6)
    assert rec.noise["cells"] == sum(y.size for _, y in mm.measurements_)


def test_the_noise_is_fresh_per_invocation(iris):
    schema, frame = iris
    a = MarginalMatch(bins=4).measure(frame, schema, epsilon=1, delta=1e-5, rng=np.random.default_rng(1))
    b = MarginalMatch(bins=4).measure(frame, schema, epsilon=1, delta=1e-5, rng=np.random.default_rng(2))
    assert not np.allclose(a.measurements_[0][1], b.measurements_[0][1])


def _mm_audit(root, spent: float, *, n_choose: int, n_test: int, seed: int) -> float:
    """A replaced row moves one count of every marginal down and another up; the score is the noisy counts at
    the new cells minus those at the old (the Gaussian likelihood ratio's linear statistic). The runs spend
    ``spent`` times the claimed epsilon of 1."""
    schema = load_schema(root / "data/schemas/toy.yaml")  # x1, x2; the target x2
    bins, delta = 2, 1e-3
    d, d_prime, moved = replaced_row_counts(bins)

    def score(neighbour, rng):
        mm = MarginalMatch(bins=bins).measure(d_prime if neighbour else d, schema, epsilon=spent, delta=delta,
                                              rng=rng)
        return moved(mm.measurements_)

    return audit(score, n_choose=n_choose, n_test=n_test, seed=seed, delta=delta)


@pytest.mark.audit
def test_audit_of_the_measurements_and_its_power(root):
    """The audit sees the mechanism (not vacuous) and never beats its claim (seed 7); a run that spends 4 times
    the epsilon it claims is caught with a quarter of the runs (seed 8)."""
    lb = _mm_audit(root, 1.0, n_choose=4000, n_test=20000, seed=7)
    assert 0.2 < lb <= 1.0, lb
    broken = _mm_audit(root, 4.0, n_choose=1000, n_test=5000, seed=8)
    assert broken > 1.0, broken


def test_the_weights_recover_a_known_density_ratio(root):
    """One binary feature a and the binary target: G uniform on the four cells, D with probabilities
    (0.4, 0.1, 0.1, 0.4). At a large budget the only marginal, (a, target), is the whole joint, and the weights
    converge to p_D / p_G = (1.6, 0.4, 0.4, 1.6); with G equal to D they stay at 1."""
    from dpiw.data.schema import parse_schema

    schema = parse_schema({"name": "two", "task": "classification", "target": "t",
                           "columns": [{"name": "a", "type": "categorical", "categories": ["0", "1"]},
                                       {"name": "t", "type": "categorical", "categories": ["0", "1"]}]})
    rng = np.random.default_rng(3)
    cells = rng.choice(4, size=20_000, p=[0.4, 0.1, 0.1, 0.4])
    real = pd.DataFrame({"a": cells // 2, "t": cells % 2})
    g = rng.choice(4, size=20_000)
    synth = pd.DataFrame({"a": g // 2, "t": g % 2})
    mm = MarginalMatch(degree=2).fit_frames(real, synth, schema, epsilon=50.0, delta=1e-6,
                                            rng=np.random.default_rng(4))
    w = np.exp(mm.log_ratio_ - np.log(np.mean(np.exp(mm.log_ratio_))))
    truth = np.array([1.6, 0.4, 0.4, 1.6])[g]
    assert np.allclose(w, truth, rtol=0.05)
    same = MarginalMatch(degree=2).fit_frames(real, real, schema, epsilon=1.0, delta=1e-6,
                                              rng=np.random.default_rng(5))
    assert mm.signal_["signal"]
    assert not same.signal_["signal"] and np.all(same.log_ratio_ == 0.0)  # do no harm: unit weights


def test_the_signal_check_rarely_fires_when_the_synthetic_rows_are_the_data(iris):
    """Do no harm: with G = D the unit weights' chi^2 is chi^2 with one degree per measured cell, so the check
    (cells + 2 sqrt(2 cells), made on own and all measurements, here the same; and each marginal's against the
    chi^2 law at family-wise 2.5%) keeps unit weights in about 95% of noise draws; here 16 of 300 fire (9 on the
    totals alone; 43 with each marginal held to cells + z sqrt(2 cells), whose tail is too light for 12 cells)."""
    schema, frame = iris
    fired = 0
    for k in range(300):
        mm = MarginalMatch(bins=4, degree=2).measure(frame, schema, epsilon=1.0, delta=1e-5,
                                                     rng=np.random.default_rng([11, k]))
        fired += bool(mm.reweight(frame).signal_["signal"])
    assert fired / 300 < 0.08, fired


def test_a_split_made_in_zcdp_is_within_the_budget_by_rdp_only(iris):
    """MST on (1 - f) of (eps, delta) and marginal_match on the rest of rho: the two records add up to more than
    the budget, their RDP composition to it; the ledger admits the run by the latter, and refuses a larger share."""
    from dpiw.privacy.spend import Ledger, split_budget, split_rule
    from dpiw.sdgp.mst import MST

    schema, frame = iris
    assert split_rule("mst", "marginal_match", "replace_one") == "zcdp"
    assert split_rule("mst", "marginal_match", "add_remove") == "epsilon"
    assert split_rule("privbayes", "marginal_match", "replace_one") == "epsilon"
    s = split_budget(1.0, 1e-5, weights_method="marginal_match", weights_epsilon_fraction=0.3,
                     weights_delta_fraction=0.3, rule="zcdp")
    rng = np.random.default_rng(12)
    mst = MST(bins=4).measure(frame, schema, epsilon=s.sdgp_epsilon, delta=s.sdgp_delta, rng=rng)
    mm = MarginalMatch(bins=4).measure(frame, schema, epsilon=s.weights_epsilon, delta=s.weights_delta, rng=rng)
    assert mst.privacy_.details["rho"] + mm.privacy_.details["rho"] == pytest.approx(zcdp_rho(1.0, 1e-5), rel=1e-6)
    ledger = Ledger((mst.privacy_, mm.privacy_))
    assert ledger.epsilon > 1.3 and ledger.delta > 1e-5
    verdict = ledger.check(budget_epsilon=1.0, budget_delta=1e-5, allow_non_dp=False)
    assert verdict.startswith("within budget (RDP composition: epsilon=")
    assert accounting.composed_spend([mst.privacy_, mm.privacy_], 1e-5)["epsilon"] == pytest.approx(1.0, abs=1e-6)
    more = MarginalMatch(bins=4).measure(frame, schema, epsilon=1.1 * s.weights_epsilon, delta=1e-5, rng=rng)
    with pytest.raises(Exception, match="privacy budget exceeded"):
        Ledger((mst.privacy_, more.privacy_)).check(budget_epsilon=1.0, budget_delta=1e-5, allow_non_dp=False)


def test_released_measurements_join_the_fit(iris):
    """Counts another mechanism has released (MST's, say) can be matched as well, at no cost. D has two equal
    features; G draws them independently; the workload (pairs with the target) cannot see their relation, the
    released 2-way counts of the two features can: with them the weighted rows put most mass on the diagonal."""
    from dpiw.sdgp.marginals import discretise
    from dpiw.sdgp.privbayes import joint_counts

    schema, frame = iris
    real = frame.copy()
    real["sepal_width"] = real["sepal_length"]
    rng = np.random.default_rng(8)
    synth = pd.DataFrame({c: rng.choice(real[c].to_numpy(), 600) for c in real.columns})
    cells, cards = discretise(real, schema, 4)
    released = joint_counts(cells, (0, 1), cards).reshape(-1)
    mm = MarginalMatch(bins=4, degree=2).measure(real, schema, epsilon=1.0, delta=1e-5, rng=np.random.default_rng(9))
    s_cells, _ = discretise(synth, schema, 4)
    diagonal = s_cells[:, 0] == s_cells[:, 1]

    def on_diagonal(log_ratio):
        w = np.exp(log_ratio)
        return float(w[diagonal].sum() / w.sum())

    assert on_diagonal(mm.reweight(synth).log_ratio_) < 0.4  # about 1/4: independent
    assert on_diagonal(mm.reweight(synth, extra=[((0, 1), released, 0.5)]).log_ratio_) > 0.9


def test_weights_that_would_fail_the_release_gate_give_way_to_smoother_ones():
    """D far from the synthetic rows (many sparse cells): the discrepancy principle would take the smallest tau,
    whose weights fail the PSIS k-hat gate (the release would publish nothing); a larger tau passes it."""
    from dpiw.data.schema import parse_schema
    from dpiw.postprocess.psis import diagnose
    from dpiw.weights.marginal_match import TAUS, MarginalMatch

    cols = [{"name": f"x{j}", "type": "numeric", "lower": 0, "upper": 1} for j in range(4)]
    schema = parse_schema({"name": "t", "task": "classification", "target": "y", "columns": [
        *cols, {"name": "y", "type": "categorical", "categories": ["0", "1"]}]})
    rng = np.random.default_rng(0)
    X = rng.beta(3.0, 1, (200_000, 4))
    real = pd.DataFrame({**{f"x{j}": X[:, j] for j in range(4)},
                         "y": (rng.uniform(size=len(X)) < X.mean(axis=1)).astype(int)})
    S = rng.beta(1, 1.5, (50_000, 4))
    synth = pd.DataFrame({**{f"x{j}": S[:, j] for j in range(4)}, "y": rng.integers(0, 2, len(S))})
    mm = MarginalMatch(bins=8, degree=3).measure(real, schema, epsilon=1.0, delta=1e-9, rng=rng)
    mm.reweight(synth)
    assert mm.chi2_ > mm.n_cells_  # no tau fits within the noise: the discrepancy principle's pick is the last
    assert mm.tau_ > min(TAUS) and diagnose(mm.log_ratio_).fit_to_release
    assert np.ptp(mm.log_ratio_) > 1  # weights, not unit weights
    assert "release gate" in mm.privacy_.details["tau_rule"] and mm.privacy_.details["pareto_k"] <= 0.7


def test_a_search_from_any_start_tau_picks_what_the_full_scan_picks():
    """The bootstrap starts each replicate's tau search at the previous replicate's pick; the misfit does not
    decrease with tau, so from every tau of the grid the search lands on the scan's pick, with the same
    weights. Two problems: D near the synthetic rows (a middle tau) and far from them (the last, then the
    release gate's larger ones)."""
    from dpiw.data.schema import parse_schema
    from dpiw.weights.marginal_match import TAUS, MarginalMatch

    cols = [{"name": f"x{j}", "type": "numeric", "lower": 0, "upper": 1} for j in range(3)]
    schema = parse_schema({"name": "t", "task": "classification", "target": "y", "columns": [
        *cols, {"name": "y", "type": "categorical", "categories": ["0", "1"]}]})
    picks = set()
    for shape in (1.3, 3.0):
        rng = np.random.default_rng(8)
        X = rng.beta(shape, 1, (20_000, 3))
        real = pd.DataFrame({**{f"x{j}": X[:, j] for j in range(3)},
                             "y": (rng.uniform(size=len(X)) < X.mean(axis=1)).astype(int)})
        S = rng.beta(1, 1.2, (20_000, 3))
        synth = pd.DataFrame({**{f"x{j}": S[:, j] for j in range(3)}, "y": rng.integers(0, 2, len(S))})
        mm = MarginalMatch(bins=8, degree=3).measure(real, schema, epsilon=1.0, delta=1e-6, rng=rng)
        scan = mm.reweight(synth)
        tau, lr = scan.tau_, scan.log_ratio_.copy()
        picks.add(tau)
        for start in TAUS:
            again = mm.reweight(synth, start_tau=start)
            assert again.tau_ == tau
            np.testing.assert_allclose(again.log_ratio_, lr, rtol=2e-3, atol=2e-3)  # L-BFGS from elsewhere
    assert len(picks) == 2 and any(min(TAUS) < t < max(TAUS) for t in picks)  # a middle pick is among them


def _corner_table(seed: int, rate: float, n: int = 20_000):
    """Six uniform columns and y, whose rate is ``rate`` where x0 and x1 both exceed 7/8 and 0.3 elsewhere: the
    schema, the generator (drawn on from here), the rows and the corner's mask."""
    from dpiw.data.schema import parse_schema

    cols = [{"name": f"x{j}", "type": "numeric", "lower": 0, "upper": 1} for j in range(6)]
    schema = parse_schema({"name": "t", "task": "classification", "target": "y", "columns": [
        *cols, {"name": "y", "type": "categorical", "categories": ["0", "1"]}]})
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, 6))
    corner = (X[:, 0] > 0.875) & (X[:, 1] > 0.875)
    real = pd.DataFrame({**{f"x{j}": X[:, j] for j in range(6)},
                         "y": (rng.uniform(size=n) < np.where(corner, rate, 0.3)).astype(int)})
    return schema, rng, real, corner


def test_each_marginal_within_its_noise_not_only_the_total(monkeypatch):
    """A relation in one corner of one marginal (y's rate 0.9 where x0 and x1 both exceed 7/8, 0.3 elsewhere; the
    synthetic rows know nothing of it) adds little to the total chi^2 of 2,016 cells: on the total alone the
    discrepancy principle stops at tau = 1 with that marginal far past its noise and the corner's rate at 0.43. With
    each marginal held within its noise too (PER_MARGINAL, family-wise) it takes a smaller tau, every marginal's
    chi^2 within its bound, and the corner's rate comes closer to the table's 0.91; elsewhere the rate stays 0.30."""
    from dpiw.weights import marginal_match as mm_module
    from dpiw.weights.marginal_match import MarginalMatch, marginal_z

    schema, rng, real, corner = _corner_table(0, 0.9)
    n = len(real)
    S = rng.uniform(size=(n, 6))
    at = (S[:, 0] > 0.875) & (S[:, 1] > 0.875)
    synth = pd.DataFrame({**{f"x{j}": S[:, j] for j in range(6)},
                          "y": (rng.uniform(size=n) < 0.3 + 0.6 * corner.mean()).astype(int)})
    mm = MarginalMatch(bins=8, degree=3).measure(real, schema, epsilon=1.0, delta=1e-6, rng=rng)

    def fitted(per_marginal: bool):
        monkeypatch.setattr(mm_module, "PER_MARGINAL", per_marginal)
        f = mm.reweight(synth)
        w = np.exp(f.log_ratio_)
        from dpiw.sdgp.marginals import discretise

        cells, cards = discretise(synth, schema, mm.discretisation)
        chi2 = []
        for clique, y in mm.measurements_:
            idx = np.ravel_multi_index(tuple(cells[:, j] for j in clique), tuple(cards[j] for j in clique))
            mass = np.bincount(idx, weights=w * (n / len(synth)), minlength=len(y))
            chi2.append((float(np.sum((mass - y) ** 2)) / mm.sigma_ ** 2, len(y)))
        return f.tau_, f.chi2_, f.n_cells_, chi2, np.average(synth.y[at], weights=w[at]), \
            np.average(synth.y[~at], weights=w[~at])

    z = marginal_z(len(mm.measurements_))
    tau, total, cells, parts, rate, rest = fitted(False)
    assert tau == 1.0 and total <= cells and rate < 0.5
    assert max(c - (m + z * np.sqrt(2 * m)) for c, m in parts) > 0  # a marginal past its noise
    tau_m, total_m, _, parts_m, rate_m, rest_m = fitted(True)
    assert tau_m < tau and total_m <= cells
    assert all(c <= m + z * np.sqrt(2 * m) for c, m in parts_m)
    assert rate_m > rate + 0.1 and abs(rest_m - 0.30) < 0.01 and abs(rest - 0.30) < 0.01


def test_a_marginal_no_tau_can_meet_leaves_the_pick_to_the_total(monkeypatch):
    """300 rows in a corner cell (x0 and x1 above 7/8, y = 1) where the synthetic rows hold none: no weight reaches
    that cell, so its marginal stays past its noise at every tau. Held marginal by marginal the fit would go down to
    the smallest tau (0.01, chi^2 715 on 2,016 cells: fitting the noise everywhere else); it takes the total's pick
    instead, as before."""
    from dpiw.data.schema import parse_schema
    from dpiw.weights import marginal_match as mm_module
    from dpiw.weights.marginal_match import TAUS, MarginalMatch

    cols = [{"name": f"x{j}", "type": "numeric", "lower": 0, "upper": 1} for j in range(6)]
    schema = parse_schema({"name": "t", "task": "classification", "target": "y", "columns": [
        *cols, {"name": "y", "type": "categorical", "categories": ["0", "1"]}]})
    rng = np.random.default_rng(0)
    n = 20_000
    X = rng.uniform(size=(n, 6))
    y = (rng.uniform(size=n) < 0.3).astype(int)
    X[:300, 0], X[:300, 1], y[:300] = rng.uniform(0.875, 1, 300), rng.uniform(0.875, 1, 300), 1
    real = pd.DataFrame({**{f"x{j}": X[:, j] for j in range(6)}, "y": y})
    S = rng.uniform(size=(n, 6))
    ys = (rng.uniform(size=n) < 0.3).astype(int)
    keep = ~((S[:, 0] > 0.875) & (S[:, 1] > 0.875) & (ys == 1))
    synth = pd.DataFrame({**{f"x{j}": S[keep, j] for j in range(6)}, "y": ys[keep]})
    mm = MarginalMatch(bins=8, degree=3).measure(real, schema, epsilon=1.0, delta=1e-6, rng=rng)
    picks = {}
    for per_marginal in (False, True):
        monkeypatch.setattr(mm_module, "PER_MARGINAL", per_marginal)
        picks[per_marginal] = mm.reweight(synth).tau_
    assert picks[True] == picks[False] > min(TAUS)


def test_the_signal_test_sees_a_marginal_that_the_total_hides(monkeypatch):
    """The synthetic rows are the table's, but for y in one corner (x0 and x1 above 7/8: y's rate 0.67 in the
    table, 0.3 in the rows). On the totals the unit weights' chi^2 (2,131 on 2,016 cells) is within the noise, and
    the weights stayed at 1; (x1, y) alone is 8.4 sds of its chi^2 past its cells, (x0, y) 5.3, beyond the chi^2
    law's family-wise 2.5% (SIGNAL_EACH), so the weights are fitted: the corner's rate moves from 0.29 to 0.40
    (the discrepancy principle stops within the noise) and the rest's by under 0.005."""
    from dpiw.weights import marginal_match as mm_module
    from dpiw.weights.marginal_match import MarginalMatch

    schema, rng, real, corner = _corner_table(4, 0.7)
    synth = real.copy()
    synth.loc[corner, "y"] = (rng.uniform(size=corner.sum()) < 0.3).astype(int)
    mm = MarginalMatch(bins=8, degree=3).measure(real, schema, epsilon=1.0, delta=1e-6, rng=rng)

    def fitted(each: bool):
        monkeypatch.setattr(mm_module, "SIGNAL_EACH", each)
        f = mm.reweight(synth)
        w = np.exp(f.log_ratio_)
        return f.signal_, np.average(synth.y[corner], weights=w[corner]), np.average(synth.y[~corner],
                                                                                   weights=w[~corner])

    total, rate, rest = fitted(False)
    assert not total["signal"] and total["chi2_unit_weights"]["all"] < 2016 + 2 * np.sqrt(2 * 2016)
    assert rate == synth.y[corner].mean()  # unit weights
    each, rate_e, rest_e = fitted(True)
    assert each["signal"] and each["fired"] == ["a marginal"] and each["marginals_beyond"]["x1, y"] > 4
    assert real.y[corner].mean() > rate_e > rate + 0.05 and abs(rest_e - rest) < 0.005
    monkeypatch.setattr(mm_module, "PER_MARGINAL", False)  # the total's tau rule: the totals' test alone, as it was
    assert not fitted(True)[0]["signal"]
