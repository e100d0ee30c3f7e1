"""`dpiw release` of a hive-partitioned parquet folder on every counting engine (issue: tables that live on a
cluster): the folder released with ``--engine duckdb`` and ``--engine dask`` (a local cluster of 2 worker
processes) gives the same bundle, byte for byte under one secret key, as ``--engine local`` on the same rows as
one CSV: read from the folder, the rows are scaled into the same bytes, the noise is keyed by the rows and the
schema's columns (not by where the rows were read from), and the ledger knows the folder as the CSV's table (its
row-level identity is the same, so a copy as a folder gets no fresh budget; the same bundle again is counted
once). A bad value in one partition is refused with one line and leaves no bundle."""

import json
import os

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pytest
import yaml
from helpers import sh

SCHEMA = {"name": "wards", "task": "classification", "target": "ill", "columns": [
    {"name": "age", "type": "numeric", "lower": 0, "upper": 110, "integer": True},
    {"name": "kappa", "type": "numeric", "lower": 0, "upper": 50},
    {"name": "region", "type": "categorical", "categories": ["e", "n", "s", "w"]},
    {"name": "smoker", "type": "categorical", "categories": ["no", "yes"]},
    {"name": "ill", "type": "categorical", "categories": ["no", "yes"]}]}
KEY = {"DPIW_SECRET_KEY": "the engines test's key"}


def table(n=4000, seed=7):
    rng = np.random.default_rng(seed)
    smoker = rng.uniform(size=n) < 0.3
    age = np.clip(np.rint(rng.normal(55, 15, n)), 0, 110).astype(int)
    kappa = np.clip(rng.lognormal(0.2 + 0.3 * smoker, 0.7, n), 0, 50).round(3)
    ill = rng.uniform(size=n) < 1 / (1 + np.exp(-(-2 + 0.5 * kappa + 0.02 * (age - 55))))
    raw = pd.DataFrame({"age": age, "kappa": kappa, "region": rng.choice(["e", "n", "s", "w"], n),
                        "smoker": np.where(smoker, "yes", "no"), "ill": np.where(ill, "yes", "no")})
    # the CSV holds the rows in the order the folder's partitions are read (region=e, n, s, w): the same rows
    return raw.sort_values("region", kind="stable").reset_index(drop=True)


def folder_of(raw, path):
    ds.write_dataset(pa.Table.from_pandas(raw, preserve_index=False), path, format="parquet",
                     partitioning=ds.partitioning(pa.schema([("region", pa.string())]), flavor="hive"),
                     max_rows_per_file=600, max_rows_per_group=600)
    return path


def release(tmp_path, data, engine, home, *extra):
    env = {**os.environ, **KEY, "DPIW_HOME": str(tmp_path / home)}
    return sh(["dpiw", "release", data, "--schema", "wards.yaml", "--epsilon", "2", "--cores", "1",
               "--engine", engine, "--project", f"p-{home}", *extra], tmp_path, env=env)


def test_a_partitioned_folder_releases_the_same_bundle_on_every_engine(tmp_path):
    raw = table()
    raw.to_csv(tmp_path / "wards.csv", index=False)
    folder_of(raw, tmp_path / "wards")
    assert len(list((tmp_path / "wards").rglob("*.parquet"))) >= 8
    (tmp_path / "wards.yaml").write_text(yaml.safe_dump(SCHEMA, sort_keys=False))
    release(tmp_path, "wards.csv", "local", "local")
    # the same rows in another order: the same table and the same release, found again (no new noise, no spend)
    raw.iloc[::-1].to_csv(tmp_path / "reversed.csv", index=False)
    again = release(tmp_path, "reversed.csv", "local", "local")
    assert "admitted before; nothing is spent" in again.stdout, again.stdout
    assert len(list((tmp_path / "p-local").rglob("release/manifest.json"))) == 1
    # the folder on every engine, each in a store of its own (a first release: the same key, rows and flags draw
    # the same noise): read a chunk at a time from the folder's files, the rows are scaled into the same bytes as
    # from the CSV, every engine counts the same count tables (tests/stages/test_engines.py checks them cell by
    # cell), so every bundle is the CSV's, byte for byte
    release(tmp_path, "wards", "local", "folder")
    release(tmp_path, "wards", "duckdb", "duckdb")
    trains = [next((tmp_path / f"p-{home}").rglob("private/*/seed=0/train.parquet")) for home in ("local", "folder")]
    assert trains[0].read_bytes() == trains[1].read_bytes()
    (ref,) = [m.parent for m in (tmp_path / "p-local").rglob("release/manifest.json")]  # the CSV's bundle
    for home in ("folder", "duckdb"):
        (manifest,) = (tmp_path / f"p-{home}").rglob("release/manifest.json")
        for name in ("synthetic.parquet", "weights.parquet", "measurements.json"):
            assert (manifest.parent / name).read_bytes() == (ref / name).read_bytes(), (manifest, name)
        assert json.loads(manifest.read_text())["spent"] == json.loads((ref / "manifest.json").read_text())["spent"]
        assert json.loads((manifest.parent.parent / "manifest.json").read_text())["ledger"]["releases"] == 1
    # dask in the CSV's store: the identity its workers measure finds the CSV's table (a copy as a folder gets no
    # fresh lifetime budget); --new-release releases again with fresh noise, though the key is the same, and
    # spends again on that table's ledger
    release(tmp_path, "wards", "dask", "local", "--new-release")
    manifests = sorted((tmp_path / "p-local").rglob("release/manifest.json"), key=lambda m: m.stat().st_mtime)
    assert len(manifests) == 2 and manifests[0].parent == ref
    first, second = (json.loads((m.parent.parent / "manifest.json").read_text())["ledger"] for m in manifests)
    assert (first["releases"], second["releases"]) == (1, 2), (first, second)
    assert second["lifetime"]["epsilon"] > first["lifetime"]["epsilon"]
    again = manifests[1].parent
    assert (again / "measurements.json").read_bytes() != (ref / "measurements.json").read_bytes()
    assert (again / "synthetic.parquet").read_bytes() != (ref / "synthetic.parquet").read_bytes()
    # the command once more, without --new-release: the latest round's bundle, nothing spent
    out = release(tmp_path, "wards.csv", "local", "local").stdout
    assert "admitted before; nothing is spent" in out and "(the latest of its 2 rounds)" in out, out
    assert f"{again.relative_to(tmp_path / 'p-local')}" in out


def test_a_bad_value_in_one_partition_is_refused_with_one_line(tmp_path):
    """Refused by the release's own pass over the rows (the identity and the checks), before any engine runs."""
    raw = table(800)
    raw.loc[(raw.region == "s") & (raw.index % 50 == 0), "kappa"] = np.nan  # a few empty values in one partition
    folder_of(raw, tmp_path / "wards")
    (tmp_path / "wards.yaml").write_text(yaml.safe_dump(SCHEMA, sort_keys=False))
    with pytest.raises(AssertionError) as failed:
        release(tmp_path, "wards", "duckdb", "bad")
    assert "'kappa' (" in str(failed.value) and "empty" in str(failed.value)
    assert not list(tmp_path.rglob("release/manifest.json"))
