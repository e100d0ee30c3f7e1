"""Independent noise for every mechanism invocation: two artifacts that could be released side by side
never share a noise draw, so no difference of two releases cancels the noise (dpiw.privacy.seeding).

The attacks are the ones a hostile reader of two bundles would run: the epsilon 1 and epsilon 6 weights
of one cell (BetaNoised with a fixed lambda: log w = (beta_hat + rho_e Z_e)^T x~ + c, so with Z_1 = Z_6
the combination (rho_6 bar1 - rho_1 bar6) / (rho_6 - rho_1) is exactly beta_hat), and the full-share and
split-share marginals of one cell (the synthetic data of a `none` and of a `beta_*` bundle).
"""

import json

import numpy as np
import pandas as pd
import pytest

from dpiw import DpiwError
from dpiw.data import load_schema
from dpiw.data.encode import encode
from dpiw.privacy.seeding import SECRET_ENV, Noise
from dpiw.stages import fit_weights, scale, synthesize

TOY = "data/schemas/toy.yaml"


@pytest.fixture(scope="module")
def toy_split(tmp_path_factory, root):
    d = tmp_path_factory.mktemp("toy")
    scale.main(["--schema", str(root / TOY), "--dataset", "toy", "--seed", "0", "--test-fraction", "0.2",
                "--bounds", "schema", "--n-rows", "2000", "--data-seed", "3", "--train-out", str(d / "train.parquet"),
                "--test-out", str(d / "test.parquet"), "--public-out", str(d / "public.parquet"),
                "--privacy-out", str(d / "scale.json")])
    synthesize.main(["--train", str(d / "train.parquet"), "--schema", str(root / TOY), "--sdgp", "uniform",
                     "--epsilon", "1", "--delta", "paper", "--share", "full", "--seed", "0",
                     "--out", str(d / "synth.parquet"), "--privacy-out", str(d / "synth.json")])
    return d


def _weights(d, root, method, eps, tag, extra=()):
    out = d / f"{tag}.parquet"
    fit_weights.main(["--real", str(d / "train.parquet"), "--synth", str(d / "synth.parquet"), "--schema",
                      str(root / TOY), "--method", method, "--dataset", "toy", "--sdgp", "uniform", "--epsilon",
                      str(eps), "--weights-epsilon-fraction", "0.1", "--weights-delta-fraction", "0.3",
                      "--lambda", "0.05", "--sensitivity-n", "private", "--seed", "0", "--out", str(out),
                      "--privacy-out", str(d / f"{tag}.json"), *extra])
    return pd.read_parquet(out)["log_ratio"].to_numpy(), json.loads((d / f"{tag}.json").read_text())


def _coefficients(d, root, log_ratio):
    """What an attacker reads off a released weight file: the linear map x~ -> log w (least squares)."""
    schema = load_schema(root / TOY)
    X = np.c_[encode(pd.read_parquet(d / "synth.parquet"), schema), np.ones(len(log_ratio))]
    coef, *_ = np.linalg.lstsq(X, log_ratio, rcond=None)
    assert np.allclose(X @ coef, log_ratio, atol=1e-9)  # the weights are exactly log-linear
    return coef


def test_epsilon_1_and_6_weights_of_one_cell_draw_independent_noise(toy_split, root):
    d = toy_split
    # what the attack wants: the noiseless fit with BetaNoised's lambda (logreg has its own C, so fit directly)
    from dpiw.weights.estimators import LogReg

    schema = load_schema(root / TOY)
    real, synth = (encode(pd.read_parquet(d / f), schema) for f in ("train.parquet", "synth.parquet"))
    beta_hat = _coefficients(d, root, LogReg(lam=0.05).fit(real, synth, epsilon=0, delta=0, rng=None).log_ratio(synth))
    bars, rhos, streams = {}, {}, {}
    for eps in (1, 6):
        lr, record = _weights(d, root, "beta_noised", eps, f"noised{eps}")
        bars[eps], rhos[eps] = _coefficients(d, root, lr), record["noise"]["scale"]
        streams[eps] = record["seeding"]["streams"]
        assert record["seeding"]["source"] == "public_seed" and record["seeding"]["mode"] == "benchmark"
    assert rhos[1] == pytest.approx(6 * rhos[6])
    z1, z6 = (bars[1] - beta_hat) / rhos[1], (bars[6] - beta_hat) / rhos[6]
    # standardised Laplace draws: of unit scale, and different (equal draws were the bug)
    assert 0.1 < np.abs(z1).mean() < 5 and 0.1 < np.abs(z6).mean() < 5
    assert np.abs(z1 - z6).max() > 0.5 and streams[1] != streams[6]
    attack = (rhos[6] * bars[1] - rhos[1] * bars[6]) / (rhos[6] - rhos[1])
    # with shared noise the attack returns beta_hat to 1e-12; with independent noise it is off by the noise
    assert np.abs(attack - beta_hat).max() > 0.2 * rhos[6]
    # and the same invocation twice gives the same bytes (benchmark mode)
    again, _ = _weights(d, root, "beta_noised", 1, "again")
    assert np.array_equal(again, _weights(d, root, "beta_noised", 1, "noised1b")[0])


def test_beta_noised_and_beta_debiased_of_one_cell_draw_independent_noise(toy_split, root):
    d = toy_split
    _, noised = _weights(d, root, "beta_noised", 1, "n")
    _, debiased = _weights(d, root, "beta_debiased", 1, "d")
    assert set(noised["seeding"]["streams"]).isdisjoint(debiased["seeding"]["streams"])


def _fitted_marginals(monkeypatch, d, root, share):
    """Run the synthesize stage for the marginals SDGP and keep the fitted generator (its noisy counts)."""
    made = []

    def keep(name, **params):
        gen = make(name, **params)
        made.append(gen)
        return gen

    make = synthesize.make_sdgp
    monkeypatch.setattr(synthesize, "make_sdgp", keep)
    synthesize.main(["--train", str(d / "train.parquet"), "--schema", str(root / TOY), "--sdgp", "marginals",
                     "--epsilon", "1", "--delta", "paper", "--share", share, "--weights-epsilon-fraction", "0.1",
                     "--weights-delta-fraction", "0.3", "--seed", "0", "--bins", "8", "--structure", "independent",
                     "--out", str(d / f"m_{share}.parquet"), "--privacy-out", str(d / f"m_{share}.json")])
    return made[0], json.loads((d / f"m_{share}.json").read_text())


def test_full_and_split_share_marginals_of_one_cell_draw_independent_noise(toy_split, root, monkeypatch):
    """The synthetic data of a `none` bundle (full share) and of a `beta_*` bundle (split share): with one
    shared Laplace draw Z, (scale_s c_f - scale_f c_s) / (scale_s - scale_f) would give the exact counts."""
    d = toy_split
    full, rec_f = _fitted_marginals(monkeypatch, d, root, "full")
    split, rec_s = _fitted_marginals(monkeypatch, d, root, "split")
    sf, ss = rec_f["noise"]["scale"], rec_s["noise"]["scale"]
    assert ss == pytest.approx(sf / 0.9)
    train = pd.read_parquet(d / "train.parquet")
    for spec in full.noisy_counts_:
        j = spec[0]
        true = np.bincount(np.minimum((train.iloc[:, j].to_numpy() * 8).astype(int), 7), minlength=8)
        zf, zs = (full.noisy_counts_[spec] - true) / sf, (split.noisy_counts_[spec] - true) / ss
        assert np.abs(zf - zs).max() > 0.5
        attack = (ss * full.noisy_counts_[spec] - sf * split.noisy_counts_[spec]) / (ss - sf)
        assert np.abs(attack - true).max() > 1.0


def test_new_data_never_meets_old_noise(toy_split, root, tmp_path):
    """Editing the private rows changes the stream: two releases of D and D' never share a draw."""
    d = toy_split
    edited = pd.read_parquet(d / "train.parquet")
    edited.iloc[0, 0] = 0.123
    edited.to_parquet(tmp_path / "train.parquet", index=False)
    for f in ("synth.parquet",):
        (tmp_path / f).write_bytes((d / f).read_bytes())
    _, a = _weights(d, root, "beta_noised", 1, "orig")
    _, b = _weights(tmp_path, root, "beta_noised", 1, "edited")
    assert a["seeding"]["streams"] != b["seeding"]["streams"]


def test_the_same_rows_from_another_file_meet_the_same_noise_but_other_columns_do_not(toy_split, root, tmp_path):
    """A schema keys the noise by what it says of the columns, not by where its file's rows were read from: the
    same train split released from a CSV or a parquet folder, anywhere, draws the same streams (the second bundle is
    the first one's bytes: the ledger counts it once); a schema that changes a column's bounds draws others."""
    import yaml

    d = toy_split
    toy = yaml.safe_load((root / TOY).read_text())

    def streams(tag, **change):
        schema = {**toy, **change}
        path = tmp_path / f"{tag}.yaml"
        path.write_text(yaml.safe_dump(schema, sort_keys=False))
        out = tmp_path / f"{tag}.json"
        fit_weights.main(["--real", str(d / "train.parquet"), "--synth", str(d / "synth.parquet"), "--schema",
                          str(path), "--method", "beta_noised", "--dataset", "toy", "--sdgp", "uniform",
                          "--epsilon", "1", "--weights-epsilon-fraction", "0.1", "--weights-delta-fraction", "0.3",
                          "--lambda", "0.05", "--sensitivity-n", "private", "--seed", "0",
                          "--out", str(tmp_path / f"{tag}.parquet"), "--privacy-out", str(out)])
        return json.loads(out.read_text())["seeding"]["streams"]

    csv = streams("csv", source={"kind": "file", "path": "/srv/a/toy.csv"})
    assert streams("folder", source={"kind": "file", "path": "/data/b/toy/", "header": True}) == csv
    wider = [{**c, "upper": c["upper"] + 1} if c.get("type") == "numeric" else c for c in toy["columns"]]
    assert streams("wider", source={"kind": "file", "path": "/srv/a/toy.csv"}, columns=wider) != csv
    # a schema that is not a file's (a shipped dataset) is keyed by its bytes, as before
    assert streams("shipped") != csv


def test_release_noise_sources(monkeypatch):
    ident = {"stage": "x", "epsilon": 1.0}
    monkeypatch.delenv(SECRET_ENV, raising=False)
    public = Noise("benchmark").rng("p", ident).standard_normal(4)
    assert np.array_equal(public, Noise("benchmark").rng("p", ident).standard_normal(4))
    # OS entropy: new noise every invocation
    a, b = Noise("release").rng("p", ident).standard_normal(4), Noise("release").rng("p", ident).standard_normal(4)
    assert not np.allclose(a, b) and not np.allclose(a, public)
    # the secret key: refused when missing, reproducible with it, different with another key
    with pytest.raises(DpiwError, match=SECRET_ENV):
        Noise("release", "secret_key")
    monkeypatch.setenv(SECRET_ENV, "curator-only")
    keyed = Noise("release", "secret_key")
    k1 = keyed.rng("p", ident).standard_normal(4)
    assert np.array_equal(k1, Noise("release", "secret_key").rng("p", ident).standard_normal(4))
    assert not np.allclose(k1, public)
    assert keyed.record()["source"] == "secret_key" and len(keyed.record()["streams"]) == 1
    # the record publishes a stream id (HMAC with another label), never the seed material
    benchmark = Noise("benchmark")
    benchmark.rng("p", ident)
    assert len(keyed.record()["streams"][0]) == 20 and len(benchmark.record()["streams"]) == 1
    assert keyed.record()["streams"] != benchmark.record()["streams"]
    monkeypatch.setenv(SECRET_ENV, "another")
    assert not np.allclose(k1, Noise("release", "secret_key").rng("p", ident).standard_normal(4))


def test_a_secret_key_draws_other_noise_under_other_code(monkeypatch, tmp_path):
    """Same key, identity and purpose under other code (another dpiw, another numpy or mbi): other noise and other
    stream ids, so other code never measures other queries with the same noise; benchmark seeds stay as they were.
    The record says what the keyed streams went into."""
    from dpiw.privacy import seeding

    ident = {"stage": "x", "epsilon": 1.0}
    monkeypatch.setenv(SECRET_ENV, "curator-only")
    here = Noise("release", "secret_key")
    a = here.rng("p", ident).standard_normal(4)
    public = Noise("benchmark").rng("p", ident).standard_normal(4)
    assert seeding.code_digest() == seeding.code_digest() and len(seeding.code_digest()) == 64
    monkeypatch.setattr(seeding, "_CODE", ["another dpiw"])
    there = Noise("release", "secret_key")
    assert not np.allclose(a, there.rng("p", ident).standard_normal(4))
    assert here.record()["streams"] != there.record()["streams"]
    assert np.array_equal(public, Noise("benchmark").rng("p", ident).standard_normal(4))
    out = tmp_path / "rows.parquet"
    out.write_bytes(b"rows")
    before = here.record(published=[out, None])["published"]
    assert before == seeding.published_digest([out])
    out.write_bytes(b"other rows")
    assert here.record(published=[out])["published"] != before
    benchmark = Noise("benchmark")
    benchmark.rng("p", ident)
    assert "published" not in benchmark.record(published=[out])  # only keyed streams can meet again
