"""A parquet folder scaled a few row groups per forked worker process (dpiw.scale.iter_scaled, the release's
scale stage) gives the frames, so the bytes, of one pass over the same rows, the same row checks, one pass's
error line, and the same frames when a worker dies. Run in a fresh interpreter: a process with other threads
(this test session's) scales in its own."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds


def test_a_folder_scaled_in_worker_processes_is_the_same_frames_checks_and_errors(root, tmp_path):
    frame = pd.read_csv(root / "data/examples/clinic.csv")
    frame = pd.concat([frame] * 3, ignore_index=True)  # 1,200 rows
    i = np.arange(len(frame))
    east = np.flatnonzero(frame.region == "east")
    assert 200 < len(east)  # the second chunk of 100 rows: the end of east's first file, the start of its second
    tables = {"t": frame,
              "bounds": frame.assign(bmi=np.where(i == 700, 99.0, frame.bmi)),  # refused at the end, counted
              # bad labels in two files of one chunk and in a later chunk: every one counted
              "labels": frame.assign(smoker=np.where(np.isin(i, [*east[[110, 125]], len(frame) - 1]), "maybe",
                                                     frame.smoker)),
              # infinite values in two files: counted, refused by the checks at the end
              "inf": frame.assign(bmi=np.where(np.isin(i, [2, len(frame) - 2]), np.inf, frame.bmi))}
    for name, rows in tables.items():  # files of up to 120 rows in row groups of 40: tasks of two row groups, then one
        ds.write_dataset(pa.Table.from_pandas(rows, preserve_index=False), tmp_path / name, format="parquet",
                         partitioning=ds.partitioning(pa.schema([("region", pa.string())]), flavor="hive"),
                         max_rows_per_file=120, max_rows_per_group=40, min_rows_per_group=40,
                         preserve_order=True)
    script = f"""
import json, hashlib, os
from dpiw import DpiwError
from dpiw.data.datasets import RowChecks
from dpiw.data.schema import load_schema
from dpiw.io import write_parquet_chunks
from dpiw.privacy import identity
from dpiw import scale
from dpiw.scale import column_bounds, iter_scaled
from dpiw.sdgp import engines
identity.hash_workers = lambda: 2
pools, real, main = [], engines.local_pool, os.getpid()
schema = load_schema({str(root / "data/schemas/clinic.yaml")!r})
bounds = column_bounds(None, schema, bounds="schema")
task = scale._scaled_part
def dies(part, **kw):  # the worker of the task of east's second file's first row groups is killed
    if os.getpid() != main and part[2][0] == 0 and part[0].endswith("east/part-1.parquet"):
        os._exit(9)
    return task(part, **kw)
out = {{}}
for arm in ("pool", "one pass", "a worker dies"):
    engines.local_pool = (lambda folder: None) if arm == "one pass" else \\
        (lambda folder: pools.append(real(folder)) or pools[-1])
    scale._scaled_part = dies if arm == "a worker dies" else task
    checks = RowChecks(schema, out_of_bounds="fail")
    rows = []
    path = {str(tmp_path)!r} + "/" + arm.replace(" ", "_") + ".parquet"
    write_parquet_chunks((rows.append(len(f)) or f for f in iter_scaled(schema, {str(tmp_path / "t")!r}, checks,
                                                                       bounds, chunk_rows=100)), path)
    out[arm] = {{"sizes": rows, "bytes": hashlib.sha256(open(path, "rb").read()).hexdigest(),
                "rows": checks.rows, "outside": checks.outside, "seen": {{k: sorted(map(str, v)) for k, v in
                                                                          checks.seen.items()}}}}
    for bad in ("bounds", "labels", "inf"):
        checks = RowChecks(schema, out_of_bounds="fail")
        try:
            list(iter_scaled(schema, {str(tmp_path)!r} + "/" + bad, checks, bounds, chunk_rows=100))
            checks.finish()
        except DpiwError as exc:
            out[arm][bad] = str(exc)
out["pools"] = [p is not None for p in pools]
print(json.dumps(out))
"""
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    out = json.loads(run.stdout)
    assert out.pop("pools") == [True] * 8
    assert out["pool"] == out["one pass"] == out["a worker dies"]
    assert out["pool"]["sizes"] == [100] * 12 and out["pool"]["rows"] == 1200
    assert "'bmi' has 1 value(s) outside its public bounds" in out["pool"]["bounds"]
    assert "column 'smoker' has 3 row(s) outside its declared categories" in out["pool"]["labels"]
    assert "column 'bmi' has 2 infinite value(s)" in out["pool"]["inf"]
