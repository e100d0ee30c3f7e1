"""Per-job overhead of the pipeline's non-torch stages against a bare interpreter (issue 9 (a); goal:
<= 0.5 s over `python -c pass`), and the time Snakemake needs to plan the default grid (issue 9 (d)).

Each stage is run as the pipeline runs it (`python -m dpiw.stages.<name> ...`) on the toy data, after a
small setup in a temporary folder; the wall time is the median of --repeats runs. One BLAS thread.

    python bench/stage_overhead.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def timed(cmd: list[str], cwd: Path, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        subprocess.run(cmd, cwd=cwd, check=True, capture_output=True)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args()
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    py = sys.executable
    schema = str(ROOT / "data/schemas/toy.yaml")
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        budget = ["--delta", "paper", "--weights-epsilon-fraction", "0.1", "--weights-delta-fraction", "0.3"]
        stages = {
            "scale": ["--schema", schema, "--dataset", "toy", "--seed", "0", "--test-fraction", "0.2",
                      "--public-fraction", "0.1", "--bounds", "schema", "--n-rows", "1250", "--data-seed", "2022",
                      "--train-out", "train.parquet", "--test-out", "test.parquet", "--public-out", "public.parquet",
                      "--privacy-out", "scale.json"],
            "synthesize": ["--train", "train.parquet", "--schema", schema, "--sdgp", "marginals", "--epsilon", "1",
                           "--share", "split", *budget, "--seed", "0", "--bins", "20", "--structure", "naive_bayes",
                           "--out", "synth.parquet", "--privacy-out", "synth.json"],
            "fit_weights": ["--real", "train.parquet", "--synth", "synth.parquet", "--public", "public.parquet",
                            "--schema", schema, "--method", "beta_debiased", "--dataset", "toy", "--sdgp",
                            "marginals", "--epsilon", "1", *budget, "--lambda", "auto", "--sensitivity-n", "private",
                            "--seed", "0", "--out", "lr.parquet", "--public-out", "plr.parquet",
                            "--privacy-out", "w.json"],
            "postprocess_weights": ["--log-ratios", "lr.parquet", "--post", "psis", "--out", "lw.parquet",
                                    "--privacy-out", "post.json"],
            "evaluate": ["--synth", "synth.parquet", "--log-weights", "lw.parquet", "--test", "test.parquet",
                         "--schema", schema, "--dataset", "toy", "--eps", "1", "--seed", "0", "--sdgp", "marginals",
                         "--weights", "beta_debiased", "--post", "psis", "--out", "m.json", "--privacy-out", "e.json"],
            "privacy_ledger": ["--records", "scale.json", "synth.json", "w.json", "post.json", "--epsilon", "1",
                               "--delta", "paper", "--allow-non-dp", "false", "--run", "r", "--out", "manifest.json"],
        }
        base = timed([py, "-c", "pass"], d, args.repeats)
        print(f"python -c pass: {base:.3f} s (median of {args.repeats})")
        print(f"{'stage':22s} {'wall s':>8s} {'over bare python s':>20s}")
        for name, stage_args in stages.items():
            wall = timed([py, "-m", f"dpiw.stages.{name}", *stage_args], d, args.repeats)
            print(f"{name:22s} {wall:8.3f} {wall - base:20.3f}")
    snakemake = str(Path(py).with_name("snakemake"))
    t = time.perf_counter()
    out = subprocess.run([snakemake, "-n", "--forceall", "--quiet", "all"], cwd=ROOT, capture_output=True, text=True)
    plan = time.perf_counter() - t
    print(f"snakemake -n --forceall on params.yaml: {plan:.1f} s (exit {out.returncode})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
