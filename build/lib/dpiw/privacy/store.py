"""The ledger's store: one append-only, hash-chained table of entries, in SQLite or PostgreSQL.

Every entry is one row ``(seq, dataset, kind, body, prev, hash)``: ``body`` is canonical JSON,
``prev`` the hash of the entry before it (for the first, a hash of the store's secret), and ``hash`` the SHA-256 of
``prev``, ``dataset``, ``kind`` and ``body``. A meta table holds the chain's head and length (so that
a deleted last row shows too) and the store's secret, the HMAC key that turns a table's content digest
into the dataset key the entries carry (so that a key seen in a store reveals nothing about the data).

A store is named by a URL: a path (SQLite through the standard library; by default ``ledger.sqlite`` in the
user's data folder, :func:`default_store`, so that every project folder of a user draws on one store) or
``postgresql://...`` (psycopg), which curators on several machines and SLURM nodes can share. Every
change happens in :meth:`Store.atomic`, which holds the store exclusively until it commits: SQLite's
``BEGIN IMMEDIATE``; on PostgreSQL a transaction-scoped advisory lock that every dpiw process takes, under
serialisable isolation. SQLite on a network file system does not lock reliably: share a store between
machines through PostgreSQL.

On PostgreSQL the entries are append-only for every role: a trigger refuses UPDATE, DELETE and TRUNCATE of
``dpiw_ledger`` and of the secret, and the writer role needs (and should be granted) only SELECT and INSERT
(:data:`WRITER_GRANTS`). The chain's head and length are read from the chain itself there; the witness outside
the store (dpiw.privacy.witness) notices a store that lost its tail.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from dpiw import DpiwError

#: the environment variable that points every command at a shared store (a flag beats it; it beats the config)
ENV_URL = "DPIW_LEDGER_URL"
#: the environment variable naming the user's dpiw data folder (default: the platform's user data folder)
ENV_HOME = "DPIW_HOME"
T = TypeVar("T")

#: what the writer role of a PostgreSQL store needs, and all it should have (an administrator creates the tables)
WRITER_GRANTS = "GRANT SELECT, INSERT ON dpiw_ledger, dpiw_ledger_meta TO writer"

_TABLES = (
    "CREATE TABLE IF NOT EXISTS dpiw_ledger (seq BIGINT PRIMARY KEY, dataset TEXT NOT NULL, kind TEXT NOT NULL, "
    "body TEXT NOT NULL, prev TEXT NOT NULL, hash TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS dpiw_ledger_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
)
#: PostgreSQL: the entries and the secret cannot be changed or removed, whoever asks (the owner can only drop the
#: trigger on purpose)
_PG_APPEND_ONLY = (
    "CREATE OR REPLACE FUNCTION dpiw_ledger_append_only() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
    "RAISE EXCEPTION 'the dpiw ledger is append-only: % refused on %', TG_OP, TG_TABLE_NAME; END $$",
    "CREATE OR REPLACE TRIGGER dpiw_ledger_append_only BEFORE UPDATE OR DELETE ON dpiw_ledger "
    "FOR EACH ROW EXECUTE FUNCTION dpiw_ledger_append_only()",
    "CREATE OR REPLACE TRIGGER dpiw_ledger_no_truncate BEFORE TRUNCATE ON dpiw_ledger "
    "FOR EACH STATEMENT EXECUTE FUNCTION dpiw_ledger_append_only()",
    "CREATE OR REPLACE TRIGGER dpiw_ledger_meta_append_only BEFORE UPDATE OR DELETE ON dpiw_ledger_meta "
    "FOR EACH ROW EXECUTE FUNCTION dpiw_ledger_append_only()",
    "CREATE OR REPLACE TRIGGER dpiw_ledger_meta_no_truncate BEFORE TRUNCATE ON dpiw_ledger_meta "
    "FOR EACH STATEMENT EXECUTE FUNCTION dpiw_ledger_append_only()",
)


def canonical(body: dict[str, Any]) -> str:
    """The one JSON text of an entry's body (sorted keys, no spaces; NaN and infinities refused)."""
    try:
        return json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except ValueError:
        raise DpiwError("a ledger entry may not hold NaN or infinite numbers") from None


def genesis(secret: str) -> str:
    """The ``prev`` of a store's first entry: ties the chain to the store's secret (a replaced secret, which
    would give every table a fresh ledger, breaks the chain)."""
    return hashlib.sha256(b"dpiw-ledger\0" + secret.encode()).hexdigest()


def entry_hash(prev: str, dataset: str, kind: str, body: str) -> str:
    return hashlib.sha256("\n".join((prev, dataset, kind, body)).encode()).hexdigest()


@dataclass(frozen=True)
class Entry:
    seq: int
    dataset: str
    kind: str
    body: str
    prev: str
    hash: str

    def data(self) -> dict[str, Any]:
        return json.loads(self.body)


def user_folder() -> Path:
    """The user's dpiw data folder: $DPIW_HOME, else the platform's user data folder (platformdirs: e.g.
    ~/.local/share/dpiw on Linux, ~/Library/Application Support/dpiw on macOS). It holds the default store, the
    witnesses of every store the user has written to, and the release locks."""
    home = os.environ.get(ENV_HOME)
    if home:
        return Path(home).expanduser().resolve()
    try:
        import platformdirs  # installed with snakemake (requirements.lock)
    except ImportError:  # pragma: no cover - the XDG default
        return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "dpiw"
    return Path(platformdirs.user_data_dir("dpiw", appauthor=False))


def default_store() -> str:
    """The store used when no flag, no $DPIW_LEDGER_URL and no config names one: one per user and machine."""
    return str(user_folder() / "ledger.sqlite")


def store_url(flag: str | None = None, configured: str | None = None) -> str:
    """The store to use: a flag (``--ledger``, ``--store``), else $DPIW_LEDGER_URL, else the config's
    ``privacy.ledger``, else :func:`default_store`."""
    return flag or os.environ.get(ENV_URL) or configured or default_store()


def describe(url: str) -> str:
    """The URL without a password, for messages."""
    if "://" in url and "@" in url:
        scheme, rest = url.split("://", 1)
        creds, host = rest.rsplit("@", 1)
        return f"{scheme}://{creds.split(':', 1)[0]}@{host}"
    return url


class Transaction:
    """The store inside one exclusive transaction: read every entry, append new ones, read/write meta."""

    def __init__(self, conn, mark: str, *, postgres: bool = False):
        self._conn, self._mark, self._postgres = conn, mark, postgres

    def _q(self, sql: str) -> str:
        return sql.replace("?", self._mark)

    def _rows(self, sql: str, args=()) -> list[tuple]:
        cur = self._conn.cursor()
        cur.execute(self._q(sql), args)
        return list(cur.fetchall())

    def _run(self, sql: str, args=()) -> None:
        self._conn.cursor().execute(self._q(sql), args)

    def entries(self) -> list[Entry]:
        return [Entry(int(r[0]), *r[1:]) for r in
                self._rows("SELECT seq, dataset, kind, body, prev, hash FROM dpiw_ledger ORDER BY seq")]

    def tip(self) -> tuple[int, str | None]:
        """The chain's length and its last entry's hash, read from the entries."""
        rows = self._rows("SELECT seq, hash FROM dpiw_ledger ORDER BY seq DESC LIMIT 1")
        return (int(rows[0][0]), rows[0][1]) if rows else (0, None)

    def meta(self, key: str) -> str | None:
        if self._postgres and key in ("head", "count"):  # append-only there: read from the chain itself
            count, head = self.tip()
            return {"count": str(count) if count else None, "head": head}[key]
        rows = self._rows("SELECT value FROM dpiw_ledger_meta WHERE key = ?", (key,))
        return rows[0][0] if rows else None

    def set_meta(self, key: str, value: str) -> None:
        if self._postgres:
            if key in ("head", "count"):
                return
            self._run("INSERT INTO dpiw_ledger_meta (key, value) VALUES (?, ?)", (key, value))
            return
        self._run("DELETE FROM dpiw_ledger_meta WHERE key = ?", (key,))
        self._run("INSERT INTO dpiw_ledger_meta (key, value) VALUES (?, ?)", (key, value))

    def secret(self) -> str:
        """The store's HMAC key for dataset keys, made on first use."""
        value = self.meta("secret")
        if value is None:
            value = secrets.token_hex(32)
            self.set_meta("secret", value)
        return value

    def append(self, dataset: str, kind: str, body: dict[str, Any]) -> Entry:
        """Add one entry at the head of the chain (the caller has verified the chain in this transaction)."""
        text = canonical(body)
        count = int(self.meta("count") or 0)
        prev = self.meta("head") or genesis(self.secret())
        entry = Entry(count + 1, dataset, kind, text, prev, entry_hash(prev, dataset, kind, text))
        self._run("INSERT INTO dpiw_ledger (seq, dataset, kind, body, prev, hash) VALUES (?, ?, ?, ?, ?, ?)",
                  (entry.seq, entry.dataset, entry.kind, entry.body, entry.prev, entry.hash))
        self.set_meta("count", str(entry.seq))
        self.set_meta("head", entry.hash)
        return entry


class Store:
    """One ledger store (see the module's docstring); ``create=False`` refuses a store that does not exist yet."""

    def __init__(self, url: str, *, create: bool = True):
        self.url = url
        self.postgres = url.startswith(("postgresql://", "postgres://"))
        if not self.postgres:
            path = Path(url.removeprefix("sqlite:///"))
            if not path.is_file():
                if not create:
                    raise DpiwError(f"no ledger store at {url}: nothing has been released from it yet, or it was "
                                    "moved (set DPIW_LEDGER_URL or privacy.ledger to where it is)")
                path.parent.mkdir(parents=True, exist_ok=True)
            self.path = path
        self.created = False

    def _connect(self):
        if self.postgres:
            try:
                import psycopg
            except ImportError:  # pragma: no cover - a dependency of dpiw
                raise DpiwError("a PostgreSQL ledger needs psycopg: run `make install`") from None
            try:
                conn = psycopg.connect(self.url, autocommit=False, connect_timeout=30)
            except psycopg.OperationalError as exc:
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                raise DpiwError(f"cannot reach the ledger store {describe(self.url)}: {first}") from None
            conn.isolation_level = psycopg.IsolationLevel.SERIALIZABLE
            return conn, "%s"
        new = not self.path.exists()
        conn = sqlite3.connect(self.path, timeout=120, isolation_level=None)
        if new:
            self.created = True
        return conn, "?"

    def atomic(self, work: Callable[[Transaction], T]) -> T:
        """Run ``work`` in one transaction that holds the store exclusively; commit when it returns, roll back
        (nothing written) when it raises. PostgreSQL aborts a serialisable transaction that raced another:
        ``work`` is then run again from the start, on what the other committed."""
        for attempt in range(20):
            conn, mark = self._connect()
            try:
                cur = conn.cursor()
                if self.postgres:
                    # every dpiw process takes this lock (held by the session until the connection closes) before
                    # its transaction starts, so that the transaction's snapshot holds what the last one committed;
                    # it also serialises the tables' creation (a writer role with SELECT and INSERT only cannot
                    # take a table lock)
                    conn.autocommit = True
                    cur.execute("SELECT pg_advisory_lock(4242031)")
                    conn.autocommit = False
                    cur.execute("SELECT to_regclass('dpiw_ledger') IS NOT NULL AND "
                                "to_regclass('dpiw_ledger_meta') IS NOT NULL")
                    if not cur.fetchone()[0]:
                        for sql in (*_TABLES, *_PG_APPEND_ONLY):
                            cur.execute(sql)
                else:
                    cur.execute("BEGIN IMMEDIATE")
                    for sql in _TABLES:
                        cur.execute(sql)
                result = work(Transaction(conn, mark, postgres=self.postgres))
                conn.commit() if self.postgres else cur.execute("COMMIT")
                return result
            except Exception as exc:
                try:
                    conn.rollback()
                except Exception:  # noqa: BLE001 - the connection may already be gone
                    pass
                if self.postgres and type(exc).__name__ in ("SerializationFailure", "DeadlockDetected") \
                        and attempt < 19:
                    time.sleep(0.05 * (attempt + 1))
                    continue
                if isinstance(exc, sqlite3.DatabaseError):
                    raise DpiwError(f"ledger store {self.url}: {exc} (another process held it too long, or the "
                                    "file is not a dpiw ledger)") from None
                raise
            finally:
                conn.close()
        raise DpiwError(f"ledger store {describe(self.url)}: 20 transactions in a row raced others; try again")
