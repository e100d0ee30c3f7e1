"""An analyst's install: the package without its pipeline extra, in an empty virtual environment (the versions
of requirements.lock), is at most 1 GB and runs docs/analysis.md's example on a bundle, noise-aware intervals
included, with neither PyTorch, Snakemake nor DVC installed."""

import re
import shutil
import subprocess
import sys

import pytest
from helpers import ROOT, sh

pytestmark = pytest.mark.slow

#: the analyst's install must stay under this (docs/analysis.md gives the measured size)
MAX_MB = 1000


def _size_mb(folder) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink()) / 2**20


def test_the_package_without_the_pipeline_reads_a_bundle_with_noise_aware_intervals(tmp_path):
    curator = tmp_path / "curator"
    curator.mkdir()
    shutil.copy(ROOT / "data/examples/clinic.csv", curator / "clinic.csv")
    shutil.copy(ROOT / "data/schemas/clinic.yaml", curator / "clinic.yaml")
    out = sh(["dpiw", "release", "clinic.csv", "--schema", "clinic.yaml", "--epsilon", "1", "--cores", "1"],
             curator).stdout
    bundle = curator / re.search(r"^bundle\s+(\S+)/", out, re.M).group(1)
    analyst = tmp_path / "analyst"
    shutil.copytree(bundle, analyst / "release")

    env = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", str(env)], check=True)
    package = tmp_path / "package"  # what a source distribution holds (a build in the checkout would leave build/)
    for item in ("src", "pyproject.toml", "README.md", "LICENSE"):
        if (ROOT / item).is_dir():
            shutil.copytree(ROOT / item, package / item, ignore=shutil.ignore_patterns("*.egg-info", "__pycache__"))
        else:
            package.mkdir(exist_ok=True)
            shutil.copy(ROOT / item, package / item)
    pip = subprocess.run([str(env / "bin/pip"), "install", "-q", "-c", str(ROOT / "requirements.lock"), str(package)],
                         capture_output=True, text=True, timeout=1200)
    assert pip.returncode == 0, pip.stderr[-3000:]
    size = _size_mb(env)
    print(f"analyst install: {size:.0f} MB")
    assert size <= MAX_MB, f"{size:.0f} MB"
    listed = subprocess.run([str(env / "bin/pip"), "list", "--format=freeze"], capture_output=True, text=True,
                            check=True).stdout.lower()
    assert not any(f"{name}==" in listed for name in ("torch", "snakemake", "dvc", "psycopg", "opacus"))

    text = (ROOT / "docs/analysis.md").read_text()
    example = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    code = example + "\nprint('intervals:', est.covers)\n"
    proc = subprocess.run([str(env / "bin/python"), "-c", code], cwd=analyst, capture_output=True, text=True,
                          timeout=900, env={"PATH": str(env / "bin"), "HOME": str(tmp_path / "home")})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "DP noise" in proc.stdout.split("intervals:")[-1]  # the noise-aware interval, not the rows' alone
    shown = subprocess.run([str(env / "bin/dpiw"), "show", "release"], cwd=analyst, capture_output=True, text=True,
                           env={"PATH": str(env / "bin"), "HOME": str(tmp_path / "home")})
    assert shown.returncode == 0 and "FIT TO RELEASE" in shown.stdout, shown.stderr
