"""The workflow as users run it: snakemake --lint / -n, the tiny grid end to end through Snakemake and
through DVC (same bytes), re-running only what an edited parameter reaches, and one clear error for
a bad params.yaml."""

import json
import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from helpers import ROOT, TINY, sh, workdir


def stage_names(text: str) -> set[str]:
    return set(re.findall(r"python -m dpiw\.stages\.(\w+)", text))


def test_snakemake_lint():
    sh(["snakemake", "--lint"], ROOT)


def test_default_config_dry_run():
    out = sh(["snakemake", "-n", "--forceall"], ROOT).stdout
    assert re.search(r"^aggregate\s+1$", out, re.M)
    assert re.search(r"^fit_weights\s+\d+$", out, re.M)


def test_stage_lists_are_in_step():
    smk = stage_names("".join(p.read_text() for p in (ROOT / "workflow/rules").glob("*.smk")))
    dvc = stage_names("".join(p.read_text() for p in [ROOT / "dvc.yaml", *(ROOT / "pipelines").glob("*/dvc.yaml")]))
    modules = {p.stem for p in (ROOT / "src/dpiw/stages").glob("*.py") if not p.stem.startswith("_")}
    # validate_params is a DVC stage; Snakemake validates params.yaml when it parses the workflow
    assert dvc == smk | {"validate_params"} == modules


def test_dvc_yaml_is_generated_from_params():
    sh([sys.executable, "workflow/scripts/make_dvc_yaml.py", "--params", "params.yaml", "--out", "dvc.yaml",
        "--check"], ROOT)


def _dry_run_jobs(cwd) -> list[tuple[str, str]]:
    """(rule, wildcards) of the jobs a dry run would execute."""
    out = sh(["snakemake", "-n", "--cores", "2"], cwd).stdout
    jobs, rule = [], None
    for line in out.splitlines():
        m = re.match(r"^\s*(?:local)?rule (\w+):", line)  # indented under "group job" headers
        if m:
            rule = m.group(1)
            jobs.append((rule, ""))
        m = re.match(r"^\s+wildcards: (.*)$", line)
        if m and rule:
            jobs[-1] = (rule, m.group(1))
    return jobs


def _edit_rho_target(params_path: Path):
    text = params_path.read_text()
    assert "rho_target: 0.5" in text
    params_path.write_text(text.replace("rho_target: 0.5", "rho_target: 0.4"))


@pytest.fixture(scope="module")
def dvc_run(tmp_path_factory):
    wd = workdir(tmp_path_factory.mktemp("dvc"))
    sh([sys.executable, str(ROOT / "workflow/scripts/make_dvc_yaml.py"), "--params", "params.yaml", "--out",
        "dvc.yaml"], wd)
    sh(["dvc", "init", "--no-scm", "-q"], wd)
    # (`dvc repro --dry` stops at the first missing dependency, so check the DAG instead)
    dag = sh(["dvc", "dag", "--dot"], wd).stdout
    toy = "pipelines/toy/dvc.yaml:"
    assert '"aggregate"' in dag and f'"{toy}scale-toy-s0" -> "{toy}synthesize-toy-e1-s0-marginals-full"' in dag
    sh(["dvc", "repro"], wd)
    return wd


@pytest.mark.slow
def test_snakemake_tiny_grid_end_to_end(snakemake_run):
    wd = snakemake_run
    table = (wd / "results/tables/metrics.md").read_text()
    # the default profile (via the top-level `profiles` link) ends the run with the HTML report
    report = (wd / "results/report.html").read_text()
    assert "fig1_toy_weights.png" in report and "fig2_bayes.png" in report
    for fig in ("results/figures/fig1_toy_weights.png", "results/figures/fig2_bayes.png"):
        assert (wd / fig).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "| MLP AUC ↑ |" in table and "| Bayes MSE ↓ |" in table and "| pMSE ratio ↓ |" in table
    assert "## toy, ε = 1, post = none" in table and "## iris, ε = 1, post = none" in table
    manifests = [p for p in (wd / "results").rglob("manifest.json") if p.parent.name != "release"]
    # toy: 6x2 marginals + 3 privbayes + 6x2 uniform + 6 dpgan + 6 cgan, and calibrate+psis, truncate+resample
    # for beta_debiased on marginals, uniform and dpgan and discriminator on dpgan; iris: 3 + 3 + 6
    assert len(manifests) == 59
    for path in manifests:
        m = json.loads(path.read_text())
        assert isinstance(m["release"]["fit_to_release"], bool) and m["public_data"]["n_public"] > 0
        if m["dp"]:
            assert m["spent"]["epsilon"] == pytest.approx(sum(r["epsilon"] for r in m["records"]))
            assert m["spent"]["epsilon"] <= m["budget"]["epsilon"] + 1e-9
            # every DP mechanism lists its RDP events: the composed accountant covers the whole run
            assert m["spent"]["rdp"]["epsilon"] is not None, m["spent"]["rdp"]
            assert m["spent"]["tightest"]["epsilon"] <= m["spent"]["epsilon"] + 1e-12
        else:
            assert ("/logreg/" in str(path) or "/cgan/" in str(path)) and m["verdict"].startswith("NOT DP")
    # a run that spends nothing on weights gives the whole budget to the SDGP (METHOD.md)
    plain = json.loads((wd / "results/toy/eps=1/seed=0/marginals/none/none/manifest.json").read_text())
    spends = {r["stage"]: r["epsilon"] for r in plain["records"]}
    assert spends["synthesize"] == 1.0 and spends["fit_weights"] == 0.0
    split = json.loads((wd / "results/toy/eps=1/seed=0/marginals/beta_debiased/none/manifest.json").read_text())
    spends = {r["stage"]: r["epsilon"] for r in split["records"]}
    assert spends["synthesize"] == pytest.approx(0.9) and spends["fit_weights"] == pytest.approx(0.1)
    pgb = json.loads((wd / "results/toy/eps=1/seed=0/dpgan/pgb/none/manifest.json").read_text())
    stages = {r["stage"]: r for r in pgb["records"]}
    assert stages["synthesize"]["mechanism"].startswith("DP-SGD") and stages["fit_weights"]["epsilon"] > 0
    assert pgb["dp"] and pgb["spent"]["epsilon"] <= 1 + 1e-9
    cell = wd / "results/toy/eps=1/seed=0/marginals/beta_debiased"
    post = json.loads((cell / "calibrate+psis/privacy/postprocess_weights.json").read_text())
    assert post["details"]["steps"] == ["calibrate", "psis"] and post["details"]["calibration"]["n_public"] == 40
    assert post["epsilon"] == 0 and post["reads_private"] == []
    public = pd.read_parquet(wd / "results/toy/seed=0/public.parquet")
    assert len(public) == 40 and len(pd.read_parquet(wd / "results/toy/seed=0/train.parquet")) == 280
    resampled = pd.read_parquet(cell / "truncate+resample/resampled.parquet")
    counts = np.exp(pd.read_parquet(cell / "truncate+resample/log_weights.parquet").log_weight)
    assert len(resampled) == counts.sum() == 280 and np.allclose(counts, np.round(counts))
    metrics = json.loads((cell / "none/metrics.json").read_text())
    assert {"pareto_k", "ess_kish", "ess_synthetic", "ess_synthetic_fraction"} <= set(metrics)
    assert "dpgan toy: 100%" in (wd / "logs/synthesize/toy_eps=1_seed=0_dpgan_full.log").read_text()  # progress
    assert _dry_run_jobs(wd) == []  # nothing left to do


@pytest.mark.slow
def test_snakemake_reruns_only_downstream_of_an_edited_weight_param(snakemake_run):
    wd = snakemake_run
    _edit_rho_target(wd / "params.yaml")
    jobs = _dry_run_jobs(wd)
    rules = {r for r, _ in jobs}
    assert rules == {"fit_weights", "postprocess_weights", "postprocess_weights_resample", "evaluate",
                     "privacy_ledger", "aggregate", "figures", "report", "all"}
    fitted = sorted(w for r, w in jobs if r == "fit_weights")
    assert fitted and all(re.search(r"weights=(logreg|beta_debiased|beta_debiased_gauss|output_laplace)\b", w)
                          for w in fitted), fitted
    assert len(fitted) == 20  # logreg, beta_debiased on 8 cells + beta_debiased_gauss, output_laplace on 2


@pytest.mark.slow
def test_dvc_repro_matches_snakemake_and_reruns_only_downstream(dvc_run, snakemake_run):
    wd = dvc_run
    for rel in ("results/toy/seed=0/train.parquet", "results/toy/eps=1/seed=0/marginals/synth_split.parquet",
                "results/iris/eps=1/seed=0/marginals/beta_debiased/none/log_weights.parquet",
                "results/toy/eps=1/seed=0/uniform/true/temper/log_weights.parquet",
                "results/toy/eps=1/seed=0/dpgan/synth_split.parquet",
                "results/iris/eps=1/seed=0/cgan/pgb/none/log_weights.parquet",
                "results/toy/eps=1/seed=0/dpgan/drs/none/log_weights.parquet",
                "results/iris/eps=1/seed=0/privbayes/synth_full.parquet",
                "results/toy/seed=0/public.parquet",
                "results/toy/eps=1/seed=0/marginals/beta_debiased/calibrate+psis/log_weights.parquet",
                "results/toy/eps=1/seed=0/dpgan/discriminator/truncate+resample/resampled.parquet"):
        assert (wd / rel).read_bytes() == (snakemake_run / rel).read_bytes(), rel
    assert "Running stage" not in sh(["dvc", "repro"], wd).stdout  # up to date
    shown = sh(["dvc", "metrics", "show", "--json"], wd).stdout
    assert "summary.json" in shown and "beta_debiased" in shown and "wst" in shown
    sh(["dvc", "plots", "show", "--json"], wd)  # the declared plots (figures, runs.csv) render
    # the artifacts round-trip through a local-directory remote: push, lose outputs and cache, pull; the
    # private splits are never pushed (push: false), so they stay where they were made
    rel = "results/toy/eps=1/seed=0/marginals/beta_debiased/calibrate+psis/log_weights.parquet"
    sh(["dvc", "remote", "add", "-d", "-f", "roundtrip", str(wd.parent / "dvc-remote")], wd)
    sh(["dvc", "push", "-q"], wd)
    private = {p.read_bytes() for p in (wd / "results/toy/seed=0").glob("*.parquet")}
    assert not [p for p in (wd.parent / "dvc-remote").rglob("*") if p.is_file() and p.read_bytes() in private]
    (wd / rel).unlink()
    shutil.rmtree(wd / ".dvc/cache")
    sh(["dvc", "pull", "-q"], wd, check=False)  # exit 1: the private splits are not on the remote
    assert (wd / rel).read_bytes() == (snakemake_run / rel).read_bytes()
    assert (wd / "results/toy/seed=0/train.parquet").is_file()
    # the private splits and the GANs' networks (push: false) were in no cache: DVC remakes them (same
    # bytes), and nothing after them reruns: the pulled outputs are up to date
    ran = [n.split(":")[-1] for n in re.findall(r"Running stage '([^']+)'", sh(["dvc", "repro"], wd).stdout)]
    assert any(n.startswith("scale-") for n in ran), ran
    assert all(n.startswith("scale-") or re.match(r"synthesize-.*-(dpgan|dpcgan|gan|cgan)-", n) for n in ran), ran
    assert "Running stage" not in sh(["dvc", "repro"], wd).stdout
    # DVC tracks each stage's own parameters: an edited post-processing value reruns only the runs whose
    # post chain uses it (a weight parameter's wider reach is checked on Snakemake's side, above)
    text = (wd / "params.yaml").read_text()
    assert "truncate: {tau: sqrt_n}" in text
    (wd / "params.yaml").write_text(text.replace("truncate: {tau: sqrt_n}", "truncate: {tau: 1}"))
    out = sh(["dvc", "repro"], wd).stdout
    ran = [n.split(":")[-1] for n in re.findall(r"Running stage '([^']+)'", out)]  # pipelines/<ds>/dvc.yaml:
    kinds = {name.split("-")[0] for name in ran}
    assert kinds == {"validate_params", "postprocess_weights", "evaluate", "privacy_ledger", "aggregate", "figures"}
    assert all(n.endswith("-truncate__resample") for n in ran if n.split("-")[0] in ("postprocess_weights",
                                                                                     "evaluate", "privacy_ledger"))
    assert sum(n.startswith("postprocess_weights") for n in ran) == 4  # beta_debiased x 3 cells + discriminator


@pytest.mark.slow
def test_bring_your_own_data_example_runs_end_to_end(tmp_path):
    """The README's worked example: a CSV with categorical columns and its schema, through Snakemake."""
    wd = workdir(tmp_path, ROOT / "params.yaml")
    sh(["snakemake", "--cores", "2", "--configfile", "configs/clinic_example.yaml"], wd)
    manifests = sorted(p for p in (wd / "results/clinic").rglob("manifest.json") if p.parent.name != "release")
    assert len(manifests) == 6  # (marginals, privbayes) x (none/none, beta_debiased/none, beta_debiased/calibrate+psis)
    assert all(json.loads(p.read_text())["dp"] for p in manifests)
    synth = pd.read_parquet(wd / "results/clinic/eps=1/seed=0/privbayes/synth_full.parquet")
    assert set(synth["region"]) <= {0, 1, 2, 3} and set(synth["smoker"]) <= {0, 1}  # categorical codes
    table = (wd / "results/tables/metrics.md").read_text()
    assert "## clinic, ε = 1, post = calibrate+psis" in table and "| MLP AUC ↑ |" in table
    assert (wd / "results/report.html").is_file()


@pytest.mark.parametrize("edit, message", [
    (lambda p: p["weights"]["beta"].update(lambdaa=1), "unknown key 'lambdaa' (did you mean 'lambda'?)"),
    (lambda p: p["grid"].update(datasets=["toy", "tgfb"]), "unknown dataset 'tgfb'"),
    (lambda p: p["privacy"].update(weights_epsilon_fraction=1.5), "privacy.weights_epsilon_fraction = 1.5"),
])
def test_bad_params_fail_before_anything_runs(tmp_path, edit, message):
    params = yaml.safe_load(TINY.read_text())
    edit(params)
    wd = workdir(tmp_path, params)
    proc = sh(["snakemake", "--cores", "2"], wd, check=False)
    assert proc.returncode != 0
    assert message in proc.stderr + proc.stdout
    assert "Traceback" not in proc.stderr
    assert not (wd / "results").exists()
    proc = sh([sys.executable, str(ROOT / "workflow/scripts/make_dvc_yaml.py"), "--params", "params.yaml", "--out",
               "dvc.yaml"], wd, check=False)
    assert proc.returncode == 2 and message in proc.stderr and not (wd / "dvc.yaml").exists()


def test_stale_dvc_yaml_is_refused(tmp_path):
    wd = workdir(tmp_path)
    sh([sys.executable, str(ROOT / "workflow/scripts/make_dvc_yaml.py"), "--params", "params.yaml", "--out",
        "dvc.yaml"], wd)
    params = yaml.safe_load((wd / "params.yaml").read_text())
    params["grid"]["seeds"] = [0, 1]
    (wd / "params.yaml").write_text(yaml.safe_dump(params))
    sh(["dvc", "init", "--no-scm", "-q"], wd)
    proc = sh(["dvc", "repro", "validate_params"], wd, check=False)
    assert proc.returncode != 0 and "make dvc-yaml" in proc.stdout + proc.stderr


@pytest.mark.slow
def test_dvc_experiments_set_a_param_and_show_metrics(tmp_path):
    """`dvc exp run -S <param>=...` reruns what the parameter reaches and `dvc exp show` lists the metrics."""
    params = yaml.safe_load(TINY.read_text())
    params["grid"] = {"datasets": ["toy"], "epsilons": [1], "seeds": [0], "sdgps": ["marginals"],
                      "weights": ["none", "beta_debiased"], "posts": ["none"]}
    wd = workdir(tmp_path, params)
    sh([sys.executable, str(ROOT / "workflow/scripts/make_dvc_yaml.py"), "--params", "params.yaml", "--out",
        "dvc.yaml"], wd)
    git = ["git", "-c", "user.name=dpiw-test", "-c", "user.email=dpiw@example.invalid"]
    sh(["git", "init", "-q"], wd)
    sh(["dvc", "init", "-q"], wd)
    sh(["git", "add", "-A"], wd)
    sh([*git, "commit", "-qm", "baseline"], wd)
    sh(["dvc", "exp", "run", "-n", "base"], wd)
    sh(["dvc", "exp", "run", "-n", "rho04", "-S", "weights.beta.rho_target=0.4"], wd)
    shown = json.loads(sh(["dvc", "exp", "show", "--json"], wd).stdout)
    exps = {}
    for commit in shown:
        for exp in commit.get("experiments") or []:
            for rev in exp["revs"]:
                exps[rev["name"]] = rev["data"]
    assert {"base", "rho04"} <= set(exps), sorted(exps)
    rho = {name: exps[name]["params"]["params.yaml"]["data"]["weights"]["beta"]["rho_target"]
           for name in ("base", "rho04")}
    assert rho == {"base": 0.5, "rho04": 0.4}
    metrics = {name: exps[name]["metrics"]["results/tables/summary.json"]["data"] for name in ("base", "rho04")}
    assert metrics["base"] and metrics["base"] != metrics["rho04"]  # beta_debiased's numbers moved
