"""Randomness: one ``np.random.Generator`` per mechanism invocation, never the global state.

Two modes (``mode`` in params.yaml) decide where the noise comes from:

``benchmark``
    Public seeds: a stream is derived from the run seed and the full identity of what it privatises,
    so the same config gives the same bytes. Anyone who has the config can regenerate the noise, so
    nothing a benchmark writes is fit to release.
``release``
    Either fresh OS entropy for every invocation (``privacy.release_noise: entropy``) or the curator's
    secret ``DPIW_SECRET_KEY`` (``secret_key``: reproducible for whoever holds the key and runs the same
    code, unpredictable for everyone else; the stage refuses to run when the key is missing). A keyed stream
    is also keyed by :func:`code_digest`, and the record of a stage that drew one by what it published, which
    the ledger compares (the same streams never carry two different outputs).

Every stream is keyed by the *identity* of the invocation: the stage, the purpose of the draw, every
semantic argument (dataset, seeds, epsilon, delta, budget share, SDGP, weight method, ...) and a digest
of every input file. Two artifacts that could be released side by side - the epsilon 1 and 6 bundles of
one cell, the full-share and split-share synthetic data, two weight methods - therefore never share a
draw (sharing one would let their difference cancel the noise). Each stage records, next to its
artifact, how its noise was seeded and the ids of its streams (:meth:`Noise.record`); the ledger reads
those records and never its own environment.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dpiw import DpiwError

SECRET_ENV = "DPIW_SECRET_KEY"
MODES = ("benchmark", "release")
RELEASE_NOISE = ("entropy", "secret_key")
#: how a stream was seeded (recorded in every privacy record)
PUBLIC_SEED, SECRET_KEY, OS_ENTROPY = "public_seed", "secret_key", "os_entropy"


def rng_for(seed: int, *tags: str) -> np.random.Generator:
    """A generator from a public seed and stable tags: for randomness that privatises nothing (the
    evaluation's model fits, data generation), never for a mechanism's noise (use :class:`Noise`).

    >>> float(rng_for(0, "a").uniform()) == float(rng_for(0, "a").uniform())
    True
    """
    return np.random.default_rng([int(seed), zlib.crc32("|".join(tags).encode())])


#: file_digest's answers in this process for files of at least MEMO_BYTES, by (path, device, inode, size,
#: mtime): a cell job keys a run by its inputs' digests and the stage then keys its noise by the same files
#: (seconds each for a table of 10^8 rows); an artifact is replaced, never rewritten in place (dpiw.io), so a
#: new version has a new inode. Small files are hashed every time.
_DIGESTS: dict[tuple, str] = {}
MEMO_BYTES = 1 << 26


def file_digest(path: str | Path) -> str:
    """SHA-256 of a file's bytes (identifies an input of a mechanism invocation)."""
    st = os.stat(path)
    key = (os.path.abspath(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    if key not in _DIGESTS or st.st_size < MEMO_BYTES:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 22), b""):
                h.update(block)
        if st.st_size < MEMO_BYTES:
            return h.hexdigest()
        _DIGESTS[key] = h.hexdigest()
    return _DIGESTS[key]


def schema_digest(path: str | Path) -> str:
    """What keys a schema in a stage's identity: for a table read from a file (``source.kind: file``, as every
    ``dpiw release`` writes it), the SHA-256 of the schema without its ``source``, since where the rows were read
    from is not what they are (the stage's rows are keyed by the train split's own digest). So the same rows as
    a CSV or a parquet folder, in any folder, meet the same noise, and a second release of them is the first
    one's bundle again (the ledger counts it once). Any other schema: the digest of its bytes."""
    import yaml

    d = yaml.safe_load(Path(path).read_text())
    if not (isinstance(d, dict) and isinstance(d.get("source"), dict) and d["source"].get("kind") == "file"):
        return file_digest(path)
    body = json.dumps({k: v for k, v in d.items() if k != "source"}, sort_keys=True, separators=(",", ":"),
                      default=str)
    return "schema:" + hashlib.sha256(body.encode()).hexdigest()


#: the distributions whose numbers decide what a mechanism measures (besides dpiw's own code): a new version may
#: pick another marginal or other bins from the same noise
NUMERIC_DISTRIBUTIONS = ("numpy", "scipy", "pandas", "pyarrow", "scikit-learn", "torch", "opacus", "jax", "jaxlib",
                         "mbi", "numba", "duckdb", "dask", "distributed")
_CODE: list[str] = []


def code_digest() -> str:
    """SHA-256 of the code that decides what a mechanism measures: every module of the installed ``dpiw`` package
    and the versions of :data:`NUMERIC_DISTRIBUTIONS`. It keys noise drawn from ``DPIW_SECRET_KEY``: the same key,
    inputs and flags under other code could measure other marginals or bins with the same noise, and the two
    releases' difference would cancel it; with this in the key, other code draws other noise (and other streams,
    which the ledger charges)."""
    if not _CODE:
        from importlib import metadata

        import dpiw

        h = hashlib.sha256()
        package = Path(dpiw.__file__).resolve().parent
        for f in sorted(package.rglob("*.py")):
            h.update(f.relative_to(package).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
        for name in NUMERIC_DISTRIBUTIONS:
            try:
                version = metadata.version(name)
            except metadata.PackageNotFoundError:
                version = "-"
            h.update(f"{name}=={version}\0".encode())
        import platform

        # and where it runs: another processor or JAX backend can round an AIM score the other way
        h.update(f"{platform.machine()}|{os.environ.get('JAX_PLATFORMS', '')}".encode())
        _CODE.append(h.hexdigest())
    return _CODE[0]


def published_digest(paths: Iterable[str | Path | None]) -> str:
    """SHA-256 of the files a mechanism invocation wrote (each one's digest, in order; None skipped): what its
    noise was spent on, which the ledger compares when two releases carry the same streams."""
    h = hashlib.sha256()
    for p in paths:
        if p is not None:
            h.update(file_digest(p).encode() + b"\0")
    return h.hexdigest()


def _canonical(identity: dict[str, Any]) -> bytes:
    return json.dumps(identity, sort_keys=True, default=repr, separators=(",", ":")).encode()


def _words(digest: bytes) -> list[int]:
    return [int.from_bytes(digest[i:i + 4], "little") for i in range(0, len(digest), 4)]


@dataclass
class Noise:
    """Where a stage's noise comes from, and the streams it drew (for its privacy record).

    Parameters
    ----------
    mode : "benchmark" (public seeds) or "release".
    release_noise : release mode only: "entropy" (OS entropy per invocation) or "secret_key"
        (``DPIW_SECRET_KEY``, which must then be set).
    """

    mode: str
    release_noise: str = "entropy"
    streams: list[str] = field(default_factory=list)

    def __post_init__(self):
        if self.mode not in MODES:
            raise DpiwError(f"mode must be one of {MODES}, got {self.mode!r}")
        if self.release_noise not in RELEASE_NOISE:
            raise DpiwError(f"privacy.release_noise must be one of {RELEASE_NOISE}, got {self.release_noise!r}")
        if self.source == SECRET_KEY and not os.environ.get(SECRET_ENV):
            raise DpiwError(f"privacy.release_noise: secret_key, but {SECRET_ENV} is not set: export it (a long "
                            "random string kept out of the repository) or set privacy.release_noise: entropy")

    @property
    def source(self) -> str:
        if self.mode == "benchmark":
            return PUBLIC_SEED
        return SECRET_KEY if self.release_noise == "secret_key" else OS_ENTROPY

    def rng(self, purpose: str, identity: dict[str, Any]) -> np.random.Generator:
        """A generator for one draw of one invocation, keyed by ``purpose`` and ``identity``.

        >>> a = Noise("benchmark").rng("fit", {"eps": 1.0}).standard_normal(3)
        >>> b = Noise("benchmark").rng("fit", {"eps": 6.0}).standard_normal(3)
        >>> bool((a == Noise("benchmark").rng("fit", {"eps": 1.0}).standard_normal(3)).all()), bool((a == b).any())
        (True, False)
        """
        msg = _canonical({"purpose": purpose, "identity": identity})
        source = self.source
        if source == PUBLIC_SEED:
            seed = hashlib.sha256(b"dpiw-noise-seed|" + msg).digest()
            stream_id = hashlib.sha256(b"dpiw-noise-id|" + msg).hexdigest()[:20]
        elif source == SECRET_KEY:
            key = os.environ[SECRET_ENV].encode()
            # and the code: other code could measure other queries with the same noise (code_digest)
            msg = _canonical({"purpose": purpose, "identity": identity, "code": code_digest()})
            # domain-separated: the published stream id reveals nothing about the seed
            seed = hmac.new(key, b"seed|" + msg, hashlib.sha256).digest()
            stream_id = hmac.new(key, b"id|" + msg, hashlib.sha256).hexdigest()[:20]
        else:
            seed = secrets.token_bytes(32)
            stream_id = secrets.token_hex(10)
        self.streams.append(stream_id)
        return np.random.default_rng(_words(seed))

    def record(self, published: Iterable[str | Path | None] = ()) -> dict[str, Any]:
        """What the stage's privacy record says about its randomness; ``published``: the files its noise went
        into (their :func:`published_digest`, for a mechanism that drew streams)."""
        notes = {PUBLIC_SEED: "public seeds (benchmark mode): anyone with the config can regenerate this noise",
                 SECRET_KEY: f"keyed by {SECRET_ENV}: reproducible only for whoever holds the key",
                 OS_ENTROPY: "fresh OS entropy: nobody can regenerate this noise"}
        out = {"mode": self.mode, "source": self.source, "streams": list(self.streams), "note": notes[self.source]}
        published = list(published)
        if self.source == SECRET_KEY and self.streams and published:  # the only streams that can meet again
            out["published"] = published_digest(published)
        return out

