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
from helpers import NO_SLURM_CONF, ROOT, result_files, sh, unavailable, workdir

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
