"""Snakemake's command line, ending when its last job ends: ``python -m dpiw.commands.snakemake_main ARGS`` is
``snakemake ARGS`` with Snakemake's rescheduling timers made daemon threads.

Snakemake 9 re-evaluates its schedule after every round through a ``threading.Timer`` of the
``max-jobs-per-timespan`` span (1 s at the least: its parser reads ``200ms`` as 200 minutes). The timer only
wakes the scheduler; once the last job has finished it has nothing left to wake, but as an ordinary thread it
keeps the interpreter alive until it fires, so every run ended with up to a span of nothing (1.4 s from the last
job's end to the exit of a 10^5-row release, bench/release_anatomy.py). As daemon threads, the timers end with
the interpreter. Nothing else changes: the same arguments, profile and exit code.
"""

from __future__ import annotations

import threading


def command() -> list[str]:
    """The start of a command line that runs Snakemake this way; DpiwError where Snakemake is not installed."""
    import importlib.util
    import sys

    from dpiw import DpiwError

    if importlib.util.find_spec("snakemake") is None:
        raise DpiwError("snakemake is not installed: run `make install` and `source .venv/bin/activate`")
    return [sys.executable, "-m", "dpiw.commands.snakemake_main"]


class DaemonTimer(threading.Timer):
    """A ``threading.Timer`` that does not keep the interpreter alive."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.daemon = True


def main() -> None:
    import sys

    threading.Timer = DaemonTimer  # Snakemake's scheduler looks the class up when it arms a timer
    from snakemake.cli import main as snakemake

    sys.argv[0] = "snakemake"  # its usage line and run records name it as the command would
    snakemake()


if __name__ == "__main__":
    main()
