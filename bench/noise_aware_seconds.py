"""Seconds to the first noise-aware estimate of a bundle, and to the same estimate in a second Python process.

Writes a 10-column, 6,000-row table (seeded: a lognormal and an integer column among five numeric ones, five
categorical ones with the target), releases it with `dpiw release` at epsilon 3 in a scratch project (the advisor
picks marginal_match weights at this size), then asks the bundle for a subgroup mean with its noise-aware interval
in a fresh Python process, twice: the first builds the bootstrap's replicates, the second finds them in the
cache (``DPIW_CACHE``, the user's cache folder by default).

    python bench/noise_aware_seconds.py [--rows 6000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

SCHEMA = {"name": "tenbench", "task": "classification", "target": "y", "columns": [
    {"name": "kappa", "type": "numeric", "lower": 0, "upper": 50},
    {"name": "age", "type": "numeric", "lower": 0, "upper": 110, "integer": True},
    {"name": "bmi", "type": "numeric", "lower": 10, "upper": 70},
    {"name": "income", "type": "numeric", "lower": 0, "upper": 500000},
    {"name": "visits", "type": "numeric", "lower": 0, "upper": 100, "integer": True},
    {"name": "sex", "type": "categorical", "categories": ["F", "M"]},
    {"name": "region", "type": "categorical", "categories": ["n", "s", "e", "w"]},
    {"name": "smoker", "type": "categorical", "categories": ["no", "yes"]},
    {"name": "plan", "type": "categorical", "categories": ["a", "b", "c"]},
    {"name": "y", "type": "categorical", "categories": ["no", "yes"]}]}

ESTIMATE = ("from dpiw.analysis import load_bundle; import sys; b = load_bundle(sys.argv[1]); "
            "print(b.mean('kappa', where={'smoker': 'yes'}))")


def table(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    smoker = rng.uniform(size=n) < 0.25
    kappa = np.clip(rng.lognormal(0.2 + 0.3 * smoker, 0.7, n), 0, 50)
    age = np.clip(np.rint(rng.normal(55, 14, n)), 0, 110)
    logit = -2 + 0.6 * kappa + 0.03 * (age - 55) + 0.5 * smoker
    return pd.DataFrame({
        "kappa": kappa.round(3), "age": age.astype(int), "bmi": np.clip(rng.normal(27, 5, n), 10, 70).round(1),
        "income": np.clip(rng.lognormal(10.5, 0.6, n), 0, 500000).round(0),
        "visits": np.clip(rng.poisson(3 + 2 * smoker), 0, 100), "sex": rng.choice(["F", "M"], n),
        "region": rng.choice(["n", "s", "e", "w"], n), "smoker": np.where(smoker, "yes", "no"),
        "plan": rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2]),
        "y": np.where(rng.uniform(size=n) < 1 / (1 + np.exp(-logit)), "yes", "no")})


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=6000)
    p.add_argument("--keep", help="release into this folder (kept) instead of a temporary one")
    args = p.parse_args()
    work = Path(args.keep or tempfile.mkdtemp(prefix="dpiw-na-"))
    work.mkdir(parents=True, exist_ok=True)
    table(args.rows).to_csv(work / "ten.csv", index=False)
    (work / "ten.yaml").write_text(yaml.safe_dump(SCHEMA, sort_keys=False))
    # a fresh ledger store and cache: the same rows released before would be the same population (no new release)
    env = {**os.environ, "DPIW_CACHE": str(work / "cache"), "DPIW_HOME": str(work / "home")}
    t0 = time.perf_counter()
    subprocess.run(["dpiw", "release", "ten.csv", "--schema", "ten.yaml", "--epsilon", "3"], cwd=work, env=env,
                   check=True, capture_output=True, text=True)
    print(f"release of {args.rows:,} x 10: {time.perf_counter() - t0:.1f} s")
    bundle = next(work.rglob("release/manifest.json")).parent
    for attempt in ("first (builds the replicates)", "second process (cached replicates)"):
        t0 = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", ESTIMATE, str(bundle)], env=env, check=True,
                             capture_output=True, text=True).stdout.strip()
        print(f"{attempt}: {time.perf_counter() - t0:.1f} s  ->  {out.splitlines()[-1][:100]}")


if __name__ == "__main__":
    main()
