"""The tiny grid submitted through a real SLURM (snakemake-executor-plugin-slurm, workflow profile
profiles/slurm) gives the same artifacts as the local run.

The fixture starts a single-node cluster with tests/cluster/start_slurm.sh (installs slurm-wlm and munge
with apt when missing); without root or apt-get, or when the install fails, the test is skipped with that
reason, and fails under DPIW_CI_STRICT=1 (as .ci/run sets it).
"""

import os
import re
import shutil
import subprocess

import pytest
from helpers import NO_SLURM_CONF, ROOT, one_at_a_time, result_files, sh, unavailable, workdir

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

START = ROOT / "tests/cluster/start_slurm.sh"
# this cluster has no accounting database: sacct cannot report, squeue can (MinJobAge = 300 s)
NO_ACCOUNTING = ["--slurm-status-command", "squeue", "--slurm-no-account"]


@pytest.fixture(scope="module")
def slurm():
    # the machine's own SLURM configuration, not the refusing one the other tests' processes get (conftest.py)
    saved = os.environ.get("SLURM_CONF")
    if saved == str(NO_SLURM_CONF):
        del os.environ["SLURM_CONF"]
    try:
        yield _start()
    finally:
        if saved is not None:
            os.environ["SLURM_CONF"] = saved


def _start() -> str:
    if os.geteuid() != 0:
        unavailable("SLURM test needs root: munged, slurmctld and slurmd are started by hand")
    if not shutil.which("sbatch") and not shutil.which("apt-get"):
        unavailable("SLURM test needs slurm-wlm installed or apt-get to install it")
    # the script may install slurm-wlm with apt-get: under the lock the PostgreSQL and Chromium installs take, or
    # one of them fails at once on dpkg's lock (a fresh CI machine installs all three)
    with one_at_a_time("apt"):
        proc = subprocess.run([str(START)], capture_output=True, text=True, timeout=600)
    if proc.returncode == 3:
        unavailable(f"SLURM not available: {proc.stderr.strip()}")
    assert proc.returncode == 0, f"start_slurm.sh failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout.strip()


def test_tiny_grid_through_slurm_equals_local_run(slurm, snakemake_run, tmp_path):
    wd = workdir(tmp_path)
    # --cores 2: a group job asks for at most this node's 2 CPUs (its parallel layers are stacked instead)
    out = sh(["snakemake", "--workflow-profile", "profiles/slurm", *NO_ACCOUNTING, "--cores", "2"], wd, timeout=1500)
    # the console shows a progress line (logger plugin dpiw); Snakemake's log file holds every message
    log = "".join(p.read_text() for p in sorted((wd / ".snakemake/log").glob("*.snakemake.log")))
    assert "51/51 jobs (100%)" in out.stdout + out.stderr
    submitted = re.findall(r"has been submitted with SLURM jobid (\d+)", log)
    assert submitted, log[-3000:]
    # small stage jobs travel in groups: far fewer SLURM jobs than Snakemake jobs
    n_jobs = int(re.search(r"^total\s+(\d+)$", log, re.M).group(1))
    assert len(submitted) < n_jobs / 2, (len(submitted), n_jobs)
    local, cluster = result_files(snakemake_run), result_files(wd)
    assert sorted(cluster) == sorted(local)
    differ = [rel for rel in local if cluster[rel] != local[rel]]
    assert not differ, differ[:20]
    assert (wd / "results/default/report.html").is_file()


def test_dask_workers_started_as_slurm_jobs_give_the_local_counts(slurm, tmp_path):
    """``--engine dask=slurm:2``: a Dask scheduler in this process and two workers submitted through SLURM
    (dask-jobqueue); they count a hive-partitioned parquet folder, and the count tables are the local ones."""
    import itertools

    import numpy as np
    import pyarrow as pa
    import pyarrow.dataset as ds

    from dpiw.data.schema import parse_schema
    from dpiw.sdgp.counting import PartitionedCounter
    from dpiw.sdgp.engines import dask_client, open_counter

    schema = parse_schema({"name": "w", "task": "classification", "target": "y", "columns": [
        {"name": "x", "type": "numeric", "lower": 0, "upper": 1},
        {"name": "a", "type": "categorical", "categories": ["p", "q", "r"]},
        {"name": "y", "type": "categorical", "categories": ["no", "yes"]}]})
    rng = np.random.default_rng(0)
    rows = pa.table({"x": rng.uniform(size=3000), "a": rng.integers(0, 3, 3000), "y": rng.integers(0, 2, 3000)})
    ds.write_dataset(rows, tmp_path / "d", format="parquet", max_rows_per_file=500, max_rows_per_group=500,
                     partitioning=ds.partitioning(pa.schema([("a", pa.int64())]), flavor="hive"))
    cliques = [(0,), (1,), (2,), *itertools.combinations(range(3), 2)]
    local = PartitionedCounter(tmp_path / "d", schema, 8).counts(cliques)
    from dpiw.sdgp import engines

    try:
        got = open_counter(tmp_path / "d", schema, 8, "dask=slurm:2").counts(cliques)
        assert all(np.array_equal(local[cl], got[cl]) for cl in cliques)
        client = dask_client("slurm:2")
        assert len(client.scheduler_info()["workers"]) == 2
        jobs = sh(["squeue", "-h", "-n", "dpiw-dask-worker", "-o", "%i %T"], tmp_path).stdout.split("\n")
        assert sum("RUNNING" in j for j in jobs) == 2, jobs
        assert not list(ROOT.glob("slurm-*.out")) and not list(tmp_path.glob("slurm-*.out"))  # logs kept apart
    finally:
        client = engines._CLIENTS.pop("slurm:2", None)
        if client is not None:
            client.close()
            client.cluster.close()  # cancels the worker jobs
