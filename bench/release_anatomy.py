"""Where a `dpiw release` spends its time: every process of the release (the `dpiw release` command, Snakemake,
each stage job), its wall and CPU seconds, the process starts, the imports, JAX's compilation, and the idle time
before the first job and after the last one.

The table is `release_scale.py`'s 5-column one (the clinic rows drawn with replacement and jittered); the release
takes every default. The process tree is sampled every 20 ms (psutil): a process's wall time is from its start to
the last sample that saw it, its CPU time the last sample's user + system seconds (a process that ends between two
samples loses at most 20 ms). Imports: `python -c "import dpiw.stages.<stage>"`, the median of three, times the
stage's processes. Compilation: JAX's own log lines (`JAX_LOG_COMPILES=1`) in the jobs' logs, with an empty
compilation cache (`DPIW_JAX_CACHE`): the cold case; `--warm` adds a second release with that cache filled.

    python bench/release_anatomy.py [--rows 1e5 1e6] [--sdgp mst] [--warm]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import psutil
import yaml
from _workdir import ROOT, copy_repo
from release_scale import write_table

POLL_S = 0.02
COMPILE = re.compile(r"Finished XLA compilation of .*? in ([\d.e-]+) sec")
TRACE = re.compile(r"Finished tracing \+ transforming .*? in ([\d.e-]+) sec")


def kind(cmdline: list[str]) -> str:
    """What a process of the release is: 'dpiw release', 'snakemake', a stage's name, 'shell' or its program."""
    text = " ".join(cmdline)
    if cmdline and Path(cmdline[0]).name in ("bash", "sh"):
        return "shell"
    m = re.search(r"-m dpiw\.stages\.(\w+)", text)
    if m:
        return m.group(1)
    if "snakemake" in text and "dpiw.stages" not in text:
        return "snakemake"
    if re.search(r"\bdpiw release\b", text):
        return "dpiw release"
    return Path(cmdline[0]).name if cmdline else "?"


def watch(cmd: list[str], cwd: Path, env: dict) -> tuple[int, float, dict[int, dict]]:
    """Run ``cmd`` and sample its process tree until it ends: (exit code, wall s, {pid: record})."""
    seen: dict[int, dict] = {}
    t0 = time.time()
    top = psutil.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    procs = {top.pid: top}
    while True:
        now = time.time()
        try:
            for child in top.children(recursive=True):
                procs.setdefault(child.pid, child)
        except psutil.NoSuchProcess:
            pass
        for pid, p in list(procs.items()):
            try:
                with p.oneshot():  # a process that ends between two reads is recorded whole or not at all
                    rec = seen.get(pid) or {"kind": kind(p.cmdline()), "start": p.create_time()}
                    cpu = p.cpu_times()
                    rec.update(cpu=cpu.user + cpu.system, end=now)
                    seen[pid] = rec
            except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
                procs.pop(pid)
        if top.poll() is not None:
            break
        time.sleep(POLL_S)
    wall = time.time() - t0
    out = top.stdout.read()
    if top.returncode:
        sys.exit(f"release failed ({top.returncode}):\n{out[-3000:]}")
    seen[top.pid]["end"] = time.time()
    return top.returncode, wall, seen


def import_seconds(stages: set[str]) -> dict[str, float]:
    out = {}
    for stage in sorted(stages):
        times = []
        for _ in range(3):
            t = time.perf_counter()
            subprocess.run([sys.executable, "-c", f"import dpiw.stages.{stage}"], check=True)
            times.append(time.perf_counter() - t)
        out[stage] = statistics.median(times)
    return out


def compile_seconds(folder: Path, since: float) -> tuple[float, float, int]:
    """(XLA compilation s, tracing s, programs compiled) from the logs written under ``folder`` after ``since``."""
    comp = trace = 0.0
    n = 0
    for path in folder.rglob("*.log"):
        if path.stat().st_mtime < since:
            continue
        text = path.read_text(errors="replace")
        found = [float(x) for x in COMPILE.findall(text)]
        comp += sum(found)
        n += len(found)
        trace += sum(float(x) for x in TRACE.findall(text))
    return comp, trace, n


def anatomy(wd: Path, n: int, sdgp: str, cache: Path, label: str) -> None:
    name = f"rows{n}"
    if not (wd / f"{name}.csv").exists():
        schema = yaml.safe_load((ROOT / "data/schemas/clinic.yaml").read_text())
        schema.update(name=name, source={"kind": "file", "path": f"{name}.csv"})
        write_table(wd / f"{name}.csv", n, np.random.default_rng(n))
        (wd / f"{name}.yaml").write_text(yaml.safe_dump(schema, sort_keys=False))
    flags = [] if sdgp == "mst" else ["--sdgp", sdgp, "--weights", "none"]
    env = {**os.environ, "DPIW_JAX_CACHE": str(cache), "JAX_LOG_COMPILES": "1",
           "DPIW_HOME": str(wd / f"home-{label}-{n}")}
    since = time.time()
    cmd = ["dpiw", "release", f"{name}.csv", "--schema", f"{name}.yaml", "--epsilon", "1", "--cores", "2",
           "--project", f"project-{label}-{n}", *flags]
    _, wall, seen = watch(cmd, wd, env)
    by = defaultdict(lambda: {"n": 0, "wall": 0.0, "cpu": 0.0})
    for rec in seen.values():
        b = by[rec["kind"]]
        b["n"] += 1
        b["wall"] += rec["end"] - rec["start"]
        b["cpu"] += rec["cpu"]
    stages = {r["kind"] for r in seen.values()} - {"dpiw release", "snakemake", "shell"}
    stages = {s for s in stages if (ROOT / f"src/dpiw/stages/{s}.py").exists()}
    imports = import_seconds(stages)
    cpu_total = sum(r["cpu"] for r in seen.values())
    jobs = [r for r in seen.values() if r["kind"] in stages]
    smk = [r for r in seen.values() if r["kind"] == "snakemake"]
    release = next(r for r in seen.values() if r["kind"] == "dpiw release")
    comp, trace, programs = compile_seconds(wd, since)
    print(f"\n### {n:,} rows, {sdgp}, {label} JAX cache\n")
    print(f"wall {wall:.1f} s; CPU of every process {cpu_total:.1f} s (wall / CPU {wall / cpu_total:.2f}); "
          f"{len(seen)} processes, {len(jobs)} stage jobs\n")
    print("| process | starts | wall s | CPU s | imports s |\n|---|---|---|---|---|")
    for k, b in sorted(by.items(), key=lambda kv: -kv[1]["wall"]):
        imp = f"{imports[k] * b['n']:.1f}" if k in imports else ""
        print(f"| {k} | {b['n']} | {b['wall']:.1f} | {b['cpu']:.1f} | {imp} |")
    if jobs and smk:
        s0 = min(r["start"] for r in smk)
        s1 = max(r["end"] for r in smk)
        first, last = min(r["start"] for r in jobs), max(r["end"] for r in jobs)
        print(f"\n- before Snakemake starts (the command's own checks, the ledger): {s0 - release['start']:.1f} s")
        print(f"- Snakemake's start to the first job: {first - s0:.1f} s")
        print(f"- the last job's end to Snakemake's exit: {s1 - last:.1f} s")
        print(f"- Snakemake's exit to the command's: {release['end'] - s1:.1f} s")
    print(f"- imports in the stage jobs (one process each): {sum(imports[r['kind']] for r in jobs):.1f} s")
    print(f"- JAX: {programs} programs compiled, {comp:.1f} s of XLA compilation and {trace:.1f} s of tracing")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", nargs="+", type=float, default=[1e5, 1e6])
    p.add_argument("--sdgp", default="mst")
    p.add_argument("--warm", action="store_true", help="a second release with the compilation cache filled")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryDirectory() as tables:
        copy_repo(Path(tmp))  # the code the release runs; its tables and projects outside that checkout
        wd = Path(tables)
        for n in map(int, args.rows):
            cache = wd / f"jax-cache-{n}"
            anatomy(wd, n, args.sdgp, cache, "cold")
            if args.warm:
                anatomy(wd, n, args.sdgp, cache, "warm")


if __name__ == "__main__":
    main()
