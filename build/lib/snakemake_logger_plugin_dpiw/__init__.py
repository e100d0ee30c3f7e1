"""Snakemake logger plugin ``dpiw`` (``--logger dpiw``, set in the workflow profiles): one progress line
(jobs done / total, elapsed, ETA) instead of a block of text per job, and failures in full with their
log's tail. The per-run chatter of each job goes to its file under logs/. Dry runs (``-n``) print what
Snakemake always prints."""

from __future__ import annotations

import logging
import sys
import time

from snakemake_interface_logger_plugins.base import LogHandlerBase
from snakemake_interface_logger_plugins.common import LogEvent

#: plain messages worth a line of their own during a run
_KEEP = ("Nothing to be done", "Complete log")
_ERRORS = {LogEvent.JOB_ERROR, LogEvent.GROUP_ERROR, LogEvent.ERROR}


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    return f"{h}:{rest // 60:02d}:{rest % 60:02d}" if h else f"{rest // 60}:{rest % 60:02d}"


def progress_line(done: int, total: int, elapsed: float, width: int = 28) -> str:
    """>>> progress_line(5, 20, 30.0)
    '[#######                     ]   5/20 jobs (25%)  elapsed 0:30  ETA 1:30'
    """
    frac = done / total if total else 1.0
    bar = "#" * int(round(frac * width))
    eta = _clock(elapsed / done * (total - done)) if done else "?"
    return (f"[{bar:<{width}}] {done:>3}/{total} jobs ({frac:.0%})  elapsed {_clock(elapsed)}  "
            f"ETA {eta if done < total else '0:00'}")


class LogHandler(LogHandlerBase):
    def __post_init__(self) -> None:
        # like Snakemake's own handler: stdout when it asks for it (dry runs), else stderr
        self.stream = sys.stdout if getattr(self.common_settings, "stdout", False) else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.start = time.monotonic()
        self.last_print = 0.0
        self.open_line = False  # a progress line without its newline (tty)
        self.failed = 0

    # what Snakemake asks of a plugin
    writes_to_stream = True
    writes_to_file = False
    has_filter = False  # Snakemake's own filter (quiet, verbose, dry run) applies
    has_formatter = False
    needs_rulegraph = False

    def _write(self, text: str) -> None:
        if self.open_line:
            self.stream.write("\n")
            self.open_line = False
        self.stream.write(text.rstrip("\n") + "\n")
        self.stream.flush()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            if getattr(self.common_settings, "dryrun", False):
                self._write(self.format(record))
                return
            event = getattr(record, "event", None)
            if event == LogEvent.PROGRESS:
                self._progress(int(record.done), int(record.total))
            elif event in _ERRORS or record.levelno >= logging.WARNING:
                self.failed += event in _ERRORS
                text = self.format(record)
                if text.strip():
                    self._write(text)
            elif event is None and any(k in str(record.msg) for k in _KEEP):
                self._write(self.format(record))
        except Exception:  # a logger must never take the run down
            self.handleError(record)

    def _progress(self, done: int, total: int) -> None:
        now = time.monotonic()
        line = progress_line(done, total, now - self.start)
        if self.failed:
            line += f"  ({self.failed} failed)"
        if self.tty:
            self.stream.write("\r" + line + ("\n" if done >= total else ""))
            self.stream.flush()
            self.open_line = done < total
        elif done >= total or now - self.last_print >= 10 or done == 1:  # logs and pipes: a line per 10 s
            self._write(line)
            self.last_print = now
