"""The red team's cases of issue 39, one test per row, as a curator runs them in a fresh `git clone`: the same
people never get a fresh budget (1), a restored, copied, trimmed or edited store is refused (2), a refused or
failed release destroys nothing and leaves no DP output (3), add/remove releases work (4), every error is one
line (5), and the lock, the flags and `dpiw ledger show` follow the table, not its name or folder (6).

The module has its own user folder (DPIW_HOME, tests/conftest.py): its default store is the clinic table's."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import sqlite3
import subprocess

import pandas as pd
import pytest
from helpers import clone, sh

pytestmark = pytest.mark.slow

SCHEMA = "data/schemas/clinic.yaml"
DATA = "data/examples/clinic.csv"
#: the clinic table's delta (`--delta auto`: N_D^-1.5 at 400 rows), the lifetime delta of its ledger
DELTA = 400 ** -1.5


def release(cwd, *flags, data=DATA, schema=SCHEMA, env=None):
    cmd = ["dpiw", "release", str(data), "--schema", str(schema), "--cores", "1", *flags]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=900,
                          env={**os.environ, **(env or {})})


def store_path():
    from dpiw.privacy.store import default_store

    return default_store()


def tree(folder) -> dict[str, bytes]:
    """Every file under ``folder`` and its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def lifetime_line(stdout: str) -> str:
    return next(line for line in stdout.splitlines() if line.startswith("lifetime "))


def zcdp_to_eps(rho: float, delta: float) -> float:
    """An independent conversion of rho-zCDP to (epsilon, delta)-DP: the RDP curve alpha*rho converted by
    Balle et al. 2020 (Prop. 12), minimised over continuous alpha > 1 (scipy), not the accountant's grid."""
    from scipy.optimize import minimize_scalar

    def eps(a):
        return a * rho + math.log1p(-1 / a) - (math.log(delta) + math.log(a)) / (a - 1)

    return minimize_scalar(eps, bounds=(1.0001, 1e4), method="bounded", options={"xatol": 1e-10}).fun


@pytest.fixture(scope="module")
def wd(tmp_path_factory):
    return clone(tmp_path_factory.mktemp("red") / "repo")


@pytest.fixture(scope="module")
def four(wd, tmp_path_factory):
    """Row 1: the same rows as CSV, as CSV with floats written 85.0 and columns and rows reordered, and as parquet
    (under another schema name), released from two project folders with default settings."""
    other = tmp_path_factory.mktemp("other") / "project"
    frame = pd.read_csv(wd / DATA)
    alt = frame.astype({"age": float}).sample(frac=1, random_state=3)[list(reversed(frame.columns))]
    alt.to_csv(wd / "clinic_85.csv", index=False, float_format="%.1f")
    assert "85.0," in (wd / "clinic_85.csv").read_text() or ",85.0" in (wd / "clinic_85.csv").read_text()
    frame.to_parquet(wd / "clinic.parquet", index=False)
    (wd / "clinic_pq.yaml").write_text((wd / SCHEMA).read_text().replace("name: clinic", "name: clinic_pq"))
    runs = [(wd, DATA, SCHEMA, 0.2, ()), (wd, "clinic_85.csv", SCHEMA, 0.21, ("--project", str(other))),
            (wd, "clinic.parquet", "clinic_pq.yaml", 0.22, ()), (wd, DATA, SCHEMA, 0.23, ("--project", str(other)))]
    outs, older = [], wd.parent / "older.sqlite"
    for cwd, data, schema, eps, flags in runs:
        if len(outs) == 3:  # the store as a backup taken before the last release would hold it
            shutil.copyfile(store_path(), older)
        proc = release(cwd, "--epsilon", str(eps), *flags, data=data, schema=schema)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        outs.append(proc.stdout)
    return {"outs": outs, "other": other, "epsilons": [r[3] for r in runs], "older": older}


def _manifest(project, stdout: str, *, run: bool = False) -> dict:
    """The manifest of the bundle a release printed (``run``: its run's, beside the bundle in the project)."""
    bundle = project / next(line.split()[1] for line in stdout.splitlines() if line.startswith("bundle ")).rstrip("/")
    return json.loads(((bundle.parent if run else bundle) / "manifest.json").read_text())


def test_row1_the_same_rows_in_four_forms_and_two_folders_are_one_ledger(wd, four):
    rho = 0.0
    for out in four["outs"]:
        m = _manifest(wd, out)  # the bundle's path is printed relative to where the command ran
        events = [ev for r in m["records"] for ev in r["rdp"]]
        assert events and all(ev["kind"] == "zcdp" for ev in events)
        rho += sum(ev["rho"] for ev in events)
    # the fourth release's lifetime line is the composition of all four, at the lifetime delta
    expected = zcdp_to_eps(rho, DELTA)
    line = lifetime_line(four["outs"][3])
    shown = float(line.split()[2])
    assert shown == pytest.approx(expected, rel=2e-3), line
    assert "over 4 release(s) of this table" in line
    assert shown < sum(four["epsilons"])  # composed in zCDP, below the basic sum 0.86
    # `dpiw ledger show`, from anywhere: one table, with both labels
    show = sh(["dpiw", "ledger", "show"], four["other"]).stdout.splitlines()
    assert len(show) == 2 and "clinic, clinic_pq" in show[1] and "4 release(s)" in show[1], show


def test_row1_a_corrected_and_appended_copy_and_a_copy_with_a_column_added_are_charged_to_the_same_ledger(wd, four):
    frame = pd.read_csv(wd / DATA)
    corrected = frame.copy()
    corrected.loc[17, "age"] = corrected.loc[17, "age"] + 1  # one patient's age corrected ...
    extra = frame.sample(n=20, random_state=5).assign(bmi=lambda d: d["bmi"] + 0.05)  # ... and 5% rows appended
    pd.concat([corrected, extra]).to_csv(wd / "corrected.csv", index=False)
    frame.assign(visits=range(len(frame))).to_csv(wd / "wider.csv", index=False)
    (wd / "wider.yaml").write_text((wd / SCHEMA).read_text().replace(
        "name: clinic", "name: clinic_wide") + "  - {name: visits, type: numeric, lower: 0, upper: 1000}\n")
    spent = float(lifetime_line(four["outs"][3]).split()[2])
    for data, schema in (("corrected.csv", SCHEMA), ("wider.csv", "wider.yaml")):
        before = tree(wd / "releases")
        proc = release(wd, "--epsilon", "11", data=data, schema=schema)  # past any budget of 10: which one?
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
        assert "share rows (about" in proc.stdout and "ledgered table 'clinic, clinic_pq' (ledger " in proc.stdout
        assert "--new-population REASON" in proc.stdout
        found = re.search(r"table 'clinic, clinic_pq' has spent epsilon = ([0-9.]+) of its lifetime \(10,", proc.stderr)
        assert found and float(found.group(1)) == pytest.approx(spent, rel=1e-3), proc.stderr
        assert tree(wd / "releases") == before
    # declared another population, with a reason: a ledger of its own (nothing spent yet), the reason kept
    from dataclasses import replace

    from dpiw.data.schema import load_schema
    from dpiw.privacy import ledger as L
    from dpiw.privacy.store import Store

    schema = load_schema(wd / SCHEMA)
    schema = replace(schema, source={"kind": "file", "path": str(wd / "corrected.csv")})
    found = L.resolve(Store(store_path()), schema)
    assert found.via == "overlap" and 0.9 < found.share <= 1.0
    new = L.resolve(Store(store_path()), schema, new_population="the 2027 cohort, other patients")
    assert new.via == "new" and new.ledger is None and new.reason


def test_row2_a_rolled_back_copied_trimmed_or_edited_store_is_refused_by_verify_and_the_next_release(wd, four,
                                                                                                   tmp_path):
    from dpiw.privacy import ledger as L
    from dpiw.privacy.store import Store, entry_hash, genesis

    path = store_path()
    real = tmp_path / "real.sqlite"
    shutil.copyfile(path, real)
    n = sqlite3.connect(real).execute("SELECT COUNT(*) FROM dpiw_ledger").fetchone()[0]
    other = tmp_path / "other.sqlite"
    L.admit(Store(str(other)), digest="x", label="x", bundle_id="b", manifest={
        "run": "r", "neighbours": {"relation": "replace_one"}, "budget": {"epsilon": 1, "delta": 1e-6},
        "spent": {"epsilon": 0.1, "delta": 0}, "records": [{"stage": "s", "mechanism": "m", "dp": True,
                                                            "epsilon": 0.1, "delta": 0, "rdp": []}]})

    def rehash(con):  # a careful forger: every entry renumbered and rehashed, the head and count set
        secret = con.execute("SELECT value FROM dpiw_ledger_meta WHERE key='secret'").fetchone()[0]
        rows = con.execute("SELECT dataset, kind, body FROM dpiw_ledger ORDER BY seq").fetchall()
        con.execute("DELETE FROM dpiw_ledger")
        prev = genesis(secret)
        for seq, (dataset, kind, body) in enumerate(rows, 1):
            h = entry_hash(prev, dataset, kind, body)
            con.execute("INSERT INTO dpiw_ledger VALUES (?, ?, ?, ?, ?, ?)", (seq, dataset, kind, body, prev, h))
            prev = h
        con.execute("UPDATE dpiw_ledger_meta SET value=? WHERE key='head'", (prev,))
        con.execute("UPDATE dpiw_ledger_meta SET value=? WHERE key='count'", (str(len(rows)),))

    def trimmed(con):
        con.execute("DELETE FROM dpiw_ledger WHERE seq >= ?", (n - 1,))  # the last release and its mechanism
        rehash(con)

    def deleted(con):  # one spend removed mid-chain (its release too, or the chain says a mechanism is missing)
        first = con.execute("SELECT MIN(seq) FROM dpiw_ledger WHERE kind='release'").fetchone()[0]
        con.execute("DELETE FROM dpiw_ledger WHERE seq = ?", (first,))
        rehash(con)

    def budget(con):
        con.execute("UPDATE dpiw_ledger SET body = replace(body, '\"epsilon\":10.0', '\"epsilon\":100.0') "
                    "WHERE kind = 'budget'")
        rehash(con)

    cases = {"rolled back": ("backup", None), "copied": ("other", None), "trimmed": ("edit", trimmed),
             "deleted": ("edit", deleted), "budget raised": ("edit", budget), "removed": ("remove", None)}
    backup = four["older"]  # a real older copy: the store before the fourth release
    try:
        for case, (how, edit) in cases.items():
            if how == "backup":
                shutil.copyfile(backup, path)
            elif how == "other":
                shutil.copyfile(other, path)
            elif how == "remove":
                os.unlink(path)
            else:
                shutil.copyfile(real, path)
                con = sqlite3.connect(path)
                edit(con)
                con.commit()
                con.close()
            proc = sh(["dpiw", "ledger", "verify"], wd, check=False)
            assert proc.returncode == 2 and proc.stderr.count("\n") == 1, (case, proc.stderr)
            proc = release(wd, "--epsilon", "0.1")
            assert proc.returncode == 2 and proc.stderr.count("\n") == 1, (case, proc.stderr)
            assert not [line for line in proc.stdout.splitlines() if not line.startswith("dpiw release: ledger")]
    finally:
        shutil.copyfile(real, path)
    assert "chain intact" in sh(["dpiw", "ledger", "verify"], wd).stdout


def test_row3_refused_and_failed_releases_destroy_nothing_and_a_rerun_spends_nothing(wd, four):
    store = store_path()
    before, ledger_before = tree(wd / "releases"), sh(["dpiw", "ledger", "show"], wd).stdout
    # over the budget: refused in seconds, before any mechanism ran (no folder, no job, no log of it)
    proc = release(wd, "--epsilon", "10")
    assert proc.returncode == 2 and "release refused before anything ran" in proc.stderr
    assert proc.stderr.count("\n") == 1
    # a NaN cell: at most 3 lines, nothing written
    frame = pd.read_csv(wd / DATA)
    frame.loc[3, "bmi"] = float("nan")
    frame.to_csv(wd / "nan.csv", index=False)
    proc = release(wd, "--epsilon", "0.1", data="nan.csv")
    assert proc.returncode == 2 and len((proc.stdout + proc.stderr).strip().splitlines()) <= 3, proc.stdout
    assert "column 'bmi'" in proc.stderr
    # rerunning the first admitted command: the bundle printed, nothing spent, nothing rewritten
    proc = release(wd, "--epsilon", "0.2")
    assert proc.returncode == 0 and "admitted before; nothing is spent" in proc.stdout
    assert tree(wd / "releases") == before
    assert sh(["dpiw", "ledger", "show"], wd).stdout == ledger_before
    assert os.path.isfile(store)


def test_row3_a_failure_inside_the_workflow_is_one_line_and_leaves_only_its_log(wd, four):
    """A public file (source.public_path) with a NaN passes every check made before the workflow and fails in the
    scale stage: one line, the release's own folder gone, its log kept, every other release byte-identical."""
    frame = pd.read_csv(wd / DATA)
    frame.head(50).assign(bmi=float("nan")).to_csv(wd / "public.csv", index=False)
    text = (wd / SCHEMA).read_text().replace("path: data/examples/clinic.csv",
                                             "path: data/examples/clinic.csv, public_path: public.csv")
    assert "public_path" in text
    (wd / "public.yaml").write_text(text)
    before = tree(wd / "releases")
    proc = release(wd, "--epsilon", "0.05", "--delta", "1e-6", "--post", "calibrate", "--weights", "beta_debiased",
                   schema="public.yaml")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "the release's log: logs/releases/clinic/" in proc.stderr and "Traceback" not in proc.stderr
    log = wd / proc.stderr.split("the release's log: ")[1].rstrip(")\n")
    assert log.is_file() and "Error in rule" in log.read_text()
    assert tree(wd / "releases") == before


def test_row4_an_add_remove_release_of_clinic_with_the_default_weights_is_fit_to_release(wd, tmp_path):
    home = tmp_path / "home"  # another curator, another project: the table's ledger is new, and add/remove
    proc = release(wd, "--epsilon", "1", "--neighbours", "add_remove", "--delta", "1e-6", "--project",
                   str(tmp_path / "project"), env={"DPIW_HOME": str(home)})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "FIT TO RELEASE" in proc.stdout and "the row count is private" in proc.stdout
    m = _manifest(wd, proc.stdout)
    assert m["neighbours"]["relation"] == "add_remove" and m["release"]["fit_to_release"]
    assert m["data"]["n_train"] == "withheld: private under add/remove neighbours"
    assert {r["neighbours"] for r in m["records"] if r["epsilon"] or r["delta"]} == {"add_remove"}
    zero = [r for r in m["records"] if not (r["epsilon"] or r["delta"])]  # no relation conflict: admitted as is
    own = _manifest(wd, proc.stdout, run=True)["ledger"]  # the run's (the bundle publishes only the entry)
    assert zero and own["lifetime"]["epsilon"] == pytest.approx(m["spent"]["tightest"]["epsilon"])
    assert own["budget"]["neighbours"] == "add_remove"


@pytest.mark.parametrize("case", ["nan", "empty", "inf", "bounds", "category", "text", "epsilon"])
def test_row5_every_bad_input_is_one_line_and_leaves_nothing(wd, four, case):
    frame = pd.read_csv(wd / DATA).astype({"bmi": object, "region": object})
    flags = ["--epsilon", "0.1"]
    if case == "nan":
        frame.loc[4, "bmi"] = float("nan")
    elif case == "empty":
        frame.loc[4, "bmi"] = ""
    elif case == "inf":
        frame.loc[4, "bmi"] = "inf"
    elif case == "bounds":
        frame.loc[4, "bmi"] = 99.0
        flags += ["--out-of-bounds", "fail"]
    elif case == "category":
        frame.loc[4, "region"] = "mars"
    elif case == "text":
        frame.loc[4, "bmi"] = "heavy"
    else:
        flags = ["--epsilon", "inf"]
    frame.to_csv(wd / f"bad_{case}.csv", index=False)
    schema_copy = (wd / SCHEMA).read_bytes()
    before = tree(wd / "releases")
    proc = release(wd, *flags, data=f"bad_{case}.csv")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: "), proc.stderr
    assert len(proc.stdout.splitlines()) <= 1 and "Traceback" not in proc.stderr
    assert ("--epsilon" if case == "epsilon" else "column '") in proc.stderr
    assert tree(wd / "releases") == before and (wd / SCHEMA).read_bytes() == schema_copy


def test_row5_out_of_bounds_clips_by_default_as_the_docs_say(root):
    from dpiw.commands.release import OUT_OF_BOUNDS

    assert OUT_OF_BOUNDS == "clip"
    assert "(default clip;" in " ".join(sh(["dpiw", "release", "--help"], root).stdout.split())
    assert "`--out-of-bounds clip` (the default) clips it" in (root / "docs/release.md").read_text()


def test_row6_the_lock_is_the_tables_and_flags_beat_the_environment(wd, four, tmp_path):
    from dataclasses import replace

    from dpiw.commands.release import one_release_at_a_time
    from dpiw.data.schema import load_schema
    from dpiw.privacy import ledger as L
    from dpiw.privacy.store import Store

    # one release of a population at a time: held for the clinic table, a copy under another name is refused
    schema = load_schema(wd / SCHEMA)
    table = L.resolve(Store(store_path()), replace(schema, source={"kind": "file", "path": str(wd / DATA)}))
    shutil.copyfile(wd / DATA, wd / "copy.csv")
    (wd / "copy.yaml").write_text((wd / SCHEMA).read_text().replace("name: clinic", "name: clinic_copy"))
    with one_release_at_a_time(table.target, "clinic"):
        proc = release(wd, "--epsilon", "0.1", data="copy.csv", schema="copy.yaml")
    assert proc.returncode == 2 and "another `dpiw release` of 'clinic_copy'" in proc.stderr, proc.stderr
    # --ledger and --store beat DPIW_LEDGER_URL
    decoy = {"DPIW_LEDGER_URL": str(tmp_path / "decoy.sqlite")}
    proc = release(wd, "--epsilon", "50", "--ledger", store_path(), env=decoy)
    assert f"ledger store {store_path()}" in proc.stdout and "has spent epsilon" in proc.stderr
    shown = subprocess.run(["dpiw", "ledger", "show", "--store", store_path()], cwd=tmp_path, capture_output=True,
                           text=True, env={**os.environ, **decoy})
    assert shown.returncode == 0 and "clinic" in shown.stdout
    assert not (tmp_path / "decoy.sqlite").exists()
    # `dpiw ledger show` anywhere (the store is the user's, not a project folder's)
    assert "clinic, clinic_pq" in sh(["dpiw", "ledger", "show"], tmp_path).stdout


def test_row6_a_project_with_a_store_of_the_earlier_layout_does_not_start_its_tables_again(tmp_path, root):
    """A project folder that kept its own ledgers/ledger.sqlite (before stores were per user): refused with one line
    naming the store and the flag, rather than a fresh budget in the user's store."""
    project = tmp_path / "project"
    (project / "ledgers").mkdir(parents=True)
    (project / "ledgers/ledger.sqlite").write_bytes(b"")
    proc = release(tmp_path, "--epsilon", "1", "--project", str(project), data=root / DATA, schema=root / SCHEMA)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "earlier per-project store" in proc.stderr and "--ledger ledgers/ledger.sqlite" in proc.stderr
    assert not (project / "releases").exists()
