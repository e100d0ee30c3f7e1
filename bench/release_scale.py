"""`dpiw release` of a 5-column table at growing row counts: wall time and peak memory (the largest process of
the release, from GNU time's maximum resident set size), in a temporary copy of the repository.

The table is the clinic example's rows drawn with replacement and jittered (age +-3 years, bmi +- N(0, 1)),
written in chunks; the release takes every default (MST, weights `auto`, delta `auto`).

    python bench/release_scale.py [--rows 1e5 1e6 1e7]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import yaml
from _workdir import ROOT, copy_repo

CHUNK = 1_000_000


def write_table(path: Path, n: int, rng: np.random.Generator) -> None:
    base = pd.read_csv(ROOT / "data/examples/clinic.csv")
    for start in range(0, n, CHUNK):
        m = min(CHUNK, n - start)
        df = base.iloc[rng.integers(0, len(base), m)].reset_index(drop=True)
        df["age"] = np.clip(df["age"] + rng.integers(-3, 4, m), 18, 90)
        df["bmi"] = np.clip((df["bmi"] + rng.normal(0, 1, m)).round(1), 12, 60)
        df.to_csv(path, mode="w" if start == 0 else "a", header=start == 0, index=False)


def release(wd: Path, n: int) -> dict:
    name = f"rows{n}"
    schema = yaml.safe_load((ROOT / "data/schemas/clinic.yaml").read_text())
    schema.update(name=name, source={"kind": "file", "path": f"{name}.csv"})
    (wd / f"{name}.yaml").write_text(yaml.safe_dump(schema, sort_keys=False))
    write_table(wd / f"{name}.csv", n, np.random.default_rng(n))
    proc = subprocess.run(["/usr/bin/time", "-f", "TIME %e %M", "dpiw", "release", f"{name}.csv", "--schema",
                           f"{name}.yaml", "--epsilon", "1", "--cores", "2"], cwd=wd, capture_output=True, text=True)
    wall, kb = re.search(r"TIME ([\d.]+) (\d+)", proc.stderr).groups()
    verdict = re.search(r"^release +(.*)$", proc.stdout, re.M)
    weights = re.search(r"^dpiw release: weights (\S+):", proc.stdout, re.M)
    return {"rows": n, "exit": proc.returncode, "wall_s": float(wall), "peak_gb": int(kb) / 1e6,
            "weights": weights.group(1) if weights else "?",
            "verdict": (verdict.group(1)[:60] if verdict else proc.stderr.strip().splitlines()[-1][:90])}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", nargs="+", type=float, default=[1e5, 1e6, 1e7])
    args = p.parse_args()
    print("| rows | wall | peak memory | weights | release |\n|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        wd = copy_repo(Path(tmp))
        for n in map(int, args.rows):
            r = release(wd, n)
            print(f"| {r['rows']:,} | {r['wall_s']:.0f} s | {r['peak_gb']:.2f} GB | {r['weights']} | "
                  f"{r['verdict']} (exit {r['exit']}) |", flush=True)


if __name__ == "__main__":
    main()
