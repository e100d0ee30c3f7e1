"""MST's JAX compilation per process, with the persistent compilation cache off, cold and warm.

Since 2026-11-27 an MST tree this small is estimated and sampled in numpy, compiling nothing; the trials set
``dpiw.sdgp.pgm.NUMPY_CELLS = 0`` so that mbi estimates them, as it does a large tree and the noise-aware
bootstrap's refits.

Each trial is a fresh interpreter (as a cell job is) that fits MST on one dataset and samples from it; the
bench prints the CPU seconds of the fit and whether the synthetic rows are the same bytes in every mode.
The cache's keys depend on Python's hash seed (mbi builds its programs from sets), so the workflow's jobs
run with PYTHONHASHSEED=0; the last column shows a warm cache missing under a random hash seed.

    python bench/jax_compile_cache.py [--datasets iris housing] [--repeats 2]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile

TRIAL = r"""
import hashlib, io, json, time, numpy as np
from dpiw.data import load_raw, load_schema
from dpiw.scale import column_bounds, scale_frame
from dpiw.sdgp import pgm
from dpiw.sdgp.mst import MST
pgm.NUMPY_CELLS = 0  # mbi's path, the one that compiles
schema = load_schema("data/schemas/%(dataset)s.yaml")
raw = load_raw(schema)
train = scale_frame(raw, schema, column_bounds(raw, schema, bounds="schema"))
start = time.process_time()
model = MST(bins=8, iters=1000).fit(train, schema, epsilon=1.0, delta=1e-5, rng=np.random.default_rng(0))
fit = time.process_time() - start
rows = model.sample(len(train), rng=np.random.default_rng(1))
buf = io.BytesIO(); rows.to_parquet(buf, index=False)
print(json.dumps({"fit_cpu_s": fit, "digest": hashlib.sha256(buf.getvalue()).hexdigest()[:16]}))
"""


def trial(dataset: str, cache: str, hash_seed: str) -> dict:
    env = {**os.environ, "DPIW_JAX_CACHE": cache, "PYTHONHASHSEED": hash_seed}
    out = subprocess.run([sys.executable, "-c", TRIAL % {"dataset": dataset}], env=env, capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--datasets", nargs="+", default=["iris", "housing"])
    p.add_argument("--repeats", type=int, default=2)
    args = p.parse_args()
    print(f"{'dataset':<10} {'cache off':>10} {'cold':>8} {'warm':>8} {'warm, random hash seed':>24}  same bytes")
    for dataset in args.datasets:
        with tempfile.TemporaryDirectory() as cache:
            off = [trial(dataset, "off", "0") for _ in range(args.repeats)]
            cold = trial(dataset, cache, "0")
            warm = [trial(dataset, cache, "0") for _ in range(args.repeats)]
            seed = str(int(hashlib.sha256(dataset.encode()).hexdigest(), 16) % 2**31 + 1)
            miss = trial(dataset, cache, seed)
        digests = {r["digest"] for r in [*off, cold, *warm, miss]}
        mean = lambda rs: sum(r["fit_cpu_s"] for r in rs) / len(rs)  # noqa: E731
        print(f"{dataset:<10} {mean(off):>9.2f}s {cold['fit_cpu_s']:>7.2f}s {mean(warm):>7.2f}s "
              f"{miss['fit_cpu_s']:>23.2f}s  {len(digests) == 1}")


if __name__ == "__main__":
    main()
