"""The workflow as users run it: snakemake --lint / -n, the tiny grid end to end through Snakemake and
through DVC (same bytes), re-running only what an edited parameter reaches, and one clear error for
a bad params.yaml."""

import csv
import io
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from helpers import ROOT, TINY, cell_done, clone, result_files, sh, workdir

OUT = "results/default"


def test_snakemake_lint():
    sh(["snakemake", "--lint"], ROOT)


def test_default_config_dry_run():
    out = sh(["snakemake", "-n", "--forceall"], ROOT).stdout
    assert re.search(r"^aggregate\s+1$", out, re.M)
    assert re.search(r"^fit_weights\s+\d+$", out, re.M)


def test_cell_stages_are_rules_and_modules():
    from dpiw.planning import grid
    from dpiw.stages import cell

    rules = set(re.findall(r"^rule (\w+):", "".join(p.read_text() for p in (ROOT / "workflow/rules").glob("*.smk")),
                           re.M))
    modules = {p.stem for p in (ROOT / "src/dpiw/stages").glob("*.py") if not p.stem.startswith("_")}
    assert set(grid.CELL_STAGES) == set(cell.STAGES) <= rules & modules
    # validate_params: a command to check a config without running anything; paper_compare: `make results`
    assert set(grid.STAGES) | {"figures", "report"} <= rules
    assert set(grid.STAGES) | {"cell", "figures", "report", "validate_params", "paper_compare"} == modules


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
    assert "rho_target: 0.3" in text
    params_path.write_text(text.replace("rho_target: 0.3", "rho_target: 0.4"))


@pytest.mark.slow
def test_snakemake_tiny_grid_end_to_end(snakemake_run):
    wd = snakemake_run
    out = wd / OUT
    table = (out / "tables/metrics.md").read_text()
    # the default profile (via the top-level `profiles` link) ends the run with the HTML report
    report = (out / "report.html").read_text()
    assert "fig1_toy_weights.png" in report and "fig2_bayes.png" in report
    for fig in ("figures/fig1_toy_weights.png", "figures/fig2_bayes.png"):
        assert (out / fig).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "| MLP AUC ↑ |" in table and "| Bayes MSE ↓ |" in table and "| pMSE ratio ↓ |" in table
    assert "## toy, ε = 1, post = none" in table and "## iris, ε = 1, post = none" in table
    manifests = [p for p in (out / "runs").rglob("manifest.json") if p.parent.name != "release"]
    # toy: 6x2 marginals + 3 privbayes + 6x2 uniform + 6 dpgan + 6 cgan, and calibrate+psis, truncate+resample
    # for beta_debiased on marginals, uniform and dpgan and discriminator on dpgan; iris: 3 + 3 + 6 + 3 mst
    assert len(manifests) == 62
    for path in manifests:
        m = json.loads(path.read_text())
        assert isinstance(m["release"]["fit_to_release"], bool) and m["public_data"]["n_public"] > 0
        if m["dp"]:
            assert m["spent"]["epsilon"] == pytest.approx(sum(r["epsilon"] for r in m["records"]))
            # every DP mechanism lists its RDP events: the composed accountant covers the whole run
            assert m["spent"]["rdp"]["epsilon"] is not None, m["spent"]["rdp"]
            assert m["spent"]["tightest"]["epsilon"] <= m["spent"]["epsilon"] + 1e-12
            assert m["spent"]["tightest"]["epsilon"] <= m["budget"]["epsilon"] * (1 + 1e-9)
            if "/mst/marginal_match/" in str(path):  # the split made in zCDP: within the budget by RDP only
                assert m["spent"]["epsilon"] > m["budget"]["epsilon"] and m["spent"]["tightest"]["from"] == "rdp"
                assert m["verdict"].startswith("within budget (RDP composition")
            else:
                assert m["spent"]["epsilon"] <= m["budget"]["epsilon"] + 1e-9
        else:
            assert ("/logreg/" in str(path) or "/cgan/" in str(path)) and m["verdict"].startswith("NOT DP")
    runs = out / "runs/toy/eps=1/seed=0"
    # a run that spends nothing on weights gives the whole budget to the SDGP (docs/method.md)
    plain = json.loads((runs / "marginals/none/none/manifest.json").read_text())
    assert plain["run"] == "toy/eps=1/seed=0/marginals/none/none"
    spends = {r["stage"]: r["epsilon"] for r in plain["records"]}
    assert spends["synthesize"] == 1.0 and spends["fit_weights"] == 0.0
    split = json.loads((runs / "marginals/beta_debiased/none/manifest.json").read_text())
    spends = {r["stage"]: r["epsilon"] for r in split["records"]}
    assert spends["synthesize"] == pytest.approx(0.9) and spends["fit_weights"] == pytest.approx(0.1)
    pgb = json.loads((runs / "dpgan/pgb/none/manifest.json").read_text())
    stages = {r["stage"]: r for r in pgb["records"]}
    assert stages["synthesize"]["mechanism"].startswith("DP-SGD") and stages["fit_weights"]["epsilon"] > 0
    assert pgb["dp"] and pgb["spent"]["epsilon"] <= 1 + 1e-9
    cell = runs / "marginals/beta_debiased"
    post = json.loads((cell / "calibrate+psis/privacy/postprocess_weights.json").read_text())
    assert post["details"]["steps"] == ["calibrate", "psis"] and post["details"]["calibration"]["n_public"] == 40
    assert post["epsilon"] == 0 and post["reads_private"] == []
    public = pd.read_parquet(out / "private/toy/seed=0/public.parquet")
    assert len(public) == 40 and len(pd.read_parquet(out / "private/toy/seed=0/train.parquet")) == 280
    resampled = pd.read_parquet(cell / "truncate+resample/resampled.parquet")
    counts = np.exp(pd.read_parquet(cell / "truncate+resample/log_weights.parquet").log_weight)
    assert len(resampled) == counts.sum() == 280 and np.allclose(counts, np.round(counts))
    metrics = json.loads((cell / "none/metrics.json").read_text())
    assert {"pareto_k", "ess_kish", "ess_synthetic", "ess_synthetic_fraction"} <= set(metrics)
    # one job per cell and stage: its log holds every run's lines (here the GAN's progress)
    log, = (wd / "logs/default/synthesize").glob("toy_eps=1_dpgan.*.log")
    assert "dpgan toy: 100%" in log.read_text()
    done = json.loads(cell_done(wd, "postprocess_weights", "toy/eps=1/marginals").read_text())
    assert len(done["runs"]) == 14 and done["runs"]["seed=0/beta_debiased/calibrate+psis"]["outputs"][0].endswith(
        "beta_debiased/calibrate+psis/log_weights.parquet")
    summary = json.loads((out / "summary.json").read_text())
    assert sorted(summary) == ["iris", "toy"]  # per dataset: never averaged across their scales
    assert sum(len(m) for d in summary.values() for m in d.values()) < 100  # readable in `dvc metrics`
    assert set(summary["toy"]["none"]) == {"wst", "mlp_mse"} and set(summary["iris"]["none"]) == {"wst", "mlp_auc"}
    plots = {task: pd.read_csv(out / f"tables/plot_{task}.csv") for task in ("classification", "regression")}
    assert set(plots["classification"].dataset) == {"iris"} and set(plots["regression"].dataset) == {"toy"}
    _summaries_agree(table, (out / "tables/summary.html").read_text())
    assert _dry_run_jobs(wd) == []  # nothing left to do


def _summaries_agree(metrics_md: str, summary_html: str) -> None:
    """The summary that leads metrics.md and the report's summary page: the same rule, headline, rows and
    verdicts; each DP method against its matched control, none picked as "best"."""
    import html

    from dpiw import registry
    from dpiw.evaluate import summary_table

    head = metrics_md.split("## Full tables")[0]
    assert summary_table.RULE in head and html.escape(summary_table.RULE) in summary_html
    headline = re.search(r'<p id="headline">(.*?)</p>', summary_html).group(1)
    assert html.unescape(headline) in head and "best" not in head.lower()
    md = [[c.strip() for c in line.strip().strip("|").split("|")] for line in head.splitlines()
          if line.startswith("| ") and not line.startswith("| dataset")]
    page = [[html.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row)]
            for row in re.findall(r"<tr><td>.*?</tr>", summary_html)]
    assert md and len(md) == len(page)
    for a, b in zip(md, page, strict=True):
        assert (a[0], a[2], a[4].strip("*").replace("** ", " "), a[7], a[9]) == (b[0], b[2], b[4], b[7], b[9])
        assert a[7] in ("better", "worse", "no clear difference", "–")
        assert ("vs none_split" in a[6]) == (b[4].split()[0] in registry.weight_names(own_budget=True))


@pytest.mark.slow
def test_snakemake_reruns_only_the_cells_an_edited_weight_param_reaches(snakemake_run, tmp_path):
    wd = snakemake_run
    params = wd / "params.yaml"
    original = params.read_text()
    try:
        _edit_rho_target(params)
        jobs = _dry_run_jobs(wd)
    finally:
        params.write_text(original)
    rules = {r for r, _ in jobs}
    assert rules == {"fit_weights", "postprocess_weights", "evaluate", "privacy_ledger", "aggregate", "figures",
                     "report", "all"}
    fitted = sorted(w for r, w in jobs if r == "fit_weights")
    # the cells with a logistic weight method: every SDGP of the tiny grid but uniform on iris (not in it),
    # and MST on iris
    assert len(fitted) == 9, fitted
    assert _dry_run_jobs(wd) == []


def _ran(log_dir: Path) -> dict[str, list[str]]:
    """Per cell stage, the runs the last cell jobs computed (not 'up to date'), from their logs."""
    out: dict[str, list[str]] = {}
    for log in log_dir.glob("*/*.log"):
        for m in re.finditer(r"^\[\d+/\d+\] (\w+) (\S+)$", log.read_text(), re.M):
            out.setdefault(m.group(1), []).append(m.group(2))
    return out


@pytest.mark.slow
def test_a_user_in_a_git_clone_dvc_repro_edit_and_experiments(snakemake_run, tmp_path):
    """What a user does: git clone, dvc repro, edit one weight parameter, dvc repro (only that method's
    runs are recomputed), dvc exp run -S, dvc exp show; the artifacts equal Snakemake's byte for byte, and
    the private splits never reach a remote."""
    wd = clone(tmp_path / "clone")
    shutil.copy(TINY, wd / "params.yaml")
    git = ["git", "-c", "user.name=dpiw-test", "-c", "user.email=dpiw@example.invalid"]
    sh(["git", "add", "-A"], wd)
    sh([*git, "commit", "-qm", "tiny grid"], wd)
    sh(["dvc", "repro"], wd)
    assert result_files(wd) == result_files(snakemake_run)
    assert "didn't change" in sh(["dvc", "repro"], wd).stdout  # up to date
    shown = json.loads(sh(["dvc", "metrics", "show", "--json"], wd).stdout)
    assert "beta_debiased" in json.dumps(shown) and "wst" in json.dumps(shown)
    sh(["dvc", "plots", "show", "--json"], wd)  # the declared plots (figures, runs.csv) render
    # edit a parameter of one weight method: DVC reruns the workflow, which recomputes only that method's
    # runs (and aggregates); every other artifact keeps its bytes and its modification time
    out = wd / OUT
    before = {p: p.stat().st_mtime_ns for p in (out / "runs").rglob("*") if p.is_file()}
    shutil.rmtree(wd / "logs")
    text = (wd / "params.yaml").read_text()
    assert "output: {scale_target: 0.25}" in text
    (wd / "params.yaml").write_text(text.replace("output: {scale_target: 0.25}", "output: {scale_target: 0.4}"))
    sh(["dvc", "repro"], wd)
    ran = _ran(wd / "logs/default")
    assert set(ran) == {"fit_weights", "postprocess_weights", "evaluate", "privacy_ledger"}, ran
    assert all(name.split("/", 1)[1].startswith("output_laplace") for names in ran.values() for name in names), ran
    changed = {p for p, t in before.items() if not p.exists() or p.stat().st_mtime_ns != t}
    assert changed and all("/output_laplace/" in str(p) for p in changed), sorted(changed)[:5]
    # experiments: the metrics of both show in `dvc exp show`
    sh(["git", "add", "-A"], wd)  # dvc.lock too, as DVC expects: what the experiments compare against
    sh([*git, "commit", "-qm", "scale_target 0.4"], wd)
    assert "up to date" in sh(["dvc", "status"], wd).stdout
    (wd / "params.yaml").write_text(text)  # an edit: dvc params diff names it against the committed lock
    assert re.search(r"weights\.output\.scale_target\s+0\.4\s+0\.25", sh(["dvc", "params", "diff"], wd).stdout)
    sh(["git", "checkout", "params.yaml"], wd)
    # and back, as an experiment in the workspace: the cell jobs of the first value run again (their records were
    # replaced) and recompute output_laplace's runs alone, to Snakemake's bytes
    shutil.rmtree(wd / "logs")
    sh(["dvc", "exp", "run", "-n", "half", "-S", "weights.output.scale_target=0.25"], wd)
    ran = _ran(wd / "logs/default")
    assert ran and all(n.split("/", 1)[1].startswith("output_laplace") for names in ran.values() for n in names), ran
    assert result_files(wd) == result_files(snakemake_run)
    exps = {}
    for commit in json.loads(sh(["dvc", "exp", "show", "--json"], wd).stdout):
        exps[commit.get("name") or commit["rev"]] = commit["data"]
        for exp in commit.get("experiments") or []:
            for rev in exp["revs"]:
                exps[rev["name"]] = rev["data"]
    assert "half" in exps, sorted(exps)
    base = next(v for k, v in exps.items() if k not in ("half", "workspace"))
    metric = {name: data["metrics"][f"{OUT}/summary.json"]["data"]["toy"]["output_laplace"]
              for name, data in (("base", base), ("half", exps["half"]))}
    assert metric["base"] and metric["half"] and metric["base"] != metric["half"]
    scale = exps["half"]["params"]["params.yaml"]["data"]["weights"]["output"]["scale_target"]
    assert scale == 0.25
    # side by side: only what differs, the parameter and the metrics it moved, one row per experiment
    table = list(csv.DictReader(io.StringIO(sh(["dvc", "exp", "show", "--only-changed", "--csv"], wd).stdout)))
    columns = set(table[0])
    assert "weights.output.scale_target" in columns, sorted(columns)
    moved = [c for c in columns if c.startswith("toy.output_laplace.")]
    assert moved and not any(c.startswith("iris.") for c in columns), sorted(columns)  # iris's did not move
    half = next(r for r in table if r["Experiment"] == "half")
    base = next(r for r in table if r["typ"] == "baseline" and r["rev"] != "workspace")
    assert half["weights.output.scale_target"] == "0.25" and base["weights.output.scale_target"] == "0.4"
    assert all(half[c] != base[c] for c in moved)
    # the artifacts round-trip through a local remote: push, lose outputs and cache, pull; the private
    # folder (splits, GAN networks, job records) is never pushed
    rel = f"{OUT}/runs/toy/eps=1/seed=0/marginals/beta_debiased/calibrate+psis/log_weights.parquet"
    sh(["dvc", "remote", "add", "-d", "-f", "roundtrip", str(tmp_path / "dvc-remote")], wd)
    sh(["dvc", "push", "-q"], wd)
    private = {p.read_bytes() for p in (out / "private").rglob("*.parquet")}
    pushed = [p for p in (tmp_path / "dvc-remote").rglob("*") if p.is_file()]
    assert private and pushed and not [p for p in pushed if p.read_bytes() in private]
    (wd / rel).unlink()
    shutil.rmtree(wd / ".dvc/cache")
    sh(["dvc", "pull", "-q", f"{OUT}/runs"], wd)  # (a plain `dvc pull` also asks for the private folder)
    assert (wd / rel).read_bytes() == (snakemake_run / rel).read_bytes()


@pytest.mark.slow
def test_bring_your_own_data_example_runs_end_to_end(tmp_path, snakemake_run):
    """docs/release.md's worked example: a CSV with categorical columns and its schema, through Snakemake, in
    its own output folder (another config's results stay as they were)."""
    wd = workdir(tmp_path, ROOT / "params.yaml")
    sh(["dpiw", "run", "--config", "configs/clinic_example.yaml", "--cores", "2"], wd)  # the doc's line
    out = wd / "results/clinic_example"
    manifests = sorted(p for p in (out / "runs").rglob("manifest.json") if p.parent.name != "release")
    assert len(manifests) == 6  # (marginals, privbayes) x (none/none, beta_debiased/none, beta_debiased/calibrate+psis)
    assert all(json.loads(p.read_text())["dp"] for p in manifests)
    synth = pd.read_parquet(out / "runs/clinic/eps=1/seed=0/privbayes/synth_full.parquet")
    assert set(synth["region"]) <= {0, 1, 2, 3} and set(synth["smoker"]) <= {0, 1}  # categorical codes
    table = (out / "tables/metrics.md").read_text()
    assert "## clinic, ε = 1, post = calibrate+psis" in table and "| MLP AUC ↑ |" in table
    assert (out / "report.html").is_file() and (out / "figures/fig2_bayes.png").is_file()
    assert sorted(p.name for p in (wd / "results").iterdir()) == ["clinic_example"]


@pytest.mark.parametrize("edit, message", [
    (lambda p: p["weights"]["beta"].update(lambdaa=1), "unknown key 'lambdaa' (did you mean 'lambda'?)"),
    (lambda p: p["grid"].update(datasets=["toy", "tgfb"]), "unknown dataset 'tgfb'"),
    (lambda p: p["privacy"].update(weights_epsilon_fraction=1.5), "privacy.weights_epsilon_fraction = 1.5"),
])
def test_bad_params_fail_before_anything_runs(tmp_path, edit, message):
    params = yaml.safe_load(TINY.read_text())
    edit(params)
    wd = workdir(tmp_path, params)
    for cmd in (["snakemake", "--cores", "2"], ["dvc", "repro"]):
        if cmd[0] == "dvc":
            shutil.copy(ROOT / "dvc.yaml", wd)
            sh(["dvc", "init", "--no-scm", "-q"], wd)
        proc = sh(cmd, wd, check=False)
        assert proc.returncode != 0
        assert message in proc.stderr + proc.stdout
        assert "Traceback" not in proc.stderr
        assert not (wd / "results").exists()
