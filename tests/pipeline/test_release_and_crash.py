"""What a run releases (release/ bundles hold no private or test row) and crash safety (a stage killed
with SIGKILL in the middle of writing: the rerun completes with the same bytes and leaves no temp file)."""

import json
import os
import subprocess

import numpy as np
import pandas as pd
import pytest
from helpers import bundle_files, cell_done, sh, workdir

pytestmark = pytest.mark.slow

OUT = "results/default"
CELL = "toy/eps=1/marginals"
RUN = f"{OUT}/runs/toy/eps=1/seed=0/marginals/beta_debiased/calibrate+psis"


def _row_set(df: pd.DataFrame, columns) -> set[tuple]:
    return set(map(tuple, np.round(df[columns].to_numpy(dtype=float), 12)))


def test_benchmark_bundles_hold_only_publishable_files_and_say_not_fit_to_release(snakemake_run):
    wd = snakemake_run
    releases = sorted((wd / OUT / "runs").rglob("release"))
    manifests = sorted(p for p in (wd / OUT / "runs").rglob("manifest.json") if p.parent.name != "release")
    assert len(releases) == len(manifests) == 62
    released = refused = 0
    for rel in releases:
        run_dir = rel.parent
        manifest = json.loads((run_dir / "manifest.json").read_text())
        files = sorted(p.name for p in rel.iterdir())
        if files == ["refused.json"]:
            refused += 1
            why = json.loads((rel / "refused.json").read_text())
            assert why["released"] is False and why["reasons"]
            assert not (manifest["dp"] and manifest["release"]["pareto_k_ok"])
            continue
        released += 1
        # benchmark mode: the bundle is written, and marked NOT fit to release (public seeds, a split of D)
        sdgp, weights = run_dir.parts[-3], run_dir.parts[-2]
        assert files == sorted(["NOT_FOR_RELEASE.txt", *bundle_files(sdgp, weights)]), (rel, files)
        assert "source" not in json.loads((rel / "schema.json").read_text())["schema"]  # where D lives stays out
        assert manifest["dp"] and manifest["mode"] == "benchmark" and not manifest["release"]["fit_to_release"]
        assert manifest["noise_seeds"]["regenerable"] is True
        assert "benchmark mode" in (rel / "NOT_FOR_RELEASE.txt").read_text()
        assert json.loads((rel / "manifest.json").read_text()) == manifest
        assert manifest["spent"]["tightest"]["epsilon"] <= manifest["budget"]["epsilon"] + 1e-9
        # no private (train) or test row appears among the released rows
        dataset, seed = run_dir.parts[-6], run_dir.parts[-4]
        scale_dir = wd / OUT / "private" / dataset / seed
        synth = pd.read_parquet(rel / "synthetic.parquet")
        weights = pd.read_parquet(rel / "weights.parquet")
        assert len(weights) == len(synth) and weights["weight"].mean() == pytest.approx(1.0)
        cols = list(synth.columns)
        released_rows = _row_set(synth, cols)
        for split in ("train", "test"):
            private = pd.read_parquet(scale_dir / f"{split}.parquet")
            assert list(private.columns) == cols
            assert not (released_rows & _row_set(private, cols)), (rel, split)
        # and no released file is a private file in disguise
        for f in rel.glob("*.*"):
            assert f.read_bytes() not in {(scale_dir / s).read_bytes() for s in ("train.parquet", "test.parquet")}
    assert released > 30 and refused >= 9  # non-DP baselines (logreg, cgan) and k-hat failures are refused
    assert not (wd / "ledgers").exists()  # benchmark bundles never enter a dataset's lifetime ledger


def _hook(tmp_path, target: str):
    """A sitecustomize that SIGKILLs the process the first time it renames a file onto ``target`` - i.e.
    after the temp file is written, before it takes its name: `kill -9` mid-write."""
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(f'''
import os, signal
_replace = os.replace
def replace(src, dst, *args, **kwargs):
    if str(dst).endswith({target!r}) and not os.path.exists({str(tmp_path / "killed")!r}):
        open({str(tmp_path / "killed")!r}, "w").close()
        os.kill(os.getpid(), signal.SIGKILL)
    return _replace(src, dst, *args, **kwargs)
os.replace = replace
''')
    return {**os.environ, "PYTHONPATH": str(hook)}


def test_sigkill_mid_write_then_rerun_gives_the_same_bytes(snakemake_run, tmp_path):
    (tmp_path / "wd").mkdir()
    wd = workdir(tmp_path / "wd")
    target = str(cell_done(wd, "privacy_ledger", CELL).relative_to(wd))  # the cell's ledger job
    env = _hook(tmp_path, "beta_debiased/calibrate+psis/log_weights.parquet")
    proc = subprocess.run(["snakemake", "--cores", "2", target], cwd=wd, env=env, capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode != 0 and (tmp_path / "killed").exists(), proc.stderr[-2000:]
    run_dir = wd / RUN
    assert list(run_dir.glob(".log_weights.parquet.*.tmp")), "the kill left its temp file (the test's premise)"
    assert not (run_dir / "log_weights.parquet").exists()
    sh(["snakemake", "--cores", "2", target], wd)
    produced = [p for p in (wd / "results").rglob("*") if p.is_file()]
    assert not [p for p in (wd / "results").rglob("*") if p.name.endswith(".tmp")]
    compared = 0
    for p in produced:
        rel = p.relative_to(wd)
        if p.suffix in (".parquet", ".json"):
            assert p.read_bytes() == (snakemake_run / rel).read_bytes(), rel
            compared += 1
    assert compared >= 10 and any((run_dir / "release").iterdir())
