"""The `dpiw` console command: the workflow, a curator's release in one line, a draft schema, a manifest in
words, and every pipeline stage as a subcommand.

    dpiw run [--config configs/paper.yaml] [--cores N]     the workflow (Snakemake), with its progress line
    dpiw release DATA --schema S --epsilon E [...]         release mode end to end; prints the bundle and its spend
    dpiw schema infer DATA [--target T]                    a draft schema; the bounds are left for you to fill in
    dpiw show RUN_DIR|BUNDLE_DIR|manifest.json             what a run spent and whether it may be published
    dpiw export BUNDLE OUT.csv|OUT.parquet                 the rows in their units and labels with a weight column
    dpiw ledger show|verify|set-budget                     the lifetime ledgers of your private tables
    dpiw <stage> ...                                       one pipeline stage (listed below)
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import pkgutil
import re
import sys
import textwrap

import dpiw.stages
from dpiw.stages import _cli
from dpiw.stages._cli import Parser

#: the pipeline stages reachable as `dpiw <stage>`: every module dpiw.stages.<name> (each has main(argv))
STAGES = tuple(m.name for m in pkgutil.iter_modules(dpiw.stages.__path__) if not m.name.startswith("_"))
#: stages the workflow and the make targets call for themselves: reachable, but not listed in `dpiw --help`
INTERNAL_STAGES = ("cell", "paper_compare", "validate_params")
#: the command's own subcommands: module dpiw.commands.<module>, each with add_arguments(parser) and main(args)
COMMANDS = {"run": "run", "release": "release", "schema": "schema", "show": "show", "export": "export",
            "ledger": "ledger"}


def docstring(module: str) -> str:
    """A module's docstring, read from its source without importing it (a stage imports pandas, scipy and more:
    `dpiw --help` and every command's start would import all of them)."""
    import ast

    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return importlib.import_module(module).__doc__ or ""
    with open(spec.origin, encoding="utf-8") as fh:
        return ast.get_docstring(ast.parse(fh.read()), clean=False) or ""


def summary(module: str, prefix: str = "") -> str:
    """The first sentence of a module's docstring after ``prefix``, whole: a subcommand's help."""
    doc = " ".join(docstring(module).split()).removeprefix(prefix)
    return re.split(r"\. (?=[A-Z`(])", doc)[0].rstrip(".") if doc else module  # not at "Eq. 5"


def stage_list() -> str:
    """The pipeline stages under their own heading, each with its first sentence."""
    lines = ["pipeline stages (one step of the workflow; `dpiw <stage> --help` lists its flags):"]
    for stage in STAGES:
        if stage not in INTERNAL_STAGES:
            text = summary(f"dpiw.stages.{stage}", prefix=f"Stage `{stage}`: ")
            lines.append(textwrap.fill(text, 100, initial_indent=f"  {stage:<21}", subsequent_indent=" " * 23))
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="dpiw", description=__doc__, epilog=stage_list(),
               formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=Parser,
                           title="commands")
    for name, module in COMMANDS.items():
        mod = importlib.import_module(f"dpiw.commands.{module}")
        sp = sub.add_parser(name, help=summary(mod.__name__), description=mod.__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
        mod.add_arguments(sp)
        sp.set_defaults(handler=mod.main)
    return p


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in STAGES:  # a stage parses its own flags (and --help)
        importlib.import_module(f"dpiw.stages.{argv[0]}").main(argv[1:])
        return
    args = build_parser().parse_args(argv)
    args.handler(args)


def entry() -> None:
    """One-line errors and exit status 2, as every stage (``_cli.run``: the subcommand module dpiw.commands.run
    shadows a bare ``run`` here once it is imported); in process, an error is SystemExit(2)."""
    _cli.run(main)


def console() -> None:
    """The console script: :func:`entry`, and after an error the process ends at once, after its line and the exit
    handlers (a Dask cluster's close) but without the native libraries' teardown: once in a CI run of the red-team
    test a refused release printed its error and then aborted there ("terminate called without an active
    exception": a native thread still running), exit status -6 for 2."""
    import atexit
    import os

    try:
        entry()
    except BrokenPipeError:  # `dpiw show ... | head`: the reader left; no traceback (Python's documented recipe)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        os._exit(141)  # 128 + SIGPIPE, as a shell's own commands end
    except SystemExit as exc:
        if exc.code != 2:
            raise
        sys.stdout.flush()
        sys.stderr.flush()
        atexit._run_exitfuncs()
        os._exit(2)
