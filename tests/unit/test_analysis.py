"""dpiw.analysis: the analyst's weighted estimates from a bundle. The interval is checked by coverage on the
toy data with the true weights (D uniform on the triangle, G uniform on the square, w = 2 inside, 0 outside)."""

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LinearRegression

from dpiw import DpiwError
from dpiw.analysis import UnreliableWeightsWarning, kish_ess, load_bundle, weighted_mean


def test_the_95_percent_interval_covers_the_truth_about_95_percent_of_the_time():
    rng = np.random.default_rng(2026)
    covered = []
    for _ in range(200):
        x = rng.uniform(size=(500, 2))
        w = 2.0 * (x.sum(axis=1) < 1)
        lo, hi = weighted_mean(x[:, 0], w).ci(0.95)
        covered.append(lo <= 1 / 3 <= hi)  # E_D[x1] on the triangle
    rate = float(np.mean(covered))
    assert 0.91 <= rate <= 0.98, rate
    # an interval without the weights would miss: the unweighted mean is 1/2
    x = rng.uniform(size=(500, 2))
    lo, hi = weighted_mean(x[:, 0], np.ones(500)).ci()
    assert not lo <= 1 / 3 <= hi


def test_estimate_equals_the_closed_forms():
    est = weighted_mean([1.0, 2.0, 3.0, 4.0], [1, 1, 0, 2])
    p = np.array([1, 1, 0, 2]) / 4
    mean = p @ [1, 2, 3, 4]
    assert est.value == pytest.approx(mean)
    assert est.ess == pytest.approx(kish_ess([1, 1, 0, 2])) == pytest.approx(16 / 6)
    assert est.se == pytest.approx(np.sqrt(p @ (np.array([1, 2, 3, 4]) - mean) ** 2 / (16 / 6)))
    with pytest.raises(DpiwError, match="not all 0"):
        weighted_mean([1.0], [0.0])


def _bundle(tmp_path, weights, k=0.2):
    tmp_path.mkdir()
    rng = np.random.default_rng(0)
    x = rng.uniform(size=len(weights))
    pd.DataFrame({"x": x, "y": 2 * x + 1}).to_parquet(tmp_path / "synthetic.parquet")
    pd.DataFrame({"log_weight": np.log(np.maximum(weights, 1e-300)), "weight": weights}).to_parquet(
        tmp_path / "weights.parquet")
    (tmp_path / "manifest.json").write_text(json.dumps({"release": {"pareto_k": k, "pareto_k_threshold": 0.7}}))
    schema = {"name": "t", "task": "regression", "target": "y",
              "columns": [{"name": "x", "type": "numeric", "lower": 0, "upper": 1},
                          {"name": "y", "type": "numeric", "lower": 0, "upper": 1}]}
    (tmp_path / "schema.json").write_text(json.dumps({"schema": schema}))
    return tmp_path


def test_bundle_loads_fits_with_sample_weight_and_warns_when_unreliable(tmp_path):
    b = load_bundle(_bundle(tmp_path / "a", np.ones(100)))
    assert b.mean("x").value == pytest.approx(b.data.x.mean())
    model = b.fit(LinearRegression(), ["x"], "y")
    assert model.coef_[0] == pytest.approx(2.0)
    with pytest.warns(UnreliableWeightsWarning, match="Pareto k-hat 0.95"):
        load_bundle(_bundle(tmp_path / "b", np.ones(100), k=0.95))
    w = np.r_[np.full(5, 100.0), np.full(95, 0.01)]
    with pytest.warns(UnreliableWeightsWarning, match="Kish ESS"):
        load_bundle(_bundle(tmp_path / "c", w))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_bundle(tmp_path / "a")
    with pytest.raises(DpiwError, match="not a release bundle"):
        load_bundle(tmp_path)


def test_a_bundle_reads_back_in_units_and_labels(tmp_path):
    """schema.json decodes the released rows: numeric columns in their units, codes as labels; means, subgroup
    rates and a fit use them; a bundle without schema.json keeps the scaled rows and says so."""
    from dpiw.data.schema import parse_schema
    from dpiw.scale import scale_frame

    schema = {"name": "c", "task": "classification", "target": "ill",
              "columns": [{"name": "age", "type": "numeric", "lower": 18, "upper": 90},
                          {"name": "region", "type": "categorical", "categories": ["north", "south", "west"]},
                          {"name": "ill", "type": "categorical", "categories": ["no", "yes"]}]}
    rng = np.random.default_rng(1)
    raw = pd.DataFrame({"age": rng.uniform(18, 90, 400), "region": rng.choice(["north", "south", "west"], 400)})
    raw["ill"] = np.where(raw.age + 20 * (raw.region == "west") > 60, "yes", "no")
    parsed = parse_schema(schema)
    scaled = scale_frame(raw, parsed, {"age": (18.0, 90.0)})
    d = tmp_path / "bundle"
    d.mkdir()
    scaled.to_parquet(d / "synthetic.parquet")
    w = rng.uniform(0.5, 2, 400)
    pd.DataFrame({"log_weight": np.log(w), "weight": w}).to_parquet(d / "weights.parquet")
    (d / "manifest.json").write_text(json.dumps({"release": {}}))
    (d / "schema.json").write_text(json.dumps({"schema": parsed.public_dict()}))
    b = load_bundle(d)
    np.testing.assert_allclose(b.data.age, raw.age)
    assert list(b.data.ill.astype(str)) == list(raw.ill) and list(b.data.region.cat.categories) == ["north", "south",
                                                                                                     "west"]
    assert b.mean("age").value == pytest.approx(np.average(raw.age, weights=w))
    west = (raw.region == "west").to_numpy()
    assert b.rate("ill", "yes", where=b.data.region == "west").value == pytest.approx(
        np.average(raw.ill[west] == "yes", weights=w[west]))
    with pytest.raises(DpiwError, match="'region' is categorical; the share of one of its labels is rate"):
        b.mean("region")
    with pytest.raises(DpiwError, match="not a category"):
        b.rate("region", "east")
    assert list(b.design(["age", "region"]).columns) == ["age", "region=south", "region=west"]
    # the analyst's own rows (a CSV read back: text, not categories) by the schema's categories, or one error
    own = pd.DataFrame({"age": [30.0, 50.0], "region": ["west", "north"]})
    np.testing.assert_array_equal(b.design(["age", "region"], own).to_numpy(), [[30, 0, 1], [50, 0, 0]])
    with pytest.raises(DpiwError, match="column 'region' holds 'East', which is not one of its categories"):
        b.design(["region"], pd.DataFrame({"region": ["East"]}))
    from sklearn.linear_model import LogisticRegression

    model = b.fit(LogisticRegression(max_iter=2000), ["age", "region"], "ill")
    assert list(model.classes_) == ["no", "yes"] and model.coef_[0][0] > 0
    (d / "schema.json").unlink()
    with pytest.warns(UserWarning, match="without schema.json"):
        old = load_bundle(d)
    assert old.data.age.max() <= 1 and set(old.data.ill) <= {0, 1}


def test_an_interval_stays_inside_what_its_estimand_can_be():
    """A rate near 0 or a mean near a public bound: the normal interval is cut at the limits, never past them."""
    from dpiw.analysis.estimates import Estimate

    rate = Estimate(0.004, 0.03, 100.0, limits=(0.0, 1.0))
    lo, hi = rate.ci()
    assert lo == 0.0 and hi == pytest.approx(0.004 + 1.959963984540054 * 0.03)
    mean = Estimate(86.0, 9.0, 100.0, limits=(0.0, 100.0))
    assert mean.ci()[1] == 100.0 and str(mean) == "86 (95% interval 68 to 100)"
