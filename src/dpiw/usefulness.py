"""The usefulness study: do DP weights beat giving the whole epsilon to the SDGP, on real tables of realistic
size? ``python -m dpiw.usefulness --config configs/usefulness.yaml --out docs/usefulness.md`` (``make usefulness``).

Per table, row count N (a public random subset: the curator's table is that subset, all of it private, as in a
release), epsilon and seed, every arm releases rows (and weights) from the whole table and is scored on the
analyst's targets (dpiw.evaluate.analyst) against the table itself:

- ``none``: the SDGP on the whole epsilon, unit weights (the control: what a curator gets without weights);
- ``none_split``: the SDGP on (1 - f) of epsilon and delta, unit weights;
- ``marginal_match``: the same rows weighted by marginal_match on the rest of the budget, split as the pipeline
  splits it (in zCDP after MST) and matching the SDGP's own measurements too (weights.marginal_match.reuse_sdgp);
- ``fed_to_generator``: the same measurements (the SDGP's and marginal_match's) fed into the generator
  (Private-PGM) instead of into weights: does weighting beat spending the budget on the generator?
- ``advisor``: what the budget advisor (dpiw.weights.advisor) picks from public quantities: ``marginal_match``
  or ``none``.

Comparisons follow dpiw.evaluate.compare: per target, the paired difference of absolute errors over the seeds; a
win (loss) is beyond 2 SE and the 1% margin; relmed is the median over targets of an arm's mean absolute error over
``none``'s. Each seed draws every arm's noise from its own public stream (a benchmark, never a release).
"""

from __future__ import annotations

import argparse
import copy
import time
import zlib
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from dpiw import DpiwError

ARMS = ("none", "none_split", "marginal_match", "fed_to_generator", "advisor")
#: target families, by the start of their names (dpiw.evaluate.analyst)
FAMILIES = {"means and shares": ("mean ", "share "), "subgroups": (), "3-way cells": (), "regression": ("coef ",)}


@dataclass(frozen=True)
class Study:
    tables: tuple[str, ...]
    rows: tuple  # ints, or "full"
    epsilons: tuple[float, ...]
    seeds: int
    delta: float
    fraction: float
    sdgp: str
    workers: int


def load_study(path: str | Path) -> Study:
    d = yaml.safe_load(Path(path).read_text()).get("study")
    if not isinstance(d, dict):
        raise DpiwError(f"{path}: needs a top-level 'study:' mapping (tables, rows, epsilons, seeds, ...)")
    allowed = {"tables", "rows", "epsilons", "seeds", "delta", "weights_fraction", "sdgp", "workers"}
    if set(d) - allowed:
        raise DpiwError(f"{path}: unknown study key(s) {sorted(set(d) - allowed)}; allowed: {sorted(allowed)}")
    rows = tuple(d.get("rows", ["full"]))
    if not all(r == "full" or (isinstance(r, int) and r >= 100) for r in rows):
        raise DpiwError(f"{path}: study.rows holds row counts >= 100 or 'full', got {list(rows)}")
    if d.get("sdgp", "mst") != "mst":
        raise DpiwError(f"{path}: study.sdgp: only mst is studied so far (its measurements feed the generator arm)")
    return Study(tuple(d["tables"]), rows, tuple(float(e) for e in d["epsilons"]), int(d.get("seeds", 5)),
                 float(d.get("delta", 1e-6)), float(d.get("weights_fraction", 0.3)), "mst", int(d.get("workers", 2)))


def family(target: str) -> str:
    if target.startswith(("mean ", "share ")):
        return "means and shares"
    if target.startswith("coef "):
        return "regression"
    return "3-way cells" if ", " in target.split(" | ", 1)[-1] else "subgroups"


def _table(name: str, rows) -> tuple:
    from dpiw.data import load_schema
    from dpiw.data.datasets import load_raw
    from dpiw.scale import column_bounds, scale_frame

    schema = load_schema(Path("data/schemas") / f"{name}.yaml")
    raw = load_raw(schema)
    if rows != "full" and rows < len(raw):
        raw = raw.sample(n=rows, random_state=0)  # a public subset: the curator's table
    return schema, scale_frame(raw, schema, column_bounds(raw, schema, bounds="schema"))


def unit(study: Study, table: str, rows, eps: float, seed: int, arms: tuple[str, ...] = ARMS) -> dict:
    """One (table, N, epsilon, seed): the errors of ``arms`` (all by default) on every target."""
    from dpiw.evaluate.analyst import analyst_targets
    from dpiw.privacy import split_budget, split_rule
    from dpiw.sdgp.mst import MST
    from dpiw.weights.advisor import advise
    from dpiw.weights.marginal_match import MarginalMatch

    schema, real = _table(table, rows)
    n = len(real)
    truth = analyst_targets(real, schema)

    def rng(arm: str) -> np.random.Generator:
        return np.random.default_rng([seed, zlib.crc32(table.encode()), n, int(round(eps * 1000)),
                                      zlib.crc32(arm.encode())])

    f, delta = study.fraction, study.delta
    split = split_budget(eps, delta, weights_method="marginal_match", weights_epsilon_fraction=f,
                         weights_delta_fraction=f, rule=split_rule(study.sdgp, "marginal_match", "replace_one"))
    t0 = time.perf_counter()
    releases = {}
    if "none" in arms or "advisor" in arms:
        g = rng("none")
        releases["none"] = (MST().fit(real, schema, epsilon=eps, delta=delta, rng=g).sample(n, rng=g), None)
    g = rng("split")
    part = MST().fit(real, schema, epsilon=split.sdgp_epsilon, delta=split.sdgp_delta, rng=g)
    rows_split = part.sample(n, rng=g)
    mm = MarginalMatch().measure(real, schema, epsilon=split.weights_epsilon, delta=split.weights_delta,
                                 rng=rng("marginal_match"))
    mm.reweight(rows_split, extra=part.measurements_)
    releases.update({"none_split": (rows_split, None), "marginal_match": (rows_split, np.exp(mm.log_ratio_))})
    advice = advise(n, schema, epsilon=eps, delta=delta, fraction=f)
    if "advisor" in arms:
        releases["advisor"] = releases[advice.method]
    if "fed_to_generator" in arms:
        releases["fed_to_generator"] = (_fed(part, mm, n, rng("fed_to_generator")), None)
    names = list(truth)
    errors = {arm: np.array([analyst_targets(frame, schema, w).get(t, np.nan) for t in names]) - np.array(
        [truth[t] for t in names]) for arm, (frame, w) in releases.items() if arm in arms}
    return {"table": table, "rows": n, "eps": eps, "seed": seed, "targets": names, "errors": errors,
            "advice": advice.method, "snr": advice.snr, "tau": mm.tau_, "signal": bool(mm.signal_["signal"]),
            "seconds": time.perf_counter() - t0}


def _fed(part, mm, n: int, rng: np.random.Generator) -> pd.DataFrame:
    """MST's rows when marginal_match's measurements join MST's own in the Private-PGM estimate."""
    from dpiw.sdgp.mst import _mbi

    mbi = _mbi()
    both = [mbi.LinearMeasurement(y, tuple(map(str, cl)), stddev=sd) for cl, y, sd in part.measurements_]
    both += [mbi.LinearMeasurement(y, tuple(map(str, cl)), stddev=mm.sigma_) for cl, y in mm.measurements_]
    fed = copy.copy(part)
    fed.model_ = mbi.estimation.MirrorDescent().estimate(part._domain(mbi), both, known_total=float(n),
                                                         iters=part.iters)
    return fed.sample(n, rng=rng)


def _unit(args):
    return unit(*args)


def run_study(study: Study, *, progress=print) -> list[dict]:
    jobs = [(study, t, r, e, s) for t in study.tables for r in study.rows for e in study.epsilons
            for s in range(study.seeds)]
    out, t0 = [], time.perf_counter()
    import multiprocessing

    with ProcessPoolExecutor(study.workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        for k, res in enumerate(pool.map(_unit, jobs), 1):
            out.append(res)
            progress(f"[{k}/{len(jobs)}] {res['table']} N={res['rows']} eps={res['eps']:g} seed={res['seed']}: "
                     f"{res['seconds']:.0f} s (elapsed {time.perf_counter() - t0:.0f} s)")
    return out


def compare_cell(units: list[dict]) -> dict:
    """Every arm against ``none`` over the seeds of one (table, N, epsilon), per target and per family."""
    from dpiw.evaluate.compare import holm, paired_values

    names = units[0]["targets"]
    err = {arm: np.abs(np.stack([u["errors"][arm] for u in units])) for arm in ARMS}
    keep = ~np.any([np.isnan(e).any(axis=0) for e in err.values()], axis=0)
    fam = np.array([family(t) for t in names])
    out = {"targets": int(keep.sum()), "advice": sorted({u["advice"] for u in units}),
           "snr": units[0]["snr"], "signal": sum(u["signal"] for u in units), "seeds": len(units)}
    own = {names[j]: paired_values(err["marginal_match"][:, j], err["none_split"][:, j], "abs_error")
           for j in np.nonzero(keep)[0]}
    out["vs_own_rows"] = {"wins": sum(p.win() for p in own.values()), "losses": sum(p.loss() for p in own.values()),
                          "holm_losses": len(holm(own, side=-1))}
    base = err["none"].mean(axis=0)
    for arm in ARMS[1:]:
        res = {}
        for fname in (None, *FAMILIES):
            sel = keep if fname is None else keep & (fam == fname)
            if not sel.any():
                continue
            idx = np.nonzero(sel)[0]
            pairs = [paired_values(err[arm][:, j], err["none"][:, j], "abs_error") for j in idx]
            ratio = err[arm][:, idx].mean(axis=0) / np.where(base[idx] > 0, base[idx], np.nan)
            res[fname or "all"] = {"relmed": float(np.nanmedian(ratio)), "wins": sum(p.win() for p in pairs),
                                   "losses": sum(p.loss() for p in pairs), "n": int(idx.size)}
        out[arm] = res
    return out


def cells(units: list[dict]) -> dict[tuple, dict]:
    groups: dict[tuple, list] = {}
    for u in units:
        groups.setdefault((u["table"], u["rows"], u["eps"]), []).append(u)
    return {k: compare_cell(sorted(v, key=lambda u: u["seed"])) for k, v in sorted(groups.items())}


def paid(res: dict) -> bool:
    """marginal_match paid for its share: its median relative error is below 1 and its wins beat its losses."""
    return res["relmed"] < 1.0 and res["wins"] > res["losses"]


def _fmt(res: dict) -> str:
    return f"{res['relmed']:.2f} ({res['wins']}/{res['losses']})"


def render(study: Study, table: dict[tuple, dict], *, seconds: float, figure: str | None) -> str:
    from dpiw.weights.advisor import SNR_MIN

    lines = [
        "# Do the weights pay for their budget? (generated)",
        "",
        "Generated by `make usefulness` (`python -m dpiw.usefulness --config configs/usefulness.yaml`) from "
        f"{sum(c['seeds'] for c in table.values())} releases in {seconds / 60:.0f} min; do not edit by hand.",
        "",
        "**The question.** A curator holds a table, all of it private, and a budget epsilon (delta "
        f"{study.delta:g}). Spend {study.fraction:g} of it on DP weights and the rest on the generator, or the "
        "whole of it on the generator? Each arm releases from the whole table; each is scored on what an analyst "
        "estimates (every column's mean or shares, the target in every subgroup and in every cell of the 3-way "
        "cross-tabs with it, the coefficients of the regression of the target on the rest; "
        "`dpiw.evaluate.analyst`), against the table itself.",
        "",
        "**Arms** (SDGP: MST): `none` on the whole epsilon (the control); `none_split`, MST on its share; "
        "`marginal_match`, those rows weighted (zCDP split, MST's own measurements matched too); "
        "`fed_to_generator`, the same measurements fed into Private-PGM instead; `advisor`, what the budget "
        f"advisor picks from public quantities (marginal_match when its signal-to-noise ratio >= {SNR_MIN:g}, "
        "a threshold named before this study ran).",
        "",
        "**Reading a cell**: relmed = the median over targets of the arm's mean absolute error over `none`'s "
        "(below 1: better than giving the whole epsilon to the generator), then (wins/losses) over targets, "
        "each paired over the seeds beyond 2 SE and the 1% margin (`dpiw.evaluate.compare`). The advisor is "
        "*right* when it picked marginal_match exactly where marginal_match paid (relmed < 1 and more wins "
        "than losses).",
        "",
    ]
    if figure:
        lines += [f"![relmed against N]({figure})", ""]
    for tname in study.tables:
        lines += [f"## {tname}", "",
                  "| N | epsilon | snr | none_split | marginal_match | fed_to_generator | advisor | picked | right "
                  "| marginal_match vs its own unweighted rows |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for (t, n, eps), c in table.items():
            if t != tname:
                continue
            pick, own = "/".join(c["advice"]), c["vs_own_rows"]
            right = ("marginal_match" in c["advice"]) == paid(c["marginal_match"]["all"])
            lines.append(f"| {n:,} | {eps:g} | {c['snr']:.2g} | {_fmt(c['none_split']['all'])} | "
                         f"**{_fmt(c['marginal_match']['all'])}** | {_fmt(c['fed_to_generator']['all'])} | "
                         f"{_fmt(c['advisor']['all'])} | {pick} | {'yes' if right else '**no**'} | "
                         f"{own['wins']}/{own['losses']} (Holm: {own['holm_losses']}) |")
        lines += ["", "marginal_match by target family (relmed (wins/losses)):", "",
                  "| N | epsilon | " + " | ".join(FAMILIES) + " |", "|---|---|" + "---|" * len(FAMILIES)]
        for (t, n, eps), c in table.items():
            if t == tname:
                lines.append(f"| {n:,} | {eps:g} | " + " | ".join(
                    _fmt(c["marginal_match"][f]) if f in c["marginal_match"] else "-" for f in FAMILIES) + " |")
        lines.append("")
    right = [("marginal_match" in c["advice"]) == paid(c["marginal_match"]["all"]) for c in table.values()]
    paying = [k for k, c in table.items() if paid(c["marginal_match"]["all"])]
    worse = [k for k, c in table.items() if c["advisor"]["all"]["losses"] > c["advisor"]["all"]["wins"]]
    harm = [k for k, c in table.items() if c["vs_own_rows"]["holm_losses"]]
    lines += [
        "## What the study says",
        "",
        f"- marginal_match paid for its share in {len(paying)} of {len(table)} cells"
        + (": " + ", ".join(f"{t} N={n:,} eps={e:g}" for t, n, e in paying) if paying else "") + ".",
        f"- The advisor was right in {sum(right)} of {len(right)} cells; its release had more losses than wins "
        f"against `none` in {len(worse)} cell(s)"
        + (": " + ", ".join(f"{t} N={n:,} eps={e:g}" for t, n, e in worse) if worse else "") + ".",
        f"- marginal_match made an estimate worse than the same bundle's unweighted rows beyond noise (Holm over "
        f"the targets, one-sided 2.5%, and the margin) in {len(harm)} of {len(table)} cells"
        + (": " + ", ".join(f"{t} N={n:,} eps={e:g} ({table[t, n, e]['vs_own_rows']['holm_losses']} targets)"
                            for t, n, e in harm) if harm else "") + ".",
        "- Where marginal_match and `fed_to_generator` differ, compare their columns: the same measurements, "
        "spent on weights or on the generator.",
        "- Not yet studied: PrivBayes and DPCGAN rows, the fixed BetaDebiased, and more tables (this page covers MST "
        "only).",
        "",
    ]
    return "\n".join(lines)


def plot(study: Study, table: dict[tuple, dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(study.tables), figsize=(5.5 * len(study.tables), 4), squeeze=False)
    for ax, tname in zip(axes[0], study.tables, strict=True):
        for eps in study.epsilons:
            keys = sorted((n, k) for k in table if k[0] == tname and k[2] == eps for n in [k[1]])
            ns = [n for n, _ in keys]
            for arm, style in (("marginal_match", "-o"), ("fed_to_generator", ":s"), ("none_split", "--x")):
                ax.plot(ns, [table[k][arm]["all"]["relmed"] for _, k in keys], style,
                        label=f"{arm}, eps={eps:g}", alpha=0.85)
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("rows N (the whole private table)")
        ax.set_ylabel("median error / error of MST on the whole epsilon")
        ax.set_title(tname)
    axes[0][0].legend(fontsize=7, ncol=1)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m dpiw.usefulness", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", default="configs/usefulness.yaml")
    p.add_argument("--out", default="docs/usefulness.md")
    p.add_argument("--figure", default="docs/usefulness.png", help="the plot (written beside --out)")
    p.add_argument("--units", default="results/usefulness/units.pkl",
                   help="where the releases' errors are kept (pickle), to render the page again")
    p.add_argument("--render-only", action="store_true", help="render the page from --units without rerunning")
    args = p.parse_args(argv)
    study = load_study(args.config)
    units_path = Path(args.units)
    if args.render_only:
        if not units_path.is_file():
            raise DpiwError(f"{units_path}: no units to render; run without --render-only first")
        units, seconds = pd.read_pickle(units_path)
    else:
        t0 = time.perf_counter()
        units = run_study(study)
        seconds = time.perf_counter() - t0
        units_path.parent.mkdir(parents=True, exist_ok=True)
        pd.to_pickle((units, seconds), units_path)
    table = cells(units)
    plot(study, table, args.figure)
    fig = Path(args.figure).relative_to(Path(args.out).parent) if args.figure else None
    Path(args.out).write_text(render(study, table, seconds=seconds, figure=str(fig)))
    print(f"usefulness: {len(units)} releases in {seconds:.0f} s -> {args.out}, {args.figure}")


if __name__ == "__main__":
    from dpiw.stages._cli import run

    run(main)
