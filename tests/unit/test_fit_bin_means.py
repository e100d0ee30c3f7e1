"""A fit's numeric feature as its bin's mean (dpiw.analysis.fit.bin_means, bench/fit_check.py --bins; not b.fit's
default): the release draws a value inside its bin apart from every other column, which pulls a slope towards zero
by the between-bin share of the feature's variance (regression dilution); the bin's mean gives the slope back."""

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LinearRegression

from dpiw.analysis import Bundle
from dpiw.analysis import fit as fit_module
from dpiw.data.schema import parse_schema

SCHEMA = parse_schema({"name": "d", "task": "regression", "target": "y", "columns": [
    {"name": "x", "type": "numeric", "lower": 0, "upper": 8},
    {"name": "y", "type": "numeric", "lower": -100, "upper": 100}]})


def released(n: int, seed: int) -> Bundle:
    """y = 1 + 2x + noise with x uniform on [0, 8]; as released on four equal-width bins: each row keeps its bin
    and draws x uniformly inside it, apart from y."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 8, n)
    y = 1 + 2 * x + rng.normal(0, 1, n)
    inside = np.floor(x / 2) * 2 + rng.uniform(0, 2, n)
    rows = pd.DataFrame({"x": inside, "y": y})
    return Bundle(rows, np.ones(n), {}, None, SCHEMA, {"generator": {"bins": 4}})


@pytest.mark.filterwarnings("ignore::dpiw.analysis.UnmeasuredWarning")  # the bundle publishes no marginal
@pytest.mark.parametrize("bin_means, slope", [(False, 2 * (1 - 1 / 16)), (True, 2.0)])
def test_a_slope_on_values_drawn_inside_bins_is_diluted_and_the_bins_means_give_it_back(monkeypatch, bin_means,
                                                                                       slope):
    """Closed form: four bins of width 2 on a uniform x of width 8 leave 1/16 of its variance inside the bins, so
    the released values' slope is 2 x 15/16 = 1.875; the bins' means give 2 (200,000 rows: the slope's standard
    error is about 0.001)."""
    monkeypatch.setattr(fit_module, "BIN_MEANS", bin_means)
    fit = released(200_000, 1).fit(LinearRegression(), ["x"], "y", interval="sampling")
    assert fit.table.value["x"] == pytest.approx(slope, abs=0.006)


def test_the_bins_means_are_weighted_and_taken_over_the_rows_being_fitted():
    """Each row's value becomes its bin's weighted mean over the rows given (a resample or a replicate takes its
    own); a column without released bins is left as it is."""
    b = released(8, 2)
    x = b.design(["x"])
    w = np.arange(1.0, 9.0)
    got = fit_module.bin_means(b, x, b.data, w, ["x"]).x.to_numpy()
    cell = np.floor(b.data.x.to_numpy() / 2).astype(int)
    for k in np.unique(cell):
        here = cell == k
        assert np.allclose(got[here], np.average(b.data.x[here], weights=w[here]))
    plain = Bundle(b.data, b.weights, {}, None, SCHEMA, None)  # no published bins
    assert fit_module.bin_means(plain, x, b.data, w, ["x"]).equals(x)
