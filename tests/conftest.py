import os
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
# Subprocesses (snakemake, dvc, `python -m dpiw.stages...`) must find this interpreter's tools.
os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")


@pytest.fixture
def root() -> Path:
    return ROOT


@pytest.fixture
def rng():
    return np.random.default_rng(20260101)
