"""A table's identity for the ledger (dpiw.privacy.identity): its rows as the schema reads them, whatever the file,
and the overlap of two tables from their keyed bottom-k sketches."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from dpiw import DpiwError
from dpiw.data.schema import load_schema
from dpiw.privacy.identity import SKETCH_K, bottom_k, measure, overlap

SECRET = "5e" * 32


@pytest.fixture
def clinic(root):
    return load_schema(root / "data/schemas/clinic.yaml"), pd.read_csv(root / "data/examples/clinic.csv")


def _measure(schema, frame, path, secret=SECRET, **kw):
    if str(path).endswith(".parquet"):
        frame.to_parquet(path, index=False)
    else:
        frame.to_csv(path, index=False, float_format=kw.pop("float_format", None))
    return measure(replace(schema, source={"kind": "file", "path": str(path)}), path, secret, **kw)


def test_row_order_column_order_number_format_and_file_format_do_not_change_the_identity(clinic, tmp_path):
    schema, frame = clinic
    plain = _measure(schema, frame, tmp_path / "a.csv")
    shuffled = frame.astype({"age": float}).sample(frac=1, random_state=1)[list(reversed(frame.columns))]
    written = _measure(schema, shuffled, tmp_path / "b.csv", float_format="%.1f")
    assert ",85.0," in (tmp_path / "b.csv").read_text() or "85.0\n" in (tmp_path / "b.csv").read_text()
    parquet = _measure(schema, frame, tmp_path / "c.parquet")
    extra = _measure(schema, frame.assign(note="not in the schema"), tmp_path / "d.csv")  # ignored column
    assert plain.key == written.key == parquet.key == extra.key and plain.rows == 400
    assert plain.sketch == written.sketch == parquet.sketch and len(plain.sketch) == len(frame.drop_duplicates())


def test_one_changed_value_is_another_table_sharing_almost_every_row(clinic, tmp_path):
    schema, frame = clinic
    plain = _measure(schema, frame, tmp_path / "a.csv")
    changed = frame.copy()
    changed.loc[17, "bmi"] += 0.1
    other = _measure(schema, changed, tmp_path / "b.csv")
    assert other.key != plain.key
    assert overlap(other.sketch, other.rows, plain.sketch, plain.rows) == pytest.approx(399 / 400, abs=0.003)
    # the key depends on the store's secret: another store sees another key and other row hashes
    elsewhere = _measure(schema, frame, tmp_path / "c.csv", secret="7f" * 32)
    assert elsewhere.key != plain.key and not set(elsewhere.sketch) & set(plain.sketch)


def test_an_added_column_is_compared_over_the_earlier_tables_columns(clinic, tmp_path):
    schema, frame = clinic
    plain = _measure(schema, frame, tmp_path / "a.csv")
    wider_schema = replace(schema, columns=(*schema.columns, replace(schema.columns[1], name="weight")))
    wider = _measure(wider_schema, frame.assign(weight=frame["bmi"] * 2), tmp_path / "b.csv",
                     also=[plain.columns])
    assert wider.key != plain.key and wider.columns != plain.columns
    assert wider.over[plain.columns] == plain.sketch  # over the shared columns: the same rows
    assert overlap(wider.over[plain.columns], wider.rows, plain.sketch, plain.rows) == 1.0


def test_the_sketch_estimates_a_share_of_rows_within_its_standard_error(rng):
    """Two sets of 20,000 and 30,000 hashes sharing 10,000: the estimate of the share of the smaller one's rows
    (0.5) is within 3 standard errors of the bottom-k estimate (about 0.5/sqrt(k))."""
    pool = rng.choice(2**62, size=40_000, replace=False)
    a, b = pool[:20_000], pool[10_000:40_000]
    sketch = [np.sort(x)[:SKETCH_K] for x in (a, b)]
    share = overlap(sketch[0], len(a), sketch[1], len(b))
    assert abs(share - 0.5) < 3 * 0.5 / np.sqrt(SKETCH_K)
    assert overlap(sketch[0], len(a), [], 0) == 0.0


def test_a_dropped_column_is_compared_with_the_earlier_tables_sketch_without_it(clinic, tmp_path):
    schema, frame = clinic
    plain = _measure(schema, frame, tmp_path / "a.csv")
    assert set(plain.record()["drop"]) == set(plain.columns)  # five columns: a sketch without each
    narrow_schema = replace(schema, columns=tuple(c for c in schema.columns if c.name != "smoker"))
    narrow = _measure(narrow_schema, frame.drop(columns="smoker"), tmp_path / "b.csv")
    assert narrow.sketch == plain.without("smoker")


def _manifest(run):
    return {"run": run, "neighbours": {"relation": "replace_one"}, "budget": {"epsilon": 1, "delta": 1e-6},
            "spent": {"epsilon": 0.5, "delta": 0}, "records": [
                {"stage": "synthesize", "mechanism": "m", "dp": True, "epsilon": 0.5, "delta": 0, "rdp": [],
                 "seeding": {"streams": [run]}}]}


def test_the_ledger_charges_an_overlapping_table_to_the_earlier_one_unless_declared_a_new_population(clinic,
                                                                                                     tmp_path):
    from dpiw.privacy import ledger as L
    from dpiw.privacy.store import Store

    schema, frame = clinic
    store = Store(str(tmp_path / "ledger.sqlite"))

    def placed(frame, name, columns=None, **kw):
        path = tmp_path / f"{name}.csv"
        frame.to_csv(path, index=False)
        s = replace(schema, columns=columns or schema.columns, source={"kind": "file", "path": str(path)})
        return L.resolve(store, s, **kw)

    first = placed(frame, "first")
    assert first.via == "new"
    out = L.admit(store, table=first, label="clinic", manifest=_manifest("r1"), bundle_id="r1", epsilon=2)
    ledger = first.key
    dropped = placed(frame.drop(columns="smoker"), "dropped", tuple(c for c in schema.columns if c.name != "smoker"))
    assert (dropped.via, dropped.ledger) == ("overlap", ledger) and dropped.share == 1.0
    again = placed(frame.sample(frac=1, random_state=2), "again")
    assert (again.via, again.ledger) == ("identity", ledger)
    rng = np.random.default_rng(4)  # other people: no row in common
    others = frame.assign(bmi=rng.uniform(12, 60, len(frame)).round(3))
    assert placed(others, "others").via == "new"
    declared = placed(frame.drop(columns="smoker"), "declared", tuple(c for c in schema.columns if c.name != "smoker"),
                      new_population="the 2027 cohort: other patients")
    assert declared.via == "new" and declared.earlier["labels"] == ["clinic"]
    out = L.admit(store, table=declared, label="cohort", manifest=_manifest("r2"), bundle_id="r2", epsilon=2)
    assert out["created"] and out["lifetime"]["epsilon"] == 0.5  # its own ledger: only its own spend
    entries = store.atomic(lambda t: t.entries())
    tables = [e.data() for e in entries if e.kind == "table"]
    assert [t.get("new_population") for t in tables] == [None, "the 2027 cohort: other patients"]
    # the overlapping copy, admitted, is charged to the first ledger: its spend composes with the first release
    out = L.admit(store, table=dropped, label="clinic_narrow", manifest=_manifest("r3"), bundle_id="r3")
    assert out["lifetime"]["epsilon"] == pytest.approx(1.0) and out["releases"] == 2


def test_a_column_declared_a_category_instead_of_a_number_is_the_same_table(clinic, tmp_path):
    """The same file with age declared a category (labels "18" to "90") hashes every row apart from the rows with
    age a number, so the two shared no row over all their columns and the retyped schema got a ledger of its own
    (a trial's way to a fresh budget); compared without the retyped column, it is the ledgered table. Two
    columns retyped, or a table ledgered before the kinds were kept, are not found (docs/privacy.md)."""
    from dpiw.data.schema import Column
    from dpiw.privacy import ledger as L
    from dpiw.privacy.store import Store

    schema, frame = clinic
    store = Store(str(tmp_path / "ledger.sqlite"))
    path = tmp_path / "clinic.csv"
    frame.assign(smoker=(frame.smoker == "yes").astype(int)).to_csv(path, index=False)  # a 0/1 flag
    smoker = Column(name="smoker", type="categorical", categories=("0", "1"))
    schema = replace(schema, columns=(*schema.columns[:2], smoker, *schema.columns[3:]))

    def resolved(columns):
        return L.resolve(store, replace(schema, columns=columns, source={"kind": "file", "path": str(path)}))

    first = resolved(schema.columns)
    L.admit(store, table=first, label="clinic", manifest=_manifest("r1"), bundle_id="r1", epsilon=2)
    ages = Column(name="age", type="categorical", categories=tuple(str(a) for a in range(18, 91)))
    retyped = resolved((ages, *schema.columns[1:]))
    assert retyped.key != first.key and retyped.table.categorical == ("age", "outcome", "region", "smoker")
    assert (retyped.via, retyped.ledger, retyped.share) == ("overlap", first.key, 1.0)
    flag = Column(name="smoker", type="numeric", lower=0, upper=1, integer=True)
    twice = resolved((ages, schema.columns[1], flag, *schema.columns[3:]))
    assert twice.via == "new"  # two columns retyped: no sketch leaves both out


def test_a_new_tables_release_over_the_lifetime_budget_given_says_so(clinic, tmp_path):
    """A first release whose own epsilon passes the lifetime epsilon given for the new table (--dataset-epsilon)
    is refused in those words, not as a table that "has spent 0 over 0 releases"."""
    from dpiw.privacy import ledger as L
    from dpiw.privacy.store import Store

    schema, frame = clinic
    store = Store(str(tmp_path / "ledger.sqlite"))
    frame.to_csv(tmp_path / "clinic.csv", index=False)
    table = L.resolve(store, replace(schema, source={"kind": "file", "path": str(tmp_path / "clinic.csv")}))
    mechanisms = L.planned([{**_manifest("r")["records"][0], "epsilon": 1.0}], "replace_one")
    with pytest.raises(DpiwError, match=r"this release alone spends epsilon 1, more than the lifetime epsilon 0.5 "
                                        r"given for table 'clinic' \(a new table; --dataset-epsilon"):
        L.check_plan(store, table=table, label="clinic", mechanisms=mechanisms, relation="replace_one",
                     run_delta=1e-6, epsilon=0.5)
    assert L.check_plan(store, table=table, label="clinic", mechanisms=mechanisms, relation="replace_one",
                        run_delta=1e-6, epsilon=2.0)["after"]["epsilon"] == pytest.approx(1.0)


def test_an_overlap_of_tables_of_few_possible_rows_says_what_it_cannot_tell(clinic, tmp_path):
    """Smoker, region and outcome: 16 possible rows among 400. Another 400 people drawn apart share every one of
    them, so the overlap charges them to the first ledger (the safe side) and the note says that the share says
    whose rows these could be, not that they are; a table of distinct rows compared over all its columns gets no
    such words, one compared over the ledgered table's few columns does."""
    from dpiw.privacy import ledger as L
    from dpiw.privacy.store import Store

    schema, frame = clinic
    store = Store(str(tmp_path / "ledger.sqlite"))
    few = replace(schema, columns=tuple(c for c in schema.columns if not c.is_numeric))
    cols = [c.name for c in few.columns]

    def placed(rows, name, s=few):
        rows.to_csv(tmp_path / f"{name}.csv", index=False)
        return L.resolve(store, replace(s, source={"kind": "file", "path": str(tmp_path / f"{name}.csv")}))

    first = placed(frame[cols], "first")
    L.admit(store, table=first, label="clinic", manifest=_manifest("r1"), bundle_id="r1", epsilon=2)
    rng = np.random.default_rng(3)
    others = pd.DataFrame({c: rng.permutation(frame[c].to_numpy()) for c in cols})  # each column shuffled apart
    other = placed(others, "others")
    assert other.via == "overlap" and other.few and "the rows compared are few of a kind" in other.note()
    whole = placed(frame, "whole", schema)  # distinct rows: a plain overlap line
    L.admit(store, table=whole, label="whole", manifest=_manifest("r2"), bundle_id="r2", epsilon=2)
    again = placed(frame.assign(bmi=frame.bmi + 0.01).iloc[:390], "again", schema)  # over first's columns: few
    assert again.via == "overlap" and again.few
    changed = frame.copy()
    changed.loc[3, "bmi"] += 0.1
    plain = placed(changed, "plain", schema)  # the whole table's distinct rows: a plain overlap
    assert plain.via in ("overlap", "identity") and not plain.few and "few of a kind" not in (plain.note() or "")


def test_the_sketch_by_partition_equals_the_sorted_distinct_values(rng):
    """bottom_k (the sketch without sorting every row hash) gives np.unique's k smallest, repeats and all: a table's
    identity and sketch must not change with how they are computed."""
    for _ in range(300):
        n, spread, k = int(rng.integers(1, 6000)), int(rng.integers(1, 4000)), int(rng.integers(1, 700))
        v = rng.integers(0, spread, n).astype(np.uint64)
        assert np.array_equal(bottom_k(v, k), np.unique(v)[:k]), (n, spread, k)


def test_a_measured_identity_is_reused_only_while_its_files_secret_and_sketches_hold(clinic, tmp_path, monkeypatch):
    """`dpiw release` measures its table once and keeps the identity for the ledger stage: reused while the
    table's files are unchanged, in the store whose secret measured it, when it holds every sketch the store's
    tables ask for; else the rows are read again, or (the files changed) the release is refused."""
    import os

    from dpiw import DpiwError
    from dpiw.privacy import ledger as L
    from dpiw.privacy.identity import load_measured
    from dpiw.privacy.store import Store
    from dpiw.sdgp import engines

    schema, frame = clinic
    store, path, kept = Store(str(tmp_path / "ledger.sqlite")), tmp_path / "t.csv", tmp_path / "measured.json"
    frame.to_csv(path, index=False)
    table = replace(schema, source={"kind": "file", "path": str(path)})
    first = L.resolve(store, table)
    L.admit(store, table=first, label="clinic", manifest=_manifest("r1"), bundle_id="r1", epsilon=2)
    L.keep_measured(store, first, path, kept)
    reads, real = [], engines.measure_table
    monkeypatch.setattr(engines, "measure_table", lambda *a, **k: reads.append(1) or real(*a, **k))
    again = L.resolve(store, table, measured=load_measured(kept, path))
    assert (again.via, again.ledger, again.table) == ("identity", first.key, first.table) and reads == []
    # another store holds another secret: the kept identity is not its own, so the rows are read again
    elsewhere = L.resolve(Store(str(tmp_path / "other.sqlite")), table, measured=load_measured(kept, path))
    assert reads == [1] and elsewhere.via == "new" and elsewhere.table.key != first.table.key
    # a table ledgered since over fewer columns asks for a sketch over them, which was not measured: read again
    keep = [c for c in schema.columns if c.name not in ("smoker", "bmi")]
    narrow_path = tmp_path / "narrow.csv"
    frame[[c.name for c in keep]].to_csv(narrow_path, index=False)
    narrow = L.resolve(store, replace(schema, columns=tuple(keep), source={"kind": "file", "path": str(narrow_path)}),
                       new_population="other patients")
    L.admit(store, table=narrow, label="narrow", manifest=_manifest("r2"), bundle_id="r2", epsilon=2)
    reads.clear()
    assert L.resolve(store, table, measured=load_measured(kept, path)).table.key == first.table.key and reads == [1]
    # the file changed since it was measured: refused, with the fix
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    with pytest.raises(DpiwError, match="changed while its release ran.*run the release again"):
        load_measured(kept, path)
    with pytest.raises(DpiwError, match="measured_table .*: no such file"):
        load_measured(tmp_path / "missing.json", path)


def test_a_kept_identity_is_bound_to_its_table_and_to_its_files_before_they_were_read(clinic, tmp_path, monkeypatch):
    """What a release keeps cannot be moved to another table: the tag binds the identity to the path and the
    files' state under the store's secret (a copy with the path and state rewritten is measured again); the state
    is taken before the rows are read (a change while the release runs is refused); a folder's files are seen
    through linked folders, as Arrow reads them."""
    import json

    from dpiw import DpiwError
    from dpiw.privacy import ledger as L
    from dpiw.privacy.identity import files_state, load_measured
    from dpiw.privacy.store import Store
    from dpiw.sdgp import engines

    schema, frame = clinic
    store = Store(str(tmp_path / "ledger.sqlite"))

    def placed(rows, name):
        path = tmp_path / f"{name}.csv"
        rows.to_csv(path, index=False)
        where = L.resolve(store, replace(schema, source={"kind": "file", "path": str(path)}))
        L.keep_measured(store, where, path, tmp_path / f"{name}.json")
        return path, where

    a_path, a = placed(frame, "a")
    b_path, b = placed(frame.assign(bmi=frame.bmi + 1), "b")
    with pytest.raises(DpiwError, match="changed while its release ran"):  # B's kept identity offered for A
        load_measured(tmp_path / "b.json", a_path)
    forged = json.loads((tmp_path / "b.json").read_text())  # ... with A's path and files written in
    forged.update(path=str(a_path.resolve()), files=files_state(a_path))
    (tmp_path / "forged.json").write_text(json.dumps(forged))
    reads, real = [], engines.measure_table
    monkeypatch.setattr(engines, "measure_table", lambda *x, **k: reads.append(1) or real(*x, **k))
    again = L.resolve(store, replace(schema, source={"kind": "file", "path": str(a_path)}),
                      measured=load_measured(tmp_path / "forged.json", a_path))
    assert reads == [1] and again.table == a.table != b.table  # the tag failed: A measured, not B's taken
    # a change while the rows are read: the state kept is the one before, so the ledger stage refuses
    monkeypatch.setattr(engines, "measure_table", lambda *x, **k: (a_path.write_text(a_path.read_text() + "\n"),
                                                                  real(*x, **k))[1])
    with pytest.raises(DpiwError, match="changed while its rows were read"):
        L.resolve(store, replace(schema, source={"kind": "file", "path": str(a_path)}))
    monkeypatch.setattr(engines, "measure_table", real)
    # a partition reached through a link, re-pointed after the table was measured
    folder, snapshots = tmp_path / "wards", tmp_path / "snapshots"
    for name, rows in (("one", frame.head(200)), ("two", frame.tail(200))):
        (snapshots / name).mkdir(parents=True)
        rows.to_parquet(snapshots / name / "part.parquet", index=False)
    folder.mkdir()
    frame.head(10).to_parquet(folder / "base.parquet", index=False)
    (folder / "k=2").symlink_to(snapshots / "one")
    before = files_state(folder)
    assert any("k=2" in f[0] for f in before)
    (folder / "k=2").unlink()
    (folder / "k=2").symlink_to(snapshots / "two")
    assert files_state(folder) != before


def test_a_table_of_several_chunks_hashed_in_worker_processes_has_the_same_identity(clinic, tmp_path, root):
    """Rows hashed in forked worker processes (a table of more than one chunk), in tasks of a few rows, combine
    into the identity and sketches of the same rows hashed in one process. Run in a fresh interpreter: a process
    with other threads (a Dask client's, in this test session) hashes in its own process instead."""
    import json
    import subprocess
    import sys

    from dpiw.privacy.identity import TableId

    schema, frame = clinic
    path = tmp_path / "t.csv"
    frame.to_csv(path, index=False)
    one = measure(replace(schema, source={"kind": "file", "path": str(path)}), path, SECRET, also=[("age", "smoker")])
    script = f"""
import json
from dataclasses import replace
from dpiw.data.schema import load_schema
from dpiw.privacy import identity
identity.TASK_BYTES = 8 * 5 * 17  # 17 rows a task: many tasks in flight
identity.hash_workers = lambda: 2
pools = []
real = identity._Hashing.add
def add(self, jobs):
    real(self, jobs)
    pools.append(self.pool is not None)
identity._Hashing.add = add
schema = replace(load_schema({str(root / "data/schemas/clinic.yaml")!r}),
                 source={{"kind": "file", "path": {str(path)!r}}})
t = identity.measure(schema, {str(path)!r}, {SECRET!r}, also=[("age", "smoker")], chunk_rows=90)
print(json.dumps({{"pools": pools, "identity": t.to_dict()}}))
"""
    out = json.loads(subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                                    timeout=120).stdout)
    assert out["pools"] == [False, True, True, True, True]  # the workers from the second chunk on
    assert TableId.from_dict(out["identity"]) == one



def test_a_folder_measured_a_file_per_forked_process_has_the_identity_and_checks_of_one_pass(clinic, tmp_path,
                                                                                            root):
    """A parquet folder measured here (engine local or duckdb) is read a file per forked worker process: their
    partial sums, sketches and row checks combine into what one pass over the same rows as a CSV gives, and a bad
    value in one file is refused with the CSV's line. Run in a fresh interpreter (this session runs threads, and
    a process with other threads measures in its own process)."""
    import json
    import subprocess
    import sys

    import pyarrow as pa
    import pyarrow.dataset as ds

    from dpiw import DpiwError
    from dpiw.data.datasets import RowChecks
    from dpiw.privacy.identity import TableId

    schema, frame = clinic
    path = tmp_path / "t.csv"
    frame.to_csv(path, index=False)
    checks = RowChecks(schema, out_of_bounds="clip")
    one = measure(replace(schema, source={"kind": "file", "path": str(path)}), path, SECRET, also=[("age", "smoker")],
                  each=checks.add)
    two = [int(np.flatnonzero(frame.region == r)[-1]) for r in ("east", "west")]  # in two files, one chunk
    for name, rows in (("t", frame), ("bad", frame.assign(smoker=np.where(np.isin(np.arange(len(frame)), two),
                                                                               "maybe", frame.smoker)))):
        ds.write_dataset(pa.Table.from_pandas(rows, preserve_index=False), tmp_path / name, format="parquet",
                         partitioning=ds.partitioning(pa.schema([("region", pa.string())]), flavor="hive"),
                         max_rows_per_file=60, max_rows_per_group=60)
    rows.to_csv(tmp_path / "bad.csv", index=False)
    script = f"""
import json
from dataclasses import replace
from dpiw import DpiwError
from dpiw.data.datasets import RowChecks
from dpiw.data.schema import load_schema
from dpiw.privacy import identity
from dpiw.sdgp import engines
identity.hash_workers = lambda: 2
pools, real = [], engines.local_pool
engines.local_pool = lambda folder: pools.append(real(folder)) or pools[-1]
schema = load_schema({str(root / "data/schemas/clinic.yaml")!r})
out = {{}}
for engine in ("local", "duckdb"):
    checks = RowChecks(schema, out_of_bounds="clip")
    t = engines.measure_table(schema, {str(tmp_path / "t")!r}, {SECRET!r}, also=[("age", "smoker")], checks=checks,
                              engine=engine)
    out[engine] = {{"identity": t.to_dict(), "rows": checks.rows, "outside": checks.outside,
                    "seen": {{k: len(v) for k, v in checks.seen.items()}}}}
try:
    engines.measure_table(schema, {str(tmp_path / "bad")!r}, {SECRET!r})
except DpiwError as exc:
    out["bad"] = str(exc)
out["pools"] = [p is not None for p in pools]
print(json.dumps(out))
"""
    out = json.loads(subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                                    timeout=120).stdout)
    assert out["pools"] == [True, True, True]  # a pool for every folder
    for engine in ("local", "duckdb"):
        assert TableId.from_dict(out[engine]["identity"]) == one
        assert out[engine]["rows"] == checks.rows == 400 and out[engine]["outside"] == checks.outside
        assert out[engine]["seen"] == {k: len(v) for k, v in checks.seen.items()}
    with pytest.raises(DpiwError) as csv:
        measure(replace(schema, source={"kind": "file", "path": str(tmp_path / "bad.csv")}), tmp_path / "bad.csv",
                SECRET)
    assert out["bad"].split(":", 1)[1] == str(csv.value).split(":", 1)[1]  # the same line but the path
    assert "has 2 row(s) outside its declared categories" in out["bad"]  # counted as one pass counts them


def _placer(store, schema, folder):
    """resolve() of rows written as a CSV named ``name`` in ``folder``."""
    from dpiw.privacy import ledger as L

    def placed(rows, name):
        path = folder / f"{name}.csv"
        rows.to_csv(path, index=False)
        return L.resolve(store, replace(schema, source={"kind": "file", "path": str(path)}))

    return placed


def test_a_table_holding_two_ledgered_tables_is_charged_to_both(clinic, tmp_path):
    """Halves released first (two ledgers: no row in common), then the whole table: it shares every row of each
    half, so its release is charged to both ledgers, each within its own budget, and so is every later release of
    it (found by identity). Before, only the half with the larger share was charged: the other half's people spent
    more than their budget (red-team: 1.04 of 1)."""
    from dpiw import DpiwError
    from dpiw.privacy import ledger as L
    from dpiw.privacy.store import Store

    schema, frame = clinic
    store = Store(str(tmp_path / "ledger.sqlite"))

    placed = _placer(store, schema, tmp_path)

    a, b = placed(frame.iloc[:200], "a"), placed(frame.iloc[200:], "b")
    assert a.via == "new"
    L.admit(store, table=a, label="half_a", manifest=_manifest("ra"), bundle_id="ra", epsilon=1.2)
    assert placed(frame.iloc[200:], "b").via == "new"  # the other half: other people
    L.admit(store, table=b, label="half_b", manifest=_manifest("rb"), bundle_id="rb", epsilon=1.2)
    whole = placed(frame, "whole")
    assert whole.via == "overlap" and len(whole.others) == 1
    assert {whole.ledger, *whole.also} == {a.key, b.key}
    assert "too (about 100% shared" in whole.note() and "(ledger " in whole.note()
    out = L.admit(store, table=whole, label="whole", manifest=_manifest("rw"), bundle_id="rw")
    assert out["lifetime"]["epsilon"] == pytest.approx(1.0)
    assert [o["lifetime"]["epsilon"] for o in out["also"]] == [pytest.approx(1.0)]
    charged = L.also_charged(store, whole)  # what dpiw release prints after the release: the other half's ledger
    assert [(o["key"], o["lifetime"]["epsilon"]) for o in charged] == [(whole.also[0], pytest.approx(1.0))]
    entries = store.atomic(lambda t: t.entries())
    assert L.fold(entries, a.key).spent()["epsilon"] == pytest.approx(1.0)
    assert L.fold(entries, b.key).spent()["epsilon"] == pytest.approx(1.0)
    # a second release of the whole table (by identity) is refused: half b's budget would pass 1.2
    again = placed(frame.sample(frac=1, random_state=1), "again")
    assert again.via == "identity" and set(again.also) == {a.key, b.key} - {again.ledger}
    plan = L.check_plan(store, table=again, label="whole", mechanisms=L.planned(
        [{**_manifest("r")["records"][0], "epsilon": 0.1}], "replace_one"), relation="replace_one", run_delta=1e-6)
    assert [o["key"] for o in plan["others"]] == again.also  # the other ledger's spend after it, for the line
    with pytest.raises(DpiwError, match="overlap table"):
        L.check_plan(store, table=again, label="whole", mechanisms=L.planned(_manifest("r")["records"], "replace_one"),
                     relation="replace_one", run_delta=1e-6)
    with pytest.raises(DpiwError, match="release refused"):
        L.admit(store, table=again, label="whole", manifest=_manifest("rw2"), bundle_id="rw2")
    assert len(store.atomic(lambda t: t.entries())) == len(entries)  # nothing written
    # and a release of either half after the whole is charged with the whole's spend
    with pytest.raises(DpiwError, match="release refused"):
        L.admit(store, table=placed(frame.iloc[:200], "a2"), label="half_a", manifest=_manifest("ra2"),
                bundle_id="ra2")


def test_a_table_resolved_before_an_overlapping_one_was_ledgered_is_placed_with_it(clinic, tmp_path):
    """Two releases of the same people as two new tables at once (a race between resolving and admitting): the
    admission re-reads the store and charges the second to the first one's ledger (red-team: both started a
    ledger of their own)."""
    from dpiw.privacy import ledger as L
    from dpiw.privacy.store import Store

    schema, frame = clinic
    store = Store(str(tmp_path / "ledger.sqlite"))

    placed = _placer(store, schema, tmp_path)

    first, second = placed(frame, "first"), placed(frame.iloc[1:], "second")  # both resolved: no ledger yet
    assert first.via == second.via == "new"
    L.admit(store, table=first, label="clinic", manifest=_manifest("r1"), bundle_id="r1", epsilon=1.2)
    out = L.admit(store, table=second, label="clinic_copy", manifest=_manifest("r2"), bundle_id="r2")
    assert not out["created"] and out["lifetime"]["epsilon"] == pytest.approx(1.0)
    tables = [e.data() for e in store.atomic(lambda t: t.entries()) if e.kind == "table"]
    assert tables[1]["via"] == "overlap" and tables[1]["overlap"]["with"] == ["clinic"]


def test_a_ledger_whose_delta_a_small_first_release_set_is_lowered_before_a_large_table_joins_it(clinic, tmp_path):
    """A 40-row pilot creates the ledger at its delta (40^-1.5 = 0.004); the whole table (400 rows, 1/N = 0.0025)
    shares every pilot row and is charged there, where that delta says little: refused, with the fix. `dpiw ledger
    set-budget --delta` may lower the delta (never raise it); the spend so far is composed again at it."""
    from dpiw import DpiwError
    from dpiw.privacy import ledger as L
    from dpiw.privacy.store import Store

    schema, frame = clinic
    store = Store(str(tmp_path / "ledger.sqlite"))

    placed = _placer(store, schema, tmp_path)

    pilot = placed(frame.iloc[:40], "pilot")
    m = _manifest("rp")
    m["budget"]["delta"] = 40**-1.5
    L.admit(store, table=pilot, label="pilot", manifest=m, bundle_id="rp", epsilon=2)
    whole = placed(frame, "whole")
    assert (whole.via, whole.ledger) == ("overlap", pilot.key)
    with pytest.raises(DpiwError, match=r"delta 0.00395 .* not below 1/400.*set-budget .* --delta 0.000125"):
        L.admit(store, table=whole, label="whole", manifest=_manifest("rw"), bundle_id="rw")
    with pytest.raises(DpiwError, match="not below 1/400"):
        L.check_plan(store, table=whole, label="whole", mechanisms=L.planned(_manifest("r")["records"],
                                                                               "replace_one"),
                     relation="replace_one", run_delta=1e-6)
    with pytest.raises(DpiwError, match="can only be lowered"):
        L.set_budget(store, table=whole, label="whole", epsilon=2, delta=0.01, reason="looser")
    before = L.fold(store.atomic(lambda t: t.entries()), pilot.key).spent()["epsilon"]
    with pytest.raises(DpiwError, match="give the lifetime --epsilon, a lower --delta, or both"):
        L.set_budget(store, table=whole, label="whole", epsilon=None, delta=None, reason="nothing")
    # the delta lowered alone: the ledger keeps its epsilon
    L.set_budget(store, table=whole, label="whole", epsilon=None, delta=1e-6, reason="the whole table joins")
    state = L.fold(store.atomic(lambda t: t.entries()), pilot.key)
    assert state.budget["delta"] == 1e-6 and state.spent()["epsilon"] >= before  # never falls
    assert state.budget["epsilon"] == 2
    out = L.admit(store, table=whole, label="whole", manifest=_manifest("rw"), bundle_id="rw")
    assert out["budget"]["delta"] == 1e-6 and out["lifetime"]["epsilon"] == pytest.approx(1.0)


def test_every_ledger_a_table_is_charged_to_is_checked_and_found_again(clinic, tmp_path):
    """The delta rule holds in every ledger a table is charged to, not only the first; a table inside a ledgered
    table that was charged to two ledgers is charged to both (its people are in each); and a --new-population
    reason given before a table of the same people was ledgered is not taken for one that was weighed."""
    from dpiw import DpiwError
    from dpiw.privacy import ledger as L
    from dpiw.privacy.store import Store

    schema, frame = clinic
    # the review's case: a 40-row pilot (delta 40^-1.5), the other 360 rows, then all rows but 5 of the pilot's
    store = Store(str(tmp_path / "one.sqlite"))
    placed = _placer(store, schema, tmp_path)
    pilot, rest = placed(frame.iloc[:40], "pilot"), placed(frame.iloc[40:], "rest")
    m = _manifest("rp")
    m["budget"]["delta"] = 40**-1.5
    L.admit(store, table=pilot, label="pilot", manifest=m, bundle_id="rp", epsilon=2)
    L.admit(store, table=rest, label="rest", manifest=_manifest("rr"), bundle_id="rr", epsilon=2)
    most = placed(frame.iloc[5:], "most")
    assert {most.ledger, *most.also} == {pilot.key, rest.key}
    with pytest.raises(DpiwError, match="not below 1/395"):
        L.admit(store, table=most, label="most", manifest=_manifest("rm"), bundle_id="rm")
    # halves a and b, then the whole (charged to both); then b with 30 of a's rows: a's 30 people are charged too
    store = Store(str(tmp_path / "two.sqlite"))
    placed = _placer(store, schema, tmp_path)
    a, b = placed(frame.iloc[:200], "a"), placed(frame.iloc[200:], "b")
    L.admit(store, table=a, label="a", manifest=_manifest("ra"), bundle_id="ra", epsilon=3)
    L.admit(store, table=b, label="b", manifest=_manifest("rb"), bundle_id="rb", epsilon=3)
    L.admit(store, table=placed(frame, "whole"), label="whole", manifest=_manifest("rw"), bundle_id="rw")
    for part in (pd.concat([frame.iloc[200:], frame.iloc[:30]]), pd.concat([frame.iloc[:200], frame.iloc[200:230]])):
        found = placed(part, f"part{len(part)}")
        assert {found.ledger, *found.also} == {a.key, b.key}
    # a reason given while nothing overlapped, then the overlapping table is ledgered first
    store = Store(str(tmp_path / "three.sqlite"))
    placed = _placer(store, schema, tmp_path)
    first = placed(frame, "first")
    second = L.resolve(store, replace(schema, source={"kind": "file", "path": str(tmp_path / "first.csv")}),
                       new_population="another cohort")
    second = replace(second, table=replace(second.table, key="other"))  # another table of the same rows
    L.admit(store, table=first, label="first", manifest=_manifest("r1"), bundle_id="r1")
    with pytest.raises(DpiwError, match="ledgered while it was being read; run the release again"):
        L.admit(store, table=second, label="second", manifest=_manifest("r2"), bundle_id="r2")
