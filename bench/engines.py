"""The counting engines side by side (dpiw.sdgp.engines): what MST reads of a large table, counted locally, with
DuckDB and on a local Dask cluster of 2 worker processes.

Writes a folder of scaled rows (generated here, seeded; not committed): 5 columns, two continuous numeric ones,
an integer one and two categorical ones, in hive partitions of one categorical column and files of at most
``--file-rows`` rows. Then, for each engine in a fresh Python process: the fine histograms of the three numeric
columns (256 cells) and every one- and two-way count table on 8 bins per numeric column (MST's first pass and its
candidate pairs): wall time, CPU seconds of the process, its peak resident memory, and for Dask each worker's peak
(from the workers themselves). The three engines' count tables are checked equal.

    python bench/engines.py [--rows 1e7 1e8] [--engines local duckdb dask] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = {"name": "engines", "task": "classification", "target": "y", "columns": [
    {"name": "kappa", "type": "numeric", "lower": 0, "upper": 50},
    {"name": "bmi", "type": "numeric", "lower": 10, "upper": 70},
    {"name": "age", "type": "numeric", "lower": 0, "upper": 110, "integer": True},
    {"name": "region", "type": "categorical", "categories": ["n", "s", "e", "w"]},
    {"name": "y", "type": "categorical", "categories": ["no", "yes"]}]}


def write(folder: Path, rows: int, file_rows: int, seed: int = 0) -> None:
    """``rows`` scaled rows in hive partitions of region, written a block at a time (memory: one block)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    block = min(rows, 5_000_000)
    done, part = 0, 0
    while done < rows:
        n = min(block, rows - done)
        region = rng.integers(0, 4, n)
        kappa = np.clip(rng.lognormal(0.2 + 0.1 * region, 0.7, n) / 50, 0, 1)
        bmi = np.clip((rng.normal(27, 5, n) - 10) / 60, 0, 1)
        age = np.clip(np.rint(rng.normal(55, 15, n)), 0, 110) / 110
        y = (rng.uniform(size=n) < 1 / (1 + np.exp(-(-2 + 20 * kappa)))).astype(np.int64)
        for r in range(4):
            m = region == r
            sub = pa.table({"kappa": kappa[m], "bmi": bmi[m], "age": age[m], "y": y[m]})
            where = folder / f"region={r}"
            where.mkdir(parents=True, exist_ok=True)
            for start in range(0, sub.num_rows, file_rows):
                pq.write_table(sub.slice(start, file_rows), where / f"part-{part:05d}.parquet")
                part += 1
        done += n


def count(folder: str, engine: str, out: str) -> None:
    """One engine's counts (run in its own process): timings, memory, and the count tables to compare."""
    import itertools

    sys.path.insert(0, str(ROOT / "src"))
    from dpiw.data.schema import parse_schema
    from dpiw.sdgp.binning import FineGrid
    from dpiw.sdgp.engines import open_counter

    schema = parse_schema(SCHEMA)
    t0, c0 = time.perf_counter(), time.process_time()
    counter = open_counter(folder, schema, 8, engine)
    grids = {c.name: FineGrid.of(c, 256) for c in schema.columns if c.is_numeric}
    fine = counter.fine_counts(grids)
    d = len(schema.columns)
    cliques = [*((j,) for j in range(d)), *itertools.combinations(range(d), 2)]
    tables = counter.counts(cliques)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    workers = {}
    if engine.startswith("dask"):
        from dpiw.sdgp.engines import dask_client

        client = dask_client(None)
        workers = {k: v / 2**30 for k, v in client.run(lambda: __import__("resource").getrusage(
            __import__("resource").RUSAGE_SELF).ru_maxrss * 1024).items()}
    digest = {str(k): float(np.asarray(v) @ np.arange(len(v))) for k, v in {**fine, **tables}.items()}
    Path(out).write_text(json.dumps({
        "engine": engine, "rows": counter.total, "wall": wall, "cpu": cpu,
        "peak_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, "workers_gb": workers,
        "digest": digest}))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=float, nargs="+", default=[1e7])
    p.add_argument("--engines", nargs="+", default=["local", "duckdb", "dask"])
    p.add_argument("--file-rows", type=int, default=2_000_000)
    p.add_argument("--keep", help="write the folders here (kept; reused when there) instead of a temporary folder")
    p.add_argument("--count", nargs=3, help=argparse.SUPPRESS)  # internal: FOLDER ENGINE OUT
    args = p.parse_args()
    if args.count:
        count(*args.count)
        return
    base = Path(args.keep or tempfile.mkdtemp(prefix="dpiw-engines-"))
    print("| rows | engine | wall s | CPU s (driver) | driver peak GB | worker peaks GB | same counts |")
    print("|---|---|---|---|---|---|---|")
    for rows in map(int, args.rows):
        folder = base / f"rows={rows}"
        if not folder.exists():
            t0 = time.perf_counter()
            write(folder, rows, args.file_rows)
            print(f"(wrote {rows:,} rows in {len(list(folder.rglob('*.parquet')))} files, "
                  f"{sum(f.stat().st_size for f in folder.rglob('*.parquet')) / 2**30:.2f} GB, "
                  f"{time.perf_counter() - t0:.0f} s)", file=sys.stderr)
        first = None
        for engine in args.engines:
            out = base / f"{engine}-{rows}.json"
            subprocess.run([sys.executable, __file__, "--count", str(folder), engine, str(out)], check=True)
            r = json.loads(out.read_text())
            first = first or r["digest"]
            workers = ", ".join(f"{v:.2f}" for v in r["workers_gb"].values()) or "-"
            print(f"| {rows:,} | {engine} | {r['wall']:.1f} | {r['cpu']:.1f} | {r['peak_gb']:.2f} | {workers} | "
                  f"{'yes' if r['digest'] == first else 'NO'} |", flush=True)


if __name__ == "__main__":
    main()
