import math

import pytest

from dpiw import DpiwError
from dpiw.privacy import Ledger, PrivacySpend, budget_share, no_spend, paper_delta, split_budget
from dpiw.stages.privacy_ledger import build_manifest


def rec(stage, eps, delta=0.0, **kw):
    return PrivacySpend(stage=stage, mechanism="laplace", epsilon=eps, delta=delta, reads_private=("train",), **kw)


def test_ledger_sums_the_records():
    records = (no_spend("scale", basis="public bounds", reads_private=("raw",), n_train=100),
               rec("synthesize", 0.9), rec("fit_weights", 0.1, 1e-4), no_spend("post", basis="post-processing"))
    ledger = Ledger(records)
    assert ledger.epsilon == pytest.approx(1.0) and ledger.delta == pytest.approx(1e-4)
    m = build_manifest(list(records), epsilon=1.0, delta="paper", allow_non_dp=False, run_id="r")
    assert m["spent"]["epsilon"] == pytest.approx(sum(r["epsilon"] for r in m["records"]))
    assert m["budget"]["delta"] == pytest.approx(1 / 100 - 1e-6)
    assert m["verdict"] == "within budget"


def test_over_budget_raises():
    with pytest.raises(DpiwError, match="budget exceeded"):
        Ledger((rec("synthesize", 0.9), rec("fit_weights", 0.2))).check(budget_epsilon=1.0, budget_delta=1e-3,
                                                                         allow_non_dp=False)
    with pytest.raises(DpiwError, match="delta"):
        Ledger((rec("synthesize", 0.5, 2e-3),)).check(budget_epsilon=1.0, budget_delta=1e-3, allow_non_dp=False)


def test_non_dp_record_is_refused_unless_allowed():
    bad = PrivacySpend(stage="fit_weights", mechanism="none", epsilon=None, delta=None, dp=False,
                       basis="non-private baseline")
    ledger = Ledger((rec("synthesize", 0.9), bad))
    assert ledger.epsilon is None
    with pytest.raises(DpiwError, match="not differentially private"):
        ledger.check(budget_epsilon=1.0, budget_delta=1e-3, allow_non_dp=False)
    assert ledger.check(budget_epsilon=1.0, budget_delta=1e-3, allow_non_dp=True).startswith("NOT DP")


def test_zero_spend_on_private_data_needs_a_basis():
    with pytest.raises(ValueError, match="no basis"):
        PrivacySpend(stage="x", mechanism="none", epsilon=0.0, delta=0.0, reads_private=("train",))
    with pytest.raises(ValueError):
        PrivacySpend(stage="x", mechanism="laplace", epsilon=-1.0, delta=0.0)


def test_budget_split_and_share():
    s = split_budget(6.0, 1e-3, weights_method="beta_noised", weights_epsilon_fraction=0.1,
                     weights_delta_fraction=0.3)
    assert math.isclose(s.sdgp_epsilon + s.weights_epsilon, 6.0) and math.isclose(s.weights_epsilon, 0.6)
    assert math.isclose(s.sdgp_delta + s.weights_delta, 1e-3)
    assert split_budget(6.0, 1e-3, weights_method="none", weights_epsilon_fraction=0.1,
                        weights_delta_fraction=0.3).sdgp_epsilon == 6.0
    assert budget_share("none") == "full" and budget_share("true") == "full"
    assert budget_share("beta_debiased") == "split" and budget_share("logreg") == "split"
    with pytest.raises(DpiwError):
        split_budget(-1.0, 1e-3, weights_method="none", weights_epsilon_fraction=0.1, weights_delta_fraction=0.3)
    assert paper_delta(1000) == pytest.approx(1e-3 - 1e-6)
