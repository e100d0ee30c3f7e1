import numpy as np
import pandas as pd
import pytest

from dpiw import DpiwError
from dpiw.data.schema import parse_schema
from dpiw.sdgp import make_sdgp
from dpiw.sdgp.marginals import DPMarginals, discretise, noisy_probabilities

SCHEMA = parse_schema({"name": "t", "task": "classification", "target": "y", "columns": [
    {"name": "a", "type": "numeric", "lower": 0, "upper": 1},
    {"name": "b", "type": "numeric", "lower": 0, "upper": 1},
    {"name": "y", "type": "categorical", "categories": ["n", "p"]}]})


def data(rng, n=4000):
    y = (rng.uniform(size=n) < 0.3).astype(int)
    a = np.where(y == 1, rng.uniform(0.6, 1.0, size=n), rng.uniform(0.0, 0.5, size=n))
    return pd.DataFrame({"a": a, "b": rng.uniform(size=n), "y": y})


def test_large_epsilon_recovers_the_conditionals(rng):
    train = data(rng)
    gen = DPMarginals(bins=10, structure="naive_bayes").fit(train, SCHEMA, epsilon=1e6, delta=0.0, rng=rng)
    synth = gen.sample(20_000, rng=rng)
    assert synth["y"].mean() == pytest.approx(train["y"].mean(), abs=0.015)
    assert synth.loc[synth.y == 1, "a"].min() >= 0.6 - 1e-9  # the class-conditional support is kept
    assert synth.loc[synth.y == 0, "a"].max() <= 0.5 + 1e-9
    assert ((synth[["a", "b"]] >= 0) & (synth[["a", "b"]] <= 1)).all().all()


def test_spend_and_noise_scale_are_recorded(rng):
    gen = DPMarginals(bins=5, structure="naive_bayes").fit(data(rng), SCHEMA, epsilon=1.5, delta=1e-5, rng=rng)
    rec = gen.privacy_
    assert rec.epsilon == 1.5 and rec.delta == 0.0 and rec.details["n_tables"] == 3
    assert rec.noise["scale"] == pytest.approx(2 * 3 / 1.5)  # L1 sensitivity 2 per table, eps/3 each


def test_laplace_noise_on_counts_has_the_stated_scale():
    """Over 3000 fits on the same data, each noisy count is centred on the true count with variance
    2 b^2, b = 2T/epsilon the recorded scale (a wrong sensitivity or budget split would show)."""
    rng = np.random.default_rng(5)
    train = data(rng, n=300)
    true = np.bincount(train["y"], minlength=2).astype(float)
    noisy = []
    for _ in range(3000):
        gen = DPMarginals(bins=4, structure="naive_bayes").fit(train, SCHEMA, epsilon=2.0, delta=0, rng=rng)
        noisy.append(gen.noisy_counts_[(2,)])
    noisy = np.array(noisy)
    b = gen.privacy_.noise["scale"]
    assert b == pytest.approx(2 * 3 / 2.0)
    assert np.allclose(noisy.mean(axis=0), true, atol=4 * np.sqrt(2) * b / np.sqrt(3000))
    assert np.allclose(noisy.var(axis=0), 2 * b**2, rtol=0.1)
    p = noisy_probabilities(np.array([[5.0, 0.0, 0.0]]), 1e-9, rng)
    assert np.allclose(p, [[1.0, 0.0, 0.0]])
    assert np.allclose(noisy_probabilities(np.zeros((1, 4)) - 100, 1e-9, rng), 0.25)  # all negative -> uniform


def test_same_seed_same_synthetic_data(rng):
    train = data(rng)
    out = []
    for _ in range(2):
        g = np.random.default_rng(3)
        gen = make_sdgp("marginals", bins=8, structure="independent").fit(train, SCHEMA, epsilon=1.0, delta=0,
                                                                          rng=g)
        out.append(gen.sample(500, rng=g))
    pd.testing.assert_frame_equal(out[0], out[1])


def test_discretise_and_guards(rng):
    cells, cards = discretise(pd.DataFrame({"a": [0.0, 0.99, 1.0], "b": [0.5] * 3, "y": [0, 1, 1]}), SCHEMA, 4)
    assert cells[:, 0].tolist() == [0, 3, 3] and cards == [4, 4, 2]
    with pytest.raises(DpiwError, match="max_cells"):
        DPMarginals(bins=100, max_cells=50).fit(data(rng), SCHEMA, epsilon=1, delta=0, rng=rng)
    with pytest.raises(DpiwError, match="unknown SDGP"):
        make_sdgp("gann")


def test_every_generator_and_weight_method_documents_parameters_and_returns():
    """numpydoc: the methods a user calls on every SDGP and weight estimator of the registry say what they take
    and return (dpiw._docs holds the shared text)."""
    from dpiw import registry

    missing = []
    for entry in registry.SDGPS:
        cls = registry.load(entry.factory)
        cls = cls if isinstance(cls, type) else type(cls(**({"progress": False} if entry.gan else {})))
        for name in ("fit", "sample"):
            doc = getattr(cls, name).__doc__ or ""
            if "Parameters\n" not in doc or "Returns\n" not in doc:
                missing.append(f"{entry.name}.{name}")
    for entry in registry.WEIGHT_METHODS:
        est = registry.load(entry.estimator)
        cls = est if isinstance(est, type) else None
        if cls is None:
            continue  # a factory (mlp, dp_mlp): its class is checked through MLPWeights below
        names = {"gan": ("fit_gan",), "marginal": ("fit_frames", "reweight")}.get(entry.family, ("fit", "log_ratio"))
        for name in names:
            doc = getattr(cls, name).__doc__ or ""
            if "Parameters\n" not in doc or "Returns\n" not in doc:
                missing.append(f"{entry.name}.{name}")
    from dpiw.weights.mlp import MLPWeights

    for name in ("fit", "log_ratio"):
        if "Parameters\n" not in (getattr(MLPWeights, name).__doc__ or ""):
            missing.append(f"MLPWeights.{name}")
    assert missing == []
