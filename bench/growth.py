"""How the weights + post-processing + evaluation stages grow with the number of synthetic rows
(issue 9 (c); goal: 1e6 / 1e5 <= 12x). Toy data (N_D = 1000 private rows); the synthetic rows are drawn
uniformly on the unit square (the `uniform` SDGP); each stage runs as the pipeline runs it
(`python -m dpiw.stages.<name>`), one BLAS thread, wall time of one run per size.

    python bench/growth.py [--sizes 10000 100000 1000000] [--weights beta_debiased] [--post psis]
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

ROOT = Path(__file__).resolve().parents[1]


def run(stage: str, args: list[str], cwd: Path) -> float:
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", f"dpiw.stages.{stage}", *args], cwd=cwd, capture_output=True,
                          text=True)
    if proc.returncode:
        raise SystemExit(f"{stage} failed: {proc.stderr}")
    return time.perf_counter() - t


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    p.add_argument("--weights", default="beta_debiased")
    p.add_argument("--post", default="psis")
    args = p.parse_args()
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    schema = str(ROOT / "data/schemas/toy.yaml")
    budget = ["--delta", "paper", "--weights-epsilon-fraction", "0.1", "--weights-delta-fraction", "0.3"]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        run("scale", ["--schema", schema, "--dataset", "toy", "--seed", "0", "--test-fraction", "0.2",
                      "--public-fraction", "0.1", "--bounds", "schema", "--n-rows", "1250", "--data-seed", "2022",
                      "--train-out", "train.parquet", "--test-out", "test.parquet", "--public-out", "public.parquet",
                      "--privacy-out", "scale.json"], d)
        for n in args.sizes:
            u = np.random.default_rng(n).uniform(size=(n, 2))
            pd.DataFrame({"x1": u[:, 0], "x2": u[:, 1]}).to_parquet(d / "synth.parquet", index=False)
            t_w = run("fit_weights", ["--real", "train.parquet", "--synth", "synth.parquet", "--public",
                                      "public.parquet", "--schema", schema, "--method", args.weights, "--dataset",
                                      "toy", "--sdgp", "uniform", "--epsilon", "1", *budget, "--lambda", "auto",
                                      "--sensitivity-n", "private", "--seed", "0", "--out", "lr.parquet",
                                      "--public-out", "plr.parquet", "--privacy-out", "w.json"], d)
            t_p = run("postprocess_weights", ["--log-ratios", "lr.parquet", "--post", args.post, "--out",
                                              "lw.parquet", "--privacy-out", "post.json"], d)
            t_e = run("evaluate", ["--synth", "synth.parquet", "--log-weights", "lw.parquet", "--test",
                                   "test.parquet", "--schema", schema, "--dataset", "toy", "--eps", "1", "--seed",
                                   "0", "--sdgp", "uniform", "--weights", args.weights, "--post", args.post,
                                   "--out", "m.json", "--privacy-out", "e.json"], d)
            rows.append((n, t_w, t_p, t_e, t_w + t_p + t_e))
            print(f"{n:>9} rows: fit_weights {t_w:7.2f} s, postprocess {t_p:6.2f} s, evaluate {t_e:7.2f} s, "
                  f"total {t_w + t_p + t_e:7.2f} s", flush=True)
    print("\n| synthetic rows | fit_weights s | postprocess s | evaluate s | total s | x previous |")
    print("|---|---|---|---|---|---|")
    prev = None
    for n, a, b, c, tot in rows:
        print(f"| {n:,} | {a:.2f} | {b:.2f} | {c:.2f} | {tot:.2f} | {'-' if prev is None else f'{tot / prev:.1f}x'} |")
        prev = tot
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
