"""Common random numbers in the evaluation: the metrics' random draws depend on the run's seed, dataset and
evaluation split only, so two weightings of the same rows are compared under the same draws."""

import json

import numpy as np
import pandas as pd
import pytest

from dpiw.io import write_parquet
from dpiw.stages import evaluate, scale, synthesize

#: keys of a metrics file that name the run rather than measure it
RUN_KEYS = {"run"}


@pytest.fixture(scope="module")
def rows(tmp_path_factory, root):
    """iris (classification: every metric, the MLP and the HMC chain included), scaled and synthesised once."""
    d = tmp_path_factory.mktemp("crn")
    schema = str(root / "data/schemas/iris.yaml")
    scale.main(["--schema", schema, "--dataset", "iris", "--seed", "4", "--test-fraction", "0.2", "--bounds",
                "schema", "--train-out", str(d / "train.parquet"), "--test-out", str(d / "test.parquet"),
                "--privacy-out", str(d / "scale.json")])
    synthesize.main(["--train", str(d / "train.parquet"), "--schema", schema, "--sdgp", "marginals", "--epsilon",
                     "3", "--share", "full", "--delta", "paper", "--weights-epsilon-fraction", "0.1",
                     "--weights-delta-fraction", "0.3", "--seed", "4", "--bins", "10", "--structure",
                     "naive_bayes", "--out", str(d / "synth.parquet"), "--privacy-out", str(d / "synth.json")])
    n = len(pd.read_parquet(d / "synth.parquet"))
    write_parquet(pd.DataFrame({"row": np.arange(n), "log_weight": np.zeros(n)}), d / "unit.parquet")
    lw = np.random.default_rng(1).normal(0, 0.5, n)
    write_parquet(pd.DataFrame({"row": np.arange(n), "log_weight": lw}), d / "other.parquet")
    return {"dir": d, "schema": schema}


def _evaluate(rows, log_weights: str, *, sdgp: str, weights: str, post: str, eps: str, out: str,
              bayes: str = "run") -> dict:
    d = rows["dir"]
    evaluate.main(["--synth", str(d / "synth.parquet"), "--log-weights", str(d / log_weights), "--test",
                   str(d / "test.parquet"), "--schema", rows["schema"], "--dataset", "iris", "--eps", eps,
                   "--seed", "4", "--sdgp", sdgp, "--weights", weights, "--post", post, "--out", str(d / out),
                   "--privacy-out", str(d / f"{out}.privacy.json"), "--bayes", bayes])
    return json.loads((d / out).read_text())


def test_skipping_the_bayesian_metric_leaves_every_other_metric_as_it_was(rows):
    """evaluation.skip_bayes: the chain's stream is its own, so the other metrics do not move."""
    a = _evaluate(rows, "other.parquet", sdgp="marginals", weights="beta_noised", post="none", eps="3",
                  out="with.json")
    b = _evaluate(rows, "other.parquet", sdgp="marginals", weights="beta_noised", post="none", eps="3",
                  out="without.json", bayes="skip")
    assert isinstance(a["bayes_auc"], float) and b["bayes_auc"] is None  # a number, then NaN (null in JSON)
    assert b["bayes_note"] == evaluate.BAYES_SKIPPED and "bayes_accept_rate" not in b
    for key in sorted(set(a) - {"bayes_auc", "bayes_accept_rate"}):
        assert a[key] == b[key] or (a[key] != a[key] and b[key] != b[key]), key


def test_unit_weights_under_two_names_give_identical_metrics(rows):
    a = _evaluate(rows, "unit.parquet", sdgp="marginals", weights="none", post="none", eps="3", out="a.json")
    b = _evaluate(rows, "unit.parquet", sdgp="mst", weights="beta_debiased", post="psis", eps="1", out="b.json")
    measured = set(a) - RUN_KEYS - {"against"}
    # every metric with randomness of its own is among them
    assert {"mlp_auc", "bayes_auc", "wst", "beta_mse", "pmse", "ess_synthetic"} <= measured
    for key in sorted(measured):
        assert a[key] == b[key] or (a[key] != a[key] and b[key] != b[key]), key  # equal, or both NaN


def test_two_weightings_share_the_metrics_draws(rows, monkeypatch):
    """The MLP's initial parameters and batches, and the HMC chain, start from the same generator state
    whatever the weighting: the paired difference of two weightings measures the weights alone."""
    import dpiw.evaluate.bayes as bayes
    import dpiw.evaluate.utility as utility

    seen = {"mlp": [], "bayes": []}
    train_mlp, hmc = utility.train_mlp, bayes.hmc

    def spy_mlp(X, y, w, *, rng, **kw):
        seen["mlp"].append((json.dumps(rng.bit_generator.state), w.copy()))
        return train_mlp(X, y, w, rng=rng, **kw)

    def spy_hmc(log_density, dim, *, rng, **kw):
        seen["bayes"].append(json.dumps(rng.bit_generator.state))
        return hmc(log_density, dim, rng=rng, **kw)

    monkeypatch.setattr(utility, "train_mlp", spy_mlp)
    monkeypatch.setattr(bayes, "hmc", spy_hmc)
    a = _evaluate(rows, "unit.parquet", sdgp="marginals", weights="none", post="none", eps="3", out="c.json")
    b = _evaluate(rows, "other.parquet", sdgp="marginals", weights="beta_noised", post="temper", eps="3",
                  out="d.json")
    (state_a, w_a), (state_b, w_b) = seen["mlp"]
    assert state_a == state_b and not np.allclose(w_a, w_b)  # same draws, different weights
    assert seen["bayes"][0] == seen["bayes"][1]
    assert a["mlp_auc"] != b["mlp_auc"] or a["bayes_auc"] != b["bayes_auc"]  # the weights did reach the fits
    # the MLP's and the chain's streams are separate: neither is the other's continuation
    assert seen["mlp"][0][0] != seen["bayes"][0]


def test_the_streams_follow_the_split():
    a, b = evaluate.metric_rngs(4, "iris", "test"), evaluate.metric_rngs(5, "iris", "test")
    c = evaluate.metric_rngs(4, "iris", "public")
    draw = {k: float(v["mlp"].uniform()) for k, v in {"a": a, "b": b, "c": c}.items()}
    assert len(set(draw.values())) == 3  # another seed or another evaluation split: other draws


def test_beta_mse_scores_the_real_training_split_below_the_sdgps(root, tmp_path):
    """beta-MSE measures bias: on banknote the real training split (no bias) scores below the None rows of the
    marginal SDGPs at epsilon 1; the paper's summed-loss fit scored it 13-15, above them."""
    from dpiw.data import load_schema
    from dpiw.data.encode import encode_features
    from dpiw.evaluate.metrics import beta_mse

    schema_path = str(root / "data/schemas/banknote.yaml")
    schema = load_schema(schema_path)
    scale.main(["--schema", schema_path, "--dataset", "banknote", "--seed", "0", "--test-fraction", "0.2",
                "--public-fraction", "0.1", "--bounds", "schema", "--train-out", str(tmp_path / "train.parquet"),
                "--test-out", str(tmp_path / "test.parquet"), "--public-out", str(tmp_path / "public.parquet"),
                "--privacy-out", str(tmp_path / "scale.json")])
    train, test = pd.read_parquet(tmp_path / "train.parquet"), pd.read_parquet(tmp_path / "test.parquet")

    def score(rows):
        X, y = encode_features(rows, schema), rows[schema.target].to_numpy()
        return beta_mse(X, y, np.ones(len(X)), encode_features(test, schema), test[schema.target].to_numpy(),
                        task=schema.task, n_classes=schema.n_classes)

    real = score(train)
    assert real < 0.2
    for sdgp, flags in (("marginals", ["--bins", "20", "--structure", "naive_bayes"]),
                        ("privbayes", ["--privbayes-bins", "4", "--privbayes-degree", "1"]),
                        ("mst", ["--mst-bins", "8", "--mst-iters", "300"])):
        out = tmp_path / f"{sdgp}.parquet"
        synthesize.main(["--train", str(tmp_path / "train.parquet"), "--schema", schema_path, "--sdgp", sdgp,
                         "--epsilon", "1", "--share", "full", "--delta", "paper", "--seed", "0", *flags,
                         "--out", str(out), "--privacy-out", str(tmp_path / f"{sdgp}.json")])
        assert real < score(pd.read_parquet(out)), sdgp


def test_marginal_match_through_the_stage(rows, root, tmp_path):
    """The fit_weights stage runs marginal_match on any SDGP's rows: one log weight per synthetic row, the weight
    share's spend (zCDP, converted at its delta), the signal check and the tau the discrepancy rule chose (or unit
    weights), in the record."""
    from dpiw.stages import fit_weights

    d = rows["dir"]
    fit_weights.main(["--real", str(d / "train.parquet"), "--synth", str(d / "synth.parquet"), "--schema",
                      rows["schema"], "--method", "marginal_match", "--dataset", "iris", "--sdgp", "marginals",
                      "--epsilon", "3", "--delta", "1e-5", "--weights-epsilon-fraction", "0.3",
                      "--weights-delta-fraction", "0.3", "--marginal-match-bins", "4", "--marginal-match-degree", "3",
                      "--marginal-match-max-marginals", "64", "--marginal-match-max-cells", "100000", "--seed", "4",
                      "--out", str(tmp_path / "lr.parquet"), "--privacy-out", str(tmp_path / "w.json")])
    lr = pd.read_parquet(tmp_path / "lr.parquet")
    assert len(lr) == len(pd.read_parquet(d / "synth.parquet")) and np.isfinite(lr.log_ratio).all()
    rec = json.loads((tmp_path / "w.json").read_text())
    assert rec["delta"] == pytest.approx(0.3e-5) and 0.85 < rec["epsilon"] / 0.9 <= 1 + 1e-9
    assert len(rec["details"]["workload"]) == 4 + 6
    if rec["details"]["signal"]["signal"]:
        assert rec["details"]["tau"] in (1.0, 0.3, 0.1, 0.03, 0.01)
    else:  # do no harm: the measurements see nothing past their noise, the weights stay at 1
        assert rec["details"]["tau"] is None and (lr.log_ratio == 0).all()
