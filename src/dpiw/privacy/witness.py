"""A witness of a ledger store, kept outside it: what the store held when this user last wrote to or checked it.

A store's own hashes cannot protect the store: whoever can write it can rewrite its chain and its secret. The
witness is a small JSON file in the user's dpiw folder (dpiw.privacy.store.user_folder, ``witnesses/``), one per
store (named by the store's absolute path, or its URL without the password), holding the store's genesis (which
its secret fixes), the length and head hash of its chain, and every release entry admitted through it with the
bundle it wrote. Every ledger operation checks the store against it (:func:`check`) and moves it forward after
a commit (:func:`advance`): a store restored from an older copy (rolled back), copied from elsewhere, trimmed,
deleted, or with an entry removed or changed and the chain rehashed no longer extends what the witness saw, and
is refused with one line.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path

from dpiw import DpiwError


def identity(url: str) -> str:
    """What names a store for its witness: a SQLite file's absolute path, a PostgreSQL URL without password."""
    from dpiw.privacy.store import describe

    if url.startswith(("postgresql://", "postgres://")):
        return describe(url)
    return str(Path(url.removeprefix("sqlite:///")).expanduser().resolve())


def path(url: str) -> Path:
    from dpiw.privacy.store import user_folder

    name = hashlib.sha256(identity(url).encode()).hexdigest()[:20]
    return user_folder() / "witnesses" / f"{name}.json"


def load(url: str) -> dict | None:
    p = path(url)
    if not p.is_file():
        return None
    try:
        w = json.loads(p.read_text())
        int(w["count"]), str(w["head"]), str(w["genesis"]), dict(w["releases"])
    except (ValueError, KeyError, TypeError):
        raise DpiwError(f"the witness {p} of ledger store {identity(url)} is not readable: restore it from a backup, "
                        "or move it away to trust the store as it is") from None
    return w


def check(url: str, entries: Sequence, genesis: str | None) -> None:
    """DpiwError (one line) unless the store's chain ``entries`` (verified, with ``genesis`` the hash its secret
    gives) extends what the witness saw and holds every release entry it recorded."""
    w = load(url)
    if w is None or not w["count"]:
        return
    where, fix = identity(url), f"restore the store from its backup (or move {path(url)} away to accept it as it is)"
    if not entries:
        raise DpiwError(f"ledger store {where} holds no entries, but its witness saw {w['count']}: it was deleted or "
                        f"replaced; {fix}")
    if genesis != w["genesis"]:
        raise DpiwError(f"ledger store {where} is not the store its witness saw (another store copied over it, or its "
                        f"secret replaced); {fix}")
    if len(entries) < w["count"]:
        raise DpiwError(f"ledger store {where} holds {len(entries)} entries, but its witness saw {w['count']}: it was "
                        f"rolled back to an older copy or its last entries were removed; {fix}")
    if entries[w["count"] - 1].hash != w["head"]:
        raise DpiwError(f"ledger store {where}: entry {w['count']} is not the one its witness saw: entries were "
                        f"removed or changed and the chain rewritten; {fix}")
    releases = {e.hash for e in entries if e.kind == "release"}
    lost = [h for h in w["releases"] if h not in releases]
    if lost:
        raise DpiwError(f"ledger store {where} lost the release entry {lost[0][:16]} of bundle "
                        f"{w['releases'][lost[0]].get('bundle') or '?'} that its witness recorded; {fix}")


def advance(url: str, *, count: int, head: str, genesis: str, release: str | None = None,
            bundle: str | None = None, name: str | None = None) -> None:
    """Move the witness to the chain's head after a commit (never back), recording a release entry and its
    bundle; written atomically under a file lock."""
    p = path(url)
    p.parent.mkdir(parents=True, exist_ok=True)
    with open(p.with_suffix(".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        w = load(url) or {"store": identity(url), "count": 0, "head": "", "genesis": genesis, "releases": {}}
        if count >= w["count"]:
            w["count"], w["head"] = count, head
        if release:
            known = w["releases"].setdefault(release, {})
            known.update({k: v for k, v in (("bundle", bundle), ("release", name)) if v})
        tmp = p.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(w, indent=1, sort_keys=True))
        os.replace(tmp, p)


def record(url: str, release: str, *, bundle: str | None = None, name: str | None = None) -> None:
    """Record (or complete) a release entry of the witness with the bundle it wrote and its release's name."""
    w = load(url)
    if w is not None:
        advance(url, count=w["count"], head=w["head"], genesis=w["genesis"], release=release, bundle=bundle,
                name=name)


def bundles(url: str) -> dict[str, dict]:
    """{release entry hash: {bundle, release}} of every release admitted through this store by this user."""
    w = load(url)
    return dict(w["releases"]) if w else {}


def others(url: str) -> list[str]:
    """The other ledger stores this user's witnesses saw entries in (their names), besides ``url``'s."""
    folder, own, out = path(url).parent, identity(url), []
    for f in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            w = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(w, dict) and w.get("store") and w.get("store") != own and int(w.get("count") or 0) > 0:
            out.append(str(w["store"]))
    return out
