import math

import pytest

from dpiw import DpiwError
from dpiw.privacy.spend import (
    Ledger,
    PrivacySpend,
    budget_share,
    no_spend,
    paper_delta,
    run_delta,
    split_budget,
)
from dpiw.stages.privacy_ledger import build_manifest


def rec(stage, eps, delta=0.0, **kw):
    return PrivacySpend(stage=stage, mechanism="laplace", epsilon=eps, delta=delta, reads_private=("train",), **kw)


def post_record(log_w):
    from dpiw.postprocess.psis import diagnose

    return no_spend("postprocess_weights", basis="post-processing", release_gate=diagnose(log_w).to_dict())


def test_ledger_sums_the_records():
    import numpy as np

    def records(mode, source):
        seeding = {"mode": mode, "source": source, "streams": ["a1"]}
        return (no_spend("scale", basis="public bounds", reads_private=("raw",), n_train=100, mode=mode),
                rec("synthesize", 0.9, seeding=seeding), rec("fit_weights", 0.1, 1e-4, seeding=seeding),
                post_record(np.random.default_rng(0).normal(0, 0.3, 500)))

    ledger = Ledger(records("release", "os_entropy"))
    assert ledger.epsilon == pytest.approx(1.0) and ledger.delta == pytest.approx(1e-4)
    m = build_manifest(list(records("release", "os_entropy")), epsilon=1.0, delta="paper", allow_non_dp=False,
                       run_id="r")
    assert m["spent"]["epsilon"] == pytest.approx(sum(r["epsilon"] for r in m["records"]))
    assert m["budget"]["delta"] == pytest.approx(1 / 100 - 1e-6)
    assert m["verdict"] == "within budget" and m["mode"] == "release"
    assert m["release"]["fit_to_release"] is True and m["noise_seeds"]["regenerable"] is False
    # the same spend with public seeds (benchmark), or with a release-mode record that drew from public
    # seeds, is within budget but NOT fit to release: anyone with the config regenerates the noise
    bench = build_manifest(list(records("benchmark", "public_seed")), epsilon=1.0, delta="paper",
                           allow_non_dp=False, run_id="r")
    assert bench["verdict"] == "within budget" and bench["release"]["fit_to_release"] is False
    assert "benchmark mode" in " ".join(bench["release"]["reasons"])
    mixed = build_manifest(list(records("release", "public_seed")), epsilon=1.0, delta="paper", allow_non_dp=False,
                           run_id="r")
    assert mixed["release"]["fit_to_release"] is False and mixed["noise_seeds"]["regenerable"] is True
    # a spending record that does not say how it was seeded counts as regenerable
    bare = list(records("release", "os_entropy"))
    bare[1] = rec("synthesize", 0.9)
    assert build_manifest(bare, epsilon=1.0, delta="paper", allow_non_dp=False,
                          run_id="r")["release"]["fit_to_release"] is False


def test_manifest_marks_heavy_tailed_weights_not_fit_to_release():
    """q = N(0,1), p = N(0, 9): k = 1 - 1/9 ~ 0.89 > 0.7, so the run must not be released."""
    import numpy as np

    x = np.random.default_rng(1).normal(size=5000)
    heavy = -np.log(3.0) - x**2 / 18 + x**2 / 2
    base = [no_spend("scale", basis="public bounds", reads_private=("raw",), n_train=100), rec("synthesize", 1.0)]
    m = build_manifest([*base, post_record(heavy)], epsilon=1.0, delta="paper", allow_non_dp=False, run_id="r")
    assert m["verdict"] == "within budget"  # within budget, yet not fit to release
    assert m["release"]["fit_to_release"] is False and m["release"]["pareto_k"] > 0.7
    assert "not fit to release" in m["release"]["reasons"][0]
    with pytest.raises(DpiwError, match="release gate"):
        build_manifest([*base, no_spend("postprocess_weights", basis="x")], epsilon=1.0, delta="paper",
                       allow_non_dp=False, run_id="r")


def test_a_release_the_gate_refuses_is_charged_to_its_tables_ledger(tmp_path, monkeypatch, root):
    """A release-mode run with secret noise spends its table's budget whether or not the k-hat gate lets its
    bundle out: its mechanisms ran on the private rows, and a curator trying again until one passes chooses
    among noisy releases (a trial's way past the lifetime budget). The refused run writes refused.json only,
    and its ledger entry says it was refused; a benchmark run (public seeds) is never charged."""
    import json
    import shutil

    import numpy as np
    import pandas as pd

    from dpiw.privacy.ledger import fold
    from dpiw.privacy.store import Store
    from dpiw.stages import privacy_ledger

    monkeypatch.chdir(tmp_path)
    x = np.random.default_rng(1).normal(size=5000)
    heavy = -np.log(3.0) - x**2 / 18 + x**2 / 2  # k-hat about 0.89: refused

    def records(mode, source):
        seeding = {"mode": mode, "source": source, "streams": [f"{mode}-1"]}
        return [no_spend("scale", basis="public bounds", reads_private=("raw",), n_train=400, mode=mode),
                rec("synthesize", 0.9, seeding=seeding), post_record(heavy)]

    spends = {mode: build_manifest(records(mode, src), epsilon=1.0, delta="paper", allow_non_dp=False,
                                   run_id="r")["release"] for mode, src in (("release", "os_entropy"),
                                                                            ("benchmark", "public_seed"))}
    assert spends["release"]["spends"] and not spends["release"]["fit_to_release"]
    assert not spends["benchmark"]["spends"]
    shutil.copy(root / "data/examples/clinic.csv", tmp_path / "clinic.csv")
    schema = tmp_path / "clinic.yaml"
    schema.write_text((root / "data/schemas/clinic.yaml").read_text().replace("data/examples/clinic.csv",
                                                                               str(tmp_path / "clinic.csv")))
    pd.DataFrame({"x": np.zeros(5000)}).to_parquet(tmp_path / "synth.parquet")
    pd.DataFrame({"log_weight": heavy}).to_parquet(tmp_path / "lw.parquet")
    for mode, src in (("benchmark", "public_seed"), ("release", "os_entropy")):
        paths = []
        for k, r in enumerate(records(mode, src)):
            paths.append(str(tmp_path / f"{mode}{k}.json"))
            r.write(paths[-1])
        privacy_ledger.main(["--records", *paths, "--epsilon", "1", "--delta", "auto", "--allow-non-dp", "false",
                             "--run", mode, "--out", str(tmp_path / f"{mode}.json"), "--synth",
                             str(tmp_path / "synth.parquet"), "--log-weights", str(tmp_path / "lw.parquet"),
                             "--release-out", str(tmp_path / mode), "--ledger", str(tmp_path / "ledger.sqlite"),
                             "--schema", str(schema)])
        assert sorted(p.name for p in (tmp_path / mode).iterdir()) == ["refused.json"]
    entries = Store(str(tmp_path / "ledger.sqlite")).atomic(lambda t: t.entries())
    releases = [json.loads(e.body) for e in entries if e.kind == "release"]
    assert len(releases) == 1 and releases[0]["refused"] is True and releases[0]["run"] == "release"
    state = fold(entries, entries[0].dataset)
    assert state.spent()["epsilon"] == pytest.approx(0.9) and state.summary()["refused"] == 1
    from dpiw.commands.ledger import _lines
    from dpiw.privacy.ledger import verify

    assert "1 release(s) (1 refused by the gate, charged all the same)" in "\n".join(
        _lines(verify(Store(str(tmp_path / "ledger.sqlite")))))
    manifest = json.loads((tmp_path / "release.json").read_text())
    from dpiw.commands.release import refused

    assert "its spend is charged to the table's ledger all the same (lifetime epsilon now 0.9)" in str(
        refused(manifest))


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


def test_the_auto_delta_is_well_below_one_over_n_at_every_size_and_paper_is_refused_where_it_is_zero():
    for n in (10, 178, 400, 10**4, 10**6, 10**8, 10**10):
        delta = run_delta("auto", n)
        assert 0 < delta == pytest.approx(n**-1.5) and delta * n <= n**-0.5 + 1e-15
    for n in (10**6, 10**7):
        with pytest.raises(DpiwError, match=f"paper is 1/N_D - 1e-6 = .* at N_D = {n} rows .* privacy.delta: auto"):
            run_delta("paper", n)
    with pytest.raises(DpiwError, match="privacy.delta: auto is computed from N_D"):
        run_delta("auto", 100, "add_remove")


def test_laplace_signal_check_is_its_closed_form_and_rarely_fires_on_noise_alone():
    """Under zero coefficients, ||z||^2 of p Laplace(b) draws has mean 2 p b^2 and variance 20 p b^4 (Monte Carlo
    within 3%), and the check fires in few draws; on a real effect of a few noise scales it fires."""
    import numpy as np

    from dpiw.weights.estimators import laplace_signal

    rng = np.random.default_rng(3)
    z = rng.laplace(0.0, 0.4, size=(20_000, 10))
    first = laplace_signal(z[0], 0.4)
    norm2 = (z**2).sum(axis=1)
    assert norm2.mean() == pytest.approx(first["noise_mean"], rel=0.03)
    assert norm2.std() == pytest.approx(first["noise_sd"], rel=0.03)
    fired = np.mean([laplace_signal(row, 0.4)["signal"] for row in z[:2000]])
    assert 0.005 < fired < 0.06, fired
    assert laplace_signal(z[0] + 2.0, 0.4)["signal"]


def test_weights_without_signal_are_released_as_unit_weights(tmp_path):
    """The weight method's own check says its weights are noise: the manifest says so and the bundle holds unit
    weights (do no harm), while a bundle with signal keeps its weights."""
    import numpy as np
    import pandas as pd

    from dpiw.io import write_parquet
    from dpiw.privacy.release import write_release

    def records(signal):
        seeding = {"mode": "release", "source": "os_entropy", "streams": ["a"]}
        return [no_spend("scale", basis="public bounds", reads_private=("raw",), n_train=100, mode="release"),
                rec("synthesize", 0.9, seeding=seeding),
                rec("fit_weights", 0.1, seeding=seeding, details={"signal": {"signal": signal, "rule": "r"}}),
                post_record(np.random.default_rng(0).normal(0, 0.1, 200))]

    write_parquet(pd.DataFrame({"x": np.arange(200.0)}), tmp_path / "synth.parquet")
    write_parquet(pd.DataFrame({"row": range(200), "log_weight": np.random.default_rng(1).normal(0, 0.1, 200)}),
                  tmp_path / "lw.parquet")
    for signal in (False, True):
        m = build_manifest(records(signal), epsilon=1.0, delta="paper", allow_non_dp=False, run_id="r")
        assert m["release"]["weights"]["checked"] and m["release"]["weights"]["unit"] is (not signal)
        out = tmp_path / f"bundle_{signal}"
        assert write_release(out, manifest=m, synth=tmp_path / "synth.parquet", log_weights=tmp_path / "lw.parquet")
        w = pd.read_parquet(out / "weights.parquet")["weight"].to_numpy()
        assert np.allclose(w, 1.0) is (not signal)
        from dpiw.commands.show import describe

        said = "\n".join(describe(m))
        assert ("indistinguishable from their noise" in said) is (not signal)


@pytest.mark.parametrize("signal", [True, False])
def test_weights_without_signal_are_not_refused_for_their_noisy_k_hat(signal):
    """Weights indistinguishable from their noise are released as unit weights: the noisy weights' k-hat (which
    would refuse them) does not refuse the release; weights with signal are refused by it."""
    import numpy as np

    seeding = {"mode": "release", "source": "os_entropy", "streams": ["a1"]}
    check = {"signal": signal, "fired": ["own"] if signal else [], "rule": "chi^2"}
    heavy = np.random.default_rng(0).exponential(3, 2000)  # log weights whose k-hat is 3: far above 0.7
    records = [no_spend("scale", basis="public bounds", reads_private=("raw",), n_train=100, mode="release"),
               rec("synthesize", 0.7, seeding=seeding),
               rec("fit_weights", 0.3, 1e-4, seeding=seeding, details={"signal": check}), post_record(heavy)]
    m = build_manifest(records, epsilon=1.0, delta="paper", allow_non_dp=False, run_id="r")
    assert m["release"]["weights"]["unit"] is (not signal)
    assert m["release"]["fit_to_release"] is (not signal) and m["release"]["pareto_k_ok"] is False
    assert (m["release"]["pareto_k"] is None) is (not signal)  # the released weights' k-hat: none for unit weights
    from dpiw.privacy.release import releasable

    assert releasable(m)[0] is (not signal)
    assert ("k-hat" in " ".join(m["release"]["reasons"])) and (
        ("unit weights (no k-hat to check)" in m["release"]["reasons"][0]) is (not signal))


def test_a_refused_release_is_an_error_naming_the_reasons():
    from dpiw.commands.release import refused

    err = refused({"release": {"reasons": ["k-hat 0.764 > 0.697: importance-sampling estimates are unreliable"]}})
    assert isinstance(err, DpiwError) and str(err).startswith("NOT fit to release (k-hat 0.764 > 0.697")
    assert "nothing is published and nothing is charged" in str(err)
