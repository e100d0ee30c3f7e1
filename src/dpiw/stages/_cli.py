"""What every stage shares: one-line errors with exit status 2, and flag parsing helpers."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from dpiw import DpiwError


def run(main: Callable[[list[str] | None], None], argv: list[str] | None = None) -> None:
    """Call ``main``; a DpiwError becomes ``error: <message>`` on stderr and exit status 2."""
    try:
        main(argv)
    except DpiwError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


def boolean(text: str) -> bool:
    t = str(text).strip().lower()
    if t in ("true", "1", "yes"):
        return True
    if t in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def delta_arg(text: str) -> str | float:
    """'paper' or a float in (0, 1)."""
    if text == "paper":
        return text
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"delta must be 'paper' or a number in (0, 1), got {text!r}") from None
    if not (0 < value < 1):
        raise argparse.ArgumentTypeError(f"delta must be in (0, 1), got {value}")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not (value > 0 and value < float("inf")):
        raise argparse.ArgumentTypeError(f"expected a positive finite number, got {value}")
    return value


class Parser(argparse.ArgumentParser):
    """argparse that exits with status 2 and one line (its default also prints the usage)."""

    def error(self, message):
        self.exit(2, f"error: {self.prog}: {message}\n")
