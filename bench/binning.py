"""How well a numeric column's fine DP tree histogram (dpiw.sdgp.binning) keeps its mean, by pruning rule.

Simulated columns only (no table the project evaluates on): lognormal (two shapes, and one on bounds 170 times
its median), exponential, uniform and bimodal, each with wide public bounds, at 1e3, 5e3, 2e4 and 2e5 rows and
each ``--epsilons``. The histogram takes ``fine_fraction`` of the rho MST gets (delta N^-1.5, after
marginal_match's 30%), shared by two numeric columns, on 256 cells. Every rule sees the same rows and the same
noise (common random numbers). Printed: for each rule, the root mean square of the fine histogram's mean (cell
midpoints) relative to the column's mean over ``--reps`` measurements, with rows per noise std (N / sigma);
then each rule's geometric mean and largest ratio to the first rule's root mean square.

Rules: ``--thresholds`` (hard, in noise stds: a node below t sigma holds no row, the others share their
parent's mass in proportion to their estimates; dpiw's rule) and ``--soft`` (a node's share in proportion to
its estimate less t sigma). This chose dpiw's THRESHOLD = 1. ``--floors``: the hard rule at dpiw's THRESHOLD, and
a node whose mass is below f sigma splits it evenly down to the leaves (``prune``'s ``floor``). ``--outer``: the
hard rule at dpiw's THRESHOLD, then the outer runs of filled leaves that noise alone explains at z sds dropped
(``outer_noise``); ``--gaps``: the same at 2 sds, only past a stretch of empty leaves r times as long as the
heaviest run is wide; ``--spans``: the same, past a stretch r times as long as the middle 90% of the pruned mass
spans (the yardstick of the release's far-rows warning, dpiw.analysis.bin_bias.far_rows).

``--within`` adds whole-number columns (one leaf per value, as dpiw's grid gives them: an experience-like, an
age-like and a schooling-like column with heaps, and two counts on wide bounds) and a second figure per rule,
the part of a released mean that the values inside the bins make: each of the rule's 8 coarse bins
(``cut_points`` of its histogram) with its true share of the rows, and the histogram's mean inside it (``flat``
beside it: the same bins, values spread evenly inside each, as equal-width bins draw them).

    python bench/binning.py [--reps 30] [--thresholds 1 1.5 2] [--soft 0.5] [--floors 2 4] [--kept 2]
                            [--outer 2 3] [--gaps 1 2 4] [--spans 1 2] [--within] [--epsilons 0.3 1 3]
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from dpiw.privacy.accounting import zcdp_rho
from dpiw.sdgp.binning import THRESHOLD, consistent, cut_points, outer_noise, prune, tree_levels

COLUMNS = {  # name: (draw(rng, n), lower, upper)
    "lognormal s=0.78": (lambda r, n: r.lognormal(0, 0.78, n), 0, 50),
    "lognormal s=1.2": (lambda r, n: r.lognormal(1, 1.2, n), 0, 200),
    "exponential": (lambda r, n: r.exponential(10, n), 0, 500),
    "uniform": (lambda r, n: r.uniform(20, 80, n), 0, 100),
    "bimodal": (lambda r, n: np.where(r.uniform(size=n) < 0.3, r.normal(30, 3, n), r.normal(70, 8, n)), 0, 120),
    # bounds far wider than the rows (a trial's assets: median about 3,000 on public bounds 0 to 500,000)
    "lognormal s=1, bounds 170x": (lambda r, n: r.lognormal(0, 1.0, n), 0, 170),
}
#: whole-number columns (``--within``): a leaf per value, as dpiw's grid gives a column of at most 256 values
INTEGERS = {
    "whole years, gamma on 0-70": (lambda r, n: np.rint(r.gamma(2.2, 8.5, n)), 0, 70),
    "whole ages, normal on 16-80": (lambda r, n: np.rint(r.normal(40, 11, n)), 16, 80),
    "schooling 0-20, heaps at 12, 16": (lambda r, n: np.where(r.uniform(size=n) < 0.5, np.where(
        r.uniform(size=n) < 0.6, 12, 16), np.rint(r.normal(13, 3, n))), 0, 20),
    # counts on a codebook's wide bounds (a trial's doctor visits and hospital stays, 0 to 200)
    "visits, negative binomial on 0-200": (lambda r, n: r.negative_binomial(0.8, 0.2, n), 0, 200),
    "stays on 0-200, 90% zeros": (lambda r, n: np.where(r.uniform(size=n) < 0.9, 0, 1 + r.poisson(1.5, n)), 0, 200),
}
CELLS = 256
BINS = 8


class Grid:
    """A column's public leaves: CELLS equal-width cells of a continuous one, a leaf per value of a whole-number
    one (a power of two of them, the first ``support`` holding values)."""

    def __init__(self, lo: float, hi: float, integer: bool):
        self.lo, self.hi, self.integer = lo, hi, integer
        self.support = int(hi - lo) + 1 if integer else CELLS
        self.cells = 1 << math.ceil(math.log2(self.support)) if integer else CELLS
        self.levels = int(math.log2(self.cells))

    def leaves(self, x: np.ndarray) -> np.ndarray:
        if self.integer:
            return (x - self.lo).astype(int)
        return np.minimum(((x - self.lo) / (self.hi - self.lo) * CELLS).astype(int), CELLS - 1)

    def value(self) -> np.ndarray:
        """Each leaf's mean value as a release draws it (a cell's midpoint; a whole number)."""
        leaf = np.arange(self.cells)
        return self.lo + (leaf if self.integer else (self.hi - self.lo) * (leaf + 0.5) / CELLS)


def noisy_tree(leaf: np.ndarray, grid: Grid, sigma: float, rng: np.random.Generator):
    """The true leaf counts and the consistent estimates of the tree over them, every level with noise sigma."""
    counts = np.bincount(leaf, minlength=grid.cells).astype(float)
    true = tree_levels(counts)
    noisy = [true[0]] + [lv + rng.normal(0, sigma, lv.size) for lv in true[1:]]
    return counts, consistent(noisy, len(leaf))


def rule_mass(est: list[np.ndarray], total: float, sigma: float, kind: str, t: float, support: int) -> np.ndarray:
    """The fine histogram one rule makes of the estimates."""
    if kind == "hard":
        return prune(est, total, t * sigma, support)
    if kind == "floor":  # dpiw's threshold, and even splits below a mass of t sigma
        return prune(est, total, THRESHOLD * sigma, support, floor=t * sigma)
    if kind == "kept":  # the same, the even splits over the children above the threshold only
        return kept_floor(est, total, THRESHOLD * sigma, support, t * sigma)
    if kind == "outer":  # dpiw's threshold, then the outer runs noise explains at t sds dropped
        return outer_noise(prune(est, total, THRESHOLD * sigma, support), est[-1], sigma, t, support)
    if kind == "gap":  # the same at 2 sds, past stretches of empty leaves t times the heaviest run's width
        return outer_noise(prune(est, total, THRESHOLD * sigma, support), est[-1], sigma, 2.0, support, gap=t)
    if kind == "span":  # the same, past stretches t times as long as the middle 90% of the pruned mass spans
        mass = prune(est, total, THRESHOLD * sigma, support)
        cdf = np.cumsum(mass) / mass.sum()
        middle = float(np.searchsorted(cdf, 0.95) - np.searchsorted(cdf, 0.05) + 1)
        return outer_noise(mass, est[-1], sigma, 2.0, support, gap=t, width=middle)
    return prune([e - t * sigma for e in est], total, 0.0, support)  # soft: the hard rule at 0, estimates less t


def kept_floor(est, total, threshold, support, floor):
    """``prune`` whose node under ``floor`` splits its mass evenly over its children above ``threshold`` (a child
    under it still gets none: an empty tail stays empty however small the node)."""
    mass = np.array([float(total)])
    cells = est[-1].size
    for lv in range(1, len(est)):
        starts = np.arange(est[lv].size) * (cells >> lv)
        supported = starts < support
        e = np.where(supported & (est[lv] >= threshold), np.maximum(est[lv], 0.0), 0.0).reshape(-1, 2)
        s = e.sum(axis=1, keepdims=True)
        even = supported.reshape(-1, 2) / np.maximum(supported.reshape(-1, 2).sum(axis=1, keepdims=True), 1)
        above = (e > 0) / np.maximum((e > 0).sum(axis=1, keepdims=True), 1)
        share = np.where(s > 0, np.where(mass[:, None] < floor, above, e / np.where(s > 0, s, 1.0)), even)
        mass = (mass[:, None] * share).ravel()
    return mass


def within(mass: np.ndarray, counts: np.ndarray, grid: Grid, flat: bool = False) -> float:
    """The mean of rows whose 8 coarse bins (cut from ``mass``) hold their true counts and whose values inside a
    bin follow ``mass`` (``flat``: evenly over the bin's supported leaves)."""
    cuts = cut_points(mass, BINS, grid.support)
    value, out = grid.value(), 0.0
    for a, b in zip(cuts[:-1], cuts[1:], strict=True):
        m = np.ones(b - a) if flat else mass[a:b]
        if not m.sum() > 0:
            m = np.ones(b - a)
        out += counts[a:b].sum() * (m @ value[a:b]) / m.sum()
    return out / counts.sum()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reps", type=int, default=30)
    p.add_argument("--thresholds", type=float, nargs="+", default=[1.0, 1.5, 2.0])
    p.add_argument("--soft", type=float, nargs="*", default=[])
    p.add_argument("--floors", type=float, nargs="*", default=[])
    p.add_argument("--kept", type=float, nargs="*", default=[])
    p.add_argument("--outer", type=float, nargs="*", default=[])
    p.add_argument("--gaps", type=float, nargs="*", default=[])
    p.add_argument("--spans", type=float, nargs="*", default=[])
    p.add_argument("--within", action="store_true")
    p.add_argument("--epsilons", type=float, nargs="+", default=[1.0])
    p.add_argument("--fraction", type=float, default=0.2)
    args = p.parse_args()
    rules = [("hard", t) for t in args.thresholds] + [("soft", t) for t in args.soft] + \
        [("floor", t) for t in args.floors] + [("kept", t) for t in args.kept] + [("outer", t) for t in args.outer] + \
        [("gap", t) for t in args.gaps] + [("span", t) for t in args.spans]
    names = [f"{k} {t:g}" for k, t in rules]
    columns = {name: (*c, False) for name, c in COLUMNS.items()}
    if args.within:
        columns |= {name: (*c, True) for name, c in INTEGERS.items()}
    rng = np.random.default_rng(2)
    figures = ["mean"] + ["within bins"] * args.within
    head = " | ".join(f"{nm}, {f}" for f in figures for nm in names) + " | flat, within bins" * args.within
    print(f"| rows | ε | N/σ | column | {head} |\n|" + "---|" * (4 + len(rules) * len(figures) + args.within))
    ratios = {(f, name): [] for f in figures for name in columns}
    for n in (1_000, 5_000, 20_000, 200_000):
        for eps in args.epsilons:
            rho = 0.7 * zcdp_rho(eps, n**-1.5) * args.fraction / 2
            for name, (draw, lo, hi, integer) in columns.items():
                grid = Grid(lo, hi, integer)
                sigma = math.sqrt(grid.levels * 2 / (2 * rho))  # L levels, replace-one: sqrt(2) per level
                errs = np.zeros((args.reps, len(rules) * len(figures) + args.within))
                for r in range(args.reps):
                    x = np.clip(draw(rng, n), lo, hi)
                    counts, est = noisy_tree(grid.leaves(x), grid, sigma, rng)
                    for j, (kind, t) in enumerate(rules):
                        mass = rule_mass(est, n, sigma, kind, t, grid.support)
                        errs[r, j] = (mass @ grid.value()) / mass.sum() / x.mean() - 1
                        if args.within:
                            errs[r, len(rules) + j] = within(mass, counts, grid) / x.mean() - 1
                    if args.within:  # flat inside the first rule's bins
                        errs[r, -1] = within(rule_mass(est, n, sigma, *rules[0], grid.support), counts, grid,
                                             flat=True) / x.mean() - 1
                rmse = np.sqrt((errs**2).mean(axis=0))
                for k, f in enumerate(figures):
                    part = rmse[k * len(rules):(k + 1) * len(rules)]
                    ratios[(f, name)].append(part / part[0])
                print(f"| {n:,} | {eps:g} | {n / sigma:.0f} | {name} | "
                      + " | ".join(f"{v:.2%}" for v in rmse) + " |", flush=True)
    for f in figures:
        a = np.log(np.array([r for (g, _), rs in ratios.items() if g == f for r in rs]))
        print(f"\n{f}: root mean square against the first rule's, over every row above: "
              + "; ".join(f"{nm}: geometric mean {math.exp(a[:, j].mean()):.2f}, largest {math.exp(a[:, j].max()):.2f}"
                          for j, nm in enumerate(names)))
        for name in columns:
            b = np.log(np.array(ratios[(f, name)]))
            print(f"  {name}: " + "; ".join(f"{nm} {math.exp(b[:, j].mean()):.2f} ({math.exp(b[:, j].min()):.2f}-"
                                            f"{math.exp(b[:, j].max()):.2f})" for j, nm in enumerate(names)))


if __name__ == "__main__":
    main()
