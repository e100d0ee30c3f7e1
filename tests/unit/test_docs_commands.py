"""Every code block a reader is told to run, in README.md and docs/*.md, is run by a test, or says why not.

Each block is preceded by a marker: `<!-- run: TESTFILE ... -->` names the test that runs it, and that test must
hold every command of the block (its program and first word: `dpiw release`, `dvc exp`), as a string or as an
argument list; `<!-- not run: REASON -->` says why no test runs it (SLURM, R, a long run, a URL)."""

import re

import pytest
from helpers import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: the kinds of block a reader runs (yaml, json and plain blocks are shown, not run)
RUN = ("bash", "sh", "python", "r")
MARKER = re.compile(r"<!--\s*(run|not run):\s*([^>]*?)\s*-->")


def blocks(path):
    """(language, first line number, text, the marker above it or None) of every fenced block."""
    lines = path.read_text().splitlines()
    out, i = [], 0
    while i < len(lines):
        m = re.match(r"^```(\w+)?\s*$", lines[i])
        if not m:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        above = next((MARKER.search(lines[k]) for k in range(i - 1, max(i - 4, -1), -1)
                      if MARKER.search(lines[k])), None)
        out.append(((m.group(1) or "").lower(), i + 1, "\n".join(lines[i + 1:j]), above))
        i = j + 1
    return out


def commands(text: str) -> list[tuple[str, str]]:
    """The (program, first word) of each command line of a shell block."""
    out = []
    for line in text.splitlines():
        line = line.split("  #")[0].strip()
        if not line or line.startswith("#"):
            continue
        for part in re.split(r"\s*&&\s*", line):
            words = part.split()
            out.append((words[0], words[1] if len(words) > 1 else ""))
    return out


CASES = [(p, b) for p in DOCS for b in blocks(p) if b[0] in RUN]


@pytest.mark.parametrize("path, block", CASES, ids=[f"{p.name}:{b[1]}" for p, b in CASES])
def test_each_block_a_reader_runs_is_run_by_a_test_or_says_why_not(path, block):
    language, line, text, marker = block
    where = f"{path.relative_to(ROOT)}:{line}"
    assert marker, f"{where}: a {language} block without a <!-- run: TEST --> or <!-- not run: REASON --> marker"
    kind, what = marker.group(1), marker.group(2)
    if kind == "not run":
        assert len(what.split()) >= 3, f"{where}: say why no test runs it"
        return
    test = ROOT / what.split()[0]
    assert test.is_file(), f"{where}: {test} does not exist"
    source = test.read_text()
    if language in ("bash", "sh"):
        for program, first in commands(text):
            said = f"{program} {first}".strip()
            listed = f'"{program}", "{first}"' if first else f'"{program}"'
            assert said in source or listed in source or path.name in source, \
                f"{where}: {test.name} runs no `{said}`"
    else:
        assert path.name in source, f"{where}: {test.name} does not read {path.name}"


def test_the_markers_are_found():
    assert len(CASES) >= 8 and sum(b[3] is not None for _, b in CASES) >= 1
