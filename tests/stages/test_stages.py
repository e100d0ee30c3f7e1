"""Each stage's CLI in-process on small data: outputs, privacy records, one-line errors, atomicity."""

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from dpiw.io import write_parquet
from dpiw.stages import evaluate, fit_weights, postprocess_weights, privacy_ledger, scale, synthesize
from dpiw.stages._cli import run


@pytest.fixture
def chain(tmp_path, root):
    """scale -> synthesize (split share) -> fit_weights (beta_debiased) -> postprocess -> evaluate."""
    p = {k: tmp_path / v for k, v in dict(
        train="train.parquet", test="test.parquet", scale="priv/scale.json", synth="synth.parquet",
        synth_priv="priv/synth.json", lr="lr.parquet", w_priv="priv/w.json", lw="lw.parquet",
        post_priv="priv/post.json", metrics="metrics.json", eval_priv="priv/eval.json").items()}
    schema = str(root / "data/schemas/toy.yaml")
    scale.main(["--schema", schema, "--dataset", "toy", "--seed", "0", "--test-fraction", "0.2", "--bounds",
                "schema", "--n-rows", "250", "--train-out", str(p["train"]), "--test-out", str(p["test"]),
                "--privacy-out", str(p["scale"])])
    budget = ["--delta", "paper", "--weights-epsilon-fraction", "0.1", "--weights-delta-fraction", "0.3"]
    synthesize.main(["--train", str(p["train"]), "--schema", schema, "--sdgp", "marginals", "--epsilon", "1",
                     "--share", "split", *budget, "--seed", "0", "--bins", "10", "--structure", "naive_bayes",
                     "--out", str(p["synth"]), "--privacy-out", str(p["synth_priv"])])
    fit_weights.main(["--real", str(p["train"]), "--synth", str(p["synth"]), "--schema", schema, "--method",
                      "beta_debiased", "--dataset", "toy", "--sdgp", "marginals", "--epsilon", "1", *budget,
                      "--lambda", "auto", "--sensitivity-n", "private", "--seed", "0", "--out", str(p["lr"]),
                      "--privacy-out", str(p["w_priv"])])
    postprocess_weights.main(["--log-ratios", str(p["lr"]), "--post", "temper", "--alpha", "0.5", "--out",
                              str(p["lw"]), "--privacy-out", str(p["post_priv"])])
    evaluate.main(["--synth", str(p["synth"]), "--log-weights", str(p["lw"]), "--test", str(p["test"]),
                   "--schema", schema, "--dataset", "toy", "--eps", "1", "--seed", "0", "--sdgp", "marginals",
                   "--weights", "beta_debiased", "--post", "temper", "--out", str(p["metrics"]),
                   "--privacy-out", str(p["eval_priv"])])
    p["schema"] = schema
    return p


def test_chain_outputs(chain):
    train, synth = pd.read_parquet(chain["train"]), pd.read_parquet(chain["synth"])
    assert list(train.columns) == ["x1", "x2"] and len(train) == 200 and len(synth) == 200
    assert ((train >= 0) & (train <= 1)).all().all()
    lr = pd.read_parquet(chain["lr"])
    assert list(lr.columns) == ["row", "log_ratio"] and len(lr) == 200 and np.isfinite(lr.log_ratio).all()
    lw = pd.read_parquet(chain["lw"])
    assert np.exp(lw.log_weight).mean() == pytest.approx(1.0)
    m = json.loads(chain["metrics"].read_text())
    assert {"wst", "beta_mse", "ess_kish", "ess_fraction"} <= set(m) and m["run"]["weights"] == "beta_debiased"
    w = json.loads(chain["w_priv"].read_text())
    s = json.loads(chain["synth_priv"].read_text())
    assert w["epsilon"] == pytest.approx(0.1) and s["epsilon"] == pytest.approx(0.9)
    assert w["noise"]["scale"] == pytest.approx(0.3)  # lambda auto -> rho = rho_target (the default)


@pytest.mark.parametrize("method", ["none", "none_split"])
def test_unit_weights_encode_nothing(chain, tmp_path, monkeypatch, method):
    """Unit weights never build the one-hot design (1e6 rows of a 1,462-category column took 22 GB for w = 1)."""
    def refuse(*a, **k):
        raise AssertionError("encode called for unit weights")

    monkeypatch.setattr(fit_weights, "encode", refuse)
    budget = ["--weights-epsilon-fraction", "0.1", "--weights-delta-fraction", "0.3"] if method == "none_split" else []
    fit_weights.main(["--real", str(chain["train"]), "--synth", str(chain["synth"]), "--schema", chain["schema"],
                      "--method", method, "--dataset", "toy", "--sdgp", "marginals", "--epsilon", "1", "--delta",
                      "paper", *budget, "--seed", "0", "--out", str(tmp_path / "u.parquet"), "--privacy-out",
                      str(tmp_path / "u.json")])
    lr = pd.read_parquet(tmp_path / "u.parquet")
    assert len(lr) == 200 and (lr.log_ratio == 0).all()
    assert json.loads((tmp_path / "u.json").read_text())["epsilon"] == 0


def test_ledger_sum_and_budget_gate(chain, tmp_path):
    records = [str(chain[k]) for k in ("scale", "synth_priv", "w_priv", "post_priv")]
    out = tmp_path / "manifest.json"
    privacy_ledger.main(["--records", *records, "--epsilon", "1", "--delta", "paper", "--allow-non-dp", "false",
                         "--run", "r", "--out", str(out)])
    m = json.loads(out.read_text())
    assert m["spent"]["epsilon"] == pytest.approx(sum(r["epsilon"] for r in m["records"])) == pytest.approx(1.0)
    assert m["spent"]["delta"] == pytest.approx(sum(r["delta"] for r in m["records"]))
    over = tmp_path / "over.json"
    with pytest.raises(SystemExit) as exc:
        run(privacy_ledger.main, ["--records", *records, "--epsilon", "0.95", "--delta", "paper",
                                  "--allow-non-dp", "false", "--run", "r", "--out", str(over)])
    assert exc.value.code == 2 and not over.exists()


def test_nan_input_gives_one_clear_error_and_no_artifact(chain, tmp_path):
    bad = pd.read_parquet(chain["synth"])
    bad.loc[3, "x2"] = np.nan
    write_parquet(bad, tmp_path / "bad.parquet")
    out = tmp_path / "never.parquet"
    proc = subprocess.run([sys.executable, "-m", "dpiw.stages.fit_weights", "--real", str(chain["train"]),
                           "--synth", str(tmp_path / "bad.parquet"), "--schema", chain["schema"], "--method", "none",
                           "--dataset", "toy", "--sdgp", "marginals", "--epsilon", "1", "--seed", "0",
                           "--out", str(out), "--privacy-out", str(tmp_path / "never.json")],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0  # one line, no traceback
    assert "column 'x2' (1 missing or infinite)" in proc.stderr and "row 3" not in proc.stderr
    assert not out.exists() and not (tmp_path / "never.json").exists()


def test_unknown_dataset_schema(tmp_path, root):
    with pytest.raises(SystemExit) as exc:
        run(scale.main, ["--schema", str(root / "data/schemas/nope.yaml"), "--dataset", "nope", "--seed", "0",
                         "--test-fraction", "0.2", "--bounds", "schema", "--train-out", str(tmp_path / "a"),
                         "--test-out", str(tmp_path / "b"), "--privacy-out", str(tmp_path / "c")])
    assert exc.value.code == 2 and not any(tmp_path.iterdir())


def test_true_weights_only_for_toy_uniform(chain, tmp_path, capsys):
    with pytest.raises(SystemExit):
        run(fit_weights.main, ["--real", str(chain["train"]), "--synth", str(chain["synth"]), "--schema",
                               chain["schema"], "--method", "true", "--dataset", "toy", "--sdgp", "marginals",
                               "--epsilon", "1", "--seed", "0", "--out", str(tmp_path / "x.parquet"),
                               "--privacy-out", str(tmp_path / "x.json")])
    assert "only for the toy data with the uniform SDGP" in capsys.readouterr().err


def test_data_bounds_are_marked_not_dp(tmp_path, root):
    scale.main(["--schema", str(root / "data/schemas/iris.yaml"), "--dataset", "iris", "--seed", "1",
                "--test-fraction", "0.2", "--bounds", "data", "--train-out", str(tmp_path / "tr.parquet"),
                "--test-out", str(tmp_path / "te.parquet"), "--privacy-out", str(tmp_path / "p.json")])
    rec = json.loads((tmp_path / "p.json").read_text())
    assert rec["dp"] is False and rec["epsilon"] is None and "NOT DP" in rec["basis"]
    tr = pd.read_parquet(tmp_path / "tr.parquet")
    assert tr["species"].value_counts().to_dict() == {0: 40, 1: 40, 2: 40}  # stratified


def test_crash_during_write_keeps_the_old_file(tmp_path, monkeypatch):
    target = tmp_path / "a.parquet"
    write_parquet(pd.DataFrame({"x": [1.0]}), target)
    before = target.read_bytes()

    def boom(self, path, **kw):
        open(path, "wb").write(b"partial")
        raise RuntimeError("disk full")

    monkeypatch.setattr(pd.DataFrame, "to_parquet", boom)
    with pytest.raises(RuntimeError):
        write_parquet(pd.DataFrame({"x": [2.0]}), target)
    assert target.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["a.parquet"]  # no temp file left


def test_same_seed_same_bytes(chain, tmp_path, root):
    """Reproducibility: re-running synthesize with the same seed writes byte-identical parquet."""
    again = tmp_path / "again.parquet"
    synthesize.main(["--train", str(chain["train"]), "--schema", chain["schema"], "--sdgp", "marginals",
                     "--epsilon", "1", "--share", "split", "--delta", "paper", "--weights-epsilon-fraction", "0.1",
                     "--weights-delta-fraction", "0.3", "--seed", "0", "--bins", "10", "--structure",
                     "naive_bayes", "--out", str(again), "--privacy-out", str(tmp_path / "again.json")])
    assert again.read_bytes() == chain["synth"].read_bytes()


GAN_ARGS = ["--gan-hidden", "16", "--gan-noise-dim", "4", "--gan-steps", "12", "--gan-batch-size", "32",
            "--gan-lr", "0.002", "--gan-n-critic", "2", "--gan-weight-clip", "0.1", "--gan-max-grad-norm", "1.0",
            "--gan-keep-last", "3", "--gan-snapshot-every", "3", "--gan-accountant", "rdp",
            "--gan-label-epsilon-fraction", "0.05", "--gan-condition-bins", "4", "--gan-gumbel-tau", "0.2"]


def test_gan_stage_writes_models_and_weights_reuse_them(chain, tmp_path, capsys):
    budget = ["--delta", "paper", "--weights-epsilon-fraction", "0.1", "--weights-delta-fraction", "0.3"]
    synth, models = tmp_path / "g.parquet", tmp_path / "g.npz"
    base = ["--train", str(chain["train"]), "--schema", chain["schema"], "--sdgp", "dpcgan", "--epsilon", "1",
            "--share", "split", *budget, "--seed", "0", *GAN_ARGS, "--out", str(synth),
            "--privacy-out", str(tmp_path / "g.json")]
    with pytest.raises(SystemExit) as exc:  # a GAN without a place for its networks
        run(synthesize.main, base)
    assert exc.value.code == 2 and "--models-out is required" in capsys.readouterr().err and not synth.exists()
    synthesize.main([*base, "--models-out", str(models)])
    assert models.exists() and len(pd.read_parquet(synth)) == 200
    assert json.loads((tmp_path / "g.json").read_text())["epsilon"] <= 0.9 + 1e-9
    common = ["--real", str(chain["train"]), "--synth", str(synth), "--schema", chain["schema"], "--dataset", "toy",
              "--epsilon", "1", *budget, "--seed", "0", "--models", str(models)]
    for method in ("discriminator", "pgb", "drs"):
        out = tmp_path / f"{method}.parquet"
        fit_weights.main([*common, "--sdgp", "dpcgan", "--method", method, "--out", str(out),
                          "--privacy-out", str(tmp_path / f"{method}.json")])
        lr = pd.read_parquet(out).log_ratio.to_numpy()
        assert len(lr) == 200 and not np.isnan(lr).any() and np.isfinite(lr).any()
    rec = json.loads((tmp_path / "pgb.json").read_text())
    assert 0 < rec["epsilon"] <= 0.1 + 1e-9 and rec["reads_private"] == ["train"]
    assert np.exp(pd.read_parquet(tmp_path / "pgb.parquet").log_ratio).sum() == pytest.approx(200)
    with pytest.raises(SystemExit):  # discriminator weights need a GAN
        run(fit_weights.main, [*common, "--sdgp", "marginals", "--method", "discriminator", "--out",
                               str(tmp_path / "x.parquet"), "--privacy-out", str(tmp_path / "x.json")])
    assert "needs a GAN SDGP" in capsys.readouterr().err and not (tmp_path / "x.parquet").exists()
