"""CI's entry point runs the README's test command with the strict switch, under which a test that would skip
for want of PostgreSQL, Chromium or SLURM fails instead."""

import re

import pytest
from helpers import STRICT_ENV, unavailable


def test_ci_runs_the_readme_test_command_strictly(root):
    lines = [ln.strip() for ln in (root / ".ci/run").read_text().splitlines()
             if ln.strip() and not ln.lstrip().startswith("#")]
    assert lines[-1] == "make test" and f"export {STRICT_ENV}=1" in lines
    assert re.search(r"^make test\s+#", (root / "README.md").read_text(), re.M)


def test_a_missing_tool_skips_here_and_fails_in_ci(monkeypatch):
    monkeypatch.delenv(STRICT_ENV, raising=False)
    with pytest.raises(pytest.skip.Exception, match="no chromium"):
        unavailable("no chromium")
    monkeypatch.setenv(STRICT_ENV, "1")
    with pytest.raises(pytest.fail.Exception, match="no chromium .*CI must have it"):
        unavailable("no chromium")
