"""The README's main job, timed as a user meets it: a `git clone` of this repository (its committed state),
then the default config (params.yaml) through Snakemake and through DVC. Goals (2 cores): the run at most
5 minutes; `snakemake -n` at most 3 s; `dvc repro` at most 1.5x `snakemake --cores 1`.

    python bench/default_run.py [--skip-cores1] [--skip-dvc]

Prints: the jobs per rule, `snakemake -n` (best of 3, fresh clone, nothing run yet), `snakemake --cores all`,
`snakemake --cores 1` (another clone) and `dvc repro` (another clone; DVC runs `snakemake --cores all`).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def sh(args, cwd) -> tuple[float, str]:
    t = time.perf_counter()
    proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if proc.returncode:
        sys.exit(f"{args} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return wall, proc.stdout + proc.stderr


def clone(tmp: Path, name: str) -> Path:
    wd = tmp / name
    subprocess.run(["git", "clone", "-q", str(ROOT), str(wd)], check=True)
    return wd


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--skip-cores1", action="store_true", help="skip the `snakemake --cores 1` run")
    p.add_argument("--skip-dvc", action="store_true", help="skip the `dvc repro` run")
    args = p.parse_args()
    os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"]
    with tempfile.TemporaryDirectory() as tmp:
        wd = clone(Path(tmp), "smk")
        plans = [sh(["snakemake", "-n"], wd) for _ in range(3)]
        out = plans[0][1]
        jobs = {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", out, re.M)}
        print("jobs:", ", ".join(f"{k} {v}" for k, v in jobs.items()))
        print(f"snakemake -n: {min(w for w, _ in plans):.2f} s (best of 3; goal <= 3 s)")
        t_all, _ = sh(["snakemake", "--cores", "all"], wd)
        print(f"snakemake --cores all: {t_all / 60:.2f} min (goal <= 5 min)")
        t_noop, _ = sh(["snakemake", "--cores", "all"], wd)
        print(f"snakemake --cores all again (nothing to do): {t_noop:.1f} s")
        if not args.skip_cores1:
            t_one, _ = sh(["snakemake", "--cores", "1"], clone(Path(tmp), "one"))
            print(f"snakemake --cores 1: {t_one / 60:.2f} min")
        if not args.skip_dvc:
            t_dvc, _ = sh(["dvc", "repro"], clone(Path(tmp), "dvc"))
            print(f"dvc repro: {t_dvc / 60:.2f} min = {t_dvc / t_all:.2f}x snakemake --cores all"
                  + ("" if args.skip_cores1 else f", {t_dvc / t_one:.2f}x snakemake --cores 1 (goal <= 1.5x)"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
