"""The bench scripts' paired runs: every job's rows from worker processes, or an earlier run's CSV."""

from __future__ import annotations

import multiprocessing as mp

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
