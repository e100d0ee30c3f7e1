"""Seeded randomness: one ``np.random.Generator`` per (seed, purpose), never the global state.

The run seeds in params.yaml make every run reproducible - and make every noise draw reproducible by
anyone who has params.yaml, which voids the DP guarantee of a real release (subtract the noise). A
curator releasing real data sets the environment variable ``DPIW_SECRET_KEY`` (any string, kept out of
the repo): its SHA-256 is mixed into every generator, so runs stay reproducible for whoever holds the key
and unpredictable for everyone else. The manifest says which case a run is in.
"""

from __future__ import annotations

import hashlib
import os
import zlib

import numpy as np

SECRET_ENV = "DPIW_SECRET_KEY"


def secret_words() -> list[int]:
    """Eight 32-bit words of SHA-256(DPIW_SECRET_KEY), or none when it is unset."""
    key = os.environ.get(SECRET_ENV)
    if not key:
        return []
    digest = hashlib.sha256(key.encode()).digest()
    return [int.from_bytes(digest[i:i + 4], "little") for i in range(0, 32, 4)]


def rng_for(seed: int, *tags: str) -> np.random.Generator:
    """A generator determined by the run seed, a stable tag (crc32, not Python's salted hash) and, when
    set, the secret key.

    >>> float(rng_for(0, "a").uniform()) == float(rng_for(0, "a").uniform())
    True
    """
    return np.random.default_rng([int(seed), zlib.crc32("|".join(tags).encode()), *secret_words()])


def noise_seeds_note() -> dict:
    """For the manifest: whether the noise can be regenerated from params.yaml."""
    if secret_words():
        return {"secret_key": True, "note": f"{SECRET_ENV} was set: the noise cannot be regenerated without it"}
    return {"secret_key": False,
            "note": f"seeds from params.yaml only: anyone with params.yaml can regenerate the noise - fine for "
                    f"benchmarks, NOT for releasing real data (set {SECRET_ENV})"}
