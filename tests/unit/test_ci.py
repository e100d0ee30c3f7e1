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


def test_every_apt_get_in_the_suite_waits_for_the_others(root):
    """A fresh CI machine installs PostgreSQL, Chromium and SLURM from two test processes; a second apt-get fails at
    once on dpkg's lock (exit 100), which once cost the SLURM test its cluster. Every apt-get goes through
    helpers.apt_install, or start_slurm.sh, whose caller holds the same lock, and each waits for a lock held
    outside the tests."""
    calls = {}  # a command: "apt-get" as an argument list's element in Python, a line's first word in a script
    for path in sorted((root / "tests").rglob("*")):
        if path.suffix in (".py", ".sh") and path.name != "test_ci.py":
            pattern = r'^.*"apt-get"\s*,.*$' if path.suffix == ".py" else r"^\s*apt-get\s.*$"
            calls[path.relative_to(root).as_posix()] = re.findall(pattern, path.read_text(), re.M)
    users = {p for p, lines in calls.items() if lines}
    assert users == {"tests/helpers.py", "tests/cluster/start_slurm.sh"}, users
    assert all("DPkg::Lock::Timeout" in ln for ln in calls["tests/cluster/start_slurm.sh"])
    assert calls["tests/helpers.py"] and all("*APT_WAIT" in ln for ln in calls["tests/helpers.py"])
    slurm_fixture = (root / "tests/cluster/test_slurm.py").read_text()
    assert re.search(r'with one_at_a_time\("apt"\):\s+proc = subprocess.run\(\[str\(START\)\]', slurm_fixture)
