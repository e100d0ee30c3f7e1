"""params.yaml validation: one clear error that names the field."""

import copy

import pytest
import yaml

from dpiw import DpiwError
from dpiw.config import load_yaml, validate_params


@pytest.fixture
def params(root):
    return load_yaml(root / "params.yaml")


@pytest.fixture
def check(root):
    schema = load_yaml(root / "workflow/schemas/params.schema.yaml")
    return lambda p: validate_params(p, schema, schema_dir=root / "data/schemas")


def test_default_params_are_valid(params, check):
    check(params)


@pytest.mark.parametrize("mutate, message", [
    (lambda p: p["weights"]["beta"].update(lambdaa=1.0), "unknown key 'lambdaa' (did you mean 'lambda'?)"),
    (lambda p: p["grid"].update(datasets=["toy", "irs"]), "unknown dataset 'irs' (did you mean 'iris'?)"),
    (lambda p: p["grid"].update(epsilons=[-1]), "grid.epsilons.0 = -1"),
    (lambda p: p["grid"].update(weights=["betadebiased"]), "grid.weights.0 = 'betadebiased' is not one of"),
    (lambda p: p["post"]["temper"].update(alpha=1.5), "post.temper.alpha = 1.5"),
    (lambda p: p["privacy"].update(delta="tiny"), "privacy.delta = 'tiny' is not allowed"),
    (lambda p: p["scale"].pop("bounds"), "'bounds' is a required property"),
    (lambda p: p["datasets"]["toy"].pop("n_rows"), "datasets.toy.n_rows is required"),
    (lambda p: p["datasets"].update(iris={"n_rows": 500}), "datasets.iris takes no options"),
    (lambda p: p["sdgp"]["marginals"].update(bins="ten"), "sdgp.marginals.bins = 'ten'"),
    (lambda p: p["grid"].update(posts=["none", "psis+calibrate"]), "grid.posts[1]: post 'psis+calibrate'"),
    (lambda p: p["grid"].update(posts=["pareto"]), "unknown step 'pareto'"),
    (lambda p: p["scale"].update(public_fraction=0), "needs rows declared public: set scale.public_fraction"),
    (lambda p: p["scale"].update(public_fraction=0.7), "scale.public_fraction = 0.7"),
    (lambda p: p["post"]["truncate"].update(tau=0.5), "post.truncate.tau = 0.5 is not allowed"),
    (lambda p: p["post"]["resample"].update(scheme="stratified"), "post.resample.scheme = 'stratified'"),
])
def test_bad_params_name_the_field(params, check, mutate, message):
    bad = copy.deepcopy(params)
    mutate(bad)
    with pytest.raises(DpiwError) as exc:
        check(bad)
    assert message in str(exc.value)


def test_not_a_mapping(check, tmp_path):
    with pytest.raises(DpiwError, match="must be a mapping"):
        check(["grid"])
    (tmp_path / "p.yaml").write_text("grid: [unclosed\n")
    with pytest.raises(DpiwError, match="not valid YAML"):
        load_yaml(tmp_path / "p.yaml")
    assert yaml.safe_load("a: 1") == {"a": 1}
