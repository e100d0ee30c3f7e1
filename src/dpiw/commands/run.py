"""Run the workflow (Snakemake) on params.yaml, or on a config laid over it, with its progress line.

Run it from the repository's root (where the Snakefile is). Outputs go to results/<config name>/, the
job logs to logs/<config name>/. Flags after `--` go to Snakemake as they are, e.g.
`dpiw run -- --dry-run` or `dpiw run -- --workflow-profile profiles/slurm`.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
from pathlib import Path

from dpiw import DpiwError


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", help="a config laid over params.yaml (e.g. configs/paper.yaml); none: params.yaml alone")
    p.add_argument("--cores", default="all", help="CPU cores for Snakemake's jobs (a number, or 'all')")
    p.add_argument("snakemake_args", nargs=argparse.REMAINDER,
                   help="after `--`: more flags for Snakemake, passed as they are")


def snakemake(args: list[str], *, cwd: str | Path = ".") -> None:
    """Run Snakemake in the repository at ``cwd``; DpiwError if it is not one or if Snakemake fails."""
    if not (Path(cwd) / "Snakefile").is_file():
        raise DpiwError(f"no Snakefile in {Path(cwd).resolve()}: run dpiw from the repository's root")
    exe = shutil.which("snakemake")
    if exe is None:
        raise DpiwError("snakemake is not on PATH: run `make install` and `source .venv/bin/activate`")
    proc = subprocess.run([exe, *args], cwd=cwd)
    if proc.returncode:
        raise DpiwError(f"snakemake exited with status {proc.returncode} (the failing job's log is shown above)")


def main(args) -> None:
    extra = [a for a in args.snakemake_args if a != "--"]
    if args.config and not Path(args.config).is_file():
        raise DpiwError(f"--config {args.config}: no such file (the configs are in configs/)")
    snakemake(["--cores", str(args.cores), *(["--configfile", args.config] if args.config else []), *extra])
