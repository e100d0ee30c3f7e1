"""WST of PrivBayes against the Laplace marginals (independent and naive-Bayes), no weights, at the
params.yaml settings, mean over seeds. Reads the scaled splits under results/default/private/ (run the
default config first).

    python bench/privbayes_vs_marginals.py [--params params.yaml] [--seeds 0 1 2] [--eps 1 6]
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
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--eps", type=float, nargs="+", default=[1.0, 6.0])
    args = p.parse_args()
    from dpiw.data import load_schema
    from dpiw.data.encode import encode
    from dpiw.evaluate.metrics import weighted_wasserstein
    from dpiw.io import read_parquet
    from dpiw.planning.config import load_yaml
    from dpiw.privacy.spend import paper_delta
    from dpiw.sdgp import make_sdgp

    params = load_yaml(args.params)
    makers = {"privbayes": lambda: make_sdgp("privbayes", **params["sdgp"]["privbayes"]),
              "independent": lambda: make_sdgp("marginals", bins=params["sdgp"]["marginals"]["bins"],
                                               structure="independent"),
              "naive_bayes": lambda: make_sdgp("marginals", bins=params["sdgp"]["marginals"]["bins"],
                                               structure="naive_bayes")}
    print("dataset  eps   " + "  ".join(f"{m:>12}" for m in makers) + "   (WST, mean over seeds; privbayes s/fit)")
    for ds in params["grid"]["datasets"]:
        schema = load_schema(ROOT / f"data/schemas/{ds}.yaml")
        for eps in args.eps:
            row, secs = [], []
            for name, make in makers.items():
                ws = []
                for seed in args.seeds:
                    base = ROOT / f"results/default/private/{ds}/seed={seed}"
                    if not (base / "train.parquet").exists():
                        print(f"{base}/train.parquet missing; run the pipeline first", file=sys.stderr)
                        return 1
                    train = read_parquet(base / "train.parquet", columns=schema.names)
                    test = read_parquet(base / "test.parquet", columns=schema.names)
                    t = time.perf_counter()
                    gen = make().fit(train, schema, epsilon=eps, delta=paper_delta(len(train)),
                                     rng=np.random.default_rng(seed))
                    if name == "privbayes":
                        secs.append(time.perf_counter() - t)
                    synth = gen.sample(len(train), rng=np.random.default_rng(seed + 1000))
                    ws.append(weighted_wasserstein(encode(synth, schema), np.ones(len(synth)), encode(test, schema)))
                row.append(np.mean(ws))
            print(f"{ds:8} {eps:4g}  " + "  ".join(f"{v:12.3f}" for v in row) + f"   {np.mean(secs):.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
