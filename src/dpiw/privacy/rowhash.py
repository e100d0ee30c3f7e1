"""Keyed BLAKE2b of many rows of one width at once, compiled: the digests ``hashlib.blake2b(row, key=key,
digest_size=16)`` gives, at about 0.3 microseconds a row instead of 1.2-1.8 (a call from Python per row). The
table identity's row hashes (dpiw.privacy.identity) are these, so a table measured before keeps its identity.
numba compiles the kernel once per machine (several seconds) into dpiw's user cache folder (or NUMBA_CACHE_DIR),
and in every process where no cache folder can be written.

BLAKE2b as RFC 7693 specifies it: the key padded to a block is compressed first (the same for every row, so it is
compressed once), then the row's blocks, the last one flagged and counted with the key block's 128 bytes.
tests/privacy/test_rowhash.py checks it against hashlib on rows of 1 to 40 words and keys of 1 to 64 bytes.
"""

from __future__ import annotations

import numpy as np

from dpiw.compiled import njit

IV = np.array([0x6A09E667F3BCC908, 0xBB67AE8584CAA73B, 0x3C6EF372FE94F82B, 0xA54FF53A5F1D36F1,
               0x510E527FADE682D1, 0x9B05688C2B3E6C1F, 0x1F83D9ABFB41BD6B, 0x5BE0CD19137E2179], dtype=np.uint64)
SIGMA = np.array([
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
    [14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3],
    [11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4],
    [7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8],
    [9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13],
    [2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9],
    [12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11],
    [13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10],
    [6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5],
    [10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0],
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
    [14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3]], dtype=np.int64)
#: the state words each of a round's eight G steps mixes (four columns, then four diagonals)
G = np.array([[0, 4, 8, 12], [1, 5, 9, 13], [2, 6, 10, 14], [3, 7, 11, 15],
              [0, 5, 10, 15], [1, 6, 11, 12], [2, 7, 8, 13], [3, 4, 9, 14]], dtype=np.int64)
BLOCK_WORDS = 16
DIGEST_BYTES = 16


@njit(nogil=True)
def _rotr(x, n):
    return (x >> np.uint64(n)) | (x << np.uint64(64 - n))


@njit(nogil=True)
def _g(a, b, c, d, x, y):
    a = a + b + x
    d = _rotr(d ^ a, 32)
    c = c + d
    b = _rotr(b ^ c, 24)
    a = a + b + y
    d = _rotr(d ^ a, 16)
    c = c + d
    b = _rotr(b ^ c, 63)
    return a, b, c, d


@njit(nogil=True)
def _compress(h, m, t, last):
    """RFC 7693's F: ``h`` (8 words) updated in place by the block ``m`` (16 words), counted ``t`` bytes
    (the state and the block in variables, the twelve rounds written out: 0.28 against 0.4-0.8 microseconds a row
    with the schedule read from SIGMA and G)."""
    m0, m1, m2, m3, m4, m5, m6, m7, m8, m9, m10, m11, m12, m13, m14, m15 = (
        m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7], m[8], m[9], m[10], m[11], m[12], m[13], m[14], m[15])
    v0, v1, v2, v3, v4, v5, v6, v7 = h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]
    v8, v9, v10, v11, v12, v13, v14, v15 = IV[0], IV[1], IV[2], IV[3], IV[4], IV[5], IV[6], IV[7]
    v12 ^= np.uint64(t)
    if last:
        v14 = ~v14
    # round 0: the message words in SIGMA[0]'s order
    v0, v4, v8, v12 = _g(v0, v4, v8, v12, m0, m1)
    v1, v5, v9, v13 = _g(v1, v5, v9, v13, m2, m3)
    v2, v6, v10, v14 = _g(v2, v6, v10, v14, m4, m5)
    v3, v7, v11, v15 = _g(v3, v7, v11, v15, m6, m7)
    v0, v5, v10, v15 = _g(v0, v5, v10, v15, m8, m9)
    v1, v6, v11, v12 = _g(v1, v6, v11, v12, m10, m11)
    v2, v7, v8, v13 = _g(v2, v7, v8, v13, m12, m13)
    v3, v4, v9, v14 = _g(v3, v4, v9, v14, m14, m15)
    # round 1: the message words in SIGMA[1]'s order
    v0, v4, v8, v12 = _g(v0, v4, v8, v12, m14, m10)
    v1, v5, v9, v13 = _g(v1, v5, v9, v13, m4, m8)
    v2, v6, v10, v14 = _g(v2, v6, v10, v14, m9, m15)
    v3, v7, v11, v15 = _g(v3, v7, v11, v15, m13, m6)
    v0, v5, v10, v15 = _g(v0, v5, v10, v15, m1, m12)
    v1, v6, v11, v12 = _g(v1, v6, v11, v12, m0, m2)
    v2, v7, v8, v13 = _g(v2, v7, v8, v13, m11, m7)
    v3, v4, v9, v14 = _g(v3, v4, v9, v14, m5, m3)
    # round 2: the message words in SIGMA[2]'s order
    v0, v4, v8, v12 = _g(v0, v4, v8, v12, m11, m8)
    v1, v5, v9, v13 = _g(v1, v5, v9, v13, m12, m0)
    v2, v6, v10, v14 = _g(v2, v6, v10, v14, m5, m2)
    v3, v7, v11, v15 = _g(v3, v7, v11, v15, m15, m13)
    v0, v5, v10, v15 = _g(v0, v5, v10, v15, m10, m14)
    v1, v6, v11, v12 = _g(v1, v6, v11, v12, m3, m6)
    v2, v7, v8, v13 = _g(v2, v7, v8, v13, m7, m1)
    v3, v4, v9, v14 = _g(v3, v4, v9, v14, m9, m4)
    # round 3: the message words in SIGMA[3]'s order
    v0, v4, v8, v12 = _g(v0, v4, v8, v12, m7, m9)
    v1, v5, v9, v13 = _g(v1, v5, v9, v13, m3, m1)
    v2, v6, v10, v14 = _g(v2, v6, v10, v14, m13, m12)
    v3, v7, v11, v15 = _g(v3, v7, v11, v15, m11, m14)
    v0, v5, v10, v15 = _g(v0, v5, v10, v15, m2, m6)
    v1, v6, v11, v12 = _g(v1, v6, v11, v12, m5, m10)
    v2, v7, v8, v13 = _g(v2, v7, v8, v13, m4, m0)
    v3, v4, v9, v14 = _g(v3, v4, v9, v14, m15, m8)
    # round 4: the message words in SIGMA[4]'s order
    v0, v4, v8, v12 = _g(v0, v4, v8, v12, m9, m0)
    v1, v5, v9, v13 = _g(v1, v5, v9, v13, m5, m7)
    v2, v6, v10, v14 = _g(v2, v6, v10, v14, m2, m4)
    v3, v7, v11, v15 = _g(v3, v7, v11, v15, m10, m15)
    v0, v5, v10, v15 = _g(v0, v5, v10, v15, m14, m1)
    v1, v6, v11, v12 = _g(v1, v6, v11, v12, m11, m12)
    v2, v7, v8, v13 = _g(v2, v7, v8, v13, m6, m8)
    v3, v4, v9, v14 = _g(v3, v4, v9, v14, m3, m13)
    # round 5: the message words in SIGMA[5]'s order
    v0, v4, v8, v12 = _g(v0, v4, v8, v12, m2, m12)
    v1, v5, v9, v13 = _g(v1, v5, v9, v13, m6, m10)
    v2, v6, v10, v14 = _g(v2, v6, v10, v14, m0, m11)
    v3, v7, v11, v15 = _g(v3, v7, v11, v15, m8, m3)
    v0, v5, v10, v15 = _g(v0, v5, v10, v15, m4, m13)
    v1, v6, v11, v12 = _g(v1, v6, v11, v12, m7, m5)
    v2, v7, v8, v13 = _g(v2, v7, v8, v13, m15, m14)
    v3, v4, v9, v14 = _g(v3, v4, v9, v14, m1, m9)
    # round 6: the message words in SIGMA[6]'s order
    v0, v4, v8, v12 = _g(v0, v4, v8, v12, m12, m5)
    v1, v5, v9, v13 = _g(v1, v5, v9, v13, m1, m15)
    v2, v6, v10, v14 = _g(v2, v6, v10, v14, m14, m13)
    v3, v7, v11, v15 = _g(v3, v7, v11, v15, m4, m10)
    v0, v5, v10, v15 = _g(v0, v5, v10, v15, m0, m7)
    v1, v6, v11, v12 = _g(v1, v6, v11, v12, m6, m3)
    v2, v7, v8, v13 = _g(v2, v7, v8, v13, m9, m2)
    v3, v4, v9, v14 = _g(v3, v4, v9, v14, m8, m11)
    # round 7: the message words in SIGMA[7]'s order
    v0, v4, v8, v12 = _g(v0, v4, v8, v12, m13, m11)
    v1, v5, v9, v13 = _g(v1, v5, v9, v13, m7, m14)
    v2, v6, v10, v14 = _g(v2, v6, v10, v14, m12, m1)
    v3, v7, v11, v15 = _g(v3, v7, v11, v15, m3, m9)
    v0, v5, v10, v15 = _g(v0, v5, v10, v15, m5, m0)
    v1, v6, v11, v12 = _g(v1, v6, v11, v12, m15, m4)
    v2, v7, v8, v13 = _g(v2, v7, v8, v13, m8, m6)
    v3, v4, v9, v14 = _g(v3, v4, v9, v14, m2, m10)
    # round 8: the message words in SIGMA[8]'s order
    v0, v4, v8, v12 = _g(v0, v4, v8, v12, m6, m15)
    v1, v5, v9, v13 = _g(v1, v5, v9, v13, m14, m9)
    v2, v6, v10, v14 = _g(v2, v6, v10, v14, m11, m3)
    v3, v7, v11, v15 = _g(v3, v7, v11, v15, m0, m8)
    v0, v5, v10, v15 = _g(v0, v5, v10, v15, m12, m2)
    v1, v6, v11, v12 = _g(v1, v6, v11, v12, m13, m7)
    v2, v7, v8, v13 = _g(v2, v7, v8, v13, m1, m4)
    v3, v4, v9, v14 = _g(v3, v4, v9, v14, m10, m5)
    # round 9: the message words in SIGMA[9]'s order
    v0, v4, v8, v12 = _g(v0, v4, v8, v12, m10, m2)
    v1, v5, v9, v13 = _g(v1, v5, v9, v13, m8, m4)
    v2, v6, v10, v14 = _g(v2, v6, v10, v14, m7, m6)
    v3, v7, v11, v15 = _g(v3, v7, v11, v15, m1, m5)
    v0, v5, v10, v15 = _g(v0, v5, v10, v15, m15, m11)
    v1, v6, v11, v12 = _g(v1, v6, v11, v12, m9, m14)
    v2, v7, v8, v13 = _g(v2, v7, v8, v13, m3, m12)
    v3, v4, v9, v14 = _g(v3, v4, v9, v14, m13, m0)
    # round 10: the message words in SIGMA[10]'s order
    v0, v4, v8, v12 = _g(v0, v4, v8, v12, m0, m1)
    v1, v5, v9, v13 = _g(v1, v5, v9, v13, m2, m3)
    v2, v6, v10, v14 = _g(v2, v6, v10, v14, m4, m5)
    v3, v7, v11, v15 = _g(v3, v7, v11, v15, m6, m7)
    v0, v5, v10, v15 = _g(v0, v5, v10, v15, m8, m9)
    v1, v6, v11, v12 = _g(v1, v6, v11, v12, m10, m11)
    v2, v7, v8, v13 = _g(v2, v7, v8, v13, m12, m13)
    v3, v4, v9, v14 = _g(v3, v4, v9, v14, m14, m15)
    # round 11: the message words in SIGMA[11]'s order
    v0, v4, v8, v12 = _g(v0, v4, v8, v12, m14, m10)
    v1, v5, v9, v13 = _g(v1, v5, v9, v13, m4, m8)
    v2, v6, v10, v14 = _g(v2, v6, v10, v14, m9, m15)
    v3, v7, v11, v15 = _g(v3, v7, v11, v15, m13, m6)
    v0, v5, v10, v15 = _g(v0, v5, v10, v15, m1, m12)
    v1, v6, v11, v12 = _g(v1, v6, v11, v12, m0, m2)
    v2, v7, v8, v13 = _g(v2, v7, v8, v13, m11, m7)
    v3, v4, v9, v14 = _g(v3, v4, v9, v14, m5, m3)
    h[0] ^= v0 ^ v8
    h[1] ^= v1 ^ v9
    h[2] ^= v2 ^ v10
    h[3] ^= v3 ^ v11
    h[4] ^= v4 ^ v12
    h[5] ^= v5 ^ v13
    h[6] ^= v6 ^ v14
    h[7] ^= v7 ^ v15


@njit(nogil=True)
def _keyed(key_words, key_bytes):
    """The state after the key block (the same for every row)."""
    h = IV.copy()
    h[0] ^= np.uint64(0x01010000) ^ (np.uint64(key_bytes) << np.uint64(8)) ^ np.uint64(DIGEST_BYTES)
    m = np.zeros(BLOCK_WORDS, dtype=np.uint64)
    m[:key_words.size] = key_words
    _compress(h, m, 128, False)
    return h


@njit(nogil=True)
def _rows(words, state, out):
    n, k = words.shape
    blocks = (k + BLOCK_WORDS - 1) // BLOCK_WORDS
    h = np.empty(8, dtype=np.uint64)
    m = np.empty(BLOCK_WORDS, dtype=np.uint64)
    for row in range(n):
        h[:] = state
        for j in range(blocks):
            lo = j * BLOCK_WORDS
            hi = min(lo + BLOCK_WORDS, k)
            m[:] = 0
            m[:hi - lo] = words[row, lo:hi]
            last = j == blocks - 1
            _compress(h, m, 128 + 8 * (k if last else hi), last)
        out[row, 0] = h[0]
        out[row, 1] = h[1]


def blake2b_rows(words: np.ndarray, key: bytes) -> np.ndarray:
    """The keyed BLAKE2b-128 digest of each row of ``words`` (uint64, one row a message of 8 bytes a word, little
    endian) as two little-endian 64-bit halves: ``out[i]`` is ``np.frombuffer(hashlib.blake2b(words[i].tobytes(),
    key=key, digest_size=16).digest(), "<u8")``. ``key``: 1 to 64 bytes."""
    if not 1 <= len(key) <= 64:
        raise ValueError("blake2b_rows: the key must be 1 to 64 bytes")
    words = np.ascontiguousarray(words, dtype="<u8")
    if words.ndim != 2 or words.shape[1] < 1:
        raise ValueError("blake2b_rows: words must be a 2-d array of at least one column")
    padded = key + b"\0" * (-len(key) % 8)
    state = _keyed(np.frombuffer(padded, dtype="<u8").copy(), len(key))
    out = np.empty((words.shape[0], 2), dtype=np.uint64)
    _rows(words, state, out)
    return out
