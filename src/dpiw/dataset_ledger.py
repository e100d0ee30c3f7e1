"""The lifetime ledger of one private dataset: every bundle released from it and their composed spend.

A curator sets ``privacy.dataset_epsilon``, the most epsilon all releases from one dataset may spend
together. Each bundle that is fit to release is admitted here *before* it is written: the ledger
adds the bundle's mechanisms, composes the total (basic sum, and RDP where every mechanism has its
curve) and refuses a bundle that would push the total past the budget. Bundles of one run share
mechanism invocations (two post chains on one set of weights, the same synthetic rows under two weight
methods): a mechanism is counted once, identified by its noise streams (dpiw.seeding). Admitting an
identical bundle again (same bytes) changes nothing.

The file is JSON, one per dataset, updated under a file lock (parallel jobs admit bundles side by side)
and written atomically. Keep it with the releases: it is the record of what has been published.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import math
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from dpiw import DpiwError
from dpiw.io import read_json, write_json


def release_id(*files: str | Path) -> str:
    """The identity of a bundle: SHA-256 of the bytes it publishes (rows and weights)."""
    h = hashlib.sha256()
    for f in files:
        h.update(Path(f).read_bytes())
        h.update(b"\0")
    return h.hexdigest()[:32]


def mechanism_key(record: dict[str, Any]) -> str:
    """One mechanism invocation: its stage and noise streams (or, lacking streams, its whole record)."""
    streams = (record.get("seeding") or {}).get("streams") or []
    if streams:
        return f"{record['stage']}:" + ",".join(streams)
    return f"{record['stage']}:" + hashlib.sha256(json.dumps(record, sort_keys=True).encode()).hexdigest()[:20]


@contextmanager
def locked(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def total(mechanisms: dict[str, dict]) -> dict[str, Any]:
    """Composed spend of the ledger's distinct mechanisms: basic sum, RDP, and the tighter of the two."""
    from dpiw.accounting import compose, rdp_to_dp

    eps = math.fsum(m["epsilon"] for m in mechanisms.values())
    delta = math.fsum(m["delta"] for m in mechanisms.values())
    out: dict[str, Any] = {"epsilon": eps, "delta": delta, "composition": "basic (sum)",
                           "tightest": {"epsilon": eps, "delta": delta, "from": "basic"}}
    spending = [m for m in mechanisms.values() if m["epsilon"] > 0 or m["delta"] > 0]
    if delta > 0 and spending and all(m["rdp"] for m in spending):
        rdp_eps, order = rdp_to_dp(compose(ev for m in spending for ev in m["rdp"]), delta)
        out["rdp"] = {"epsilon": rdp_eps, "delta": delta, "optimal_order": order}
        if rdp_eps < eps:
            out["tightest"] = {"epsilon": rdp_eps, "delta": delta, "from": "rdp"}
    return out


def empty(dataset: str) -> dict[str, Any]:
    return {"dataset": dataset, "releases": [], "mechanisms": {}, "total": total({})}


def admit(path: str | Path, *, dataset: str, budget_epsilon: float, manifest: dict, bundle_id: str) -> dict:
    """Add a bundle to the dataset's ledger, or raise DpiwError (ledger unchanged) if the lifetime total
    would exceed ``budget_epsilon``. Returns the ledger as written."""
    path = Path(path)
    if not (budget_epsilon > 0 and math.isfinite(budget_epsilon)):
        raise DpiwError(f"privacy.dataset_epsilon must be a positive number, got {budget_epsilon}")
    with locked(path):
        ledger = read_json(path) if path.is_file() else empty(dataset)
        if ledger.get("dataset") != dataset:
            raise DpiwError(f"{path}: the ledger of dataset '{ledger.get('dataset')}', not '{dataset}'")
        if any(r["release_id"] == bundle_id for r in ledger["releases"]):
            return ledger  # the same bytes again: already counted
        mechanisms = dict(ledger["mechanisms"])
        keys = []
        for rec in manifest["records"]:
            if not rec["dp"]:
                raise DpiwError(f"{manifest['run']}: a non-DP stage ({rec['stage']}) cannot enter a dataset ledger")
            key = mechanism_key(rec)
            keys.append(key)
            mechanisms.setdefault(key, {"stage": rec["stage"], "mechanism": rec["mechanism"],
                                        "epsilon": rec["epsilon"], "delta": rec["delta"], "rdp": rec["rdp"]})
        after = total(mechanisms)
        before = ledger["total"]["tightest"]["epsilon"]
        if after["tightest"]["epsilon"] > budget_epsilon * (1 + 1e-9) + 1e-12:
            raise DpiwError(
                f"release refused: dataset '{dataset}' has spent epsilon = {before:.6g} over "
                f"{len(ledger['releases'])} release(s) ({path}); {manifest['run']} would bring it to "
                f"{after['tightest']['epsilon']:.6g}, past privacy.dataset_epsilon = {budget_epsilon:g}. Release "
                "fewer bundles, or raise the lifetime budget only if the data's owners agree")
        ledger = {"dataset": dataset, "budget_epsilon": budget_epsilon, "mechanisms": mechanisms, "total": after,
                  "releases": [*ledger["releases"],
                               {"release_id": bundle_id, "run": manifest["run"], "mechanisms": keys,
                                "epsilon": manifest["spent"]["epsilon"], "delta": manifest["spent"]["delta"]}]}
        write_json(ledger, path)
        return ledger
