"""One AIM round's Private-PGM estimate: numpy (dpiw.sdgp.mirror_descent, nothing compiled) against mbi (one XLA
program per set of cliques, compiled in the round), by the size of the model's junction tree.

The models are chains of triples (0, 1, 2), (1, 2, 3), ... over columns of k cells, measured with Gaussian
noise from a random table, with each triple's one-way marginals; every estimate runs ``--iters`` steps from
scratch in a fresh set of cliques (mbi compiles, as in an AIM round whose pick is new). Printed per size: the
seconds of each and the largest gap between their marginals. This set dpiw.sdgp.pgm.NUMPY_CELLS (at 500 steps;
pgm.numpy_cells scales it to a fit's steps).

    python bench/aim_rounds.py [--iters 500] [--sizes 4:6 8:6 16:8 24:10 32:10]
"""

from __future__ import annotations

import argparse
import math
import os
import time

import numpy as np

os.environ.setdefault("DPIW_JAX_CACHE", "off")  # every compilation counted, as in a round with a new pick


def problem(k: int, d: int, rng: np.random.Generator):
    cards = [k] * d
    triples = [(j, j + 1, j + 2) for j in range(d - 2)]
    n = 100_000.0
    out = [((j,), rng.multinomial(int(n), np.ones(k) / k).astype(float), 10.0) for j in range(d)]
    for cl in triples:
        p = rng.dirichlet(np.ones(k**3))
        out.append((cl, p * n + rng.normal(0, 10.0, p.size), 10.0))
    return cards, out, n, triples


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--iters", type=int, default=500)
    p.add_argument("--sizes", nargs="+", default=["4:6", "8:6", "16:8", "24:10", "32:10"],
                   help="k:d, k cells per column, d columns")
    args = p.parse_args()
    from dpiw.sdgp import mirror_descent as md
    from dpiw.sdgp.aim import PGMModel, model_size_mb
    from dpiw.sdgp.pgm import estimate, mbi_module

    mbi = mbi_module()
    rng = np.random.default_rng(0)
    print("| tree cells | numpy s | mbi s (compiling) | largest gap between their marginals, in counts |")
    print("|---|---|---|---|")
    for size in args.sizes:
        k, d = map(int, size.split(":"))
        cards, ms, n, triples = problem(k, d, rng)
        cells = model_size_mb(cards, triples) * 2**20 / 8
        t = time.perf_counter()
        a = md.estimate(mbi, cards, ms, total=n, iters=args.iters)
        t_np = time.perf_counter() - t
        t = time.perf_counter()
        b = PGMModel(estimate(mbi, cards, ms, total=n, iters=args.iters))
        t_mbi = time.perf_counter() - t
        gap = max(float(np.abs(b.marginal(cl) - a.mu[cl].ravel()).max()) for cl in a.mu)
        print(f"| {math.ceil(cells):,} | {t_np:.2f} | {t_mbi:.2f} | {gap:.2g} |", flush=True)


if __name__ == "__main__":
    main()
