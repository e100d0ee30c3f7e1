"""The paper-sized grid, configs/paper.yaml, on this machine (goal: <= 30 min on 2 cores).

Grid: every offline dataset (toy, iris, breast, banknote, housing, digits) x DPGAN, DPCGAN, PrivBayes x
every weight method that applies x eps {1, 6} x 10 seeds, post `none` (the paper's tables).

1. `snakemake -n --forceall` on the whole grid: planning time and the jobs per rule.
2. A real run of a SLICE of the grid (default: seed 0, both epsilons - one tenth of the runs) with
   `snakemake --cores 2` in a temporary copy of the repository, timed; seeds cost alike (same data sizes,
   same steps), so the full grid's wall time is projected as slice time x (full runs / slice runs). Both
   epsilons are in the slice because they do not cost alike (at eps 1 the synthetic digits miss classes
   and the downstream metrics are skipped). The projection is an upper bound: a cell job starts once for
   all its seeds, so the slice pays the start-ups of the whole grid. With --full, the whole grid instead.
3. Where the time goes: the seconds of every run, summed from the cell jobs' logs by stage and dataset.

    python bench/paper_grid.py [--slice-seeds 0] [--slice-epsilons 1 6] [--no-run] [--full]
    python bench/paper_grid.py --from-logs logs/paper     # after `make results` / `make run CONFIG=...`
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import yaml
from _workdir import ROOT, SNAKEMAKE, copy_repo

from dpiw.planning import grid as G


def grid(seeds, epsilons) -> dict:
    """configs/paper.yaml with the given seeds and epsilons."""
    cfg = yaml.safe_load((ROOT / "configs/paper.yaml").read_text())
    cfg["grid"].update(seeds=seeds, epsilons=epsilons)
    return cfg


def dry_run(cwd: Path, config: Path) -> tuple[float, Counter]:
    t = time.perf_counter()
    out = subprocess.run([SNAKEMAKE, "-n", "--forceall", "--configfile", str(config)], cwd=cwd, check=True,
                         capture_output=True, text=True).stdout
    jobs = Counter({m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", out, re.M)
                    if m.group(1) != "total"})
    return time.perf_counter() - t, jobs


def where_time_goes(logs: Path) -> None:
    """Seconds of the runs (the cell jobs print each run's time) by stage and by dataset."""
    by_stage, by_dataset = Counter(), Counter()
    for log in logs.glob("*/*.log"):
        if log.parent.name == "scale":  # one log per dataset and seed, no per-run times
            continue
        seconds = sum(float(m.group(1)) for m in re.finditer(r"^    ([0-9.]+) s$", log.read_text(), re.M))
        by_stage[log.parent.name] += seconds
        by_dataset[log.name.split("_eps=")[0]] += seconds
    total = sum(by_stage.values())
    print(f"seconds inside the runs: {total:.0f} (the rest of 2 x wall is start-up, imports and Snakemake)")
    for name, counter in (("stage", by_stage), ("dataset", by_dataset)):
        print(f"  by {name}: " + ", ".join(f"{k} {v:.0f}" for k, v in counter.most_common()))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--slice-seeds", type=int, nargs="+", default=[0])
    p.add_argument("--slice-epsilons", type=float, nargs="+", default=[1, 6])
    p.add_argument("--no-run", action="store_true", help="only the dry run")
    p.add_argument("--full", action="store_true", help="run the whole grid (no projection)")
    p.add_argument("--from-logs", help="only print where the time went in an earlier run's logs (e.g. logs/paper)")
    args = p.parse_args()
    if args.from_logs:
        where_time_goes(Path(args.from_logs))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        wd = copy_repo(Path(tmp))
        full = wd / "paper.yaml"
        full.write_text(yaml.safe_dump(grid(list(range(10)), [1, 6])))
        t_plan, jobs = dry_run(wd, full)
        print(f"full grid: {sum(jobs.values())} jobs (snakemake -n --forceall: {t_plan:.1f} s)")
        for rule, n in sorted(jobs.items()):
            print(f"  {rule:30s} {n}")
        if args.no_run:
            return 0
        part = wd / "slice.yaml"
        part_cfg = grid(list(range(10)), [1, 6]) if args.full else grid(args.slice_seeds, args.slice_epsilons)
        part.write_text(yaml.safe_dump(part_cfg))
        _, slice_jobs = dry_run(wd, part)
        t = time.perf_counter()
        proc = subprocess.run([SNAKEMAKE, "--cores", "2", "--configfile", str(part)], cwd=wd, capture_output=True,
                              text=True)
        wall = time.perf_counter() - t
        if proc.returncode:
            print(proc.stderr[-3000:], file=sys.stderr)
            return 1
        n_full = sum(1 for _ in G.runs(grid(list(range(10)), [1, 6])))
        n_slice = sum(1 for _ in G.runs(part_cfg))
        what = "whole grid" if args.full else f"slice (seeds {args.slice_seeds}, eps {args.slice_epsilons})"
        print(f"{what}: {sum(slice_jobs.values())} jobs, {n_slice} runs, in {wall / 60:.1f} min on 2 cores")
        if not args.full:
            print(f"projected full grid ({n_full} runs): {wall * n_full / n_slice / 60:.1f} min")
        where_time_goes(wd / "logs" / Path(G.out_dir(part_cfg, [part])).name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
