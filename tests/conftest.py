import os
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


@pytest.fixture(scope="session")
def snakemake_run(tmp_path_factory):
    """The tiny grid run locally through Snakemake once per session (pipeline and cluster tests compare
    against it)."""
    from helpers import sh, workdir

    wd = workdir(tmp_path_factory.mktemp("smk"))
    sh(["snakemake", "--cores", "2"], wd)
    return wd
