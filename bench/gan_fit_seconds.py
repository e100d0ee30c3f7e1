"""Seconds per GAN fit (training only, one thread) at the default params.yaml settings, per dataset and
generator, and the one-off import cost of torch + opacus that every GAN job pays on top.

    python bench/gan_fit_seconds.py [--params params.yaml] [--eps 1] [--seed 0]

Reads the scaled splits under results/default/private/ (run the default config, or at least its scale jobs,
first).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--params", default=str(ROOT / "params.yaml"))
    p.add_argument("--eps", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()

    t0 = time.perf_counter()
    import opacus  # noqa: F401
    import torch

    t_import = time.perf_counter() - t0
    torch.set_num_threads(1)
    from dpiw.data import load_schema
    from dpiw.io import read_parquet
    from dpiw.planning.config import load_yaml
    from dpiw.planning.grid import GAN_KEYS
    from dpiw.privacy.spend import paper_delta
    from dpiw.sdgp import GAN_SDGPS, make_sdgp

    params = load_yaml(args.params)
    gan = {k: params["sdgp"]["gan"][k] for k in GAN_KEYS}
    print(f"import torch + opacus: {t_import:.2f} s (once per GAN job)")
    print(f"{'dataset':8} {'N_D':>5} " + " ".join(f"{g:>8}" for g in GAN_SDGPS) + "   (seconds per fit)")
    for ds in params["grid"]["datasets"]:
        schema = load_schema(ROOT / f"data/schemas/{ds}.yaml")
        path = ROOT / f"results/default/private/{ds}/seed={args.seed}/train.parquet"
        if not path.exists():
            print(f"{ds}: {path} missing; run the pipeline first", file=sys.stderr)
            continue
        train = read_parquet(path, columns=schema.names)
        cells = []
        for g in GAN_SDGPS:
            sdgp = make_sdgp(g, **gan, progress=False)
            t = time.perf_counter()
            sdgp.fit(train, schema, epsilon=args.eps, delta=paper_delta(len(train)), rng=np.random.default_rng(0))
            cells.append(time.perf_counter() - t)
        print(f"{ds:8} {len(train):5d} " + " ".join(f"{c:8.2f}" for c in cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
