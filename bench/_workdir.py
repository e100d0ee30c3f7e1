"""A temporary copy of the repository for the benches that run the workflow: its stages import the
copy's code (PYTHONPATH), so editing the checkout meanwhile changes nothing in a running bench."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

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


def run_grid(wd: Path, name: str, config: dict) -> Path:
    """Run `snakemake aggregate --cores 2` in ``wd`` with ``config`` (laid over params.yaml; it names its own
    ``out``) and return its runs table. SystemExit with Snakemake's last words if the run fails."""
    path = wd / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config))
    proc = subprocess.run([SNAKEMAKE, "aggregate", "--cores", "2", "--configfile", str(path)], cwd=wd,
                          capture_output=True, text=True)
    if proc.returncode:
        print(proc.stderr[-3000:], file=sys.stderr)
        raise SystemExit(1)
    return wd / config["out"] / "tables/runs.csv"
