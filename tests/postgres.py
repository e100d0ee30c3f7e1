"""A real PostgreSQL server for the ledger's tests: Debian's `postgresql` package (installed with apt-get when
it is missing and the tests run as root), a throw-away cluster under /tmp on 127.0.0.1, stopped afterwards.
PostgreSQL refuses to run as root: as root the cluster belongs to the package's `postgres` user."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from contextlib import contextmanager
from pathlib import Path

from helpers import apt_install, one_at_a_time


def binaries() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


def install() -> str | None:
    """Install Debian's postgresql when missing; the reason it cannot be had, or None (one test process at a
    time: apt holds a lock of its own)."""
    with one_at_a_time("apt"):
        return _install()


def _install() -> str | None:
    if binaries():
        return None
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        return "PostgreSQL is not installed and the tests cannot install it (needs root and apt-get)"
    reason = apt_install("postgresql")
    if reason:
        return reason
    return None if binaries() else "apt-get installed postgresql but no initdb under /usr/lib/postgresql"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def server():
    """Yield the URL of a fresh PostgreSQL database (user dpiw, trust authentication on 127.0.0.1)."""
    bindir = binaries()
    home = Path(tempfile.mkdtemp(prefix="dpiw-pg-"))
    home.chmod(0o755)
    as_user: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(home, "postgres", "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    data, port = home / "data", free_port()

    def run(*cmd):
        subprocess.run([*as_user, *cmd], check=True, capture_output=True, text=True, timeout=300)

    try:
        run(str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "dpiw", "--no-sync", "-E", "UTF8")
        run(str(bindir / "pg_ctl"), "-D", str(data), "-l", str(home / "log"), "-w", "-t", "120", "-o",
            f"-h 127.0.0.1 -p {port} -k {home} -c fsync=off", "start")
        yield f"postgresql://dpiw@127.0.0.1:{port}/postgres"
    finally:
        if (data / "postmaster.pid").exists():
            subprocess.run([*as_user, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
                           capture_output=True, timeout=120)
        shutil.rmtree(home, ignore_errors=True)
