"""The budget advisor's line states the split the release makes: MST keeps 1 - f of epsilon and delta, the
weights get the rest of the zCDP rho, which is about half of it at f = 0.3 (not 30%: rho grows with the square
of epsilon)."""

import re

import pytest

from dpiw.data import load_schema
from dpiw.privacy.accounting import zcdp_rho
from dpiw.privacy.spend import split_budget
from dpiw.weights.advisor import advise, weights_rho_share


@pytest.mark.parametrize("epsilon,delta", [(1.0, 1e-6), (0.3, 3.5e-7), (3.0, 1e-8)])
def test_the_weights_rho_share_is_the_splits(epsilon, delta):
    s = split_budget(epsilon, delta, weights_method="marginal_match", weights_epsilon_fraction=0.3,
                     weights_delta_fraction=0.3, rule="zcdp")
    whole = zcdp_rho(epsilon, delta)
    by_split = 1 - zcdp_rho(s.sdgp_epsilon, s.sdgp_delta) / whole
    assert weights_rho_share(epsilon, delta, 0.3) == pytest.approx(by_split, rel=1e-9)
    assert zcdp_rho(s.weights_epsilon, s.weights_delta) / whole == pytest.approx(by_split, rel=1e-6)
    assert 0.45 < by_split < 0.55


def test_the_advisors_line_names_the_shares():
    a = advise(28155, load_schema("data/schemas/cps1988.yaml"), epsilon=1.0, delta=1e-6, fraction=0.3)
    assert a.method == "marginal_match"
    assert "keeps 70% of epsilon" in a.reason
    share = int(re.search(r"\((\d+)% of the rho", a.reason).group(1))
    assert share == round(100 * weights_rho_share(1.0, 1e-6, 0.3))
