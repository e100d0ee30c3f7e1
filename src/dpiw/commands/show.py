"""Say what a run spent and whether its bundle may be published: its manifest in words.

Give a run's folder (results/<config>/runs/<dataset>/eps=<e>/seed=<s>/<sdgp>/<weights>/<post>), its release
bundle (that folder's release/) or a manifest.json.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from dpiw import DpiwError
from dpiw.io import read_json
from dpiw.scale import part_text


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", metavar="RUN|BUNDLE", nargs="+",
                   help="a release's folder (releases/<name>/<release>), a run's folder, its release/ bundle, or a "
                        "manifest.json; several (a shell pattern such as releases/clinic/eps=1-*), or a folder of "
                        "releases (releases/clinic), show each")


def find_manifest(path: str | Path) -> Path:
    p = Path(path)
    for candidate in (p, p / "manifest.json", p.parent / "manifest.json"):
        if candidate.is_file() and candidate.name == "manifest.json":
            return candidate
    bundles = sorted(p.glob("run/runs/**/release/manifest.json")) if p.is_dir() else []
    if len(bundles) == 1:  # a release's folder (`dpiw release`: releases/<name>/<release>/)
        return bundles[0]
    if (p / "refused.json").is_file():
        raise DpiwError(f"{p}: a refused bundle (no rows, no weights); the reasons are in {p / 'refused.json'}; "
                        f"the run's manifest is in {p.parent / 'manifest.json'}")
    raise DpiwError(f"{p}: no manifest.json here (give a release's folder, a folder of releases, a run's folder, its "
                    "release/ folder or a manifest.json)")


def _num(x) -> str:
    return "–" if x is None else f"{x:.4g}"


#: a release above this epsilon gets a caution line: the guarantee it gives any one row is weak
HIGH_EPSILON = 5.0


def _shares(records: list[dict], total: float, delta: float) -> dict[str, float]:
    """Each spending stage's share of the run's epsilon, in the order the stages ran: what the release's epsilon
    grows by when the stage is added. Split in zCDP (MST, then marginal_match on the rest of the rho), the first
    stage keeps its own epsilon (0.7 of 1) and the next the rest (0.3), although its own epsilon alone (0.69)
    is larger: composed, the two cost less than their sum. Otherwise the shares are the stages' epsilons."""
    from dpiw.privacy.accounting import zcdp_to_dp

    spending = [r for r in records if r["dp"] and (r.get("epsilon") or 0) > 0]
    zcdp = all(r.get("rdp") and all(e.get("kind") == "zcdp" for e in r["rdp"]) for r in spending)
    if not zcdp or len(spending) < 2:
        weights = [r["epsilon"] for r in spending]
        return {r["stage"]: w / (sum(weights) or 1.0) for r, w in zip(spending, weights, strict=True)}
    grown, rho, before = {}, 0.0, 0.0
    for i, r in enumerate(spending):
        rho += sum(e["rho"] for e in r["rdp"])
        upto = r["epsilon"] if i == 0 else (total if i == len(spending) - 1 else zcdp_to_dp(rho, delta))
        grown[r["stage"]], before = (upto - before) / total, upto
    return grown


def _lifetime(m: dict, *, later: bool = False) -> list[str]:
    """The table's lifetime budget after this release, and a caution where one release takes much of it (``later``:
    read after the release, when the ledger may hold more: said so)."""
    led = m["ledger"]
    if "budget" not in led:  # a published bundle: its table's lifetime stays in the curator's store
        return [f"lifetime   not in a published bundle (it would tell which tables share rows): the curator's "
                f"`dpiw ledger show` has it; ledger entry {led['entry'][:16]}"]
    b = led["budget"]
    first = "; this first release created the table's ledger" if led["releases"] == 1 else ""
    if led.get("default_budget"):
        first += (f" with the default lifetime epsilon {_num(b['epsilon'])} (change it on the record: `dpiw ledger "
                  "set-budget`)")
    left = max(b["epsilon"] - led["lifetime"]["epsilon"], 0.0)
    lines = [f"lifetime   {'when this release was admitted: ' if later else ''}epsilon "
             f"{_num(led['lifetime']['epsilon'])} of {_num(b['epsilon'])} at delta {_num(b['delta'])} over "
             f"{led['releases']} release(s) of this table ({_num(left)} left){first}; ledger entry {led['entry'][:16]}"
             + ("; `dpiw ledger show` has the table's spend now" if later else "")]
    took = m["spent"].get("tightest", m["spent"])["epsilon"] / b["epsilon"]
    if took > 0.5:
        lines.append(f"caution    this one release took {took:.0%} of the table's lifetime budget: later releases of "
                     f"the table have epsilon {_num(left)} left between them")
    return lines


def describe(m: dict, *, later: bool = False) -> list[str]:
    """The manifest as lines of text: the guarantee first, the lifetime budget left, then the stages as shares
    (``later``: `dpiw show` after the release, when its lifetime line is a past one)."""
    rel = m.get("neighbours", {}).get("relation", "replace_one")
    relation = {"replace_one": "replace-one", "add_remove": "add/remove"}.get(rel, rel)
    budget, spent, release = m["budget"], m["spent"], m["release"]
    lines = [f"run        {m['run']}  ({m.get('mode', 'benchmark')} mode)"]
    if m["dp"]:
        tight = spent.get("tightest") or {"epsilon": spent["epsilon"], "delta": spent["delta"]}
        lines.append(f"guarantee  ({_num(tight['epsilon'])}, {_num(tight['delta'])})-DP for the whole release, "
                     f"{relation} neighbours  [{m['verdict']}: the budget was epsilon {_num(budget['epsilon'])}, "
                     f"delta {_num(budget['delta'])}]")
        if m.get("ledger"):
            lines += _lifetime(m, later=later)
        if tight["epsilon"] > HIGH_EPSILON:
            lines.append(f"caution    epsilon {_num(tight['epsilon'])} is a weak guarantee: above {HIGH_EPSILON:g}, "
                         "what the release lets anyone learn of one person is barely bounded")
        shares = _shares(m["records"], tight["epsilon"], tight["delta"])
        own = [(r["stage"], r["epsilon"]) for r in m["records"] if r["stage"] in shares]
        lines.append(f"stages     each stage's part of the guarantee's epsilon {_num(tight['epsilon'])}, in percent" + (
            " (alone, " + " and ".join(f"{stage} would cost epsilon {_num(e)}" for stage, e in own) +
            ": their own epsilons add up to more than the guarantee, because composed together they cost less than "
            "their sum)" if len(own) > 1 and sum(e for _, e in own) > tight["epsilon"] * 1.001 else ""))
        for r in m["records"]:
            if r["stage"] in shares:
                share = "all" if len(shares) == 1 else part_text(shares[r["stage"]])
                lines.append(f"  {r['stage']:<20} {share:<6} {r['mechanism']}")
        free = [r["stage"] for r in m["records"] if r["dp"] and r["stage"] not in shares]
        if free:
            lines.append(f"  {'no spend':<20} {', '.join(free)} (they read no private value, or only what the "
                         "others released)")
    else:
        lines.append(f"spent      NOT differentially private: {m['verdict']}")
        if m.get("ledger"):
            lines += _lifetime(m)
        lines.append("stages")
        for r in m["records"]:
            eps = "not DP" if not r["dp"] else f"epsilon {_num(r['epsilon'])}, delta {_num(r['delta'])}"
            lines.append(f"  {r['stage']:<20} {eps:<32} {r['mechanism']}")
    lines.append(f"noise      {m['noise_seeds']['note']}")
    if release.get("weights", {}).get("checked"):
        lines.append(f"weights    {release['weights']['note']}")
    verdict = "FIT TO RELEASE" if release["fit_to_release"] else "NOT fit to release"
    lines.append(f"release    {verdict}: " + "; ".join(release["reasons"]))
    return lines


def bundle_folder(manifest_path: Path) -> Path | None:
    """The bundle beside a run's manifest (its release/ folder), or the folder the manifest is in."""
    for folder in (manifest_path.parent, manifest_path.parent / "release"):
        if (folder / "synthetic.parquet").is_file():
            return folder
    return None


def describe_bundle(folder: Path, *, rows: int = 5) -> list[str]:
    """What an analyst gets: the rows and weights' size, k-hat and ESS, and the first rows in their units."""
    import warnings

    import numpy as np
    import pandas as pd

    from dpiw.analysis import load_bundle
    from dpiw.commands.export import weight_column

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        b = load_bundle(folder, warn=False)
    rel = b.manifest.get("release", {})
    k, limit = rel.get("pareto_k"), rel.get("pareto_k_threshold")
    unit = bool(rel.get("weights", {}).get("unit")) or bool(np.all(b.weights == b.weights[0]))
    lines = [f"bundle     {len(b.weights):,} synthetic rows, every weight 1 (no weights: the generator's rows as "
             "they are)" if unit else
             f"bundle     {len(b.weights):,} synthetic rows with weights: Pareto k-hat {_num(k)} (threshold "
             f"{_num(limit)}), Kish ESS/N {b.ess_fraction:.2f}"]
    if b.schema is None:
        lines.append("           (no schema.json: the rows below are scaled, categories as codes)")
    elif (split := b.measured_with(b.schema.target)) is not None:  # what an estimate about the target leans on
        (partners, rest), target = split, b.schema.target
        lines.append(f"measured   the target '{target}' together with {', '.join(partners) or 'no column'}"
                     + (f"; not with {', '.join(rest)} (the model's relation, which no interval covers)"
                        if rest else ""))
    with pd.option_context("display.width", 110, "display.max_columns", 12, "display.precision", 3):
        # beside the table's own columns (a body weight keeps its name: the weights become dpiw_weight)
        head = b.data.head(rows).assign(**{weight_column(b.data.columns): b.weights[:rows]}).to_string(index=False)
    lines += [f"           {line}" for line in head.splitlines()]
    return lines


def find_manifests(path: str | Path) -> list[Path]:
    """:func:`find_manifest`'s, or every release's under a folder of releases (releases/<name>): its bundle's
    manifest, or its run's where the gate refused the bundle (the run's manifest says why)."""
    p = Path(path)
    if p.is_dir() and not (p / "manifest.json").is_file():
        found = [r / "manifest.json" if (r / "manifest.json").is_file() else r.parent / "manifest.json"
                 for r in sorted(p.glob("**/run/runs/**/release")) if r.is_dir()]
        found = [m for m in found if m.is_file()]
        if found:
            return found
    return [find_manifest(p)]


def _curators(path: Path, m: dict) -> dict:
    """A published bundle's manifest with its run's ledger block where the run's manifest is beside it (the
    curator's project): the table's lifetime spend, which the bundle does not publish."""
    path = Path(path).resolve()  # `dpiw show .` from inside release/
    run = path.parent.parent / "manifest.json"
    if path.parent.name != "release" or "budget" in (m.get("ledger") or {"budget": None}) or not run.is_file():
        return m
    own = read_json(run).get("ledger") or {}
    return {**m, "ledger": own} if own.get("entry") == m["ledger"]["entry"] else m


def main(args) -> None:
    paths = [args.path] if isinstance(args.path, str) else list(args.path)
    manifests = [m for p in paths for m in find_manifests(p)]  # every path checked before anything is printed
    for i, path in enumerate(manifests):
        lines = describe(_curators(path, read_json(path)), later=True)
        folder = bundle_folder(path)
        if folder is not None:
            lines += describe_bundle(folder)
        if len(manifests) > 1:
            lines = [("\n" if i else "") + f"== {folder or path.parent}"] + lines
        print("\n".join(lines))
