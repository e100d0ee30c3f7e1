"""How the bins' bias of a subgroup's mean (`dpiw.analysis.bin_bias.within_bin_bias`) should model P(S | x) inside
the bins: linear in log P or in logit P between the bins' centres, flat or continuing the end slopes past the first
and last centres. Today: log, flat.

Rows as the release makes them from an exact model of (bin, S), as tests/unit/test_bin_bias.py builds them: the bin
by its mass, S by P(S | bin), x from the column's fine histogram inside the bin, independent of S given the bin;
the exact error of the release's mean within S is sum_b P(b | S) E[x | b] - E[x | S]. Each case: a density of x
on [0, 1] (64 fine cells), a shape of P(S | x), and 8 bins (the test's, narrow where the rows are, or of equal
mass, whose last bin is wide on a skewed column, as a release cuts them). 400,000 rows per case.

The rule, named before the run: among the cases whose exact error is at least 0.002 (a fifth of a fine cell), a
variant replaces log-flat if its estimate is within 75-125% of the error in more cases than log-flat's, and it is
below 50% or above 150% in no more cases than log-flat's; a tie keeps log-flat.

    python bench/tilt_ends.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

CELLS = 64
DENSITIES = {"skewed": lambda t: 2 * (1 - t), "uniform": lambda t: np.ones_like(t),
             "lognormal-like": lambda t: np.exp(-6 * t)}
SHAPES = {
    "logistic": lambda x: 1 / (1 + np.exp(-(-2.0 + 4.0 * x))),
    "steep logistic": lambda x: 1 / (1 + np.exp(-(-3.0 + 8.0 * x))),
    "falling logistic": lambda x: 1 / (1 + np.exp(-(2.0 - 4.0 * x))),
    "rare, log-linear": lambda x: 0.03 * np.exp(2.5 * x),
    "step at 0.45": lambda x: np.where(x < 0.45, 0.1, 0.5),
    "hump at 0.4": lambda x: 0.1 + 0.5 * np.exp(-(((x - 0.4) / 0.12) ** 2)),
}
VARIANTS = (("log", "flat"), ("log", "slope"), ("logit", "flat"), ("logit", "slope"))


def case(density, shape, cuts_kind: str, rng):
    from dpiw.sdgp.binning import FineGrid, NumericBins

    t = (np.arange(CELLS * 1000) + 0.5) / (CELLS * 1000)
    dens = density(t)
    dens = dens / dens.sum()
    fine = np.add.reduceat(dens, np.arange(0, t.size, 1000))
    if cuts_kind == "narrow where the rows are":
        cuts = np.array([0, 4, 8, 12, 16, 24, 32, 44, 64])
    else:  # 8 bins of equal mass
        edges = np.searchsorted(np.cumsum(fine), np.arange(1, 8) / 8) + 1
        cuts = np.unique(np.r_[0, np.minimum(edges, CELLS - 1), CELLS])
    nb = NumericBins(FineGrid(CELLS, CELLS), cuts, fine)
    mass = nb.coarse(fine)
    b_of_t = nb.cells(t)
    p_s = shape(t)
    p_bin = np.bincount(b_of_t, weights=dens * p_s) / np.bincount(b_of_t, weights=dens)
    n = 400_000
    cell = rng.choice(len(mass), n, p=mass / mass.sum())
    x = nb.values(cell, rng)
    s = rng.uniform(size=n) < p_bin[cell]
    e_bin = np.bincount(b_of_t, weights=dens * t) / np.bincount(b_of_t, weights=dens)
    p_b_s = mass * p_bin / (mass * p_bin).sum()
    error = float(p_b_s @ e_bin - (t * dens * p_s).sum() / (dens * p_s).sum())
    return nb, x, s, error


def main() -> None:
    from dpiw.analysis import bin_bias

    rng = np.random.default_rng(20261128)
    rows = []
    for dname, density in DENSITIES.items():
        for sname, shape in SHAPES.items():
            for cuts_kind in ("narrow where the rows are", "equal mass"):
                nb, x, s, error = case(density, shape, cuts_kind, rng)
                ratios = []
                for scale, ends in VARIANTS:
                    bin_bias.TILT_SCALE, bin_bias.TILT_ENDS = scale, ends
                    ratios.append(bin_bias.within_bin_bias(nb, x, np.ones(len(x)), s, 1.0) / error)
                rows.append((dname, sname, cuts_kind, error, ratios))
    print("| density | P(S \\| x) | bins | exact error | " + " | ".join(f"{a}, {b}" for a, b in VARIANTS) + " |")
    print("|---|---|---|---|" + "---|" * len(VARIANTS))
    for dname, sname, cuts_kind, error, ratios in rows:
        print(f"| {dname} | {sname} | {cuts_kind} | {error:+.4f} | " + " | ".join(f"{r:.0%}" for r in ratios) + " |")
    big = [r for r in rows if abs(r[3]) >= 0.002]
    print(f"\n{len(big)} cases with |error| >= 0.002:")
    for k, (scale, ends) in enumerate(VARIANTS):
        good = sum(0.75 <= r[4][k] <= 1.25 for r in big)
        wild = sum(not 0.5 <= r[4][k] <= 1.5 for r in big)
        print(f"  {scale}, {ends}: within 75-125% in {good}, outside 50-150% in {wild}")


if __name__ == "__main__":
    main()
