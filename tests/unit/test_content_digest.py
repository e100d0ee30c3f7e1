"""The ledger's key of a CSV is the SHA-256 of its canonical lines; hashing whole blocks of lines at once must
give the digest of the line-by-line rule it replaced, for every way a file can be laid out."""

import hashlib
import io

import numpy as np

from dpiw.privacy.ledger import _hash_text_lines, content_digest


def line_by_line(data: bytes) -> str:
    """The rule as first written: each line's CR/LF dropped, the first line's BOM dropped, blank lines kept
    empty inside and dropped at the end."""
    h = hashlib.sha256()
    blank = 0
    for i, line in enumerate(io.BytesIO(data)):
        line = line.rstrip(b"\r\n")
        if i == 0:
            line = line.removeprefix(b"\xef\xbb\xbf")
        if not line.strip():
            blank += 1
            continue
        h.update(b"\n" * blank + line + b"\n")
        blank = 0
    return h.hexdigest()


def blocked(data: bytes, block: int) -> str:
    h = hashlib.sha256()
    _hash_text_lines(io.BytesIO(data), h, block=block)
    return h.hexdigest()


PIECES = [b"age,bmi", b"1,2", b"", b" ", b"\t", b"\x0b", b"\x0c", b"\r", b"a\rb", b"x ", b" y", b"\xef\xbb\xbf",
          b"\xef\xbb\xbfage", b"3.5,no", b"\xc3\xa9t\xc3\xa9"]


def test_blocks_of_lines_hash_as_the_lines_do():
    for seed in range(400):
        rng = np.random.default_rng(seed)
        parts = [PIECES[i] for i in rng.integers(len(PIECES), size=rng.integers(0, 12))]
        ends = [[b"\n", b"\r\n", b"\r\r\n"][i] for i in rng.choice(3, size=len(parts), p=[0.7, 0.2, 0.1])]
        data = b"".join(p + e for p, e in zip(parts, ends, strict=True))
        if rng.random() < 0.3 and data.endswith(b"\n"):
            data = data[:-1]  # no newline at the end
        for block in (1, 2, 3, 5, 8, 64, 1 << 16):
            assert blocked(data, block) == line_by_line(data), (data, block)


def test_a_table_file_digests_as_before(tmp_path):
    """A BOM, CRLF on the header and blank lines at the end: the digest is that of the plain lines."""
    rows = b"".join(f"{i},{i % 7}.5,{'yes' if i % 3 else 'no'}\n".encode() for i in range(20_000))
    path = tmp_path / "t.csv"
    path.write_bytes(b"\xef\xbb\xbfa,b,c\r\n" + rows + b"\n \n")
    assert content_digest(path) == hashlib.sha256(b"text\0a,b,c\n" + rows).hexdigest()
    assert line_by_line(path.read_bytes()) == hashlib.sha256(b"a,b,c\n" + rows).hexdigest()
