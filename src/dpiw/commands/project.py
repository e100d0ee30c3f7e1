"""The project folder a `dpiw` command works in, and the checkout whose workflow it runs.

A project folder holds what a user's work writes: params.yaml, data/schemas/, configs/, results/, logs/,
ledgers/ and the compilation cache. The default is the current directory. The dpiw checkout itself is a
project (the workflow's own params.yaml and schemas are there); any other folder becomes one on first use,
with params.yaml and the schemas of its grid copied in, and the workflow (the checkout's Snakefile) runs
there without writing a file of the checkout.
"""

from __future__ import annotations

import argparse
import os
import shutil
from pathlib import Path

from dpiw import DpiwError


def add_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--project", metavar="DIR", default=".",
                   help="the folder that holds your configs, schemas, results and ledgers (default: the current "
                        "directory; created with a copy of params.yaml on first use)")


def repository() -> Path:
    """The dpiw checkout this package runs from (its Snakefile, workflow/, params.yaml)."""
    import dpiw

    root = Path(dpiw.__file__).resolve().parents[2]
    if not (root / "Snakefile").is_file():
        raise DpiwError(f"dpiw's workflow is not beside its package ({root} has no Snakefile): install dpiw from "
                        "its checkout with `make install` (an editable install)")
    return root


def is_repository(folder: str | Path) -> bool:
    return (Path(folder) / "Snakefile").is_file()


def project_params(folder: str | Path) -> Path:
    """The params.yaml a command in ``folder`` will read: the project's own, or the checkout's, which a new
    project starts from (for checks made before anything is written)."""
    own = Path(folder).expanduser() / "params.yaml"
    return own if own.is_file() else repository() / "params.yaml"


def enter(folder: str | Path, *, announce: bool = True, made: list[Path] | None = None) -> Path:
    """Make ``folder`` the working directory, creating the project on first use; returns its absolute path.
    Paths the user gave on the command line must be made absolute before this is called. ``made``: a list that
    receives every folder and file this call created, in order (:func:`discard_new_project` takes back exactly
    those); ``announce=False``: the caller says :func:`new_project_line` itself once the project is kept."""
    made = [] if made is None else made
    path = Path(folder).expanduser().resolve()
    if path.exists() and not path.is_dir():
        raise DpiwError(f"--project {folder}: not a folder")
    if not is_repository(path):
        repo = repository()
        if repo in path.parents:
            raise DpiwError(f"--project {folder}: inside the dpiw checkout {repo}; use the checkout itself or a "
                            "folder outside it")
        created = not (path / "params.yaml").exists()
        for new in (path / "data" / "schemas", path / "configs"):
            made += [p for p in (*reversed(new.parents), new) if not p.exists()]
            new.mkdir(parents=True, exist_ok=True)
        if created:
            shutil.copyfile(repo / "params.yaml", path / "params.yaml")
            made.append(path / "params.yaml")
            for name in grid_names(repo / "params.yaml"):  # what `dpiw run` there runs
                target = path / "data" / "schemas" / f"{name}.yaml"
                if not target.exists():
                    shutil.copyfile(repo / "data" / "schemas" / f"{name}.yaml", target)
                    made.append(target)
            if announce:
                print(new_project_line(path))
    os.chdir(path)
    return path


def grid_names(params: Path) -> list[str]:
    from dpiw.planning.config import load_yaml

    return list(load_yaml(params)["grid"]["datasets"])


def new_project_line(path: Path) -> str:
    return (f"dpiw: a new project in {path}: its settings (params.yaml) copied from {repository()}, with the "
            f"schemas of the example tables its settings' grid runs ({', '.join(grid_names(path / 'params.yaml'))}); "
            "a release of your own table goes under releases/")


def discard_new_project(made: list[Path], origin: Path) -> None:
    """Take back what :func:`enter` created (its ``made`` list) when the command that created it is refused before
    writing anything else: its files, then its folders where they are still empty (last made first). Nothing that
    was there before is touched."""
    os.chdir(origin)
    for p in reversed(made):
        try:
            if p.is_dir() and not p.is_symlink():
                p.rmdir()  # only when empty: what was put there since stays, and so does the folder
            else:
                p.unlink()
        except OSError:
            pass


def snakefile_args() -> list[str]:
    """The flags that point Snakemake at the checkout's workflow when the working directory is another
    project."""
    return [] if is_repository(".") else ["--snakefile", str(repository() / "Snakefile")]
