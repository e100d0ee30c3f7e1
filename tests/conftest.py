import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
# Subprocesses (snakemake, dvc, `python -m dpiw.stages...`) must find this interpreter's tools.
os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")


@pytest.fixture(scope="module", autouse=True)
def dpiw_home(tmp_path_factory):
    """Each test module's own user folder (DPIW_HOME: the default ledger store, its witnesses, the release locks)
    and no shared store from the environment, so that modules never draw on each other's budgets."""
    saved = {k: os.environ.get(k) for k in ("DPIW_HOME", "DPIW_LEDGER_URL")}
    home = tmp_path_factory.mktemp("dpiw-home")
    os.environ["DPIW_HOME"] = str(home)
    os.environ.pop("DPIW_LEDGER_URL", None)
    yield home
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture
def rng():
    return np.random.default_rng(20260101)


sys.path.insert(0, str(ROOT / "tests"))  # tests/helpers.py

# Every `snakemake` start imports snakemake-executor-plugin-slurm, which asks `scontrol show config` for a default
# (2.8.0, at import). Where SLURM is installed but its controller is down (a machine after the SLURM test ran),
# that call waits 9 s for the controller, in every start. The tests' own processes ask a controller that refuses
# at once instead; the SLURM test (tests/cluster) gives its processes the machine's real configuration back.
if "SLURM_CONF" not in os.environ:
    from helpers import NO_SLURM_CONF

    from dpiw.commands.release import LOCAL_SLURM_CONF

    _tmp = NO_SLURM_CONF.with_suffix(f".{os.getpid()}")  # whole, whichever worker writes it
    _tmp.write_text(LOCAL_SLURM_CONF)
    os.replace(_tmp, NO_SLURM_CONF)
    os.environ["SLURM_CONF"] = str(NO_SLURM_CONF)

#: the test modules that take minutes, in the order pytest-xdist's workers start them (`--no-loadscope-reorder`):
#: the SLURM test first (it mostly waits for its jobs, so the other worker's modules fill its time), then the
#: longest, so that the many short modules fill in at the end; every other module keeps its place after them
SLOW_FIRST = ["tests/cluster/test_slurm.py", "tests/pipeline/test_pipeline.py", "tests/pipeline/test_release_mode.py",
              "tests/pipeline/test_ledger_release.py", "tests/pipeline/test_red_team.py",
              "tests/pipeline/test_add_remove.py", "tests/pipeline/test_light_install.py"]


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(Path(item.path).relative_to(ROOT).as_posix(), len(rank)))


@pytest.fixture(scope="session")
def snakemake_run(tmp_path_factory):
    """The tiny grid run locally through Snakemake once per session, and once for all of pytest-xdist's
    workers (pipeline and cluster tests compare against it; none of them writes to it)."""
    from helpers import one_at_a_time, sh, shared_tmp, workdir

    wd = shared_tmp(tmp_path_factory, "smk-tiny-grid")
    with one_at_a_time(f"smk-{wd.parent.name}"):
        if not (wd / ".dpiw-test-done").exists():
            shutil.rmtree(wd, ignore_errors=True)
            wd.mkdir(parents=True)
            sh(["snakemake", "--cores", "2"], workdir(wd))
            (wd / ".dpiw-test-done").touch()
    return wd
