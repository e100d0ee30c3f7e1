"""The usefulness study: do DP weights beat giving the whole epsilon to the SDGP, on real tables of realistic
size? ``python -m dpiw.studies.usefulness --config configs/usefulness.yaml --out docs/usefulness.md``
(``make usefulness``).

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
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from dpiw import DpiwError

#: the arms studied after each SDGP: MST (zCDP) also feeds the measurements to its generator and has the advisor;
#: after PrivBayes (pure epsilon) the split is made in epsilon and the fixed BetaDebiased (lambda 'rate') joins
#: AIM (zCDP, like MST) has the advisor and reuses its measurements too; it is also compared with MST (below)
ARMS_BY_SDGP = {"mst": ("none", "none_split", "marginal_match", "fed_to_generator", "advisor"),
                "privbayes": ("none", "none_split", "marginal_match", "beta_debiased"),
                "aim": ("none", "none_split", "marginal_match", "advisor")}
#: AIM against MST, paired on the same tables, sizes, epsilons and seeds: the arms compared
VERSUS_ARMS = ("none", "advisor")
#: the rule, named before the comparison ran: AIM becomes `dpiw release`'s default SDGP when the release it
#: would ship (the advisor arm) beats MST's (relmed < 1 and more wins than losses) in at least this share of the
#: (table, N, epsilon) cells
AIM_DEFAULT_SHARE = 2 / 3
ARMS = ARMS_BY_SDGP["mst"]
#: target families, by the start of their names (dpiw.evaluate.analyst)
FAMILIES = {"means and shares": ("mean ", "share "), "subgroups": (), "3-way cells": (), "regression": ("coef ",),
            "pairs without the target": ("pair ",)}


@dataclass(frozen=True)
class Study:
    tables: tuple[str, ...]
    rows: tuple  # ints, or "full"
    epsilons: tuple[float, ...]
    seeds: int
    delta: float
    fraction: float
    sdgps: tuple[str, ...]
    workers: int


def load_study(path: str | Path) -> Study:
    d = yaml.safe_load(Path(path).read_text()).get("study")
    if not isinstance(d, dict):
        raise DpiwError(f"{path}: needs a top-level 'study:' mapping (tables, rows, epsilons, seeds, ...)")
    allowed = {"tables", "rows", "epsilons", "seeds", "delta", "weights_fraction", "sdgps", "workers"}
    if set(d) - allowed:
        raise DpiwError(f"{path}: unknown study key(s) {sorted(set(d) - allowed)}; allowed: {sorted(allowed)}")
    rows = tuple(d.get("rows", ["full"]))
    if not all(r == "full" or (isinstance(r, int) and r >= 100) for r in rows):
        raise DpiwError(f"{path}: study.rows holds row counts >= 100 or 'full', got {list(rows)}")
    sdgps = tuple(d.get("sdgps", ["mst"]))
    if not sdgps or set(sdgps) - set(ARMS_BY_SDGP):
        raise DpiwError(f"{path}: study.sdgps: choose from {sorted(ARMS_BY_SDGP)}, got {list(sdgps)}")
    return Study(tuple(d["tables"]), rows, tuple(float(e) for e in d["epsilons"]), int(d.get("seeds", 5)),
                 float(d.get("delta", 1e-6)), float(d.get("weights_fraction", 0.3)), sdgps, int(d.get("workers", 2)))


def family(target: str) -> str:
    if target.startswith(("mean ", "share ")):
        return "means and shares"
    if target.startswith("coef "):
        return "regression"
    if target.startswith("pair "):
        return "pairs without the target"
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


def _generator(sdgp: str):
    """A fresh SDGP with params.yaml's settings."""
    from dpiw.sdgp import make_sdgp

    return make_sdgp(sdgp, **yaml.safe_load(Path("params.yaml").read_text())["sdgp"][sdgp])


def unit(study: Study, table: str, rows, eps: float, seed: int, arms: tuple[str, ...] | None = None,
         sdgp: str = "mst") -> dict:
    """One (table, N, epsilon, seed, SDGP): the errors of ``arms`` (the SDGP's, by default) on every target."""
    from dpiw import registry
    from dpiw.evaluate.analyst import analyst_targets
    from dpiw.privacy.spend import split_budget, split_rule
    from dpiw.weights.advisor import advise
    from dpiw.weights.marginal_match import MarginalMatch

    arms = ARMS_BY_SDGP[sdgp] if arms is None else arms

    schema, real = _table(table, rows)
    n = len(real)
    truth = analyst_targets(real, schema)

    def rng(arm: str) -> np.random.Generator:
        # MST's streams keep their keys from before PrivBayes joined; AIM shares them (common random numbers for
        # the AIM-MST comparison: the same marginal_match noise, the same first draws)
        key = arm if sdgp in ("mst", "aim") else f"{sdgp}/{arm}"
        return np.random.default_rng([seed, zlib.crc32(table.encode()), n, int(round(eps * 1000)),
                                      zlib.crc32(key.encode())])

    f, delta = study.fraction, study.delta
    split = split_budget(eps, delta, weights_method="marginal_match", weights_epsilon_fraction=f,
                         weights_delta_fraction=f, rule=split_rule(sdgp, "marginal_match", "replace_one"))
    t0 = time.perf_counter()
    releases = {}
    if "none" in arms or "advisor" in arms:
        g = rng("none")
        releases["none"] = (_generator(sdgp).fit(real, schema, epsilon=eps, delta=delta, rng=g).sample(n, rng=g),
                            None)
    g = rng("split")
    part = _generator(sdgp).fit(real, schema, epsilon=split.sdgp_epsilon, delta=split.sdgp_delta, rng=g)
    rows_split = part.sample(n, rng=g)
    mm = MarginalMatch().on_bins_of(part).measure(real, schema, epsilon=split.weights_epsilon,
                                                  delta=split.weights_delta, rng=rng("marginal_match"))
    mm.reweight(rows_split, extra=getattr(part, "measurements_", ()) if registry.sdgp(sdgp).zcdp else ())
    releases.update({"none_split": (rows_split, None), "marginal_match": (rows_split, np.exp(mm.log_ratio_))})
    if "beta_debiased" in arms:  # the same rows and the same share, split in epsilon
        from dpiw.data.encode import encode, norm_bound
        from dpiw.weights.estimators import make_estimator

        share = split_budget(eps, delta, weights_method="beta_debiased", weights_epsilon_fraction=f,
                             weights_delta_fraction=f)
        beta = make_estimator("beta_debiased", lam="rate", sensitivity_n="private", rho_target=0.3)
        X_synth = encode(rows_split, schema)
        beta.fit(encode(real, schema), X_synth, epsilon=share.weights_epsilon, delta=share.weights_delta,
                 rng=rng("beta_debiased"), norm_bound=norm_bound(schema))
        releases["beta_debiased"] = (rows_split, np.exp(beta.log_ratio(X_synth) - beta.log_ratio(X_synth).max()))
    advice = advise(n, schema, epsilon=eps, delta=delta, fraction=f)
    if "advisor" in arms:
        releases["advisor"] = releases[advice.method]
    if "fed_to_generator" in arms:
        releases["fed_to_generator"] = (_fed(part, mm, n, rng("fed_to_generator")), None)
    names = list(truth)
    errors = {arm: np.array([analyst_targets(frame, schema, w).get(t, np.nan) for t in names]) - np.array(
        [truth[t] for t in names]) for arm, (frame, w) in releases.items() if arm in arms}
    return {"table": table, "rows": n, "eps": eps, "seed": seed, "sdgp": sdgp, "targets": names, "errors": errors,
            "advice": advice.method, "snr": advice.snr, "tau": mm.tau_, "signal": bool(mm.signal_["signal"]),
            "seconds": time.perf_counter() - t0}


def _fed(part, mm, n: int, rng: np.random.Generator) -> pd.DataFrame:
    """MST's rows when marginal_match's measurements join MST's own in the Private-PGM estimate."""
    from dpiw.sdgp.pgm import estimate, mbi_module

    both = [*part.measurements_, *((cl, y, mm.sigma_) for cl, y in mm.measurements_)]
    fed = copy.copy(part)
    fed.model_ = estimate(mbi_module(), part.cards_, both, total=n, iters=part.iters)
    return fed.sample(n, rng=rng)


def _unit(args):
    study, table, rows, eps, seed, arms, sdgp = args
    return unit(study, table, rows, eps, seed, arms, sdgp)


def _key(u: dict, study: Study) -> tuple:
    """A unit's job: (SDGP, table, rows as the config names them, epsilon, seed)."""
    spec = u["rows"] if u["rows"] in study.rows else "full"
    return u.get("sdgp", "mst"), u["table"], spec, u["eps"], u["seed"]


def run_study(study: Study, *, done: list[dict] = (), save=None, progress=print) -> list[dict]:
    """Every unit of the study. Units in ``done`` (an earlier run's) that the study still asks for are kept, not
    rerun, and ``save(units)`` is called after each new one, so nothing is lost when a long study stops."""
    jobs = {(g, t, r, e, s): (study, t, r, e, s, None, g) for g in study.sdgps for t in study.tables
            for r in study.rows for e in study.epsilons for s in range(study.seeds)}
    out = [u for u in done if _key(u, study) in jobs]
    todo = [job for key, job in jobs.items() if key not in {_key(u, study) for u in out}]
    progress(f"usefulness: {len(out)} of {len(jobs)} releases kept from the last run, {len(todo)} to go")
    import multiprocessing
    import os

    t0 = time.perf_counter()
    # the workers hash strings with a fixed seed: Private-PGM's larger models (fed_to_generator's) are built in
    # an order that follows string hashes, and so are their floating-point results (as for the workflow's jobs)
    before = os.environ.get("PYTHONHASHSEED")
    os.environ["PYTHONHASHSEED"] = "0"
    try:
        with ProcessPoolExecutor(study.workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            for k, res in enumerate(pool.map(_unit, todo), 1):
                out.append(res)
                if save:
                    save(out)
                progress(f"[{k}/{len(todo)}] {res['sdgp']} {res['table']} N={res['rows']} eps={res['eps']:g} "
                         f"seed={res['seed']}: {res['seconds']:.0f} s (elapsed {time.perf_counter() - t0:.0f} s)")
    finally:
        if before is None:
            os.environ.pop("PYTHONHASHSEED", None)
        else:
            os.environ["PYTHONHASHSEED"] = before
    return out


def compare_cell(units: list[dict]) -> dict:
    """Every arm against ``none`` over the seeds of one (SDGP, table, N, epsilon), per target and per family, and
    marginal_match against its own unweighted rows."""
    from dpiw.evaluate.compare import holm, paired_values

    names = units[0]["targets"]
    arms = [a for a in ARMS_BY_SDGP[units[0].get("sdgp", "mst")] if a in units[0]["errors"]]
    err = {arm: np.abs(np.stack([u["errors"][arm] for u in units])) for arm in arms}
    keep = ~np.any([np.isnan(e).any(axis=0) for e in err.values()], axis=0)
    fam = np.array([family(t) for t in names])
    out = {"targets": int(keep.sum()), "advice": sorted({u["advice"] for u in units}), "arms": arms,
           "snr": units[0]["snr"], "signal": sum(u["signal"] for u in units), "seeds": len(units)}
    own = {names[j]: paired_values(err["marginal_match"][:, j], err["none_split"][:, j], "abs_error")
           for j in np.nonzero(keep)[0]}
    out["vs_own_rows"] = {"wins": sum(p.win() for p in own.values()), "losses": sum(p.loss() for p in own.values()),
                          "holm_losses": len(holm(own, side=-1))}
    base = err["none"].mean(axis=0)
    for arm in arms[1:]:
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
    """(SDGP, table, N, epsilon) -> :func:`compare_cell`."""
    groups: dict[tuple, list] = {}
    for u in units:
        groups.setdefault((u.get("sdgp", "mst"), u["table"], u["rows"], u["eps"]), []).append(u)
    return {k: compare_cell(sorted(v, key=lambda u: u["seed"])) for k, v in sorted(groups.items())}


def versus(units: list[dict], a: str = "aim", b: str = "mst") -> dict[tuple, dict]:
    """(table, N, epsilon) -> SDGP ``a``'s arms against ``b``'s same arms (:data:`VERSUS_ARMS`), paired over the
    seeds both ran: relmed (a's mean absolute error over b's), wins and losses of a, and each SDGP's mean seconds
    per release unit."""
    from dpiw.evaluate.compare import paired_values

    groups: dict[tuple, dict] = {}
    for u in units:
        groups.setdefault((u["table"], u["rows"], u["eps"]), {}).setdefault(u.get("sdgp", "mst"), {})[u["seed"]] = u
    out = {}
    for key, g in sorted(groups.items()):
        seeds = sorted(set(g.get(a, ())) & set(g.get(b, ())))
        if len(seeds) < 2:
            continue
        names = g[a][seeds[0]]["targets"]
        if names != g[b][seeds[0]]["targets"]:
            raise DpiwError(f"usefulness: {a} and {b} were scored on different targets in {key}")
        res = {}
        for arm in VERSUS_ARMS:
            ea, eb = (np.abs(np.stack([g[x][s]["errors"][arm] for s in seeds])) for x in (a, b))
            idx = np.nonzero(~(np.isnan(ea).any(axis=0) | np.isnan(eb).any(axis=0)))[0]
            pairs = [paired_values(ea[:, j], eb[:, j], "abs_error") for j in idx]
            base = eb[:, idx].mean(axis=0)
            ratio = ea[:, idx].mean(axis=0) / np.where(base > 0, base, np.nan)
            res[arm] = {"relmed": float(np.nanmedian(ratio)), "wins": sum(p.win() for p in pairs),
                        "losses": sum(p.loss() for p in pairs), "n": int(idx.size)}
        res["seconds"] = {x: float(np.mean([g[x][s]["seconds"] for s in seeds])) for x in (a, b)}
        res["seeds"] = len(seeds)
        out[key] = res
    return out


def aim_verdict(pairs: dict[tuple, dict]) -> tuple[bool, int]:
    """Whether AIM should become the release default by :data:`AIM_DEFAULT_SHARE`, and in how many cells its
    advisor release beat MST's."""
    better = sum(paid(r["advisor"]) for r in pairs.values())
    return bool(pairs) and better >= AIM_DEFAULT_SHARE * len(pairs), better


def paid(res: dict) -> bool:
    """A weighting paid for its share: its median relative error is below 1 and its wins beat its losses."""
    return res["relmed"] < 1.0 and res["wins"] > res["losses"]


def _fmt(res: dict) -> str:
    return f"{res['relmed']:.2f} ({res['wins']}/{res['losses']})"


def _where(keys) -> str:
    return ", ".join(f"{t} N={n:,} eps={e:g}" for _, t, n, e in keys)


def headline(table: dict[tuple, dict], fraction: float, sdgp: str = "mst") -> list[str]:
    """The answer by target family where `dpiw release`'s advisor picks the weights after ``sdgp``: the median
    and range over those cells of marginal_match's relmed per family (a median over all targets can hide a family
    that gets worse)."""
    picked = [k for k in table if k[0] == sdgp and "marginal_match" in table[k].get("advice", ())]
    if not picked:
        return []
    parts, worse = [], []
    for fam in FAMILIES:
        vals = sorted(table[k]["marginal_match"][fam]["relmed"] for k in picked if fam in table[k]["marginal_match"])
        if not vals:
            continue
        med = float(np.median(vals))
        parts.append(f"{fam} {med:.2f} ({vals[0]:.2f} to {vals[-1]:.2f})")
        (worse if med > 1 else []).append(fam)
    said = (f" Below 1 the weighted release is better. For {' and '.join(worse)} it is worse at the median: a "
            "curator whose analysts need only those gives the whole budget to the generator (`--weights none`)."
            if worse else " Below 1 the weighted release is better; no family is worse at the median.")
    return [f"**The answer, by family of estimate.** In the {len(picked)} cells where `dpiw release`'s advisor "
            f"spends {fraction:g} of the budget on `marginal_match` after {sdgp}, the error of each family of "
            f"estimate as a share of {sdgp}'s on the whole epsilon, median (lowest to highest) over those cells: "
            + "; ".join(parts) + "." + said, ""]


def render(study: Study, table: dict[tuple, dict], *, seconds: float, figure: str | None,
           units: list[dict] = (), left_out: tuple[str, ...] = ()) -> str:
    from dpiw.weights.advisor import SNR_MIN

    lines = [
        "# Do the weights pay for their budget? (generated)",
        "",
        "Generated by `make usefulness` (`python -m dpiw.studies.usefulness --config configs/usefulness.yaml`) from "
        f"{sum(c['seeds'] for c in table.values())} releases ({seconds / 60:.0f} min of compute); do not edit by "
        "hand." + (f" **This page leaves out the config's {', '.join(left_out)}** (`--sdgps`: its releases were not "
                   "all rerun at this code; the last page that held them is in this file's git history)."
                   if left_out else ""),
        "",
        "**The question.** A curator holds a table, all of it private, and a budget epsilon (delta "
        f"{study.delta:g}). Spend {study.fraction:g} of it on DP weights and the rest on the generator, or the "
        "whole of it on the generator? Each arm releases from the whole table; each is scored on what an analyst "
        "estimates (every column's mean or shares, the target in every subgroup and in every cell of the 3-way "
        "cross-tabs with it, the coefficients of the regression of the target on the rest, and the relations "
        "without the target: every other column's mean or rates in every subgroup of a third; "
        "`dpiw.evaluate.analyst`), against the table itself. Smaller tables are public random subsets of the "
        "real one, each then the curator's whole table.",
        "",
        "**Arms.** `none`: the SDGP on the whole epsilon (the control: no weights). `none_split`: the SDGP on its "
        f"share (1 - {study.fraction:g}). `marginal_match`: those rows weighted (after MST the split is made in "
        "zCDP and MST's own measurements are matched too, and so after AIM; after PrivBayes the split is in "
        "epsilon). "
        "`fed_to_generator` (MST): the same measurements fed into Private-PGM instead of into weights. "
        "`advisor` (MST and AIM; `dpiw release`'s default after MST): marginal_match when the budget advisor's "
        f"signal-to-noise ratio (snr) >= {SNR_MIN:g}, a threshold named before this study ran, else `none`. "
        "`beta_debiased` (PrivBayes): the paper's method, lambda 'rate', on the same rows and share.",
        "",
        "**Reading a cell**: relmed = the median over targets of the arm's mean absolute error over `none`'s "
        "(below 1: better than giving the whole epsilon to the generator), then (wins/losses) over targets, "
        "each paired over the seeds, beyond 2 SE and the 1% margin (`dpiw.evaluate.compare`). With 5 seeds and "
        "~170 targets, a few wins and losses are expected by chance alone (the 2-SE rule is one-sided 5-6% per "
        "target at 4 degrees of freedom); the last column of the MST and AIM tables is Holm-adjusted over the "
        "targets. The advisor is *right* when it picked marginal_match exactly where marginal_match paid (relmed "
        "< 1 and more wins than losses).",
        "",
    ]
    lines += headline(table, study.fraction)
    if figure:
        lines += [f"![relmed against N]({figure})", ""]
    for sdgp in study.sdgps:
        arms = ARMS_BY_SDGP[sdgp][1:]
        for tname in study.tables:
            keys = [k for k in table if k[0] == sdgp and k[1] == tname]
            if not keys:
                continue
            extra = (" | picked | right | marginal_match vs its own unweighted rows"
                     if "advisor" in ARMS_BY_SDGP[sdgp] else "")
            lines += [f"## {tname}, {sdgp}", "", "| N | epsilon | snr | " + " | ".join(arms) + extra + " |",
                      "|---|---|---|" + "---|" * (len(arms) + (3 if extra else 0))]
            for k in keys:
                c = table[k]
                row = [f"{k[2]:,}", f"{k[3]:g}", f"{c['snr']:.2g}"] + [
                    f"**{_fmt(c[a]['all'])}**" if a == "marginal_match" else _fmt(c[a]["all"]) for a in arms]
                if extra:
                    own = c["vs_own_rows"]
                    right = ("marginal_match" in c["advice"]) == paid(c["marginal_match"]["all"])
                    row += ["/".join(c["advice"]), "yes" if right else "**no**",
                            f"{own['wins']}/{own['losses']} (Holm: {own['holm_losses']})"]
                lines.append("| " + " | ".join(row) + " |")
            lines += ["", f"marginal_match after {sdgp} by target family (relmed (wins/losses)):", "",
                      "| N | epsilon | " + " | ".join(FAMILIES) + " |", "|---|---|" + "---|" * len(FAMILIES)]
            for k in keys:
                mm = table[k]["marginal_match"]
                lines.append(f"| {k[2]:,} | {k[3]:g} | " + " | ".join(
                    _fmt(mm[f]) if f in mm else "-" for f in FAMILIES) + " |")
            lines.append("")
    lines += ["## What the study says", ""]
    for sdgp in study.sdgps:
        keys = [k for k in table if k[0] == sdgp]
        paying = [k for k in keys if paid(table[k]["marginal_match"]["all"])]
        lines.append(f"- After {sdgp}, marginal_match paid for its share in {len(paying)} of {len(keys)} cells"
                     + (f": {_where(paying)}" if paying else "") + ".")
        harm = [k for k in keys if table[k]["vs_own_rows"]["holm_losses"]]
        lines.append(f"- After {sdgp}, marginal_match made an estimate worse than the same bundle's unweighted rows "
                     f"beyond noise (Holm over the targets, one-sided 2.5%, and the margin) in {len(harm)} of "
                     f"{len(keys)} cells" + (f": {_where(harm)}" if harm else "") + ".")
        if "beta_debiased" in ARMS_BY_SDGP[sdgp]:
            beta = [k for k in keys if paid(table[k]["beta_debiased"]["all"])]
            lines.append(f"- After {sdgp}, BetaDebiased paid for its share in {len(beta)} of {len(keys)} cells"
                         + (f": {_where(beta)}" if beta else "") + ".")
        if "advisor" in ARMS_BY_SDGP[sdgp]:
            right = [k for k in keys if ("marginal_match" in table[k]["advice"])
                     == paid(table[k]["marginal_match"]["all"])]
            worse = [k for k in keys if table[k]["advisor"]["all"]["losses"] > table[k]["advisor"]["all"]["wins"]]
            wrong = sorted(set(keys) - set(right))
            lines.append(f"- The advisor was right in {len(right)} of {len(keys)} cells"
                         + (f" (wrong: {_where(wrong)})" if wrong else "") + f"; its release had more losses than "
                         f"wins against `none` in {len(worse)} cell(s)" + (f": {_where(worse)}" if worse else "")
                         + ".")
        if "fed_to_generator" in ARMS_BY_SDGP[sdgp]:
            better = [k for k in keys if table[k]["marginal_match"]["all"]["relmed"]
                      < table[k]["fed_to_generator"]["all"]["relmed"]]
            lines.append(f"- The same measurements did more as weights than fed into the generator in {len(better)} "
                         f"of {len(keys)} cells (lower relmed).")
    if "aim" in study.sdgps and "mst" in study.sdgps:
        lines += _render_versus(versus(units))
    aim = "" if "aim" in study.sdgps or "aim" in left_out else "AIM, "
    lines += [f"- Not studied here: DPCGAN's rows, {aim}and tables other than "
              "these two.", ""]
    return "\n".join(lines)


def _render_versus(pairs: dict[tuple, dict]) -> list[str]:
    """The AIM-MST section: both arms per cell, then the verdict by the rule named before the study ran."""
    ok, better = aim_verdict(pairs)
    lines = ["", "## AIM against MST", "",
             "Each of AIM's releases against MST's on the same table, size, epsilon and seed (both arms draw their "
             "noise from the same streams: common random numbers), per target beyond 2 SE and the 1% margin. "
             "relmed < 1: AIM's errors are smaller. `none`: each SDGP on the whole epsilon; `advisor`: the "
             "release `dpiw release` ships (both SDGPs' advisor picks the same method, since it reads only public "
             "quantities). **The rule, named before the comparison ran**: AIM becomes the release default when "
             f"its advisor release beats MST's (relmed < 1 and more wins than losses) in at least "
             f"{Fraction(AIM_DEFAULT_SHARE).limit_denominator(12)} of the cells. Seconds: the mean wall time of "
             "one study unit (MST's also fits `fed_to_generator`).", "",
             "| table | N | epsilon | none: AIM vs MST | advisor: AIM vs MST | seconds AIM / MST |",
             "|---|---|---|---|---|---|"]
    for (t, n, e), r in pairs.items():
        lines.append(f"| {t} | {n:,} | {e:g} | {_fmt(r['none'])} | "
                     f"{'**' + _fmt(r['advisor']) + '**' if paid(r['advisor']) else _fmt(r['advisor'])} | "
                     f"{r['seconds']['aim']:.0f} / {r['seconds']['mst']:.0f} |")
    lines += ["", f"- AIM's release beat MST's in {better} of {len(pairs)} cells: "
              + ("**AIM becomes the release default** by the rule." if ok else
                 "by the rule, **MST stays the release default**."), ""]
    return lines


def plot(study: Study, table: dict[tuple, dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib import ticker

    styles = {"marginal_match": "-o", "fed_to_generator": ":s", "none_split": "--x", "beta_debiased": "-.d"}
    colours = dict(zip(study.epsilons, ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple"),
                       strict=False))
    fig, axes = plt.subplots(len(study.sdgps), len(study.tables), figsize=(6 * len(study.tables),
                             4.2 * len(study.sdgps)), squeeze=False)
    for row, sdgp in zip(axes, study.sdgps, strict=True):
        for ax, tname in zip(row, study.tables, strict=True):
            for eps in study.epsilons:
                keys = sorted(k for k in table if k[:2] == (sdgp, tname) and k[3] == eps)
                ns = [k[2] for k in keys]
                for arm in ARMS_BY_SDGP[sdgp][1:]:
                    if arm in styles and keys:
                        ax.plot(ns, [table[k][arm]["all"]["relmed"] for k in keys], styles[arm],
                                color=colours.get(eps), label=f"{arm}, ε={eps:g}", alpha=0.85)
            ax.axhline(1.0, color="k", lw=0.8)
            ax.set_xscale("log")
            ax.set_yscale("log")
            lo, hi = ax.get_ylim()
            dense = (0.02, 0.03, 0.05, 0.1, 0.2, 0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 1, 1.2, 1.5, 2, 3)
            ticks = [t for t in (dense if hi / lo < 5 else (0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 1, 2)) if lo <= t <= hi]
            ax.set_yticks(ticks, [f"{t:g}" for t in ticks])
            ax.yaxis.set_minor_formatter(ticker.NullFormatter())
            ns = sorted({k[2] for k in table if k[:2] == (sdgp, tname)})
            ax.set_xticks(ns, [f"{n:,}" for n in ns])
            ax.xaxis.set_minor_formatter(ticker.NullFormatter())
            ax.set_xlabel("rows N (the whole private table)")
            ax.set_ylabel(f"median error / {sdgp}'s on the whole ε")
            ax.set_title(f"{tname}, {sdgp}: below 1, weighting beats no weights")
            ax.grid(True, which="both", alpha=0.3)
        row[-1].legend(fontsize=7, loc="center left", bbox_to_anchor=(1.02, 0.5))
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m dpiw.studies.usefulness", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", default="configs/usefulness.yaml")
    p.add_argument("--out", default="docs/usefulness.md")
    p.add_argument("--figure", default="docs/usefulness.png", help="the plot (written beside --out)")
    p.add_argument("--units", default="results/usefulness/units.pkl",
                   help="where the releases' errors are kept (pickle): a rerun keeps the releases it still needs")
    p.add_argument("--fresh", action="store_true", help="rerun every release (after a change to a method)")
    p.add_argument("--render-only", action="store_true", help="render the page from --units without running")
    p.add_argument("--sdgps", nargs="+", help="only these of the config's SDGPs (the page says which it leaves out)")
    args = p.parse_args(argv)
    study = load_study(args.config)
    left_out = ()
    if args.sdgps:
        if set(args.sdgps) - set(study.sdgps):
            raise DpiwError(f"--sdgps: choose from the config's {list(study.sdgps)}, got {args.sdgps}")
        left_out = tuple(g for g in study.sdgps if g not in args.sdgps)
        study = replace(study, sdgps=tuple(g for g in study.sdgps if g in args.sdgps))
    units_path = Path(args.units)
    done, seconds = ([], 0.0) if args.fresh or not units_path.is_file() else pd.read_pickle(units_path)
    if args.render_only and not done:
        raise DpiwError(f"{units_path}: no releases to render; run without --render-only first")
    if not args.render_only:
        units_path.parent.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()

        aside = [u for u in done if u.get("sdgp", "mst") not in study.sdgps]  # --sdgps left them out: kept

        def save(units):
            pd.to_pickle((units + aside, seconds + time.perf_counter() - t0), units_path)

        done = run_study(study, done=done, save=save)
        save(done)
        seconds += time.perf_counter() - t0
    if left_out:  # the releases of the SDGPs the page holds, and their share of the time (per worker)
        done = [u for u in done if u.get("sdgp", "mst") in study.sdgps]
        seconds = sum(u["seconds"] for u in done) / max(study.workers, 1)
    table = cells(done)
    plot(study, table, args.figure)
    fig = Path(args.figure).relative_to(Path(args.out).parent) if args.figure else None
    Path(args.out).write_text(render(study, table, seconds=seconds, figure=str(fig), units=done, left_out=left_out))
    print(f"usefulness: {len(done)} releases -> {args.out}, {args.figure}")


if __name__ == "__main__":
    from dpiw.stages._cli import run

    run(main)
