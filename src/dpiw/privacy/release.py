"""The release bundle of one run: what a curator may publish, and nothing else.

``release/`` holds the synthetic rows, their (post-processed) importance weights, the manifest (spends,
composed accounting, PSIS verdict; of the table's lifetime ledger only this release's entry) - all outputs of
DP mechanisms or post-processing of them - and the table's public schema (bounds, categories, target), which
the curator declared public.
A run that is not DP, or whose raw weights fail the k-hat gate, gets ``release/refused.json`` (the
verdict and reasons) instead: no rows, no weights. A benchmark-mode run that passes both gets its
bundle with ``NOT_FOR_RELEASE.txt`` beside it: its noise comes from public seeds and D is a split of the
data, so it shows what a release would hold but must not be published. The private training rows, the
test rows, the metrics (computed on the private test split) and the fitted models never enter a bundle.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dpiw import DpiwError
from dpiw.io import read_parquet, write_dir_atomic, write_json
from dpiw.privacy.spend import exceeds

REFUSED = "refused.json"
NOT_FOR_RELEASE = "NOT_FOR_RELEASE.txt"


def releasable(manifest: dict) -> tuple[bool, list[str]]:
    """Whether the run's rows and weights may be written to a bundle (DP, k-hat gate), and why not.
    Whether the bundle may be *published* is ``manifest["release"]["fit_to_release"]``."""
    reasons = []
    if not manifest.get("dp"):
        reasons.append(f"not differentially private: {manifest.get('verdict')}")
    budget, spent = manifest["budget"], manifest["spent"]
    spent = spent.get("tightest") or spent  # the basic sum, or the RDP composition where it is tighter
    if manifest.get("dp") and (exceeds(spent["epsilon"], budget["epsilon"], absolute=1e-12)
                               or exceeds(spent["delta"], budget["delta"], absolute=1e-15)):
        raise DpiwError(f"{manifest['run']}: the manifest spends more than its budget - refusing to release")
    release = manifest["release"]
    if manifest.get("dp") and not (release["pareto_k_ok"] or release.get("weights", {}).get("unit")):
        reasons += release["reasons"]  # (weights without signal are written as unit weights: no k-hat to pass)
    return not reasons, reasons


#: the bundle's description of its table (dpiw.analysis decodes the rows with it)
SCHEMA = "schema.json"

#: what a published manifest says of the table's lifetime ledger instead of its budget and spend
LEDGER_NOTE = ("this bundle's entry in its table's hash-chained lifetime ledger (`dpiw ledger verify --bundles`); the "
               "table's lifetime budget and spend stay in the curator's ledger store (`dpiw ledger show`): they count "
               "the releases of every table whose rows this one shares, so published they would tell which tables "
               "overlap")


def published(manifest: dict) -> dict:
    """The manifest as a bundle publishes it: the run's, with its ledger block cut to the entry's hash.

    The lifetime spend, the release count and the budget are those of every ledger the table was charged to,
    and a table is charged to another's ledger when enough of its rows are in it (dpiw.privacy.identity.overlap):
    a threshold on the private rows, with no noise. They stay in the run's own manifest (the curator's project)
    and the ledger store."""
    if not manifest.get("ledger"):
        return manifest
    return {**manifest, "ledger": {"entry": manifest["ledger"]["entry"], "note": LEDGER_NOTE}}


#: the noisy measurements behind the rows and the weights (dpiw.analysis's noise-aware intervals)
MEASUREMENTS = "measurements.json"
#: the encoding's words for a column with `scale: log` (said only where a column has one)
LOG_ENCODING = "; a column with scale: log: lower + exp(v log(1 + upper - lower)) - 1"


def write_release(path: str | Path, *, manifest: dict, synth: str | Path, log_weights: str | Path,
                  schema=None, measurements=()) -> bool:
    """Write the bundle (or the refusal) atomically; True when the rows and weights were written (a
    benchmark bundle then carries NOT_FOR_RELEASE.txt). With ``schema`` (dpiw.data.Schema) the bundle holds its
    public part (:data:`SCHEMA`: columns, public bounds, categories, target, task), so an analyst can read the
    rows in their units and labels. ``measurements``: the noisy measurements the run's mechanisms released (a
    zCDP SDGP's, marginal_match's; JSON files), published as :data:`MEASUREMENTS` - DP outputs themselves, from
    which an analyst can propagate the mechanisms' noise into an interval."""
    ok, reasons = releasable(manifest)
    if not ok:
        write_dir_atomic(path, lambda d: write_json({"run": manifest["run"], "released": False,
                                                     "reasons": reasons}, d / REFUSED))
        return False
    import pandas as pd

    rows = read_parquet(synth)
    lw = read_parquet(log_weights, columns=["log_weight"], finite=False)["log_weight"].to_numpy(dtype=float)
    if len(lw) != len(rows) or np.isnan(lw).any() or not np.isfinite(lw).any():
        raise DpiwError(f"{manifest['run']}: {len(lw)} weights (NaN or all zero?) for {len(rows)} synthetic rows")
    if manifest["release"].get("weights", {}).get("unit"):  # no signal beyond the noise: do no harm
        lw = np.zeros(len(rows))
    w = np.exp(lw - lw[np.isfinite(lw)].max())
    weights = pd.DataFrame({"log_weight": lw, "weight": w * len(w) / w.sum()})  # weights with mean 1

    def fill(d: Path) -> None:
        rows.to_parquet(d / "synthetic.parquet", index=False, engine="pyarrow")
        weights.to_parquet(d / "weights.parquet", index=False, engine="pyarrow")
        write_json(published(manifest), d / "manifest.json")
        if measurements:
            from dpiw.io import read_json

            parts = {}
            for f in measurements:
                m = read_json(f)
                if m.get("method") == "marginal_match":
                    parts["weights"] = m
                else:  # the generator's: with what its model was fitted to (its records say)
                    synth = next(r for r in manifest["records"] if r["stage"] == "synthesize")
                    count = synth["details"].get("row_count", {})
                    parts["generator"] = {**m, "generator": synth["details"].get("generator"),
                                          "iters": synth["details"].get("iters"),
                                          "total": float(count.get("noisy_n") or manifest["data"]["n_train"])}
            write_json(parts, d / MEASUREMENTS)
        if schema is not None:
            write_json({"schema": schema.public_dict(),
                        "encoding": "synthetic.parquet holds numeric columns scaled to [0, 1] by the public bounds "
                                    "(value = lower + v (upper - lower)" + LOG_ENCODING * any(
                                        c.scale == "log" for c in schema.columns)
                                    + ") and categories as codes (code i is the i-th category); "
                                    "dpiw.analysis.load_bundle decodes them"}, d / SCHEMA)
            from dpiw.analysis.datasheet import write_datasheet

            write_datasheet(d)  # from the files above alone: DP outputs and the public schema
        if not manifest["release"]["fit_to_release"]:
            (d / NOT_FOR_RELEASE).write_text("NOT fit to release:\n" + "".join(
                f"- {r}\n" for r in manifest["release"]["reasons"]))

    write_dir_atomic(path, fill)
    return True
