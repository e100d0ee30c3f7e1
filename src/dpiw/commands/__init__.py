"""The `dpiw` console command: the workflow, a curator's release in one line, a draft schema, a manifest in
words, and every pipeline stage as a subcommand.

    dpiw run [--config configs/paper.yaml] [--cores N]     the workflow (Snakemake), with its progress line
    dpiw release DATA --schema S --epsilon E [...]         release mode end to end; prints the bundle and its spend
    dpiw schema infer DATA [--target T]                    a draft schema; the bounds are left for you to fill in
    dpiw show RUN_DIR|BUNDLE_DIR|manifest.json             what a run spent and whether it may be published
    dpiw ledger show|verify|set-budget                     the lifetime ledgers of your private tables
    dpiw <stage> ...                                       one stage (scale, synthesize, fit_weights, ...)
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

import dpiw.stages
from dpiw.stages import _cli
from dpiw.stages._cli import Parser

#: the pipeline stages reachable as `dpiw <stage>`: every module dpiw.stages.<name> (each has main(argv))
STAGES = tuple(m.name for m in pkgutil.iter_modules(dpiw.stages.__path__) if not m.name.startswith("_"))
#: the command's own subcommands: module dpiw.commands.<module>, each with add_arguments(parser) and main(args)
COMMANDS = {"run": "run", "release": "release", "schema": "schema", "show": "show", "ledger": "ledger"}


def summary(module: str) -> str:
    """The first line of a module's docstring (the subcommand's one-line help)."""
    doc = importlib.import_module(module).__doc__ or ""
    return doc.strip().splitlines()[0] if doc.strip() else module


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="dpiw", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=Parser)
    for name, module in COMMANDS.items():
        mod = importlib.import_module(f"dpiw.commands.{module}")
        sp = sub.add_parser(name, help=summary(mod.__name__), description=mod.__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
        mod.add_arguments(sp)
        sp.set_defaults(handler=mod.main)
    for stage in STAGES:
        sub.add_parser(stage, help=f"the `{stage}` stage (dpiw {stage} --help lists its flags)", add_help=False)
    return p


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in STAGES:  # a stage parses its own flags (and --help)
        importlib.import_module(f"dpiw.stages.{argv[0]}").main(argv[1:])
        return
    args = build_parser().parse_args(argv)
    args.handler(args)


def entry() -> None:
    """The console script: one-line errors and exit status 2, as every stage (``_cli.run``: the subcommand
    module dpiw.commands.run shadows a bare ``run`` here once it is imported)."""
    _cli.run(main)
