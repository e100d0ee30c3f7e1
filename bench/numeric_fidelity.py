"""Numeric columns before and after the fine DP histograms, on the usefulness study's real tables.

For CPS1988 and Fertility (the whole table and its public 2,000- and 10,000-row subsets), epsilon 0.3, 1 and 3 and
``--seeds`` releases each, the default release (MST, the budget advisor's weights, delta N^-1.5) is made twice
with the same random streams: with ``sdgp.mst.fine_cells`` as params.yaml sets it (the fine histograms) and with
0 (equal-width bins of the public bounds, uniform values: dpiw before them). Scored against the private table:

- **numeric means**: every numeric column's mean, its error relative to the truth;
- **within-class numeric means**: every numeric column's mean within each category of every categorical column;
- the usefulness study's target families (dpiw.evaluate.analyst: means and shares, subgroups, 3-way cells,
  regression), absolute errors on the scaled columns.

Printed: the median error of each arm and their ratio per family, and the paired difference of each family's
mean error (fine minus equal-width) over the releases with its standard error: a family is worse with the fine
histograms only beyond 2 SE.

Arms of MST's own budget (``--splits``, ``--sized``) are compared with params.yaml's release (arm ``fine``). The rule,
named on 2026-11-28 before any of these arms ran: an arm replaces MST's thirds (or its unsized scores) only if on
both tables its within-class numeric means are better than ``fine`` beyond 2 SE and no family (numeric means,
means and shares, subgroups, 3-way cells, regression) is worse beyond 2 SE on either table.

``--void``: params.yaml's release (``fine``) against the same without the sampler's move of rows out of bins
whose fine histogram holds no mass (arm ``no_void``; dpiw.sdgp.binning.Binning.rows), and nothing else. The rule,
named on 2026-11-28 before the run: the move stays only if no family is worse beyond 2 SE on either table.

``--zeros``: params.yaml's release against the same whose fine trees know that the nodes past a column's
support hold no row (a whole-number column of 65 values on 128 leaves: the upper half of the tree holds one
value, the upper bound), their noisy counts set to 0 before the least-squares consistency (arm ``zeros``;
post-processing, no other change). The rule, named on 2026-11-28 before the run: it replaces params.yaml's only
if no family is worse beyond 2 SE on either table and numeric means or within-class numeric means are better
beyond 2 SE on one.

``--shrink``: params.yaml's release against the same whose fine histogram is shrunk, inside each coarse bin,
toward even mass over the bin's cells by positive-part James-Stein (lambda = max(0, 1 - (cells - 1) / S), S the sum
over the bin's cells of (count - even count)^2 / sigma^2, sigma the tree's noise sd a node): where the cells differ
within their noise the values are drawn evenly, as equal-width bins draw them (arm ``shrink``; post-processing).
Named on 2026-11-28 after CPS1988's experience came out with twice equal-width's rms error, most of it variance;
the same rule as ``--zeros``.

``--floor f``: params.yaml's release against the same whose fine trees split a node holding under f noise stds of
mass evenly down to the leaves (arm ``floor_<f>``; dpiw.sdgp.binning.FLOOR, post-processing; f chosen on simulated
columns by ``bench/binning.py --floors --within``). Named on 2026-11-28 after CPS1988's experience came out with
twice equal-width's rms error, most of it variance; the rule, named before the run, is ``--zeros``'s.

``--outer Z GAP``: params.yaml's release against the same whose fine histograms lose the outer runs of filled
leaves that noise alone explains (arm ``outer``; dpiw.sdgp.binning.outer_noise, post-processing), named on
2026-11-28 after a trial's count columns on public bounds 0-200 came back with rows far in an empty tail (rwm5yr's
hospital visits: 0.7% of the rows at 144-200, none above 51 in the table); z = 2 and a gap of 4 chosen on
simulated columns (``bench/binning.py --gaps``). ``--tables`` also takes that trial's ``rwm5yr`` and
``nmes1988`` (whole tables). The rule, named before the run: it replaces params.yaml's only if no family is worse
beyond 2 SE on any of the four tables and the numeric means are better beyond 2 SE on rwm5yr or nmes1988.

``--fewer``: params.yaml's release against the same whose coarse bins are fewer where no ``bins`` bins can each
hold the floor's share of the rows (arm ``fewer``; dpiw.sdgp.binning.FEWER): before, the least-variance bins then
gave the far tail's crumbs bins of their own (rwm5yr's hospital visits: 5 of 8 bins for 0.3% of the rows), which
the generator's noise fills. Named on 2026-11-28 (seventeenth session) before the run, on rwm5yr and nmes1988
(the tables where the floor cannot be met): it replaces params.yaml's only if numeric means are better beyond
2 SE on one of them and no family is worse beyond 2 SE by more than 2% of its mean error on either.

``--star``: params.yaml's release against the same whose MST tree is a public star joining every column to the
schema's target (arm ``star``; ``sdgp.mst.tree: target``: no budget on the choice, its third to the one-way and
two-way marginals). Named on 2026-11-29 (twenty-first session) before the run, after user trials found a fit's
coefficients covered far more often where their feature was measured with the target: it replaces MST's chosen
tree only by the ``--splits`` rule (within-class numeric means better beyond 2 SE on both tables, no family worse
beyond 2 SE on either); else it is a curator's option, documented with what it costs.

``--total``: marginal_match's discrepancy principle on the total chi^2 alone (as before 2026-11-29; arm ``total``)
against params.yaml's, which also holds each marginal within its noise (dpiw.weights.marginal_match.PER_MARGINAL).
Named on 2026-11-29 (twenty-second session) before the run, after a trial's CPSSW8 weights stopped with one
marginal at chi^2 213 on 128 cells: the per-marginal rule replaces the total's only if no family is worse beyond
2 SE on either table and one is better beyond 2 SE, and bench/interval_coverage.py at 20,000 rows (50 releases)
loses no more than 4 points on any estimand and nothing overall. (Run before the switch, the arm then the
per-marginal rule against the total's: the same pairs.)

``--signal-total``: params.yaml's release against the same whose weights' do-no-harm test looks at the totals alone
(arm ``signal_total``), as until 2026-11-29's twenty-third session; since then it also fires on one marginal past
the chi^2 law's family-wise 2.5% quantile (dpiw.weights.marginal_match.SIGNAL_EACH). The rule, named before the
run: it stays only if no family is worse beyond 2 SE on either table. (A first arm also moved the tau rule's
per-marginal bound from cells + z sqrt(2 cells) to the chi^2 law's own quantile, looser for few cells: Fertility's
subgroups and regression worse beyond 2 SE, not kept; bench/README.md.)

    python bench/numeric_fidelity.py [--seeds 3] [--jobs 2] [--csv out.csv] [--splits 1,1,3] [--sized] [--void]
                                     [--zeros] [--shrink] [--floor 4] [--outer 2 4] [--fewer] [--star] [--total]
                                     [--signal-total]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from _jobs import rows_of

ROOT = Path(__file__).resolve().parents[1]
TABLES = ("cps1988", "fertility")
SIZES = (2000, 10000, "full")
EPSILONS = (0.3, 1.0, 3.0)


def numeric_targets(data: pd.DataFrame, schema, w: np.ndarray) -> dict[str, float]:
    """Numeric means and within-class numeric means, in the columns' units, from decoded rows."""
    out = {}
    w = np.asarray(w, float)
    for c in schema.columns:
        if not c.is_numeric:
            continue
        v = data[c.name].to_numpy(float)
        out[f"mean {c.name}"] = float(np.average(v, weights=w))
        for g in schema.columns:
            if g.is_numeric:
                continue
            labels = data[g.name].astype(str).to_numpy()
            for label in g.categories:
                m = labels == str(label)
                if w[m].sum() > 0:
                    out[f"mean {c.name} | {g.name}={label}"] = float(np.average(v[m], weights=w[m]))
    return out


ARMS = {"fine": None, "equal_width": {"fine_cells": 0}}


def measured_pairs(measured: dict, names: list[str]) -> set[frozenset]:
    """The column pairs some noisy marginal of the release covers (MST's tree, the weights' marginals)."""
    out = set()
    for part in measured.values():
        for m in part["measurements"]:
            cols = [names[j] for j in m["clique"]]
            out |= {frozenset((a, b)) for a in cols for b in cols if a != b}
    return out


def pair_of(target: str) -> frozenset:
    """'mean wage | region=south' -> {wage, region}"""
    left, right = target.split(" | ")
    return frozenset((left.removeprefix("mean "), right.split("=")[0]))


def one(job) -> list[dict]:
    table, size, eps, seed, arms = job
    os.environ["DPIW_CACHE"] = "off"
    sys.path[:0] = [str(ROOT / "src"), str(ROOT / "bench")]
    os.chdir(ROOT)
    from interval_coverage import default_release

    from dpiw.evaluate.analyst import analyst_targets
    from dpiw.scale import decode_frame
    from dpiw.studies.usefulness import _table, family

    schema, scaled = extra_table(table) if table in EXTRA else _table(table, size)
    raw = decode_frame(scaled, schema)
    truth_num = numeric_targets(raw, schema, np.ones(len(raw)))
    truth_fam = analyst_targets(scaled, schema)
    from dpiw.sdgp import binning
    from dpiw.sdgp.binning import NumericBins

    # the originals, kept the first time: a worker process runs many jobs, and an arm's patch must not become the
    # next job's "original" (until 2026-11-28 it did: the arms after the first job of a worker all ran patched)
    from dpiw.weights import marginal_match

    void, shape, estimate, floor, outer, fewer = ORIGINALS.setdefault(
        "all", (NumericBins.void, binning.shape, binning.estimate_fine, binning.FLOOR, binning.OUTER, binning.FEWER))
    per_marginal = ORIGINALS.setdefault("per_marginal", marginal_match.PER_MARGINAL)
    each = ORIGINALS.setdefault("signal_each", marginal_match.SIGNAL_EACH)
    try:
        return _arms(arms, table, size, eps, seed, scaled, schema, raw, truth_num, truth_fam, default_release,
                     analyst_targets, family, void, shape, estimate, floor, outer, fewer)
    finally:
        NumericBins.void, binning.shape, binning.estimate_fine = void, shape, estimate
        binning.FLOOR, binning.OUTER, binning.FEWER = floor, outer, fewer
        marginal_match.PER_MARGINAL = per_marginal
        marginal_match.SIGNAL_EACH = each


#: ``--tables`` beyond the usefulness study's (whole tables only): a trial's count tables, under the schemas its
#: curator wrote from the codebooks (counts on 0 to 200)
COUNTS = {"type": "numeric", "lower": 0, "upper": 200, "integer": True, "spikes": [0]}
EXTRA = {
    "rwm5yr": ("COUNT", "rwm5yr", {"name": "rwm5yr", "task": "regression", "target": "docvis", "columns": [
        {"name": "docvis", **COUNTS}, {"name": "hospvis", **COUNTS},
        {"name": "year", "type": "categorical", "categories": [1984, 1985, 1986, 1987, 1988]},
        {"name": "edlevel", "type": "categorical", "categories": [1, 2, 3, 4]},
        {"name": "age", "type": "numeric", "lower": 25, "upper": 64, "integer": True},
        *({"name": c, "type": "categorical", "categories": [0, 1]} for c in ("outwork", "female", "married")),
        {"name": "hhninc", "type": "numeric", "lower": 0, "upper": 100, "scale": "log"},
        {"name": "educ", "type": "numeric", "lower": 7, "upper": 18}]}),
    "nmes1988": ("AER", "NMES1988", {"name": "nmes1988", "task": "regression", "target": "visits", "columns": [
        *({"name": c, **COUNTS} for c in ("visits", "nvisits", "ovisits", "novisits")),
        *({"name": c, **COUNTS, "upper": 50} for c in ("emergency", "hospital")),
        {"name": "health", "type": "categorical", "categories": ["poor", "average", "excellent"]},
        {"name": "chronic", **COUNTS, "upper": 10},
        {"name": "age", "type": "numeric", "lower": 6.6, "upper": 11.0},
        {"name": "gender", "type": "categorical", "categories": ["female", "male"]},
        {"name": "school", "type": "numeric", "lower": 0, "upper": 20, "integer": True},
        {"name": "income", "type": "numeric", "lower": 0, "upper": 100, "scale": "log"},
        {"name": "insurance", "type": "categorical", "categories": ["no", "yes"]}]}),
}


def extra_table(name: str):
    """An :data:`EXTRA` table as the usefulness study's are given: (schema, scaled rows)."""
    from _jobs import real_table

    from dpiw.scale import column_bounds, scale_frame

    package, item, spec = EXTRA[name]
    schema, raw = real_table(package, item, spec, complete=True)
    return schema, scale_frame(raw, schema, column_bounds(raw, schema, bounds="schema"))


#: the patched functions' originals in this process (:func:`one`)
ORIGINALS: dict = {}


def _arms(arms, table, size, eps, seed, scaled, schema, raw, truth_num, truth_fam, default_release, analyst_targets,
          family, void, shape, estimate, floor, outer, fewer) -> list[dict]:
    from dpiw.sdgp import binning
    from dpiw.sdgp.binning import NumericBins
    from dpiw.weights import marginal_match

    rows = []
    for arm, mst in arms.items():
        t0 = time.perf_counter()
        mst = dict(mst or {})
        NumericBins.void = void if mst.pop("void", True) else (lambda self: np.zeros(self.card, bool))
        binning.shape = known_zeros(shape) if mst.pop("zeros", False) else shape
        binning.estimate_fine = shrunk(estimate) if mst.pop("shrink", False) else estimate
        binning.FLOOR = mst.pop("floor", floor)
        binning.OUTER = mst.pop("outer", outer)
        binning.FEWER = mst.pop("fewer", fewer)
        marginal_match.PER_MARGINAL = mst.pop("per_marginal", ORIGINALS["per_marginal"])
        marginal_match.SIGNAL_EACH = mst.pop("signal_each", ORIGINALS["signal_each"])
        rng = np.random.default_rng([20261126, len(table), len(scaled), int(eps * 10), seed])
        bundle, method = default_release(raw, schema, eps, rng, mst=mst or None)
        num = numeric_targets(bundle.data, schema, bundle.weights)
        fam = analyst_targets(bundle.scaled, schema, bundle.weights)
        pairs = measured_pairs(bundle.measurements, schema.names)
        for name, v in num.items():
            kind = "numeric means" if " | " not in name else "within-class numeric means"
            rows.append({"table": table, "rows": len(scaled), "eps": eps, "seed": seed, "arm": arm,
                         "weights": method, "family": kind, "target": name,
                         "measured": pair_of(name) in pairs if " | " in name else None,
                         "error": abs(v / truth_num[name] - 1) if truth_num[name] else abs(v)})
        for name, v in fam.items():
            if np.isfinite(v) and np.isfinite(truth_fam.get(name, np.nan)):
                rows.append({"table": table, "rows": len(scaled), "eps": eps, "seed": seed, "arm": arm,
                             "weights": method, "family": family(name), "target": name,
                             "error": abs(v - truth_fam[name])})
        print(f"  {table} N={len(scaled):,} eps={eps:g} seed={seed} {arm}: weights {method}, "
              f"{time.perf_counter() - t0:.1f} s", flush=True)
    return rows


def known_zeros(shape):
    """``binning.shape`` with every node past the grid's support counted 0 (it can hold no row) before the
    consistency and the pruning (arm ``zeros``)."""
    def zeros_shape(grid, noisy, total, std):
        out = [np.asarray(noisy[0], float)]
        for lv in range(1, len(noisy)):
            width = grid.cells >> lv
            level = np.asarray(noisy[lv], float).copy()
            level[np.arange(level.size) * width >= grid.support] = 0.0
            out.append(level)
        return shape(grid, out, total, std)

    return zeros_shape


def shrunk(estimate):
    """``binning.estimate_fine`` with each coarse bin's fine mass shrunk toward even mass (arm ``shrink``)."""
    from dpiw.sdgp.binning import Binning, FineMeasurement, NumericBins

    def shrink_fine(schema, fine_cells, bins, noisy, std, total, rho):
        got = estimate(schema, fine_cells, bins, noisy, std, total, rho)
        numeric = {}
        for name, nb in got.binning.numeric.items():
            m = np.asarray(nb.fine, float).copy()
            counts = m * total / max(m.sum(), 1e-300)
            for a, b in zip(nb.cuts[:-1], nb.cuts[1:], strict=True):
                if b - a < 2 or counts[a:b].sum() <= 0:
                    continue
                even = counts[a:b].sum() / (b - a)
                stat = float(((counts[a:b] - even) ** 2).sum()) / std[name] ** 2
                lam = max(0.0, 1.0 - (b - a - 1) / stat) if stat > 0 else 0.0
                counts[a:b] = even + lam * (counts[a:b] - even)
            numeric[name] = NumericBins(nb.grid, nb.cuts, counts / counts.sum())
        return FineMeasurement(Binning(schema, numeric), got.levels, got.std, got.one_way, got.rho)

    return shrink_fine


def summarise(df: pd.DataFrame, arm: str = "fine", control: str = "equal_width") -> None:
    from dpiw.studies.usefulness import FAMILIES

    order = ["numeric means", "within-class numeric means", *FAMILIES]
    print(f"\n| table | family | median error, {arm} | median error, {control} | ratio | paired mean difference "
          f"({arm} - {control}) ± SE | verdict |")
    print("|---|---|---|---|---|---|---|")
    for table in df.table.unique():
        for fam in order:
            g = df[(df.table == table) & (df.family == fam)]
            if g.empty:
                continue
            piv = g.pivot_table(index=["rows", "eps", "seed", "target"], columns="arm", values="error")
            print(f"| {table} | {fam} | {_paired(piv, arm, control)} |")


def _paired(piv: pd.DataFrame, arm: str, control: str) -> str:
    """Two arms' errors (one column each, indexed by release and target): their medians and ratio, and the paired
    mean difference over the releases with its standard error and verdict, as table cells."""
    med_f, med_e = piv[arm].median(), piv[control].median()
    per_release = (piv[arm] - piv[control]).groupby(level=["rows", "eps", "seed"]).mean()
    diff, se = per_release.mean(), per_release.std(ddof=1) / np.sqrt(len(per_release))
    verdict = ("worse beyond 2 SE" if diff > 2 * se else "better beyond 2 SE" if diff < -2 * se
               else "no clear difference")
    return f"{med_f:.4g} | {med_e:.4g} | {med_f / med_e:.2f} | {diff:+.3g} ± {se:.2g} | {verdict}"


def summarise_columns(df: pd.DataFrame, arm: str = "fine", control: str = "equal_width") -> None:
    """The numeric families column by column: a median over every column can hide one that gets worse (CPS1988's
    experience, a smooth whole-number column on tight bounds, gains nothing from the fine histograms' shape and
    pays their share of the budget)."""
    print(f"\n| table | family | column | median error, {arm} | median error, {control} | ratio | paired mean "
          f"difference ({arm} - {control}) ± SE | verdict |")
    print("|---|---|---|---|---|---|---|---|")
    num = df[df.family.isin(["numeric means", "within-class numeric means"])].assign(
        column=lambda d: d.target.str.extract(r"^mean (\S+)", expand=False))
    for (table, fam, col), g in num.groupby(["table", "family", "column"], sort=False):
        piv = g.pivot_table(index=["rows", "eps", "seed", "target"], columns="arm", values="error")
        if arm in piv and control in piv:
            print(f"| {table} | {fam} | {col} | {_paired(piv, arm, control)} |")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--tables", nargs="+", default=list(TABLES))
    p.add_argument("--bins", type=int, nargs="*", default=[],
                   help="also the fine histograms with this many bins per numeric column (arm fine_<bins>)")
    p.add_argument("--fractions", type=float, nargs="*", default=[],
                   help="also the fine histograms with this share of MST's rho (arm fine_share_<fraction>)")
    p.add_argument("--splits", nargs="*", default=[],
                   help="also MST's rho split as one-way,selection,two-way weights (arm split_<w>; default 1,1,1)")
    p.add_argument("--sized", action="store_true",
                   help="also MST's tree scored with AIM's noise penalty (arm sized; with each --splits too)")
    p.add_argument("--void", action="store_true",
                   help="only params.yaml's release against the same without moving rows out of void bins")
    p.add_argument("--zeros", action="store_true",
                   help="only params.yaml's release against the same with the nodes past the support counted 0")
    p.add_argument("--shrink", action="store_true",
                   help="only params.yaml's release against the same with each bin's fine mass shrunk toward even")
    p.add_argument("--outer", nargs=2, type=float, metavar=("Z", "GAP"),
                   help="only params.yaml's release against the same whose fine histograms lose the outer runs noise "
                        "explains (dpiw.sdgp.binning.outer_noise; arm outer)")
    p.add_argument("--floor", type=float,
                   help="only params.yaml's release against the same whose fine trees split a node under this many "
                        "noise stds evenly (arm floor_<f>)")
    p.add_argument("--fewer", action="store_true",
                   help="only params.yaml's release against the same whose coarse bins are fewer where the floor on "
                        "a bin's mass cannot be met (dpiw.sdgp.binning.FEWER; arm fewer)")
    p.add_argument("--total", action="store_true",
                   help="also marginal_match's discrepancy principle on the total chi^2 alone, as before 2026-11-29 "
                        "(dpiw.weights.marginal_match.PER_MARGINAL off; arm total)")
    p.add_argument("--signal-total", action="store_true",
                   help="also marginal_match's do-no-harm test on the totals alone, as before 2026-11-29's "
                        "twenty-third session (dpiw.weights.marginal_match.SIGNAL_EACH off; arm signal_total)")
    p.add_argument("--star", action="store_true",
                   help="also MST's tree as a public star on the target (sdgp.mst.tree: target; arm star)")
    p.add_argument("--csv", help="write every error here")
    p.add_argument("--from-csv", help="summarise an earlier run's errors instead of running")
    args = p.parse_args()
    t0 = time.perf_counter()
    arms = {**ARMS, **{f"fine_{b}": {"bins": b} for b in args.bins},
            **{f"fine_share_{f:g}": {"fine_fraction": f} for f in args.fractions}}
    for w in args.splits:
        arms[f"split_{w}"] = {"split": [float(x) for x in w.split(",")]}
    if args.star:
        arms["star"] = {"tree": "target"}
    if args.total:
        arms["total"] = {"per_marginal": False}
    if args.signal_total:
        arms["signal_total"] = {"signal_each": False}
    if args.sized:
        arms |= {"sized": {"sized_scores": True},
                 **{f"sized_split_{w}": {"split": [float(x) for x in w.split(",")], "sized_scores": True}
                    for w in args.splits}}
    if args.void or args.zeros or args.shrink or args.floor is not None or args.outer or args.fewer:
        arms = {"fine": None, **({"no_void": {"void": False}} if args.void else {}),  # against each change alone
                **({"fewer": {"fewer": True}} if args.fewer else {}),
                **({"outer": {"outer": tuple(args.outer)}} if args.outer else {}),
                **({"zeros": {"zeros": True}} if args.zeros else {}),
                **({"shrink": {"shrink": True}} if args.shrink else {}),
                **({f"floor_{args.floor:g}": {"floor": args.floor}} if args.floor is not None else {})}
    jobs = [(t, s, e, k, arms) for t in args.tables for s in (("full",) if t in EXTRA else SIZES) for e in EPSILONS
            for k in range(args.seeds)]
    df = rows_of(one, jobs, processes=args.jobs, csv=args.csv, from_csv=args.from_csv)
    print(f"\n{df.groupby(['table', 'rows', 'eps', 'seed']).ngroups} paired releases, "
          f"{time.perf_counter() - t0:.0f} s")
    for arm in sorted(set(df.arm) - {"equal_width"} if "equal_width" in set(df.arm) else ()):
        print(f"\n{arm} against equal_width:")
        summarise(df, arm)
        if arm == "fine":
            print("\nfine against equal_width, the numeric families by column:")
            summarise_columns(df)
    if "no_void" in set(df.arm):
        print("\nfine (params.yaml) against no_void:")
        summarise(df, "fine", "no_void")
    for arm in sorted(a for a in set(df.arm) if a.startswith("fine_")):
        print(f"\nfine (params.yaml) against {arm}:")
        summarise(df, "fine", arm)
    for arm in ("total", "signal_total"):
        if arm in set(df.arm):
            print(f"\nfine (params.yaml) against {arm}:")
            summarise(df, "fine", arm)
    for arm in ("zeros", "shrink", "outer", "fewer", *sorted(a for a in set(df.arm) if a.startswith("floor_"))):
        if arm in set(df.arm):
            print(f"\n{arm} against fine (params.yaml):")
            summarise(df, arm, "fine")
    for arm in sorted(a for a in set(df.arm) if a.startswith(("split_", "sized", "star"))):
        print(f"\n{arm} against fine (params.yaml):")
        summarise(df, arm, "fine")


if __name__ == "__main__":
    main()
