"""The compiled keyed BLAKE2b of the table identity's rows (dpiw.privacy.rowhash) against hashlib's, the
reference implementation: the same digest for every row, key and width, so a table keeps the identity it had when
each row was hashed from Python."""

from __future__ import annotations

import hashlib
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from dpiw.data.schema import load_schema
from dpiw.privacy import identity
from dpiw.privacy.rowhash import blake2b_rows


def _reference(words: np.ndarray, key: bytes) -> np.ndarray:
    return np.array([np.frombuffer(hashlib.blake2b(r.tobytes(), key=key, digest_size=16).digest(), "<u8")
                     for r in words]).reshape(len(words), 2)


@pytest.mark.parametrize("width", [1, 2, 5, 15, 16, 17, 31, 32, 33, 40])  # words a row: one to three blocks
def test_every_width_and_key_length_gives_hashlibs_digest(width):
    rng = np.random.default_rng(width)
    words = rng.integers(0, 2**64, (7, width), dtype=np.uint64, endpoint=False)
    words[0] = 0  # the zero row and the all-ones row too
    words[1] = np.iinfo(np.uint64).max
    for length in (1, 7, 8, 31, 32, 33, 64):
        key = rng.bytes(length)
        np.testing.assert_array_equal(blake2b_rows(words, key), _reference(words, key))


def test_bad_keys_and_shapes_are_refused():
    with pytest.raises(ValueError, match="key"):
        blake2b_rows(np.zeros((2, 3), np.uint64), b"")
    with pytest.raises(ValueError, match="key"):
        blake2b_rows(np.zeros((2, 3), np.uint64), b"k" * 65)
    with pytest.raises(ValueError, match="2-d"):
        blake2b_rows(np.zeros(3, np.uint64), b"k")


def test_a_table_hashed_compiled_or_from_python_has_one_identity(root, tmp_path, monkeypatch):
    schema = load_schema(root / "data/schemas/clinic.yaml")
    frame = pd.read_csv(root / "data/examples/clinic.csv")
    path = tmp_path / "clinic.csv"
    frame.to_csv(path, index=False)
    schema = replace(schema, source={"kind": "file", "path": str(path)})
    monkeypatch.setattr(identity, "COMPILED_ROWS", 10**9)
    python = identity.measure(schema, path, "5e" * 32)
    monkeypatch.setattr(identity, "COMPILED_ROWS", 1)
    compiled = identity.measure(schema, path, "5e" * 32)
    assert compiled == python and compiled.rows == 400 and len(compiled.over) > 0
    # the identity clinic had under this secret before the kernel (commit d9dee9c): a store's tables keep theirs
    assert compiled.key == "23da3f36a086f13ef1849100a3f0f145e33d2ad13aa1ab6b28f00267babc7032"
    assert compiled.sketch[:3] == (8429648176302038, 86681406753054569, 157125002188863651)
