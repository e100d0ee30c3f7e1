"""Randomness: one ``np.random.Generator`` per mechanism invocation, never the global state.

Two modes (``mode`` in params.yaml) decide where the noise comes from:

``benchmark``
    Public seeds: a stream is derived from the run seed and the full identity of what it privatises,
    so the same config gives the same bytes. Anyone who has the config can regenerate the noise, so
    nothing a benchmark writes is fit to release.
``release``
    Either fresh OS entropy for every invocation (``privacy.release_noise: entropy``) or the curator's
    secret ``DPIW_SECRET_KEY`` (``secret_key``: reproducible for whoever holds the key, unpredictable
    for everyone else; the stage refuses to run when the key is missing).

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
            # domain-separated: the published stream id reveals nothing about the seed
            seed = hmac.new(key, b"seed|" + msg, hashlib.sha256).digest()
            stream_id = hmac.new(key, b"id|" + msg, hashlib.sha256).hexdigest()[:20]
        else:
            seed = secrets.token_bytes(32)
            stream_id = secrets.token_hex(10)
        self.streams.append(stream_id)
        return np.random.default_rng(_words(seed))

    def record(self) -> dict[str, Any]:
        """What the stage's privacy record says about its randomness."""
        notes = {PUBLIC_SEED: "public seeds (benchmark mode): anyone with the config can regenerate this noise",
                 SECRET_KEY: f"keyed by {SECRET_ENV}: reproducible only for whoever holds the key",
                 OS_ENTROPY: "fresh OS entropy: nobody can regenerate this noise"}
        return {"mode": self.mode, "source": self.source, "streams": list(self.streams),
                "note": notes[self.source]}

