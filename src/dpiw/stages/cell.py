"""Run one stage for every run of a cell (dataset, eps, SDGP; every seed) in this one process.

The workflow starts one such job per cell and stage instead of one process per run: an interpreter with
pandas, scipy and torch costs seconds before it computes anything. Each run still writes its own
artifacts through the stage's own ``main`` (same code, same bytes as ``python -m dpiw.stages.<stage>``).

A run is skipped when its key (dpiw's code, the stage, its flags and the SHA-256 of every file it
reads) equals the key recorded after its last success and all its outputs exist, so an edited
parameter or a changed input recomputes only the runs it reaches, and a cell interrupted half way
resumes where it stopped. The job
ends by writing ``--done`` (each run's key and outputs), the file the workflow's scheduler waits for.

    python -m dpiw.stages.cell --stage fit_weights --config results/default/config.yaml \
        --cell toy/eps=1/marginals --done DONE.json

The runs come from the config (``dpiw.planning.grid.cell_tasks``, the same function the workflow uses).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import time
from pathlib import Path

from dpiw import DpiwError
from dpiw.stages._cli import Parser, error_message, run

#: the stages a cell job can run (each a module dpiw.stages.<name> with main(argv))
STAGES = ("synthesize", "fit_weights", "postprocess_weights", "evaluate", "privacy_ledger")


def parse_args(argv):
    p = Parser(prog="dpiw cell", description=__doc__)
    p.add_argument("--stage", choices=STAGES, required=True, help="the stage to run for every run of the cell")
    p.add_argument("--config", required=True, help="the workflow's effective config (YAML)")
    p.add_argument("--cell", required=True, help="dataset/eps=E/sdgp")
    p.add_argument("--done", required=True, help="where to write the cell's record (last)")
    return p.parse_args(argv)


def load_tasks(config_path: str, stage: str, cell_id: str) -> list[dict]:
    """The cell's runs of ``stage`` under the config at ``config_path``."""
    from dpiw.planning import grid
    from dpiw.planning.config import load_yaml

    config = load_yaml(config_path)
    try:
        cell = grid.parse_cell(cell_id)
    except ValueError as exc:
        raise DpiwError(f"--cell: {exc}") from None
    try:
        return grid.plan(config, stage, cell)
    except KeyError:
        raise DpiwError(f"--cell {cell_id}: not a cell of the grid in {config_path}") from None


def task_key(stage: str, task: dict) -> str:
    """SHA-256 of dpiw's code, the stage, its flags and the bytes of every input (a missing input is an
    error)."""
    from dpiw.planning.grid import code_digest
    from dpiw.privacy.seeding import file_digest

    missing = [path for path in task["inputs"] if not Path(path).is_file()]
    if missing:
        raise DpiwError(f"{missing[0]}: file not found (input of {stage} {task['name']}); rerun the stage that "
                        "writes it")
    inputs = {path: file_digest(path) for path in task["inputs"]}
    return hashlib.sha256(json.dumps([code_digest(), stage, task["argv"], inputs]).encode()).hexdigest()


def key_file(done: Path, stage: str, name: str) -> Path:
    return done.parent / f"{stage}.keys" / (name.replace("/", "__") + ".sha256")


def outputs(done_files: list[str], index: int = 0) -> list[str]:
    """The ``index``-th output of every run recorded in the cell records ``done_files``, in order."""
    from dpiw.io import read_json

    return [run["outputs"][index] for path in done_files for run in read_json(path)["runs"].values()]


def run_cell(stage: str, tasks: list[dict], done: Path) -> dict:
    """Run (or skip) every task; return the record written to ``done``."""
    main = importlib.import_module(f"dpiw.stages.{stage}").main
    record, ran = {"stage": stage, "runs": {}}, 0
    for i, task in enumerate(tasks, 1):
        key = task_key(stage, task)
        kf = key_file(done, stage, task["name"])
        if kf.is_file() and kf.read_text() == key and all(Path(o).exists() for o in task["outputs"]):
            print(f"[{i}/{len(tasks)}] {stage} {task['name']}: up to date", flush=True)
        else:
            kf.unlink(missing_ok=True)
            t0 = time.perf_counter()
            print(f"[{i}/{len(tasks)}] {stage} {task['name']}", flush=True)
            try:
                main(task["argv"])
            except SystemExit as exc:  # argparse: the message is already on stderr
                raise DpiwError(f"{stage} {task['name']}: bad flags (exit {exc.code})") from None
            except Exception as exc:
                message = error_message(exc)
                if message is None:
                    raise
                raise DpiwError(f"{stage} {task['name']}: {message}") from None
            kf.parent.mkdir(parents=True, exist_ok=True)
            kf.write_text(key)
            ran += 1
            print(f"    {time.perf_counter() - t0:.2f} s", flush=True)
        record["runs"][task["name"]] = {"key": key, "outputs": task["outputs"]}
    print(f"{stage}: {ran} of {len(tasks)} runs computed, {len(tasks) - ran} up to date", flush=True)
    return record


def main(argv: list[str] | None = None) -> None:
    from dpiw.io import write_json
    from dpiw.planning import grid

    args = parse_args(argv)
    done = Path(args.done)
    tasks = load_tasks(args.config, args.stage, args.cell)
    named = done.name.split(".")  # <stage>.<digest>.done.json, as the workflow names it
    if len(named) == 4 and named[1] != grid.cell_digest(tasks):
        raise DpiwError(f"{args.config} defines other runs for this cell than the workflow planned ({done.name}): "
                        "was the config or dpiw's code changed while the workflow ran? Run it again")
    record = run_cell(args.stage, tasks, done)
    # one record per cell and stage: the record of an earlier config would claim runs whose files this
    # job has just rewritten (edit a value, run, edit it back: the job must run again)
    for stale in done.parent.glob(f"{args.stage}.*.done.json"):
        if stale != done:
            stale.unlink()
    write_json(record, done)


if __name__ == "__main__":
    run(main)
