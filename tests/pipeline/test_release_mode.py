"""A curator's release, as docs/release.md gives it: `git clone`, then Snakemake on configs/clinic_release.yaml
(mode: release). Every input row is private data (no test split, no public slice), the noise comes from
OS entropy (two runs differ) or from DPIW_SECRET_KEY (two runs give the same rows and weights), the bundle is
fit to release, and the table's lifetime ledger (the user's store) refuses a bundle past its lifetime budget
and does not count an identical bundle twice. Editing one row of the CSV reruns scale and everything after it."""

import json
import os
import re
import shutil
import subprocess

import pandas as pd
import pytest
import yaml
from helpers import bundle_files, clone, ledger_tables, sh

pytestmark = pytest.mark.slow

CONFIG = "configs/clinic_release.yaml"
OUT = "results/clinic_release"  # a config's outputs: results/<config name>
RUN_ID = "clinic/eps=1/seed=0/privbayes/beta_debiased/psis"
RUN = f"{OUT}/runs/{RUN_ID}"


#: the fixture's key: with secret-key noise a release is reproducible, so a test built on it cannot be
#: failed by a rare draw (an OS-entropy run is fit to release only when its weights pass the k-hat gate)
KEY = {"DPIW_SECRET_KEY": "the key of the module fixture"}


def smk(wd, *extra, env=None, check=True):
    proc = subprocess.run(["snakemake", "--cores", "2", "--configfile", CONFIG, *extra], cwd=wd,
                          env=env if env is not None else {**os.environ, **KEY},
                          capture_output=True, text=True, timeout=900)
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


def bundle(wd) -> dict[str, bytes]:
    rel = wd / RUN / "release"
    return {p.name: p.read_bytes() for p in sorted(rel.iterdir()) if not p.name.startswith(".")}


def use_secret_key(wd):
    cfg = yaml.safe_load((wd / CONFIG).read_text())
    cfg["privacy"]["release_noise"] = "secret_key"
    (wd / CONFIG).write_text(yaml.safe_dump(cfg))


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    wd = clone(tmp_path_factory.mktemp("release") / "repo")
    use_secret_key(wd)
    smk(wd)
    return wd


def test_release_mode_uses_every_row_and_writes_a_bundle_fit_to_release(released):
    wd = released
    n_rows = len(pd.read_csv(wd / "data/examples/clinic.csv"))
    assert len(pd.read_parquet(wd / OUT / "private/clinic/seed=0/train.parquet")) == n_rows  # every row is in D
    assert len(pd.read_parquet(wd / OUT / "private/clinic/seed=0/test.parquet")) == 0       # no test split
    assert len(pd.read_parquet(wd / OUT / "private/clinic/seed=0/public.parquet")) == 0     # no public slice
    files = bundle(wd)
    assert sorted(files) == bundle_files("privbayes", "beta_debiased")  # configs/clinic_release.yaml
    m = json.loads(files["manifest.json"])
    assert m["mode"] == "release" and m["release"]["fit_to_release"] is True
    assert m["noise_seeds"]["regenerable"] is False  # only whoever holds the key
    assert set(m["noise_seeds"]["sources"].values()) == {"secret_key"}
    # no stage's record reads as benchmark noise (psis draws none: its record says nothing of seeds)
    assert {r["seeding"].get("mode") for r in m["records"] if r.get("seeding")} == {"release"}, m["records"]
    (post,) = [r for r in m["records"] if r["stage"] == "postprocess_weights"]
    assert not post.get("seeding"), post  # psis drew no noise: nothing said of seeds
    assert m["data"]["split_depends_on_private"] is False and m["public_data"]["n_public"] == 0
    # nothing to evaluate (no test split): no metrics, no tables
    assert not (wd / RUN / "metrics.json").exists() and not (wd / OUT / "tables").exists()
    (table,) = ledger_tables(wd)
    assert table["labels"] == ["clinic"] and table["releases"] == 1
    # the lifetime is composed at the lifetime delta (the first release's): the run's own tightest statement
    tightest = m["spent"]["tightest"]["epsilon"]
    assert tightest <= 1 and table["lifetime"]["epsilon"] == pytest.approx(tightest) and table["budget"]["epsilon"] == 3
    assert set(m["ledger"]) == {"entry", "note"} and len(m["ledger"]["entry"]) == 64  # the bundle: no lifetime
    own = json.loads((wd / RUN / "manifest.json").read_text())["ledger"]  # the run's, in the curator's project
    assert own["lifetime"]["epsilon"] == pytest.approx(tightest) and own["entry"] == m["ledger"]["entry"]


def test_os_entropy_gives_other_noise_in_every_run(tmp_path):
    """The shipped config (release_noise: entropy) in two clones: every stream from OS entropy, not
    regenerable, and the two runs' synthetic rows and weights differ (whether or not a bundle then passes
    the k-hat gate, which depends on the draw)."""
    runs = []
    for name in ("a", "b"):
        wd = clone(tmp_path / name)
        smk(wd, env={**os.environ, "DPIW_HOME": str(tmp_path / f"home_{name}")})  # two curators, two stores
        m = json.loads((wd / RUN / "manifest.json").read_text())
        assert m["mode"] == "release" and m["noise_seeds"]["regenerable"] is False
        assert set(m["noise_seeds"]["sources"].values()) == {"os_entropy"}
        runs.append(wd)
    cell = RUN.rsplit("/", 2)[0]  # .../privbayes
    for rel in ("synth_split.parquet", "beta_debiased/log_ratios.parquet"):
        assert (runs[0] / cell / rel).read_bytes() != (runs[1] / cell / rel).read_bytes(), rel


def test_secret_key_gives_the_same_rows_and_weights_twice(tmp_path):
    env = {**os.environ, "DPIW_SECRET_KEY": "a long random string the curator keeps"}
    runs = []
    for name in ("a", "b"):
        wd = clone(tmp_path / name)
        use_secret_key(wd)
        smk(wd, env={**env, "DPIW_HOME": str(tmp_path / f"home_{name}")})  # two curators, two ledger stores
        runs.append(wd)
    a, b = bundle(runs[0]), bundle(runs[1])
    assert a.pop("synthetic.parquet") == b.pop("synthetic.parquet") and a.pop("weights.parquet") == b.pop(
        "weights.parquet")
    # the manifests agree but for their entry in each curator's own ledger store (its own secret and time)
    ma, mb = json.loads(a["manifest.json"]), json.loads(b["manifest.json"])
    assert ma.pop("ledger")["entry"] != mb.pop("ledger")["entry"] and ma == mb
    m = json.loads(bundle(runs[0])["manifest.json"])
    assert m["release"]["fit_to_release"] and set(m["noise_seeds"]["sources"].values()) == {"secret_key"}
    # without the key the run refuses to start, before anything is written
    wd = clone(tmp_path / "nokey")
    use_secret_key(wd)
    env.pop("DPIW_SECRET_KEY")
    proc = smk(wd, env=env, check=False)
    assert proc.returncode != 0 and "DPIW_SECRET_KEY is not set" in proc.stderr + proc.stdout
    assert not (wd / "results").exists()


def test_dataset_ledger_refuses_past_the_lifetime_budget_and_counts_a_bundle_once(released):
    wd = released
    before = ledger_tables(wd)
    # the identical bundle again (the ledger step rerun on the same files, its job records gone so that
    # the cell job cannot skip it): nothing new is counted
    shutil.rmtree(wd / OUT / "private/clinic/eps=1/privbayes/privacy_ledger.keys")
    smk(wd, "--forcerun", "privacy_ledger")
    log, = (wd / "logs/clinic_release/privacy_ledger").glob("clinic_eps=1_privbayes.*.log")
    assert "[1/1] privacy_ledger seed=0/beta_debiased/psis\n" in log.read_text()
    assert ledger_tables(wd) == before
    # epsilon 4 more would bring the table past its lifetime epsilon 3: refused, though this config writes into
    # its own folder (results/more): the ledger is the table's, over every config
    (wd / "more.yaml").write_text(yaml.safe_dump({"grid": {"epsilons": [4]}}))
    proc = smk(wd, "--configfile", CONFIG, "more.yaml", check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    log = next((wd / "logs/more/privacy_ledger").glob("clinic_eps=4_privbayes.*.log")).read_text()
    found = re.search(r"release refused: table 'clinic' has spent epsilon = [0-9.]+ of its lifetime \(3, 0.000125\) "
                      r"over 1 release\(s\); clinic/eps=4/\S+ would bring it to ([0-9.]+) at delta", log)
    assert found and float(found.group(1)) > 3, log + out
    refused = wd / "results/more/runs" / RUN_ID.replace("eps=1", "eps=4")
    assert (refused / "log_weights.parquet").is_file()  # the run got as far as its ledger step
    assert not (refused / "release").exists() and not (refused / "manifest.json").exists()
    assert ledger_tables(wd) == before
    # a config asking for another lifetime budget is refused: raising it is `dpiw ledger set-budget`
    (wd / "raise.yaml").write_text(yaml.safe_dump({"grid": {"epsilons": [2.5]}, "privacy": {"dataset_epsilon": 100}}))
    proc = smk(wd, "--configfile", CONFIG, "raise.yaml", check=False)
    log = next((wd / "logs/raise/privacy_ledger").glob("clinic_eps=2.5_privbayes.*.log")).read_text()
    assert proc.returncode != 0 and "lifetime epsilon is 3 (set in its ledger), not 100" in log
    assert ledger_tables(wd) == before


def test_editing_one_row_of_the_csv_reruns_scale_and_everything_after(released, tmp_path):
    wd = clone(tmp_path / "repo")
    use_secret_key(wd)
    shutil.copytree(released / "results", wd / "results")
    shutil.copytree(released / ".snakemake", wd / ".snakemake", ignore=shutil.ignore_patterns("locks", "incomplete"))
    assert "Nothing to be done" in smk(wd, "-n").stdout
    csv = wd / "data/examples/clinic.csv"
    lines = csv.read_text().splitlines()
    fields = lines[1].split(",")
    fields[0] = str(int(float(fields[0])) + 1)  # one patient a year older
    csv.write_text("\n".join([lines[0], ",".join(fields), *lines[2:]]) + "\n")
    dry = smk(wd, "-n").stdout
    rules = set(re.findall(r"^\s*(?:local)?rule (\w+):", dry, re.M))
    assert {"scale", "synthesize", "fit_weights", "postprocess_weights", "privacy_ledger"} <= rules, dry[-2000:]


def test_dvc_reruns_scale_after_a_csv_edit_and_never_pushes_private_rows(tmp_path):
    """Under `dvc repro` (in a git clone) the user's CSV is a dependency of the workflow and of scale;
    `dvc push` sends the results but never the private folder (push: false)."""
    wd = clone(tmp_path / "repo")
    params = yaml.safe_load((wd / "params.yaml").read_text())
    params["grid"] = {"datasets": ["clinic"], "epsilons": [1], "seeds": [0], "sdgps": ["marginals"],
                      "weights": ["none", "beta_debiased"], "posts": ["none"], "exclude": []}
    (wd / "params.yaml").write_text(yaml.safe_dump(params))
    sh(["dvc", "repro", "-q"], wd)
    csv = wd / "data/examples/clinic.csv"
    lines = csv.read_text().splitlines()
    fields = lines[1].split(",")
    fields[0] = str(int(float(fields[0])) + 1)
    csv.write_text("\n".join([lines[0], ",".join(fields), *lines[2:]]) + "\n")
    status = sh(["dvc", "status", "--json"], wd).stdout
    assert "data/examples/clinic.csv" in status or "data" in json.loads(status).get("workflow", [{}])[0].get(
        "changed deps", {}), status
    train = wd / "results/default/private/clinic/seed=0/train.parquet"
    old = train.read_bytes()
    sh(["dvc", "repro"], wd)
    assert train.read_bytes() != old
    logs = (wd / "logs/default/synthesize").glob("clinic_eps=1_marginals.*.log")
    log = max(logs, key=lambda p: p.stat().st_mtime)
    assert "] synthesize seed=0/full\n" in log.read_text()
    # push to a local remote: no object there is a private split, and no row of D appears in what is there
    remote = tmp_path / "remote"
    sh(["dvc", "remote", "add", "-d", "-f", "t", str(remote)], wd)
    sh(["dvc", "push", "-q"], wd)
    private = {p.read_bytes() for p in (wd / "results/default/private").rglob("*.parquet")}
    rows = pd.read_parquet(train)
    rows_set = set(map(tuple, rows.round(12).to_numpy()))
    pushed = [p for p in remote.rglob("*") if p.is_file()]
    assert pushed, "dvc push sent nothing"
    for p in pushed:
        assert p.read_bytes() not in private, p
        if p.read_bytes()[:4] != b"PAR1":  # not a parquet object (a model file, a directory listing)
            continue
        df = pd.read_parquet(p)  # a parquet object that cannot be read fails the test: it is not checked
        if list(df.columns) == list(rows.columns):
            assert not rows_set & set(map(tuple, df.round(12).to_numpy())), p
