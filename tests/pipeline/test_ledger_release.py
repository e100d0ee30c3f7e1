"""`dpiw release` against the lifetime ledger, as a curator runs it in a fresh clone: two releases of one table
at once (each charged exactly what it asked for, or one refused with one line), a killed release resumed by
running the same command again, a release killed after it drew noise charged its planned spend for good, and bad
input whose errors and logs never show a private value."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest
from helpers import clone, ledger_tables, sh

pytestmark = pytest.mark.slow

SCHEMA = "data/schemas/clinic.yaml"
DATA = "data/examples/clinic.csv"


def release(wd, *flags, data=DATA, schema=SCHEMA, popen=False):
    cmd = ["dpiw", "release", data, "--schema", schema, "--cores", "1", *flags]
    if popen:
        return subprocess.Popen(cmd, cwd=wd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
    return subprocess.run(cmd, cwd=wd, capture_output=True, text=True, timeout=900)


def clinic_ledger(wd) -> dict:
    """The clinic table's ledger, with the lifetime budget of 5 that the module's first test sets; made here by a
    release when no earlier test made it, so that each test runs alone or in any order."""
    if not (Path(os.environ["DPIW_HOME"]) / "ledger.sqlite").exists() or not ledger_tables(wd):
        proc = release(wd, "--epsilon", "0.5", "--dataset-epsilon", "5")
        assert proc.returncode == 0, proc.stderr[-3000:]
    (table,) = ledger_tables(wd)
    return table


def manifest(wd, eps) -> dict:
    (run,) = wd.glob(f"releases/clinic/eps={eps}-*/run/runs/clinic/eps={eps}/seed=0/mst/none/none/manifest.json")
    return json.loads(run.read_text())


@pytest.fixture(scope="module")
def wd(tmp_path_factory):
    return clone(tmp_path_factory.mktemp("ledger") / "repo")


def wait_for_lock(wd, proc, seconds=120) -> None:
    """Until the release holds its population's lock (in the user's dpiw folder, DPIW_HOME)."""
    end = time.time() + seconds
    while time.time() < end:
        locks = list((Path(os.environ["DPIW_HOME"]) / "locks").glob("*.lock"))
        if any(lock.read_text().startswith("pid") for lock in locks) and proc.poll() is None:
            return
        time.sleep(0.2)
    raise AssertionError(f"the first release never took its lock: {proc.poll()}")


def test_two_releases_of_one_table_at_once_one_is_refused_the_other_charged_exactly(wd):
    first = release(wd, "--epsilon", "0.5", "--dataset-epsilon", "5", popen=True)
    wait_for_lock(wd, first)
    second = release(wd, "--epsilon", "0.7")
    assert second.returncode == 2
    err = second.stderr.strip()
    assert err.count("\n") == 0 and "another `dpiw release` of 'clinic' (or of a table charged to its ledger) is " \
        "running (pid" in err, err
    out, err = first.communicate(timeout=900)
    assert first.returncode == 0, err[-3000:]
    assert manifest(wd, "0.5")["spent"]["epsilon"] == pytest.approx(0.5)
    (table,) = ledger_tables(wd)
    assert table["releases"] == 1 and table["lifetime"]["epsilon"] == pytest.approx(0.5)
    # the refused one, run again on its own: charged what it asked for
    again = release(wd, "--epsilon", "0.7")
    assert again.returncode == 0, again.stderr[-3000:]
    assert manifest(wd, "0.7")["spent"]["epsilon"] == pytest.approx(0.7)
    assert "lifetime   epsilon" in again.stdout and "over 2 release(s) of this table" in again.stdout


def test_the_same_bytes_under_another_name_draw_on_the_same_ledger(wd):
    """A copy of the file under a schema named clinic_copy finds the clinic table's ledger: its budget (set by the
    first release), its releases; a flag asking for a larger budget is refused."""
    (wd / "clinic_copy.csv").write_bytes((wd / DATA).read_bytes())
    (wd / "copy.yaml").write_text((wd / SCHEMA).read_text().replace("name: clinic", "name: clinic_copy"))
    before = clinic_ledger(wd)["releases"]
    raised = release(wd, "--epsilon", "0.2", "--dataset-epsilon", "100", data="clinic_copy.csv", schema="copy.yaml")
    assert raised.returncode != 0
    assert "lifetime epsilon is 5 (set in its ledger), not 100" in raised.stdout + raised.stderr
    assert "release refused before anything ran" not in raised.stderr  # the budget flag, not the spend
    assert not (wd / "releases/clinic_copy").exists()  # a refused call leaves no folder and no config behind
    proc = release(wd, "--epsilon", "0.2", data="clinic_copy.csv", schema="copy.yaml")
    assert proc.returncode == 0, proc.stderr[-3000:]
    (table,) = ledger_tables(wd)
    assert table["labels"] == ["clinic", "clinic_copy"] and table["releases"] == before + 1
    assert table["budget"]["epsilon"] == 5
    # the bundle publishes its ledger entry, never the ledger's spend, releases or budget: they count another
    # table's releases, so they would tell that the two tables share rows
    (bundle,) = wd.glob("releases/clinic_copy/*/run/runs/**/release")
    published = json.loads((bundle / "manifest.json").read_text())
    own = json.loads((bundle.parent / "manifest.json").read_text())  # the run's, in the curator's project
    assert set(published["ledger"]) == {"entry", "note"} and published["ledger"]["entry"] == own["ledger"]["entry"]
    assert own["ledger"]["releases"] == before + 1 and own["ledger"]["budget"]["epsilon"] == 5
    assert {k: v for k, v in published.items() if k != "ledger"} == {k: v for k, v in own.items() if k != "ledger"}
    shown = subprocess.run(["dpiw", "show", str(bundle)], cwd=wd, capture_output=True, text=True, check=True).stdout
    assert f"over {before + 1} release(s) of this table" in shown  # the curator's project: the run's ledger block
    alone = wd.parent / "analyst_copy"
    shutil.copytree(bundle, alone)  # the bundle as an analyst gets it
    shown = subprocess.run(["dpiw", "show", str(alone)], capture_output=True, text=True, check=True).stdout
    assert "lifetime   not in a published bundle" in shown and "release(s)" not in shown


def test_a_killed_release_resumes_when_the_same_command_runs_again(wd):
    clinic_ledger(wd)  # the table's ledger and budget, before the release that is killed
    proc = release(wd, "--epsilon", "0.3", popen=True)
    wait_for_lock(wd, proc)
    end = time.time() + 120
    while not list(wd.glob("releases/clinic/eps=0.3-*/logs/run/synthesize/clinic_eps=0.3_*.log")) \
            and proc.poll() is None and time.time() < end:
        time.sleep(0.05)
    assert proc.poll() is None, "the release ended before it could be killed"
    os.killpg(proc.pid, signal.SIGKILL)  # in the synthesize job: after scale, before the ledger's job
    proc.wait()
    before = ledger_tables(wd)[0]["releases"]
    again = release(wd, "--epsilon", "0.3")
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]
    assert "LockException" not in again.stdout + again.stderr
    assert ledger_tables(wd)[0]["releases"] == before + 1


def _killed_after(wd, tmp_path, epsilon: str, record: str, *written: str) -> None:
    """`dpiw release` at ``epsilon``, held once its stage wrote ``record`` (and checked to have written
    ``written``, under the release's run/runs/), then killed with its whole process group (dpiw, Snakemake, the
    stage's job)."""
    proc = subprocess.Popen(["dpiw", "release", DATA, "--schema", SCHEMA, "--cores", "1", "--epsilon", epsilon],
                            cwd=wd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env=_held_after(tmp_path, record))
    end = time.time() + 300
    while not list(wd.glob(f"releases/clinic/eps={epsilon}-*/run/runs/{record}")) and proc.poll() is None \
            and time.time() < end:
        time.sleep(0.1)
    assert proc.poll() is None, proc.communicate()
    for path in written:
        assert list(wd.glob(f"releases/clinic/eps={epsilon}-*/run/runs/{path}")), path
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _held_after(tmp_path, record: str) -> dict:
    """The environment of a release whose stage stops for good right after it renames ``record`` into place (a
    sitecustomize every Python process of the release loads): the test then kills the release there, with the
    stage's output and spend record on disk, as a harvest would find them."""
    hook = tmp_path / "held"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(f"""
import os, time
_replace = os.replace
def replace(src, dst, *args, **kwargs):
    out = _replace(src, dst, *args, **kwargs)
    if str(dst).endswith({record!r}):
        time.sleep(300)
    return out
os.replace = replace
""")
    return {**os.environ, "PYTHONPATH": str(hook)}


def test_a_release_killed_after_it_drew_noise_stays_charged_its_planned_spend(wd, tmp_path):
    """The red-team trial: a release killed once its synthesize stage had written the synthetic rows and its spend
    record (rows one could copy out of the folder) was charged nothing, so killing and starting again drew fresh
    noise for the price of one release. Now its planned spend is charged before the workflow runs and stays charged:
    `dpiw ledger show` says so, the next release's admissible line counts it, and the same command again, which
    would draw the rows again, is charged as a release of its own."""
    from dpiw.privacy import ledger as L
    from dpiw.privacy.store import Store, default_store

    clinic_ledger(wd)
    (before,) = ledger_tables(wd)
    _killed_after(wd, tmp_path, "0.4", "clinic/eps=0.4/seed=0/mst/privacy/synthesize_full.json",
                  "clinic/eps=0.4/seed=0/mst/synth_full.parquet")
    (table,) = ledger_tables(wd)
    assert table["releases"] == before["releases"] and table["interrupted"] == before["interrupted"] + 1
    assert table["lifetime"]["epsilon"] > before["lifetime"]["epsilon"] + 0.1
    shown = sh(["dpiw", "ledger", "show"], wd).stdout
    assert "1 interrupted release(s), charged their planned spend" in shown, shown
    # the next release (another one) counts the killed release's plan
    nxt = release(wd, "--epsilon", "0.15")
    assert nxt.returncode == 0, nxt.stdout[-2000:] + nxt.stderr[-2000:]
    (line,) = [x for x in nxt.stdout.splitlines() if x.startswith("dpiw release: admissible:")]
    assert "(counting 1 earlier release(s) of it that were interrupted, or are still running: a release killed " \
           "after it started is charged its planned spend)" in line, line
    at_most = float(line.split("lifetime epsilon at most ")[1].split(" ")[0])
    store = Store(default_store(), create=False)
    entries = store.atomic(lambda t: t.entries())
    (key,) = {e.dataset for e in entries}  # the module's one ledger: clinic's
    state = L.fold(entries, key)
    assert len(state.reservations) == 1  # the killed one: still open, for good
    counted = state.spent()["epsilon"]  # its releases and the killed one's plan
    alone = L.lifetime(state.mechanisms.values(), state.budget["delta"])["epsilon"]  # its releases only
    assert at_most == pytest.approx(counted, rel=1e-3) and counted > alone + 0.1
    # the same command as the killed one: its rows are drawn again (their run never finished), so it is charged
    # as a release of its own and the killed run's plan stays charged
    again = release(wd, "--epsilon", "0.4")
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]
    assert "wrote out its synthesize stage's output, which this run draws again: it is charged as a release of its " \
           "own (the interrupted run stays charged)" in again.stdout, again.stdout
    (table,) = ledger_tables(wd)
    assert table["releases"] == before["releases"] + 2 and table["interrupted"] == before["interrupted"] + 1


def test_a_release_killed_after_its_rows_were_kept_resumes_charged_once(wd, tmp_path):
    """Killed in its weights stage, after the synthesize stage had finished (its rows and their record kept): the
    same command resumes the release without drawing the rows again, and settles the killed run's reservation,
    so the release is charged once."""
    clinic_ledger(wd)
    (before,) = ledger_tables(wd)
    _killed_after(wd, tmp_path, "0.25", "clinic/eps=0.25/seed=0/mst/none/privacy/fit_weights.json")
    (killed,) = ledger_tables(wd)
    assert killed["interrupted"] == before["interrupted"] + 1
    (rows,) = wd.glob("releases/clinic/eps=0.25-*/run/runs/clinic/eps=0.25/seed=0/mst/synth_full.parquet")
    drawn = rows.read_bytes()
    again = release(wd, "--epsilon", "0.25")
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]
    assert "resuming the interrupted run in that folder: the spend reserved when it started covers it (charged " \
           "once)" in again.stdout, again.stdout
    assert rows.read_bytes() == drawn  # the rows were not drawn again
    (table,) = ledger_tables(wd)
    assert table["releases"] == before["releases"] + 1 and table["interrupted"] == before["interrupted"]
    assert table["lifetime"]["epsilon"] == pytest.approx(killed["lifetime"]["epsilon"], rel=1e-6)  # once


def test_a_release_is_refused_while_its_earlier_bundles_are_missing_from_the_ledger(wd):
    """A deleted (or replaced) store would start the table again at zero: refused, with one line, until the store
    is back."""
    from dpiw.privacy.store import default_store

    store = Path(default_store())
    store.rename(wd / "backup.sqlite")
    try:
        proc = release(wd, "--epsilon", "0.1")
        assert proc.returncode == 2 and proc.stderr.strip().count("\n") == 0, proc.stderr
        assert f"earlier bundle(s) of this project were admitted to a ledger that {store} does not hold" \
            in proc.stderr
        assert not store.exists()
    finally:
        (wd / "backup.sqlite").rename(store)


#: private values planted in the table, each in a column where an error would have quoted it
SENTINELS = {"age": 131.2468, "region": "zq-private-region", "bmi": "zq-private-bmi"}


@pytest.mark.parametrize("column", sorted(SENTINELS))
def test_errors_and_logs_of_bad_input_show_no_private_value(wd, column):
    frame = pd.read_csv(wd / DATA)
    frame[column] = frame[column].astype(object)
    frame.loc[17, column] = SENTINELS[column]
    bad = wd / f"bad_{column}.csv"
    frame.to_csv(bad, index=False)
    # through `dpiw release`: refused before the workflow starts, nothing written
    proc = release(wd, "--epsilon", "1", "--out-of-bounds", "fail", data=str(bad))
    assert proc.returncode == 2 and proc.stderr.strip().count("\n") == 0, proc.stderr
    assert not list(wd.glob("releases/clinic/eps=1-*"))
    # through the workflow on a config (the job logs too)
    schema = (wd / SCHEMA).read_text().replace("path: data/examples/clinic.csv", f"path: {bad.name}")
    assert schema != (wd / SCHEMA).read_text()
    (wd / f"data/schemas/bad_{column}.yaml").write_text(schema.replace("name: clinic", f"name: bad_{column}"))
    (wd / f"bad_{column}.yaml").write_text(
        (wd / "configs/clinic_release.yaml").read_text().replace("datasets: [clinic]", f"datasets: [bad_{column}]"))
    smk = subprocess.run(["snakemake", "--cores", "1", "--configfile", f"bad_{column}.yaml"], cwd=wd,
                         capture_output=True, text=True, timeout=900)
    assert smk.returncode != 0
    logs = [p for p in (wd / "logs" / f"bad_{column}").rglob("*") if p.is_file()]
    assert logs, "the failed job wrote no log"
    texts = [proc.stdout, proc.stderr, smk.stdout, smk.stderr, *(p.read_text(errors="replace") for p in logs)]
    assert any(f"column '{column}'" in t for t in texts)  # the column is named ...
    value = str(SENTINELS[column])
    for token in {value, value[:5], "row 17", "line 19"}:  # ... its value and position are not
        assert not any(token in t for t in texts), token
