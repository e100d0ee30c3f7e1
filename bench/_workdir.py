"""A temporary copy of the repository for the benches that run the workflow: its stages import the
copy's code (PYTHONPATH), so editing the checkout meanwhile changes nothing in a running bench."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).parent / "snakemake")
ITEMS = ("Snakefile", "profiles", "workflow", "data", "src", "configs", "params.yaml")


def copy_repo(wd: Path) -> Path:
    """Copy what the workflow needs into ``wd`` and point this process's PATH and PYTHONPATH at it."""
    for item in ITEMS:
        src = ROOT / item
        if src.is_symlink():
            (wd / item).symlink_to(src.readlink())
        else:
            (shutil.copytree if src.is_dir() else shutil.copy)(src, wd / item)
    # the stages run as `python -m dpiw.stages...`: this interpreter's tools first on PATH
    os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")
    os.environ["PYTHONPATH"] = str(wd / "src")
    return wd
