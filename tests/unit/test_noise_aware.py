"""Noise-aware intervals (dpiw.analysis.noise_aware): the bootstrap from a bundle's published measurements must see the
spread that the mechanisms' noise gives an estimate from one release to the next, on the same private rows."""

import numpy as np
import pandas as pd
import pytest

from dpiw import DpiwError
from dpiw.analysis import NOISE_AWARE, SAMPLING_ONLY, Bundle
from dpiw.data.schema import parse_schema
from dpiw.scale import decode_frame
from dpiw.sdgp.mst import MST
from dpiw.weights.marginal_match import measurements_dict

SCHEMA = parse_schema({"name": "t", "task": "classification", "target": "y", "columns": [
    {"name": "a", "type": "categorical", "categories": ["p", "q", "r"]},
    {"name": "x", "type": "numeric", "lower": 0, "upper": 10},
    {"name": "y", "type": "categorical", "categories": ["no", "yes"]}]})


@pytest.fixture(scope="module")
def private_rows():
    rng = np.random.default_rng(3)
    a = rng.choice(3, 600, p=[0.5, 0.3, 0.2])
    x = np.clip(rng.normal(0.3 + 0.2 * a, 0.15), 0, 0.999)
    y = (rng.uniform(size=600) < 0.2 + 0.3 * (a == 2)).astype(int)
    return pd.DataFrame({"a": a, "x": x, "y": y})


def release(rows, seed: int, eps: float = 0.3) -> Bundle:
    rng = np.random.default_rng(seed)
    gen = MST(bins=4, iters=200).fit(rows, SCHEMA, epsilon=eps, delta=1e-5, rng=rng)
    synth = gen.sample(len(rows), rng=rng)
    measured = {"generator": {**measurements_dict(gen), "total": float(len(rows)), "iters": gen.iters}}
    return Bundle(decode_frame(synth, SCHEMA), np.ones(len(synth)), {"records": []}, synth, SCHEMA, measured)


def test_the_bootstrap_sees_the_spread_of_the_noise_across_releases(private_rows):
    """Same private rows, 40 releases with fresh noise: the estimates' sd over releases against the bootstrap's
    sd (noise and synthetic sampling; the private rows' sampling left out, since D is fixed here), averaged over
    8 releases. Measured: 1.28, 0.79 and 0.77 of the spread; the subgroup's is low because the releases differ in
    their tree too (whether the edge (a, y) is measured), which the bootstrap keeps fixed."""
    bundles = [release(private_rows, seed) for seed in range(40)]
    for column, label, where in (("y", "yes", None), ("y", "yes", {"a": "r"}), ("x", None, None)):
        def estimate(b, interval, column=column, label=label, where=where):
            return b.mean(column, where, interval=interval) if label is None else b.rate(column, label, where,
                                                                                          interval=interval)

        spread = np.std([estimate(b, "sampling").value for b in bundles], ddof=1)
        boot = [estimate(b, "noise") for b in bundles[:8]]
        said = np.mean([np.sqrt(e.parts["noise"] + e.parts["synthetic_rows"]) for e in boot])
        assert 0.6 < said / spread < 1.6, (column, where, said, spread)
        assert all(e.covers == NOISE_AWARE and e.se > estimate(bundles[0], "sampling").se / 2 for e in boot)


def test_intervals_say_what_they_cover_and_refuse_what_they_cannot(private_rows):
    b = release(private_rows, 0)
    auto, sampling = b.rate("y", "yes"), b.rate("y", "yes", interval="sampling")
    assert auto.covers == NOISE_AWARE and sampling.covers == SAMPLING_ONLY and sampling.parts is None
    assert auto.value == sampling.value and auto.se > sampling.se
    assert set(auto.parts) == {"private_rows", "noise", "synthetic_rows"}
    assert auto.se == pytest.approx(np.sqrt(sum(auto.parts.values())))
    # the private rows' part is var / (N_D share): the subgroup's share of the rows enters
    sub = b.rate("y", "yes", {"a": "r"})
    share = (b.data.a == "r").mean()
    var = sub.value * (1 - sub.value)
    assert sub.parts["private_rows"] == pytest.approx(var / (600 * share), rel=1e-9)
    # a function of the rows is a subgroup too; a boolean mask gives the sampling interval, or is refused
    assert b.rate("y", "yes", lambda d: d.a == "r").value == sub.value
    mask = (b.data.a == "r").to_numpy()
    with pytest.warns(UserWarning, match=r"a boolean mask gives the interval of the synthetic rows' sampling alone, "
                                         r"without the DP noise.*where=lambda d: d.sex == 'Male'"):
        assert b.rate("y", "yes", mask).covers == SAMPLING_ONLY
    # the error says what the released rows hold of the column the subgroup reads
    held = rf"the released rows hold 'x' {b.data.x.min():,.4g} to {b.data.x.max():,.4g} \("
    with pytest.raises(DpiwError, match=r"no synthetic row is in this subgroup \(the release drew none there.*"
                                        r"b.bins\(column\).*" + held):
        b.rate("y", "yes", lambda d: d.x > 100)
    with pytest.raises(DpiwError, match=held):
        b.quantile("x", 0.5, lambda d: d.x > 100)
    with pytest.raises(DpiwError, match="a boolean mask cannot be applied"):
        b.rate("y", "yes", mask, interval="noise")
    with pytest.raises(DpiwError, match="no column 'z'"):
        b.rate("y", "yes", {"z": 1})
    plain = Bundle(b.data, b.weights, {}, b.scaled, SCHEMA, None)
    assert plain.rate("y", "yes").covers == SAMPLING_ONLY
    with pytest.raises(DpiwError, match="publishes its generator's measurements"):
        plain.rate("y", "yes", interval="noise")


CATEGORICAL = parse_schema({"name": "c", "task": "classification", "target": "y", "columns": [
    {"name": "a", "type": "categorical", "categories": ["p", "q", "r", "s"]},
    {"name": "b", "type": "categorical", "categories": ["u", "v", "w"]},
    {"name": "y", "type": "categorical", "categories": ["no", "yes"]}]})


def test_the_weights_shortfall_is_seen_and_the_interval_reaches_past_it():
    """y depends on a and b, b on a; MST's tree joins a-b and a-y, so its rows miss the direct b-y relation and
    P(y = yes | b = w) comes out high; marginal-matching weights (the b-y marginal among their measurements)
    correct part of it and stop short within the noise of their measurements, on the generator's side. Six
    releases of the same 3,000 rows (the noise-aware parts left aside: D is fixed here): the bootstrap of the
    weights finds the shortfall in every release, with the sign of the error, and its mean is 0.5-1.5 times the
    mean error (measured: 0.82; 0.54 before the shortfall was scaled by 1 / (1 - s)); the interval reaches the
    corrected estimate; coefficients carry the same correction."""
    from sklearn.linear_model import LogisticRegression

    from dpiw.weights.marginal_match import MarginalMatch

    rng = np.random.default_rng(3)
    a = rng.choice(4, 3000)
    b = np.where(rng.uniform(size=3000) < 0.6, np.minimum(a, 2), rng.choice(3, 3000))
    y = (rng.uniform(size=3000) < 1 / (1 + np.exp(-(-2 + 1.5 * a - 1.0 * b)))).astype(int)
    rows = pd.DataFrame({"a": a, "b": b, "y": y})
    truth = y[b == 2].mean()
    errors, biases = [], []
    for seed in range(6):
        r = np.random.default_rng(seed)
        gen = MST(iters=200).fit(rows, CATEGORICAL, epsilon=0.7, delta=1e-6, rng=r)
        assert sorted(gen.tree_) == [(0, 1), (0, 2)]
        synth = gen.sample(3000, rng=r)
        mm = MarginalMatch(degree=2).measure(rows, CATEGORICAL, epsilon=0.3, delta=1e-6, rng=r)
        mm.reweight(synth, extra=gen.measurements_)
        w = np.exp(mm.log_ratio_ - mm.log_ratio_.max())
        measured = {"generator": {**measurements_dict(gen), "total": 3000.0, "iters": gen.iters},
                    "weights": measurements_dict(mm)}
        bundle = Bundle(decode_frame(synth, CATEGORICAL), w, {"records": [{"stage": "fit_weights",
                                                                           "details": {"reused": {}}}]},
                        synth, CATEGORICAL, measured)
        est = bundle.rate("y", "yes", {"b": "w"})
        unweighted = np.mean(bundle.data.y[bundle.data.b == "w"] == "yes")
        assert unweighted - truth > est.value - truth > 0  # the weights correct part of the generator's error
        assert est.bias > 0
        lo, hi = est.ci()
        z = 1.959963984540054
        # where the rows fall short of the weights' own b-y marginal beyond the noise of their difference (the
        # shortfall this test is about), the interval reaches over that marginal's reading too
        reading = est.measured or (est.value, 0.0)
        assert lo == pytest.approx(min(est.value - est.bias - z * est.se, reading[0] - z * reading[1]))
        assert hi == pytest.approx(max(est.value + z * est.se, reading[0] + z * reading[1]))
        assert lo <= truth <= hi
        errors.append(est.value - truth)
        biases.append(est.bias)
    assert 0.5 < np.mean(biases) / np.mean(errors) < 1.5, (biases, errors)
    fit = bundle.fit(LogisticRegression(), ["b"], "y").table
    z = 1.959963984540054
    assert fit.bias.abs().max() > 0
    corrected = fit.value - fit.bias
    lo, hi = np.minimum(fit.value, corrected) - z * fit.se, np.maximum(fit.value, corrected) + z * fit.se
    # and, where the rows fall short of a published marginal (here: y within b), over the refit on the rows moved to
    # its reading, which lies within measured_reach of the estimate
    reach = fit.measured_reach if "measured_reach" in fit else 0.0
    assert (fit.lo <= lo + 1e-12).all() and (fit.hi >= hi - 1e-12).all()
    assert (fit.lo >= np.minimum(lo, fit.value - reach - z * fit.se) - 1e-12).all()
    assert (fit.hi <= np.maximum(hi, fit.value + reach + z * fit.se) + 1e-12).all()


def test_the_bootstrap_writes_nothing_in_the_analysts_working_directory(private_rows, tmp_path, monkeypatch):
    """The replicates and JAX's compiled programs go to dpiw's cache folder (DPIW_CACHE here), not to the
    folder the analyst works in."""
    work, cache = tmp_path / "work", tmp_path / "cache"
    work.mkdir()
    monkeypatch.setenv("DPIW_JAX_CACHE", str(tmp_path / "workflow-jax"))  # the release: the workflow's side
    b = release(private_rows, seed=11)
    monkeypatch.delenv("DPIW_JAX_CACHE")
    monkeypatch.chdir(work)
    monkeypatch.setenv("DPIW_CACHE", str(cache))
    b.bootstrap(replicates=3)  # a small bootstrap: what it writes, not its spread
    est = b.mean("x", {"a": "q"})
    assert est.covers == NOISE_AWARE
    assert list(work.iterdir()) == []
    assert any((cache / "noise_aware").iterdir())
    import jax  # where this process's compiled programs go (its cache may already be set up, so not written)

    assert jax.config.jax_compilation_cache_dir == str(cache / "jax")


NUMBERED = parse_schema({"name": "n", "task": "regression", "target": "x", "columns": [
    {"name": "town", "type": "categorical", "categories": [1, 2, 3], "missing": "category"},
    {"name": "size", "type": "categorical", "categories": [1, 2]},
    {"name": "x", "type": "numeric", "lower": 0, "upper": 10}]})


def test_a_second_process_reads_the_cached_replicates_with_their_categories(tmp_path, monkeypatch):
    """Categories declared as numbers (town 1-3, beside `missing: category`'s "missing") come back from the cache
    file as the same categories: parquet gave whole-number labels back as plain integers, so a fit in a second
    process read town as one number (4 coefficients where the replicates have 6), and could not write numbers
    beside "missing" at all."""
    monkeypatch.setenv("DPIW_CACHE", str(tmp_path / "cache"))
    rng = np.random.default_rng(5)
    rows = pd.DataFrame({"town": rng.choice(4, 500, p=[0.4, 0.3, 0.2, 0.1]), "size": rng.integers(0, 2, 500)})
    rows["x"] = np.clip(rng.normal(0.3 + 0.1 * rows.town, 0.1), 0, 1)
    gen = MST(bins=4, iters=100).fit(rows, NUMBERED, epsilon=1.0, delta=1e-5, rng=rng)
    synth = gen.sample(500, rng=rng)
    measured = {"generator": {**measurements_dict(gen), "total": 500.0, "iters": gen.iters}}

    def bundle():
        return Bundle(decode_frame(synth, NUMBERED), np.ones(500), {"records": []}, synth, NUMBERED, measured)

    first = bundle().bootstrap(replicates=2)
    made = first.made()
    assert first.cache_path().is_file()
    again = bundle().bootstrap(replicates=2)
    assert again._load(again.cache_path()) is not None  # read from the file, not made again
    for a, b in zip(made, again.made(), strict=True):
        pd.testing.assert_frame_equal(a.data, b.data)
        assert list(b.data.town.cat.categories) == [1, 2, 3, "missing"]
    from sklearn.linear_model import LinearRegression

    fit = bundle().fit(LinearRegression(), ["town", "size"], "x")
    assert list(fit.table.index) == ["(intercept)", "town=2", "town=3", "town=missing", "size=2"]


def test_the_replicate_cache_keeps_the_most_recently_used_within_its_size(tmp_path, monkeypatch):
    """DPIW_CACHE_MB: past it the files used longest ago go (a read touches its file), never the one just kept."""
    import os

    from dpiw.analysis.noise_aware import trim_cache

    monkeypatch.setenv("DPIW_CACHE_MB", "0.25")  # 250,000 bytes: two of the 100 kB files below
    files = [tmp_path / f"{k}.parquet" for k in range(4)]
    for age, f in enumerate(files):
        f.write_bytes(b"x" * 100_000)
        os.utime(f, (1e9 - age, 1e9 - age))  # 0 newest, 3 oldest
    os.utime(files[3], (2e9, 2e9))  # read again just now
    gone = trim_cache(tmp_path, keep=files[2])
    assert sorted(gone) == [files[1]] and {f.name for f in tmp_path.iterdir()} == {"0.parquet", "2.parquet",
                                                                                    "3.parquet"}


def test_the_weights_refits_run_on_fixed_chains_whatever_the_threads_timing():
    """Refit k starts from refit k - CHAINS's dual points and tau (the same chain), never from whichever refit
    happened to end last; restart() makes the next refits start cold; an error in a refit reaches wait()."""
    import time

    from dpiw.analysis.noise_aware import Chains

    class Refit:
        def __init__(self, k, pause):
            self.k, self.pause = k, pause

        def reweight(self, rows, extra=(), warm=None, start_tau=None, tau=None):
            time.sleep(self.pause)  # chain 0's refits are slow: the chains end out of order
            if self.k == 99:
                raise DpiwError("refit 99 failed")
            self.started_from, self.duals_, self.tau_ = (warm or {}).get("k"), {"k": self.k}, float(self.k)
            self.log_ratio_ = np.full(3, float(self.k))

    refits = [Refit(k, 0.02 if k % 2 == 0 else 0.0) for k in range(7)]
    into = [None] * 7
    with Chains(2) as chains:
        for k, r in enumerate(refits):
            chains.reweight(k, r, None, (), into)
        assert chains.wait(into) is into
        assert [r.started_from for r in refits] == [None, None, 0, 1, 2, 3, 4]
        assert all(np.array_equal(w, np.ones(3)) for w in into)  # exp(u - max u)
        chains.restart()
        late = Refit(7, 0.0)
        chains.reweight(0, late, None, (), into)
        chains.reweight(1, Refit(99, 0.0), None, (), into)
        with pytest.raises(DpiwError, match="refit 99"):
            chains.wait(into)
        assert late.started_from is None


def test_the_noise_replicates_refit_the_weights_at_the_releases_tau(monkeypatch):
    """A replicate's measurements carry the release's noise and fresh noise of their own, so its discrepancy
    principle finds no tau within them and takes the smallest (on a real table's release at tau 0.1, every one of
    30 replicates took 0.01, log weights spanning e^28), weights that chase the noise. Each noise replicate
    refits at the tau the release's record names; where the record says the release's weights were 1 (tau None),
    so are the replicates'; a record without a tau searches as the release did."""
    from dpiw.analysis import noise_aware
    from dpiw.weights.marginal_match import MarginalMatch

    monkeypatch.setenv("DPIW_CACHE", "off")
    rng = np.random.default_rng(3)
    a = rng.choice(4, 3000)
    b = np.where(rng.uniform(size=3000) < 0.6, np.minimum(a, 2), rng.choice(3, 3000))
    y = (rng.uniform(size=3000) < 1 / (1 + np.exp(-(-2 + 1.5 * a - 1.0 * b)))).astype(int)
    rows = pd.DataFrame({"a": a, "b": b, "y": y})
    r = np.random.default_rng(0)
    gen = MST(iters=200).fit(rows, CATEGORICAL, epsilon=0.7, delta=1e-6, rng=r)
    synth = gen.sample(3000, rng=r)
    mm = MarginalMatch(degree=2).measure(rows, CATEGORICAL, epsilon=0.3, delta=1e-6, rng=r)
    mm.reweight(synth, extra=gen.measurements_)
    measured = {"generator": {**measurements_dict(gen), "total": 3000.0, "iters": gen.iters},
                "weights": measurements_dict(mm)}
    taus = []
    real_reweight = MarginalMatch.reweight

    def reweight(self, synth, extra=(), warm=None, start_tau=None, tau=None):
        taus.append(tau)
        return real_reweight(self, synth, extra, warm, start_tau, tau)

    monkeypatch.setattr(MarginalMatch, "reweight", reweight)
    released = mm.privacy_.details["tau"]
    for details, want in (({"tau": released}, released), ({"tau": None}, "ones"), ({}, None)):
        taus.clear()
        bundle = Bundle(decode_frame(synth, CATEGORICAL), np.exp(mm.log_ratio_),
                        {"records": [{"stage": "fit_weights", "details": {"reused": {}, **details}}]}, synth,
                        CATEGORICAL, measured)
        made = bundle.bootstrap().made()
        bias = 1 + noise_aware.BIAS_REPLICATES  # the weights' bias set searches as the release did
        if want == "ones":
            assert all(np.array_equal(rep.weights, np.ones(len(rep.weights))) for rep in made)
            assert taus == [None] * bias
        else:
            assert taus.count(want) == noise_aware.REPLICATES + (bias if want is None else 0), taus
            assert len(taus) == noise_aware.REPLICATES + bias
            assert len({float(np.ptp(rep.weights)) for rep in made}) > 1  # weights refitted, not copied


def test_compiled_code_is_kept_in_the_folder_dpiw_cache_names(tmp_path):
    """DPIW_CACHE names dpiw's cache folder for numba's compiled code too (a trial that set it found that code under
    ~/.cache); NUMBA_CACHE_DIR, when set, wins; "off" (no replicate cache) keeps the user's folder."""
    import os
    import subprocess
    import sys

    def folder(**env):
        base = {k: v for k, v in os.environ.items() if k not in ("DPIW_CACHE", "NUMBA_CACHE_DIR")}
        out = subprocess.run([sys.executable, "-c", "import dpiw.compiled, numba; print(numba.config.CACHE_DIR)"],
                             env={**base, **env}, capture_output=True, text=True, check=True)
        return out.stdout.strip()

    assert folder(DPIW_CACHE=str(tmp_path)) == str(tmp_path / "numba")
    assert folder(DPIW_CACHE=str(tmp_path), NUMBA_CACHE_DIR=str(tmp_path / "mine")) == str(tmp_path / "mine")
    assert folder(DPIW_CACHE="off").endswith(os.path.join("dpiw", "numba"))


def test_the_bootstraps_progress_off_a_terminal_says_every_ten_replicates(capsys, monkeypatch):
    """In a notebook or a log (standard error no terminal) the bootstrap's progress comes every ten replicates and at
    the end, each on its own line; on a terminal one line updates in place."""
    import sys

    from dpiw.analysis.noise_aware import _progress

    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    for done in range(31):
        _progress(done, 30, None)
    lines = capsys.readouterr().err.splitlines()
    assert [line.split("replicate ")[1].split(" ")[0] for line in lines] == ["0/30", "10/30", "20/30", "30/30"]
