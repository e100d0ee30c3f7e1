"""Run the workflow (Snakemake) on params.yaml, or on a config laid over it, with its progress line.

It runs in the project folder (--project, default the current directory: the checkout, or a folder of your
own, created on first use). Outputs go to results/<config name>/, the job logs to logs/<config name>/.
Flags after `--` go to Snakemake as they are, e.g. `dpiw run -- --dry-run` or
`dpiw run -- --workflow-profile profiles/slurm`.
"""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path

from dpiw import DpiwError
from dpiw.commands.project import add_argument as add_project_argument


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", help="a config laid over params.yaml (e.g. configs/paper.yaml); none: params.yaml alone")
    p.add_argument("--cores", default="all", help="CPU cores for Snakemake's jobs (a number, or 'all')")
    add_project_argument(p)
    p.add_argument("snakemake_args", nargs=argparse.REMAINDER,
                   help="after `--`: more flags for Snakemake, passed as they are")


def snakemake(args: list[str]) -> None:
    """Run Snakemake on the checkout's workflow in the current directory (a project: dpiw.commands.project);
    DpiwError if Snakemake fails."""
    from dpiw.commands.project import snakefile_args
    from dpiw.commands.snakemake_main import command

    proc = subprocess.run([*command(), *snakefile_args(), *args])
    if proc.returncode:
        raise DpiwError(f"snakemake exited with status {proc.returncode} (the failing job's log is shown above)")


def main(args) -> None:
    from dpiw.commands.project import enter

    extra = [a for a in args.snakemake_args if a != "--"]
    config = Path(args.config).resolve() if args.config else None
    if config and not config.is_file():
        raise DpiwError(f"--config {args.config}: no such file (the configs are in configs/)")
    root = enter(args.project)
    if config:
        config = config.relative_to(root) if root in config.parents else config
    snakemake(["--cores", str(args.cores), *(["--configfile", str(config)] if config else []), *extra])
