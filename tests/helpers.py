"""Helpers shared by the tests: a fresh copy of what a clone holds and a subprocess call that shows its output
when it fails (the workflow tests), and random rows on a schema's scaled domain (the method tests)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "tests/pipeline/params.tiny.yaml"
#: set to 1 by .ci/run: there a tool the suite installs (PostgreSQL, Chromium, SLURM) must be had, and a test that
#: would skip for want of it fails instead
STRICT_ENV = "DPIW_CI_STRICT"


#: the SLURM configuration the tests' processes get (tests/conftest.py): dpiw release's own, whose controller
#: refuses at once; the SLURM test gives its processes the machine's real one back
NO_SLURM_CONF = Path(tempfile.gettempdir()) / "dpiw-tests-no-slurm-controller.conf"


def one_at_a_time(name: str):
    """A lock that every test process on this machine shares (pytest-xdist's workers): apt's installs, and a
    fixture that is built once for all of them."""
    from filelock import FileLock

    return FileLock(os.path.join(tempfile.gettempdir(), f"dpiw-tests-{name}.lock"))


#: apt-get waits this long for a dpkg lock held outside the tests (an unattended upgrade) rather than failing at once
APT_WAIT = ["-o", "DPkg::Lock::Timeout=600"]


def apt_install(*packages: str, recommends: bool = False) -> str | None:
    """Install Debian ``packages`` with apt-get: None, or the failing command's own error. The caller holds
    ``one_at_a_time("apt")``: a second apt-get on the machine fails at once on dpkg's lock (exit 100), which is how
    the SLURM test once lost its cluster on a fresh CI machine while PostgreSQL was being installed."""
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", *APT_WAIT, "install", "-y", "-q", *([] if recommends else ["--no-install-recommends"]),
               *packages]
    proc = subprocess.run(install, capture_output=True, text=True, env=env, timeout=900)
    if proc.returncode:  # a stale or missing package list: update, then once more
        for cmd in (["apt-get", *APT_WAIT, "update", "-q"], install):
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
            if proc.returncode:
                return f"`{' '.join(cmd)}` failed ({proc.returncode}): {proc.stderr.strip()[-300:]}"
    return None


def shared_tmp(tmp_path_factory, name: str) -> Path:
    """A folder under the base temporary folder that pytest-xdist's workers share (the session's own folder
    without workers): a fixture built there once serves every worker."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    return base / name


def unavailable(reason: str):
    """Skip the test for want of ``reason``'s tool; under DPIW_CI_STRICT=1 (CI) fail with that reason instead."""
    if os.environ.get(STRICT_ENV) == "1":
        pytest.fail(f"{reason} ({STRICT_ENV}=1: CI must have it, a skip would hide the test)", pytrace=False)
    pytest.skip(reason)


def sh(args, cwd, check=True, timeout=900, env=None):
    proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    if check and proc.returncode != 0:
        raise AssertionError(f"{args} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


def workdir(tmp: Path, params: Path | dict = TINY) -> Path:
    """A fresh copy of what a clone holds (the package itself is installed editable)."""
    for item in ("Snakefile", "profiles", "workflow", "data", "src", "configs"):
        src = ROOT / item
        if src.is_symlink():
            (tmp / item).symlink_to(src.readlink())
        else:
            (shutil.copytree if src.is_dir() else shutil.copy)(src, tmp / item)
    if isinstance(params, dict):
        (tmp / "params.yaml").write_text(yaml.safe_dump(params))
    else:
        shutil.copy(params, tmp / "params.yaml")
    return tmp


def result_files(wd: Path) -> dict[str, bytes]:
    """Every artifact under results/ that a rerun must reproduce byte for byte (parquet and JSON)."""
    return {str(p.relative_to(wd)): p.read_bytes() for p in sorted((wd / "results").rglob("*"))
            if p.suffix in (".parquet", ".json")}


def clone(tmp: Path) -> Path:
    """What a user has after `git clone`: the repository with its real .gitignore. Tracked files edited
    but not committed, and new files git does not ignore, are laid over it (a developer's run sees the
    working tree; in CI, on a fresh clone, there are none)."""
    sh(["git", "clone", "-q", str(ROOT), str(tmp)], ROOT.parent)
    # against HEAD: staged and unstaged edits alike; then the files git does not know and does not ignore
    deleted = sh(["git", "diff", "HEAD", "--name-only", "--no-renames", "--diff-filter=D"], ROOT).stdout.split()
    changed = sh(["git", "diff", "HEAD", "--name-only", "--no-renames", "--diff-filter=d"], ROOT).stdout.split()
    changed += sh(["git", "ls-files", "--others", "--exclude-standard"], ROOT).stdout.split()
    for rel in deleted:
        (tmp / rel).unlink(missing_ok=True)
    for rel in changed:
        (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, tmp / rel)
    return tmp


def cell_done(wd: Path, stage: str, cell_id: str, out: str = "results/default") -> Path:
    """The record file a cell job of ``stage`` writes under the config in ``wd``/params.yaml (its name holds
    the digest of the cell's runs, dpiw.planning.grid.cell_digest)."""
    from dpiw.planning import grid

    config = yaml.safe_load((wd / "params.yaml").read_text())
    cell = grid.parse_cell(cell_id)
    tasks = grid.plan(config, stage, cell, out)
    return wd / grid.fmt(grid.under(out, grid.CELL_DONE), **cell.keys(), stage=stage, digest=grid.cell_digest(tasks))


def random_frame(schema, n: int, seed: int = 0):
    """n rows drawn uniformly on the schema's scaled domain: numeric columns in [0, 1], categories as codes."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    return pd.DataFrame({c.name: (rng.uniform(size=n) if c.is_numeric else rng.integers(len(c.categories), size=n))
                         for c in schema.columns})


def ledger_tables(wd: Path) -> list[dict]:
    """Every table of the user's ledger store (the default one: DPIW_HOME, one per test module), after
    `dpiw ledger verify` (the command a curator runs) has checked its chain and its witness."""
    from dpiw.privacy.ledger import verify
    from dpiw.privacy.store import Store, default_store

    proc = sh(["dpiw", "ledger", "verify"], wd)
    assert "chain intact" in proc.stdout, proc.stdout
    return verify(Store(default_store(), create=False))["tables"]


def bundle_files(sdgp: str, weights: str) -> list[str]:
    """The files of a written bundle (sorted): the rows, weights, manifest, schema and datasheet, and the noisy
    measurements after a marginal generator (MST, AIM) or marginal_match (benchmark bundles add NOT_FOR_RELEASE.txt)."""
    from dpiw import registry

    measured = registry.sdgp(sdgp).zcdp or registry.weight_method(weights).family == "marginal"
    return sorted(["datasheet.html", "manifest.json", "schema.json", "synthetic.parquet", "weights.parquet",
                   *(["measurements.json"] if measured else [])])


def dp_sgd_epsilon(noise_multiplier: float, sample_rate: float, steps: int, delta: float, *,
                   accountant: str = "rdp") -> float:
    """The add/remove epsilon of ``steps`` Poisson-subsampled Gaussian steps by Google's dp-accounting, an
    accountant independent of opacus (its own RDP orders and conversion, or its PLD accountant)."""
    import dp_accounting

    event = dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(sample_rate, dp_accounting.GaussianDpEvent(noise_multiplier)), steps)
    acc = (dp_accounting.rdp.RdpAccountant() if accountant == "rdp"
           else dp_accounting.pld.PLDAccountant(value_discretization_interval=1e-4))
    return float(acc.compose(event).get_epsilon(delta))


def assert_dp_sgd_bracket(noise_multiplier: float, sample_rate: float, steps: int, epsilon: float, delta: float):
    """The noise multiplier meets the add/remove (epsilon, delta) target, by dp-accounting, and is nearly the
    smallest that does: eps(sigma) <= target < eps(0.98 sigma), and eps(sigma) within the search's tolerance of
    0.01 below the target. (opacus's search stops within 0.01 of epsilon, absolute: at a target of 0.5 sigma may be
    1.2% above the smallest, so 0.99 sigma may still meet it.)"""
    met = dp_sgd_epsilon(noise_multiplier, sample_rate, steps, delta)
    less = dp_sgd_epsilon(0.98 * noise_multiplier, sample_rate, steps, delta)
    assert epsilon - 0.01 <= met <= epsilon * (1 + 1e-6) and less > epsilon, (noise_multiplier, met, less, epsilon)


def tilted_release(centre: float, sd: float, cuts, seed: int = 3):
    """A column with a bell-shaped density on 64 fine cells of [0, 1] (centred at ``centre``, spread ``sd``), coarse
    bins at ``cuts``, and a subgroup S whose share grows with the column (logit -3 + 6 t); 400,000 rows released
    as the generator does (a bin, then a value from the fine histogram inside it). Returns (nb, x, s, error):
    the bins, the released scaled values, who is in S, and ``error(g)``, the release's exact error (from the
    model) of the mean of ``g(t)`` within S."""
    import numpy as np

    from dpiw.sdgp.binning import FineGrid, NumericBins

    rng = np.random.default_rng(seed)
    t = (np.arange(64_000) + 0.5) / 64_000
    dens = np.exp(-((t - centre) ** 2) / (2 * sd**2))
    dens /= dens.sum()
    nb = NumericBins(FineGrid(64, 64), np.asarray(cuts), np.add.reduceat(dens, np.arange(0, t.size, 1000)))
    p_s = 1 / (1 + np.exp(-(-3.0 + 6.0 * t)))
    b_of_t = nb.cells(t)
    in_bin = np.maximum(np.bincount(b_of_t, weights=dens), 1e-300)
    p_bin = np.bincount(b_of_t, weights=dens * p_s) / in_bin
    mass = nb.coarse(nb.fine)
    cell = rng.choice(len(mass), 400_000, p=mass / mass.sum())
    x = nb.values(cell, rng)
    s = rng.uniform(size=len(x)) < p_bin[cell]
    p_b_s = mass * p_bin / (mass * p_bin).sum()

    def error(g):
        return float(p_b_s @ (np.bincount(b_of_t, weights=dens * g(t)) / in_bin)
                     - (g(t) * dens * p_s).sum() / (dens * p_s).sum())

    return nb, x, s, error
