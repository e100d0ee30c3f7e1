"""Bad input, one test each: one clear line naming the field or the fix, exit code 2, no artifact.

(More cases live beside the feature they guard: tests/stages/test_datasets.py for user data, tests/unit/
test_config.py for params fields in-process, tests/pipeline for params.yaml through Snakemake and DVC.)
"""

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import yaml

from dpiw.io import write_parquet

SCHEMA = "data/schemas/toy.yaml"


def cli(stage: str, args: list[str], cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", f"dpiw.stages.{stage}", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def assert_refused(proc, message: str, out_dir):
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    err = proc.stderr.strip()
    assert err.count("\n") == 0 and "Traceback" not in err, err  # one line
    assert message in err, err
    assert not any(p for p in out_dir.rglob("*") if p.is_file()), sorted(out_dir.rglob("*"))


@pytest.fixture(scope="module")
def data(tmp_path_factory, root):
    """A scaled toy split and a synthetic set, made once."""
    d = tmp_path_factory.mktemp("data")
    sch = str(root / SCHEMA)
    for stage, args in (
        ("scale", ["--schema", sch, "--dataset", "toy", "--seed", "0", "--test-fraction", "0.2", "--bounds",
                   "schema", "--n-rows", "200", "--train-out", d / "train.parquet", "--test-out", d / "test.parquet",
                   "--privacy-out", d / "scale.json"]),
        ("synthesize", ["--train", d / "train.parquet", "--schema", sch, "--sdgp", "marginals", "--epsilon", "1",
                        "--share", "full", "--delta", "paper", "--seed", "0", "--out", d / "synth.parquet",
                        "--privacy-out", d / "synth.json"]),
        ("fit_weights", ["--real", d / "train.parquet", "--synth", d / "synth.parquet", "--schema", sch, "--method",
                         "none", "--dataset", "toy", "--sdgp", "marginals", "--epsilon", "1", "--seed", "0",
                         "--out", d / "lr.parquet", "--privacy-out", d / "w.json"]),
    ):
        proc = cli(stage, args, root)
        assert proc.returncode == 0, proc.stderr
    return d


@pytest.fixture
def out(tmp_path):
    o = tmp_path / "out"
    o.mkdir()
    return o


# -- params.yaml, through the validate_params stage (what `dvc repro` runs first) -------------------------
PARAMS = {
    "epsilon_not_a_number": (lambda p: p["grid"].update(epsilons=["one"]), "grid.epsilons.0 = 'one'"),
    "negative_epsilon": (lambda p: p["grid"].update(epsilons=[-1]), "grid.epsilons.0 = -1"),
    "zero_epsilon": (lambda p: p["grid"].update(epsilons=[0]), "grid.epsilons.0 = 0"),
    "unknown_weight_method": (lambda p: p["grid"].update(weights=["importance"]), "grid.weights.0 = 'importance'"),
    "unknown_sdgp": (lambda p: p["grid"].update(sdgps=["vae"]), "grid.sdgps.0 = 'vae'"),
    "unknown_dataset": (lambda p: p["grid"].update(datasets=["mnist"]), "unknown dataset 'mnist'"),
    "delta_not_below_one": (lambda p: p["privacy"].update(delta=1.5), "privacy.delta = 1.5"),
    "weights_fraction_zero": (lambda p: p["privacy"].update(weights_epsilon_fraction=0),
                              "privacy.weights_epsilon_fraction = 0"),
    "seed_not_an_integer": (lambda p: p["grid"].update(seeds=[0.5]), "grid.seeds.0 = 0.5"),
    "gan_steps_negative": (lambda p: p["sdgp"]["gan"].update(steps=-5), "sdgp.gan.steps = -5"),
}


@pytest.mark.parametrize("case", sorted(PARAMS))
def test_bad_params(case, root, tmp_path, out):
    edit, message = PARAMS[case]
    params = yaml.safe_load((root / "params.yaml").read_text())
    edit(params)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    proc = cli("validate_params", ["--params", tmp_path / "params.yaml", "--schema",
                                   root / "workflow/schemas/params.schema.yaml", "--datasets-dir",
                                   root / "data/schemas", "--out", out / "validated.json"], root)
    assert_refused(proc, message, out)


def test_params_file_that_is_not_yaml(root, tmp_path, out):
    (tmp_path / "params.yaml").write_text("grid: [unclosed\n")
    proc = cli("validate_params", ["--params", tmp_path / "params.yaml", "--schema",
                                   root / "workflow/schemas/params.schema.yaml", "--datasets-dir",
                                   root / "data/schemas", "--out", out / "validated.json"], root)
    assert_refused(proc, "not valid YAML", out)


# -- the stages ------------------------------------------------------------------------------------------
def test_delta_not_below_one_over_n(data, root, out):
    proc = cli("synthesize", ["--train", data / "train.parquet", "--schema", SCHEMA, "--sdgp", "marginals",
                              "--epsilon", "1", "--share", "full", "--delta", "0.01", "--seed", "0",
                              "--out", out / "s.parquet", "--privacy-out", out / "s.json"], root)
    assert_refused(proc, "privacy.delta = 0.01 is not below 1/N_D = 1/", out)


def test_budget_too_small_for_a_dp_gan(data, root, out):
    proc = cli("synthesize", ["--train", data / "train.parquet", "--schema", SCHEMA, "--sdgp", "dpgan",
                              "--epsilon", "0.0001", "--share", "full", "--delta", "paper", "--seed", "0",
                              "--out", out / "s.parquet", "--privacy-out", out / "s.json", "--models-out",
                              out / "m.npz"], root)
    assert_refused(proc, "budget too small for DP-SGD", out)


def test_budget_too_small_for_output_perturbation(data, root, out):
    proc = cli("fit_weights", ["--real", data / "train.parquet", "--synth", data / "synth.parquet", "--schema",
                               SCHEMA, "--method", "output_laplace", "--dataset", "toy", "--sdgp", "marginals",
                               "--epsilon", "0.01", "--delta", "paper", "--weights-epsilon-fraction", "0.1",
                               "--weights-delta-fraction", "0.3", "--lambda", "1", "--sensitivity-n", "private",
                               "--seed", "0", "--out", out / "lr.parquet", "--privacy-out", out / "w.json"], root)
    assert_refused(proc, "output_laplace: Laplace scale b =", out)


def test_empty_synthetic_file(data, root, out, tmp_path):
    write_parquet(pd.read_parquet(data / "synth.parquet").iloc[:0], tmp_path / "empty.parquet")
    proc = cli("fit_weights", ["--real", data / "train.parquet", "--synth", tmp_path / "empty.parquet", "--schema",
                               SCHEMA, "--method", "none", "--dataset", "toy", "--sdgp", "marginals", "--epsilon",
                               "1", "--seed", "0", "--out", out / "lr.parquet", "--privacy-out", out / "w.json"], root)
    assert_refused(proc, "empty.parquet: no rows (--synth)", out)


def test_synthetic_rows_missing_a_column(data, root, out, tmp_path):
    write_parquet(pd.read_parquet(data / "synth.parquet").drop(columns="x1"), tmp_path / "short.parquet")
    proc = cli("fit_weights", ["--real", data / "train.parquet", "--synth", tmp_path / "short.parquet", "--schema",
                               SCHEMA, "--method", "none", "--dataset", "toy", "--sdgp", "marginals", "--epsilon",
                               "1", "--seed", "0", "--out", out / "lr.parquet", "--privacy-out", out / "w.json"], root)
    assert_refused(proc, "missing column(s) ['x1']", out)


def test_nan_log_ratio_into_postprocessing(data, root, out, tmp_path):
    lr = pd.read_parquet(data / "lr.parquet")
    lr.loc[2, "log_ratio"] = np.nan
    write_parquet(lr, tmp_path / "nan.parquet")
    proc = cli("postprocess_weights", ["--log-ratios", tmp_path / "nan.parquet", "--post", "psis", "--out",
                                       out / "lw.parquet", "--privacy-out", out / "p.json"], root)
    assert_refused(proc, "column 'log_ratio' has 1 NaN or +inf value(s)", out)


def test_unknown_post_step(data, root, out):
    proc = cli("postprocess_weights", ["--log-ratios", data / "lr.parquet", "--post", "smooth", "--out",
                                       out / "lw.parquet", "--privacy-out", out / "p.json"], root)
    assert_refused(proc, "unknown step 'smooth'", out)


def test_test_fraction_out_of_range(root, out):
    proc = cli("scale", ["--schema", SCHEMA, "--dataset", "toy", "--seed", "0", "--test-fraction", "1.2",
                         "--bounds", "schema", "--n-rows", "200", "--train-out", out / "a.parquet", "--test-out",
                         out / "b.parquet", "--privacy-out", out / "c.json"], root)
    assert_refused(proc, "scale.test_fraction must be in (0, 1), got 1.2", out)


def test_too_few_rows_for_the_split(root, out):
    proc = cli("scale", ["--schema", SCHEMA, "--dataset", "toy", "--seed", "0", "--test-fraction", "0.2",
                         "--bounds", "schema", "--n-rows", "6", "--train-out", out / "a.parquet", "--test-out",
                         out / "b.parquet", "--privacy-out", out / "c.json"], root)
    assert_refused(proc, "datasets.toy.n_rows must be at least 10, got 6", out)


def test_run_over_budget_writes_no_manifest_and_no_release(data, root, out, tmp_path):
    post = tmp_path / "post.json"
    post.write_text(json.dumps({"stage": "postprocess_weights", "mechanism": "none", "epsilon": 0.0, "delta": 0.0,
                                "basis": "post-processing", "details": {"release_gate": {
                                    "fit_to_release": True, "pareto_k": 0.1, "pareto_k_threshold": 0.7,
                                    "note": ""}}}))
    lw = tmp_path / "lw.parquet"
    write_parquet(pd.DataFrame({"log_weight": np.zeros(len(pd.read_parquet(data / "synth.parquet")))}), lw)
    proc = cli("privacy_ledger", ["--records", data / "scale.json", data / "synth.json", post, "--epsilon", "0.5",
                                  "--delta", "paper", "--allow-non-dp", "false", "--run", "r", "--out",
                                  out / "manifest.json", "--synth", data / "synth.parquet", "--log-weights", lw,
                                  "--release-out", out / "release"], root)
    assert_refused(proc, "privacy budget exceeded: the stages spend epsilon=1", out)
    assert not (out / "release").exists()


def test_truncated_parquet(data, root, out, tmp_path):
    """A parquet cut short (a crash during a copy, a full disk elsewhere): one line, not a pyarrow traceback."""
    whole = (data / "synth.parquet").read_bytes()
    (tmp_path / "cut.parquet").write_bytes(whole[: len(whole) // 2])
    proc = cli("fit_weights", ["--real", data / "train.parquet", "--synth", tmp_path / "cut.parquet", "--schema",
                               SCHEMA, "--method", "none", "--dataset", "toy", "--sdgp", "marginals", "--epsilon",
                               "1", "--seed", "0", "--out", out / "lr.parquet", "--privacy-out", out / "w.json"], root)
    assert_refused(proc, "cut.parquet: not a readable parquet file", out)


@pytest.mark.parametrize("err, message", [
    (28, "No space left on device (the disk is full: free space and rerun)"),
    (30, "Read-only file system (the file system is read-only: run from a writable directory)"),
])
def test_full_or_read_only_disk(data, root, out, monkeypatch, capsys, err, message):
    """The disk fails while a stage writes (simulated at the OS call: the tests run as root, for whom no
    folder is read-only): one line naming the file, exit status 2, and no partial artifact."""
    import errno
    import os

    from dpiw.stages import postprocess_weights
    from dpiw.stages._cli import run

    real_replace = os.replace

    def failing_replace(src, dst, *a, **kw):
        if str(dst).endswith("lw.parquet"):
            raise OSError(err, os.strerror(err), str(dst))
        return real_replace(src, dst, *a, **kw)

    monkeypatch.setattr(os, "replace", failing_replace)
    assert err in (errno.ENOSPC, errno.EROFS)
    with pytest.raises(SystemExit) as exc:
        run(postprocess_weights.main, ["--log-ratios", str(data / "lr.parquet"), "--post", "psis", "--out",
                                       str(out / "lw.parquet"), "--privacy-out", str(out / "p.json")])
    line = capsys.readouterr().err.strip()
    assert exc.value.code == 2 and line.count("\n") == 0 and message in line and "lw.parquet" in line, line
    assert not any(p for p in out.rglob("*") if p.is_file())  # the temp file went with the error


def test_snakemake_names_the_configfile_in_a_validation_error(root, tmp_path):
    """A bad value in `--configfile X` is reported against X (laid over params.yaml), not params.yaml."""
    (tmp_path / "bad.yaml").write_text("grid: {epsilons: [.nan]}\n")
    proc = subprocess.run(["snakemake", "-n", "--configfile", str(tmp_path / "bad.yaml")], cwd=root,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    assert f"{tmp_path / 'bad.yaml'} over params.yaml: grid.epsilons.0 = nan: must be a finite number" in proc.stderr
    assert "Traceback" not in proc.stderr
