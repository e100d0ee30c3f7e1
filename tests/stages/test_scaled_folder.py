"""A parquet folder scaled a file per forked worker process (dpiw.scale.iter_scaled, the release's scale stage)
gives the frames, so the bytes, of one pass over the same rows, the same row checks, and the first bad file's
error. Run in a fresh interpreter: a process with other threads (this test session's) scales in its own."""

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
    for name, rows in (("t", frame), ("bad", frame.assign(bmi=np.where(np.arange(len(frame)) == 700, 99.0,
                                                                         frame.bmi)))):
        ds.write_dataset(pa.Table.from_pandas(rows, preserve_index=False), tmp_path / name, format="parquet",
                         partitioning=ds.partitioning(pa.schema([("region", pa.string())]), flavor="hive"),
                         max_rows_per_file=70, max_rows_per_group=70)
    script = f"""
import json, hashlib
from dpiw import DpiwError
from dpiw.data.datasets import RowChecks
from dpiw.data.schema import load_schema
from dpiw.privacy import identity
from dpiw.scale import column_bounds, iter_scaled
from dpiw.sdgp import engines
identity.hash_workers = lambda: 2
pools, real = [], engines.local_pool
schema = load_schema({str(root / "data/schemas/clinic.yaml")!r})
bounds = column_bounds(None, schema, bounds="schema")
out = {{}}
for pool in (True, False):
    engines.local_pool = (lambda folder: pools.append(real(folder)) or pools[-1]) if pool else (lambda folder: None)
    checks = RowChecks(schema, out_of_bounds="fail")
    frames = list(iter_scaled(schema, {str(tmp_path / "t")!r}, checks, bounds, chunk_rows=250))
    out[str(pool)] = {{"sizes": [len(f) for f in frames], "dtypes": [str(t) for t in frames[0].dtypes],
                      "digest": hashlib.sha256(b"".join(f.to_numpy().tobytes() for f in frames)).hexdigest(),
                      "rows": checks.rows, "outside": checks.outside}}
    checks = RowChecks(schema, out_of_bounds="fail")
    list(iter_scaled(schema, {str(tmp_path / "bad")!r}, checks, bounds, chunk_rows=250))
    try:
        checks.finish()
    except DpiwError as exc:
        out[str(pool)]["bad"] = str(exc)
out["pools"] = [p is not None for p in pools]
print(json.dumps(out))
"""
    out = json.loads(subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                                    timeout=120).stdout)
    assert out.pop("pools") == [True, True]
    assert out["True"] == out["False"]
    assert out["True"]["sizes"] == [250, 250, 250, 250, 200] and out["True"]["rows"] == 1200
    assert "'bmi' has 1 value(s) outside its public bounds" in out["True"]["bad"]
