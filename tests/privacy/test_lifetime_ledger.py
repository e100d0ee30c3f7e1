"""The lifetime ledger (dpiw.privacy.ledger, dpiw.privacy.store): a budget over (epsilon, delta) that composed
spend never passes and never falls, keyed by the data, hash-chained, and serialised across processes."""

from __future__ import annotations

import math
import multiprocessing as mp
import sqlite3

import pytest

from dpiw import DpiwError
from dpiw.privacy import ledger as L
from dpiw.privacy import witness
from dpiw.privacy.accounting import ALL_ORDERS, zcdp_rho
from dpiw.privacy.store import Store

N_CLINIC = 400
DELTA = 1 / N_CLINIC - 1e-6  # the run delta of every clinic release ('paper')


def manifest(eps: float, run: str, *, delta: float = DELTA, relation: str = "replace_one", curve: bool = True,
             approx_delta: float = 0.0) -> dict:
    """A release like MST's: one zCDP mechanism with its own noise stream (plus, with ``approx_delta``, an
    (epsilon, delta) mechanism without an RDP curve)."""
    rho = zcdp_rho(eps, delta)
    records = [{"stage": "scale", "mechanism": "none", "dp": True, "epsilon": 0.0, "delta": 0.0, "rdp": [],
                "neighbours": relation, "seeding": {}},
               {"stage": "synthesize", "mechanism": "MST", "dp": True, "epsilon": eps, "delta": delta,
                "rdp": [{"kind": "zcdp", "rho": rho}] if curve else [], "neighbours": relation,
                "seeding": {"streams": [f"{run}/mst"]}}]
    if approx_delta:
        records.append({"stage": "fit_weights", "mechanism": "approx", "dp": True, "epsilon": 0.01,
                        "delta": approx_delta, "rdp": [], "neighbours": relation,
                        "seeding": {"streams": [f"{run}/w"]}})
    return {"run": run, "records": records, "neighbours": {"relation": relation},
            "budget": {"epsilon": eps, "delta": delta}, "spent": {"epsilon": eps, "delta": delta}}


def composed_rho(rhos, delta, orders=ALL_ORDERS) -> float:
    """zCDP mechanisms of these rhos composed and converted at ``delta`` by Google's dp-accounting, not by the
    ledger's own accounting; on the ledger's grid of RDP orders (a choice, not a computation: on a finer grid the
    epsilon is at most 0.5% lower, test_the_order_grid_costs_little)."""
    import dp_accounting

    acc = dp_accounting.rdp.RdpAccountant(orders=list(orders))
    for rho in rhos:
        acc.compose(dp_accounting.ZCDpEvent(rho))
    return float(acc.get_epsilon(delta))


@pytest.mark.parametrize("eps, delta, k", [(0.2, 1e-5, 1), (0.2, DELTA, 3), (0.2, 1e-6, 600), (1.0, 1e-6, 16)])
def test_the_order_grid_costs_little(eps, delta, k):
    fine = composed_rho([zcdp_rho(eps, delta)] * k, delta, orders=[1 + i / 100 for i in range(1, 100_000)])
    assert fine <= composed(k * [eps], delta) <= 1.005 * fine


def composed(epsilons, delta=DELTA) -> float:
    """The releases of :func:`manifest` (each the rho its manifest states) composed at ``delta``."""
    return composed_rho([zcdp_rho(e, delta) for e in epsilons], delta)


@pytest.fixture
def store(tmp_path):
    return Store(str(tmp_path / "ledger.sqlite"))


def admit(store, eps, run, digest="clinic-bytes", label="clinic", **kw):
    """Admit a release of ``eps``; ``epsilon``/``delta_budget`` name the lifetime budget."""
    budget = {k: kw.pop(k) for k in ("epsilon",) if k in kw}
    if "delta_budget" in kw:
        budget["delta"] = kw.pop("delta_budget")
    return L.admit(store, digest=digest, label=label, manifest=manifest(eps, run, **kw), bundle_id=run, **budget)


def test_red_team_loop_is_refused_at_the_release_that_crosses_the_lifetime_budget(store):
    """The issue's loop (0.2, 0.21, 0.22, ... under a lifetime budget of 0.5): every release is composed at the
    one lifetime delta; the reported lifetime epsilon rises with each release and the release that would take
    it past 0.5 is refused, with nothing written."""
    asked, reported = [], []
    for i in range(50):
        eps = round(0.2 + 0.01 * i, 2)
        try:
            out = admit(store, eps, f"r{i}", epsilon=0.5)
        except DpiwError as exc:
            assert "release refused" in str(exc) and "\n" not in str(exc)
            break
        asked.append(eps)
        reported.append(out["lifetime"]["epsilon"])
        assert out["lifetime"]["delta"] == pytest.approx(DELTA)  # never the summed deltas
    else:
        pytest.fail("never refused")
    assert reported == sorted(reported) and reported[-1] <= 0.5 + 1e-9
    assert reported == pytest.approx([composed(asked[: k + 1]) for k in range(len(asked))], rel=1e-9)
    assert composed([*asked, eps]) > 0.5  # the refused one crosses it ...
    # by RDP at delta 1/400, 0.2, 0.21, 0.22 compose to 0.410 (their basic sum is 0.63), with 0.23 to 0.499;
    # 0.24 would bring the table to 0.584
    assert asked == [0.2, 0.21, 0.22, 0.23] and reported[2] == pytest.approx(0.40991, abs=1e-4)
    entries = store.atomic(lambda t: t.entries())
    assert sum(e.kind == "release" for e in entries) == 4  # ... and left nothing behind


def test_571_release_loop_stops_at_the_budget_and_never_falls(store):
    """The issue's 571 releases of 0.2 under 10: the loop stops when the composition reaches 10 (at a fixed
    lifetime delta, never at delta -> 1)."""
    last, n = 0.0, 0
    with pytest.raises(DpiwError, match="release refused"):
        for n in range(1, 2000):
            out = admit(store, 0.2, f"r{n}", epsilon=10, delta=1e-6, delta_budget=1e-6)
            spent = out["lifetime"]
            assert last <= spent["epsilon"] <= 10 + 1e-9 and spent["delta"] == 1e-6
            last = spent["epsilon"]
    admitted = n - 1
    assert composed([0.2] * admitted, 1e-6) <= 10 < composed([0.2] * (admitted + 1), 1e-6)
    assert admitted > 571  # RDP at the fixed lifetime delta is tighter than the basic sum (50 releases)


@pytest.mark.parametrize("curve", [False, True])
def test_the_summed_deltas_of_mechanisms_without_rdp_are_capped_by_the_lifetime_delta(store, curve):
    """Deltas that no RDP curve covers add up (MST without its curve: basic composition; with it, a second
    (epsilon, delta) mechanism's delta); the release whose summed delta would pass the lifetime delta 3.5e-6
    is refused though its epsilon fits (epsilon budget 100)."""
    admitted = 0
    with pytest.raises(DpiwError, match="delta past the budget"):
        for i in range(10):
            admit(store, 0.01, f"r{i}", curve=curve, delta=1e-6, approx_delta=1e-6 if curve else 0.0,
                  epsilon=100, delta_budget=3.5e-6)
            admitted += 1
    assert admitted == 3


def test_lifetime_never_falls_over_random_mixes():
    rng = __import__("numpy").random.default_rng(0)
    mechs, last = [], 0.0
    for _ in range(200):
        curve = rng.random() < 0.6
        eps = float(rng.uniform(0, 0.3))
        m = {"epsilon": eps, "delta": float(rng.uniform(0, 2e-7)),
             "rdp": [{"kind": "zcdp", "rho": zcdp_rho(eps, 1e-6)}] if curve and eps > 0 else []}
        mechs.append(m)
        now = L.lifetime(mechs, 1e-5)["epsilon"]
        assert now >= last - 1e-12
        last = now


def test_the_same_bytes_under_two_names_find_one_ledger(tmp_path, store):
    a = tmp_path / "clinic.csv"
    a.write_bytes(b"age,sex\n40,f\n51,m\n")
    b = tmp_path / "copy.csv"
    b.write_bytes(b"\xef\xbb\xbfage,sex\r\n40,f\r\n51,m\r\n\r\n")  # a BOM and Windows line ends
    L.admit(store, digest=L.content_digest(a), label="clinic", manifest=manifest(0.3, "r1"), bundle_id="r1",
            epsilon=0.5)
    with pytest.raises(DpiwError, match="release refused: table 'clinic_copy' has spent epsilon = 0.3"):
        L.admit(store, digest=L.content_digest(b), label="clinic_copy", manifest=manifest(0.4, "r2"), bundle_id="r2")
    # a flag asking for another budget is refused: raising it is `dpiw ledger set-budget`
    with pytest.raises(DpiwError, match="lifetime epsilon is 0.5 .* set-budget"):
        L.admit(store, digest=L.content_digest(b), label="clinic_copy", manifest=manifest(0.1, "r3"),
                bundle_id="r3", epsilon=100)
    L.set_budget(store, digest=L.content_digest(b), label="clinic_copy", epsilon=1.0, delta=None,
                 reason="the owners agreed")
    out = L.admit(store, digest=L.content_digest(a), label="clinic", manifest=manifest(0.4, "r2"), bundle_id="r2")
    assert out["budget"]["epsilon"] == 1.0 and out["releases"] == 2
    summary = L.verify(store)
    assert len(summary["tables"]) == 1 and summary["tables"][0]["labels"] == ["clinic", "clinic_copy"]
    other = tmp_path / "other.csv"
    other.write_bytes(b"age,sex\n40,f\n52,m\n")
    assert L.content_digest(other) != L.content_digest(a)


def test_an_identical_bundle_is_counted_once_and_shared_mechanisms_once(store):
    first = admit(store, 0.3, "r1", epsilon=1)
    again = admit(store, 0.3, "r1")
    assert again["again"] and again["entry"] == first["entry"]
    # a second bundle of the same run (same noise stream: same synthetic rows, another post chain)
    m = manifest(0.3, "r1")
    out = L.admit(store, digest="clinic-bytes", label="clinic", manifest=m, bundle_id="r1-other-post")
    assert out["lifetime"]["epsilon"] == pytest.approx(first["lifetime"]["epsilon"])


def _keyed(run: str, stream: str, published: str) -> dict:
    """:func:`manifest`, its MST stage keyed by a secret key: ``stream`` and a digest of what it published."""
    m = manifest(0.3, run)
    m["records"][1]["seeding"] = {"source": "secret_key", "streams": [stream], "published": published}
    return m


def test_the_same_keyed_noise_spent_on_other_values_is_refused_and_on_the_same_ones_is_free(store):
    """A secret key gives the same streams for the same rows and flags. The same streams with the same output (the
    synthetic rows under another post chain) spend nothing new; with other output (other code measured other
    marginals with that noise) the release is refused, since the two differ by a noise-free amount."""
    first = L.admit(store, digest="clinic-bytes", label="clinic", manifest=_keyed("r1", "k1", "rows-a"),
                    bundle_id="b1", epsilon=1)
    same = L.admit(store, digest="clinic-bytes", label="clinic", manifest=_keyed("r1", "k1", "rows-a"),
                   bundle_id="b1-other-post")
    assert same["lifetime"]["epsilon"] == pytest.approx(first["lifetime"]["epsilon"]) and same["releases"] == 2
    with pytest.raises(DpiwError, match="synthesize stage drew the same noise as an earlier release of table "
                                        "'clinic'.*published other values with it.*unset DPIW_SECRET_KEY"):
        L.admit(store, digest="clinic-bytes", label="clinic", manifest=_keyed("r1", "k1", "rows-b"), bundle_id="b2")
    fresh = L.admit(store, digest="clinic-bytes", label="clinic", manifest=_keyed("r2", "k2", "rows-b"),
                    bundle_id="b3")  # a new key (or OS entropy): new streams, charged
    assert fresh["lifetime"]["epsilon"] == pytest.approx(composed([0.3, 0.3]), rel=1e-6)


def test_an_add_remove_release_enters_a_replace_one_ledger_by_group_privacy_and_not_the_reverse(store):
    admit(store, 0.2, "r1", epsilon=5, delta=1e-5)
    out = admit(store, 0.1, "r2", relation="add_remove", delta=1e-7)
    assert out["lifetime"]["from"] == "rdp"  # MST's curve, and the converted (0.2, 2.1e-7) added
    # the add/remove (0.1, 1e-7) by group privacy is (0.2, (1 + e^0.1) 1e-7), added to MST's curve converted at
    # what is left of delta
    assert out["lifetime"]["epsilon"] == pytest.approx(0.2 + composed_rho([zcdp_rho(0.2, 1e-5)],
                                                                           1e-5 - (1 + math.exp(0.1)) * 1e-7))
    mech = [e.data() for e in store.atomic(lambda t: t.entries()) if e.kind == "mechanism"][-1]
    assert mech["epsilon"] == pytest.approx(0.2) and mech["delta"] == pytest.approx((1 + math.exp(0.1)) * 1e-7)
    assert "group privacy" in mech["converted"]
    with pytest.raises(DpiwError, match="cannot enter this table's add_remove ledger"):
        admit(store, 0.1, "r3", digest="other-table", relation="add_remove", delta=1e-7, epsilon=5)
        admit(store, 0.1, "r4", digest="other-table", delta=1e-7)
    budgets = [e.data()["neighbours"] for e in store.atomic(lambda t: t.entries()) if e.kind == "budget"]
    assert budgets == ["replace_one", "add_remove"]  # each table keeps the relation of its first release


def _tamper(path, sql, args=()):
    con = sqlite3.connect(path)
    con.execute(sql, args)
    con.commit()
    con.close()


def _rehash(path):
    """Recompute every hash and the head after a hand edit, as a careful forger would."""
    from dpiw.privacy.store import entry_hash, genesis

    con = sqlite3.connect(path)
    secret = con.execute("SELECT value FROM dpiw_ledger_meta WHERE key='secret'").fetchone()[0]
    prev = genesis(secret)
    for seq, dataset, kind, body in con.execute("SELECT seq, dataset, kind, body FROM dpiw_ledger ORDER BY seq")\
            .fetchall():
        h = entry_hash(prev, dataset, kind, body)
        con.execute("UPDATE dpiw_ledger SET prev=?, hash=? WHERE seq=?", (prev, h, seq))
        prev = h
    con.execute("UPDATE dpiw_ledger_meta SET value=? WHERE key='head'", (prev,))
    con.commit()
    con.close()


@pytest.mark.parametrize("edit, message", [
    ("DELETE FROM dpiw_ledger WHERE seq = 3", "entry 3 is missing"),
    ("DELETE FROM dpiw_ledger WHERE seq = (SELECT MAX(seq) FROM dpiw_ledger)", "the last entries were removed"),
    ("UPDATE dpiw_ledger SET body = replace(body, '\"epsilon\":0.3', '\"epsilon\":0.03') WHERE kind = 'mechanism'",
     "was changed after it was written"),
    ("UPDATE dpiw_ledger SET body = replace(body, '\"epsilon\":0.3', '\"epsilon\":-100') WHERE kind = 'mechanism'",
     "was changed after it was written"),
    ("rehash:UPDATE dpiw_ledger SET body = replace(body, '\"epsilon\":0.3', '\"epsilon\":-100') "
     "WHERE kind = 'mechanism'", "epsilon must be a finite number >= 0, got -100"),
    ("rehash:UPDATE dpiw_ledger SET body = replace(body, '\"epsilon\":0.3', '\"epsilon\":\"x\"') "
     "WHERE kind = 'mechanism'", "epsilon must be a finite number >= 0, got 'x'"),
    ("rehash:DELETE FROM dpiw_ledger WHERE kind = 'mechanism'", "entry 2 is missing"),
    ("UPDATE dpiw_ledger_meta SET value = CASE WHEN substr(value, 1, 1) = 'a' THEN 'b' ELSE 'a' END || "
     "substr(value, 2) WHERE key = 'secret'",
     "entry 1 does not follow"),
])
def test_a_hand_edit_is_found_by_verify_and_refuses_the_next_admission(tmp_path, edit, message):
    path = tmp_path / "ledger.sqlite"
    store = Store(str(path))
    for i in range(3):
        admit(store, 0.3, f"r{i}", epsilon=5)
    rehash = edit.startswith("rehash:")
    _tamper(path, edit.removeprefix("rehash:"))
    if rehash:
        _rehash(path)
    count = sqlite3.connect(path).execute("SELECT COUNT(*) FROM dpiw_ledger").fetchone()[0]
    with pytest.raises(DpiwError, match=message) as verify_error:
        L.verify(store)
    with pytest.raises(DpiwError, match="is broken: .*nothing is admitted") as admit_error:
        admit(store, 0.1, "r9")
    for exc in (verify_error.value, admit_error.value):
        assert "\n" not in str(exc)
    assert sqlite3.connect(path).execute("SELECT COUNT(*) FROM dpiw_ledger").fetchone()[0] == count  # nothing written


def test_a_consistently_rewritten_chain_is_caught_by_the_bundles_it_admitted(tmp_path):
    """A forger with write access drops a release and rewrites every hash: the chain verifies, but the entry
    hash a published bundle's manifest carries is no longer in it."""
    path = tmp_path / "ledger.sqlite"
    store = Store(str(path))
    outs = [admit(store, 0.3, f"r{i}", epsilon=5) for i in range(3)]
    bundles = {f"bundle{i}": out["entry"] for i, out in enumerate(outs)}
    assert L.verify(store, entries=bundles)["entries"] == 8
    con = sqlite3.connect(path)
    last = con.execute("SELECT MAX(seq) FROM dpiw_ledger").fetchone()[0]
    con.execute("DELETE FROM dpiw_ledger WHERE seq >= ?", (last - 1,))  # the last release and its mechanism
    con.execute("UPDATE dpiw_ledger_meta SET value = ? WHERE key = 'count'", (str(last - 2),))
    con.commit()
    con.close()
    _rehash(path)
    # the witness outside the store saw 8 entries: refused with one line
    with pytest.raises(DpiwError, match="holds 6 entries, but its witness saw 8") as exc:
        L.verify(store)
    assert "\n" not in str(exc.value)
    witness.path(str(path)).unlink()  # without the witness the chain alone looks whole ...
    assert L.verify(store)["entries"] == 6
    with pytest.raises(DpiwError, match="bundle2: its ledger entry .* is not in"):  # ... but not to the bundles
        L.verify(store, entries=bundles)
    # a manifest whose entry was edited in its last digit: said as an edit, with both hashes in full
    true = outs[0]["entry"]
    for edited in (true[:-1] + ("0" if true[-1] != "0" else "1"), ("0" if true[0] != "0" else "1") + true[1:],
                   true.upper()):  # its last digit, its first, its case
        with pytest.raises(DpiwError, match=rf"bundle0: its ledger entry {edited} is not in .*whose release entry "
                                            rf"{outs[0]['entry']} differs from it in a digit or two: the bundle's "
                                            "manifest was edited"):
            L.verify(store, entries={"bundle0": edited})


def test_negative_or_non_finite_spend_is_refused_at_the_door(store):
    for bad in (-100.0, float("nan"), float("inf")):
        m = manifest(0.3, "r1")
        m["records"][1]["epsilon"] = bad
        with pytest.raises(DpiwError, match="epsilon must be a finite number >= 0"):
            L.admit(store, digest="d", label="t", manifest=m, bundle_id="x")
    m = manifest(0.3, "r1")
    m["records"][1]["rdp"] = [{"kind": "zcdp", "rho": -1.0}]
    with pytest.raises(DpiwError):
        L.admit(store, digest="d", label="t", manifest=m, bundle_id="x")
    assert store.atomic(lambda t: t.entries()) == []


# ---------------------------------------------------------------------------------------------- reservations
def planned(eps: float, delta: float = DELTA) -> dict:
    """What `dpiw release` plans for MST with no weights at ``eps``: one zCDP mechanism, rho(eps, delta)."""
    return L.planned([{"stage": "release", "mechanism": "mst + none (planned)", "epsilon": eps, "delta": delta,
                       "neighbours": "replace_one", "rdp": [{"kind": "zcdp", "rho": zcdp_rho(eps, delta)}]}],
                     "replace_one")


def reserve(store, eps, release, digest="clinic-bytes", **kw):
    """`dpiw release`'s reservation of a release of ``eps`` (before its workflow runs)."""
    return L.reserve(store, table=digest, label="clinic", mechanisms=planned(eps), relation="replace_one",
                     run_delta=DELTA, release=release, folder=f"/releases/{release}", **kw)


def plan(store, eps, digest="clinic-bytes"):
    return L.check_plan(store, table=digest, label="clinic", mechanisms=planned(eps), relation="replace_one",
                        run_delta=DELTA)


def ledger(store, digest="clinic-bytes") -> L.DatasetLedger:
    entries = store.atomic(lambda t: t.entries())
    return L.fold(entries, L.dataset_key(store.atomic(lambda t: t.meta("secret")), digest))


def check_a_reservation_counts_until_its_own_admission_settles_it(store, digest):
    """A release's planned spend is charged before it runs: every later plan and admission sees it; its own
    admission (the token) puts its real mechanisms in its place, so the table is charged one release, not two."""
    admit(store, 0.3, f"{digest}-r0", digest=digest, epsilon=2)  # an earlier release, composed with the rest
    r = reserve(store, 0.5, "clinic/eps=0.5", digest=digest)
    assert not r["resumed"] and len(r["token"]) == 32 and r["after"]["epsilon"] == pytest.approx(composed([0.3, 0.5]))
    state = ledger(store, digest)
    assert list(state.reservations) == [r["token"]] and state.summary()["interrupted"] == 1
    assert state.spent()["epsilon"] == pytest.approx(composed([0.3, 0.5]), rel=1e-9)  # counted as a mechanism
    assert plan(store, 0.4, digest)["before"]["epsilon"] == pytest.approx(composed([0.3, 0.5]), rel=1e-9)
    out = L.admit(store, digest=digest, label="clinic", manifest=manifest(0.5, f"{digest}-r1"),
                  bundle_id=f"{digest}-r1", reservation=r["token"], folder="/releases/clinic/eps=0.5")
    assert out["settled"] and out["interrupted"] == 0 and out["releases"] == 2
    assert out["lifetime"]["epsilon"] == pytest.approx(composed([0.3, 0.5]), rel=1e-9)  # not 0.3 + 0.5 + 0.5
    state = ledger(store, digest)
    assert not state.reservations and state.spent()["epsilon"] == pytest.approx(composed([0.3, 0.5]), rel=1e-9)
    release = [e.data() for e in store.atomic(lambda t: t.entries()) if e.kind == "release"][-1]
    assert release["reservation"] == r["token"]
    # the same token again settles nothing: the next release is charged in full
    out = L.admit(store, digest=digest, label="clinic", manifest=manifest(0.2, f"{digest}-r2"),
                  bundle_id=f"{digest}-r2", reservation=r["token"], folder="/releases/clinic/eps=0.5")
    assert not out["settled"] and out["lifetime"]["epsilon"] == pytest.approx(composed([0.3, 0.5, 0.2]), rel=1e-9)
    summary = L.verify(store)
    assert summary["kinds"]["reservation"] >= 1
    (table,) = [t for t in summary["tables"] if t["dataset_key"] == state.key[:16]]
    assert table["interrupted"] == 0 and table["releases"] == 3


def test_a_reservation_counts_until_its_own_admission_settles_it(store):
    check_a_reservation_counts_until_its_own_admission_settles_it(store, "clinic-bytes")


def test_an_unsettled_reservation_refuses_a_later_release_and_a_cancellation_frees_it(store):
    """Two releases of 0.6 pass a lifetime budget of 0.8 together (0.91 by RDP), one alone does not: while the
    first one's reservation is open (running, or killed after it drew noise) the second is refused before anything
    runs, by
    check_plan, by another reservation and at admission; once it is cancelled (it failed before any stage drew
    noise) it counts no more."""
    assert composed([0.6]) <= 0.8 < composed([0.6, 0.6])
    r = reserve(store, 0.6, "clinic/eps=0.6", epsilon=0.8)  # the table's first release: it makes the ledger
    assert r["created"] and ledger(store).budget == {"epsilon": 0.8, "delta": DELTA, "neighbours": "replace_one"}
    refused = r"release refused before anything ran: table 'clinic' has spent epsilon = 0.6 .* over 0 release\(s\) " \
              r"and 1 release\(s\) interrupted or still running, charged their planned spend"
    with pytest.raises(DpiwError, match=refused):
        plan(store, 0.6)
    with pytest.raises(DpiwError, match=refused):
        reserve(store, 0.6, "clinic/eps=0.6-other")
    with pytest.raises(DpiwError, match="release refused: .* interrupted or still running"):
        admit(store, 0.6, "elsewhere")  # a workflow run by hand, charged at its end
    count = len(store.atomic(lambda t: t.entries()))
    assert L.cancel(store, token=r["token"], reason="failed before any stage drew noise") == 1
    assert L.cancel(store, token=r["token"], reason="again") == 0  # nothing open any more: nothing written
    assert len(store.atomic(lambda t: t.entries())) == count + 1
    state = ledger(store)
    assert not state.reservations and state.cancelled == 1 and state.spent()["epsilon"] == 0
    assert plan(store, 0.6)["after"]["epsilon"] == pytest.approx(composed([0.6]), rel=1e-9)
    out = admit(store, 0.6, "r1")
    assert out["lifetime"]["epsilon"] == pytest.approx(composed([0.6]), rel=1e-9)
    assert L.verify(store)["kinds"]["cancellation"] == 1


def test_a_killed_release_stays_charged_and_a_resumed_one_is_charged_once(store):
    """A reservation never settled (its release was killed) counts for good. A rerun that resumes the same release
    with the same plan keeps it (charged once); another release, or another plan, makes its own."""
    first = reserve(store, 0.4, "clinic/a", epsilon=3)
    again = reserve(store, 0.4, "clinic/a", resume=first["token"])
    assert again["resumed"] and again["token"] == first["token"] and again["interrupted"] == 0
    assert again["after"]["epsilon"] == pytest.approx(composed([0.4]), rel=1e-9)
    assert list(ledger(store).reservations) == [first["token"]]  # nothing written
    other = reserve(store, 0.4, "clinic/b", resume=first["token"])  # another release: not its reservation
    assert not L.reserve(store, table="clinic-bytes", label="clinic", mechanisms=planned(0.4), relation="replace_one",
                         run_delta=DELTA, release="clinic/a", folder="/elsewhere/releases/clinic/a",
                         resume=first["token"])["resumed"]  # its config copied to another folder: not resumed
    other_too = ledger(store).reservations
    assert len(other_too) == 3
    more = reserve(store, 0.3, "clinic/a", resume=first["token"], digest="clinic-bytes")  # another plan
    assert not other["resumed"] and not more["resumed"] and len({first["token"], other["token"], more["token"]}) == 3
    assert other["interrupted"] == 1 and more["interrupted"] == 3
    elsewhere = next(t for t in ledger(store).reservations if t not in (first["token"], other["token"], more["token"]))
    assert L.cancel(store, token=elsewhere, reason="the copied config's run failed before any noise") == 1
    out = L.admit(store, digest="clinic-bytes", label="clinic", manifest=manifest(0.4, "a"), bundle_id="a",
                  reservation=first["token"], folder="/releases/clinic/a")
    assert out["settled"] and out["created"]  # the ledger its reservation made, said as the first release's
    assert L.cancel(store, token=more["token"], reason="failed before any stage drew noise") == 1
    # "clinic/b" never comes back (killed): its plan stays charged
    state = ledger(store)
    assert list(state.reservations) == [other["token"]]
    assert state.spent()["epsilon"] == pytest.approx(composed([0.4, 0.4]), rel=1e-9)
    (table,) = L.verify(store)["tables"]
    assert table["interrupted"] == 1 and table["releases"] == 1 and table["cancelled"] == 2
    assert not reserve(store, 0.4, "clinic/b", resume=first["token"])["resumed"]  # settled: not resumed
    # the same bundle admitted again (a rerun after the admission, before its manifest was written): nothing new
    # was drawn, so the rerun's reservation is cancelled
    late = reserve(store, 0.4, "clinic/a")
    out = L.admit(store, digest="clinic-bytes", label="clinic", manifest=manifest(0.4, "a"), bundle_id="a",
                  reservation=late["token"], folder="/releases/clinic/a")
    assert out["again"] and late["token"] not in ledger(store).reservations


def _renumber(path):
    """After a row was deleted: the rows numbered 1.. again and the count with them (a forger's next step)."""
    con = sqlite3.connect(path)
    con.execute("UPDATE dpiw_ledger SET seq = (SELECT COUNT(*) FROM dpiw_ledger AS b WHERE b.seq <= dpiw_ledger.seq)")
    con.execute("UPDATE dpiw_ledger_meta SET value = (SELECT COUNT(*) FROM dpiw_ledger) WHERE key = 'count'")
    con.commit()
    con.close()


@pytest.mark.parametrize("edit, message", [
    (None, None),
    ("UPDATE dpiw_ledger SET body = replace(body, '\"epsilon\":0.7', '\"epsilon\":0.07') WHERE kind = 'reservation'",
     "was changed after it was written"),
    ("rehash:UPDATE dpiw_ledger SET body = replace(body, '\"epsilon\":0.7', '\"epsilon\":-1') "
     "WHERE kind = 'reservation'", "a planned mechanism: epsilon must be a finite number >= 0, got -1"),
    ("rehash:UPDATE dpiw_ledger SET body = replace(body, '\"token\"', '\"tokens\"') WHERE kind = 'reservation'",
     "a reservation entry needs its token"),
    ("renumber:DELETE FROM dpiw_ledger WHERE kind = 'reservation' AND body LIKE '%clinic/settled%'",
     "a release settles reservation .*, which is not an open reservation of its table before it"),
    ("renumber:DELETE FROM dpiw_ledger WHERE kind = 'reservation' AND body LIKE '%clinic/cancelled%'",
     "a cancellation settles reservation .*, which is not an open reservation"),
    ("renumber:INSERT INTO dpiw_ledger SELECT seq + 100, dataset, kind, body, prev, hash FROM dpiw_ledger WHERE "
     "kind = 'reservation' AND body LIKE '%clinic/killed%'",  # the killed release's reservation twice
     "a reservation whose token an earlier reservation of the table holds"),
])
def test_verify_accepts_reservations_and_cancellations_and_finds_a_hand_edit_of_them(tmp_path, edit, message):
    """A chain with a settled, a cancelled and an open (killed) reservation verifies; an edited, malformed, removed
    or copied reservation is found by verify and refuses the next release (a removed reservation would let its
    release's admission, or its cancellation, settle nothing: the chain says so)."""
    path = tmp_path / "ledger.sqlite"
    store = Store(str(path))
    settled = reserve(store, 0.7, "clinic/settled", epsilon=5)
    L.admit(store, digest="clinic-bytes", label="clinic", manifest=manifest(0.7, "s"), bundle_id="s",
            reservation=settled["token"], folder="/releases/clinic/settled")
    L.cancel(store, token=reserve(store, 0.7, "clinic/cancelled")["token"], reason="failed before any noise")
    reserve(store, 0.7, "clinic/killed")
    if edit is None:
        summary = L.verify(store)
        assert summary["kinds"] == {"budget": 1, "table": 0, "mechanism": 2, "release": 1, "reservation": 3,
                                    "cancellation": 1}
        (table,) = summary["tables"]
        assert table["interrupted"] == 1 and table["cancelled"] == 1 and table["releases"] == 1
        assert table["lifetime"]["epsilon"] == pytest.approx(composed([0.7, 0.7]), rel=1e-9)
        return
    how, _, sql = edit.partition(":") if edit.startswith(("rehash:", "renumber:")) else ("", "", edit)
    _tamper(path, sql)
    if how == "renumber":
        _renumber(path)
    if how:
        _rehash(path)
    with pytest.raises(DpiwError, match=message) as verify_error:
        L.verify(store)
    with pytest.raises(DpiwError, match="is broken: .*nothing is admitted"):
        reserve(store, 0.1, "clinic/next")
    assert "\n" not in str(verify_error.value)


def test_reservations_on_postgresql(postgres_url):
    """The same on a PostgreSQL store (a database of its own: other tests edit theirs by hand)."""
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as con:
        con.execute("DROP DATABASE IF EXISTS reservations")
        con.execute("CREATE DATABASE reservations")
    store = Store(postgres_url.rsplit("/", 1)[0] + "/reservations")
    check_a_reservation_counts_until_its_own_admission_settles_it(store, "pg-reserved")
    r = reserve(store, 0.4, "clinic/pg-killed", digest="pg-reserved")
    assert L.cancel(store, token=r["token"], reason="failed before any stage drew noise") == 1
    assert ledger(store, "pg-reserved").spent()["epsilon"] == pytest.approx(composed([0.3, 0.5, 0.2]), rel=1e-9)
    killed = reserve(store, 0.4, "clinic/pg-killed-2", digest="pg-reserved")
    (table,) = L.verify(store)["tables"]
    assert table["interrupted"] == 1 and table["cancelled"] == 1
    assert ledger(store, "pg-reserved").reservations.keys() == {killed["token"]}


def _admit_until_refused(url: str, worker: int, queue) -> None:
    store = Store(url)
    admitted = 0
    for i in range(40):
        try:
            L.admit(store, digest="shared-table", label="t", manifest=manifest(0.5, f"w{worker}-{i}", delta=1e-6),
                    bundle_id=f"w{worker}-{i}", epsilon=4, delta=1e-6)
            admitted += 1
        except DpiwError as exc:
            assert "release refused" in str(exc), exc
    queue.put(admitted)


def concurrent_admissions(url: str, processes: int = 4) -> int:
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    workers = [ctx.Process(target=_admit_until_refused, args=(url, w, queue)) for w in range(processes)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(300)
        assert w.exitcode == 0
    return sum(queue.get() for _ in workers)


def check_concurrent_total(url: str) -> None:
    admitted = concurrent_admissions(url)
    most = max(k for k in range(1, 200) if composed([0.5] * k, 1e-6) <= 4 + 1e-9)
    assert admitted == most  # as many as the budget holds, not one more
    summary = L.verify(Store(url))
    (table,) = summary["tables"]
    assert table["releases"] == admitted and table["lifetime"]["epsilon"] <= 4 + 1e-9


def test_four_processes_admitting_at_once_against_sqlite_never_pass_the_budget(tmp_path):
    check_concurrent_total(str(tmp_path / "ledger.sqlite"))


@pytest.fixture(scope="module")
def postgres_url():
    import postgres
    from helpers import unavailable

    reason = postgres.install()
    if reason:
        unavailable(reason)
    with postgres.server() as url:
        yield url


def test_four_processes_admitting_at_once_against_postgresql_never_pass_the_budget(postgres_url):
    check_concurrent_total(postgres_url)


def test_a_postgresql_store_refuses_update_and_delete_and_a_hand_edit_past_the_trigger_is_caught(postgres_url):
    """The writer role (SELECT and INSERT only, as dpiw.privacy.store.WRITER_GRANTS says) admits releases but can
    neither change nor remove an entry; the owner is stopped by the trigger; an owner who drops the trigger on
    purpose and edits an entry is caught by verify and the next admission."""
    import psycopg

    from dpiw.privacy.store import WRITER_GRANTS

    store = Store(postgres_url)
    before = len(store.atomic(lambda t: t.entries()))
    out = L.admit(store, digest="pg-table", label="t", manifest=manifest(0.3, "pg1"), bundle_id="pg1", epsilon=1)
    assert out["created"] and len(store.atomic(lambda t: t.entries())) == before + 4  # budget, 2 mechanisms, release
    with psycopg.connect(postgres_url, autocommit=True) as con:
        con.execute("DROP ROLE IF EXISTS writer")
        con.execute("CREATE ROLE writer LOGIN")
        con.execute(WRITER_GRANTS)
    writer_url = postgres_url.replace("//dpiw@", "//writer@")
    assert writer_url != postgres_url
    out = L.admit(Store(writer_url), digest="pg-table", label="t", manifest=manifest(0.1, "pg-w"), bundle_id="pg-w")
    assert out["releases"] == 2
    edits = ("UPDATE dpiw_ledger SET body = replace(body, '\"epsilon\":0.3', '\"epsilon\":0.01') "
             "WHERE kind = 'mechanism'", "DELETE FROM dpiw_ledger WHERE kind = 'release'", "TRUNCATE dpiw_ledger",
             "UPDATE dpiw_ledger_meta SET value = 'x' WHERE key = 'secret'", "DELETE FROM dpiw_ledger_meta")
    for url, refusal in ((writer_url, "permission denied"), (postgres_url, "append-only")):
        with psycopg.connect(url, autocommit=True) as con:
            for sql in edits:
                with pytest.raises(psycopg.Error, match=refusal):
                    con.execute(sql)
    assert L.verify(store)["entries"] == before + 6  # + its synthesize mechanism and its release
    with psycopg.connect(postgres_url, autocommit=True) as con:  # the owner, on purpose
        con.execute("ALTER TABLE dpiw_ledger DISABLE TRIGGER dpiw_ledger_append_only")
        con.execute("UPDATE dpiw_ledger SET body = replace(body, '\"epsilon\":0.3', '\"epsilon\":0.01') "
                    "WHERE kind = 'mechanism' AND body LIKE '%pg1%'")
        con.execute("ALTER TABLE dpiw_ledger ENABLE TRIGGER dpiw_ledger_append_only")
    with pytest.raises(DpiwError, match="was changed after it was written"):
        L.verify(store)
    with pytest.raises(DpiwError, match="is broken"):
        L.admit(store, digest="pg-table", label="t", manifest=manifest(0.1, "pg2"), bundle_id="pg2")


def test_a_ledger_of_the_earlier_json_format_is_imported_once_with_its_spend(tmp_path, store):
    """ledgers/<name>.json of the earlier format (budget_epsilon, mechanisms, releases): imported as the table's
    ledger with the same mechanisms; its lifetime is their composition at the releases' delta."""
    mechs, releases = {}, []
    for i, eps in enumerate((0.2, 0.21, 0.22)):
        rec = manifest(eps, f"old{i}")["records"][1]
        key = L.mechanism_key(rec)
        mechs[key] = {k: rec[k] for k in ("stage", "mechanism", "epsilon", "delta", "rdp")}
        releases.append({"release_id": f"old{i}", "run": f"old{i}", "mechanisms": [key], "epsilon": eps,
                         "delta": DELTA})
    old = {"dataset": "clinic", "budget_epsilon": 0.5, "mechanisms": mechs, "releases": releases,
           "total": {"epsilon": 0.63}}
    out = L.import_json(store, digest="clinic-bytes", label="clinic", old=old, delta=None, reason="imported")
    assert out["releases"] == 3 and out["budget"] == {"epsilon": 0.5, "delta": DELTA, "neighbours": "replace_one"}
    assert out["lifetime"]["epsilon"] == pytest.approx(composed([0.2, 0.21, 0.22]))
    assert admit(store, 0.23, "new")["releases"] == 4  # 0.499: still within 0.5
    with pytest.raises(DpiwError, match="release refused"):
        admit(store, 0.1, "one-more")
    with pytest.raises(DpiwError, match="already has a ledger"):
        L.import_json(store, digest="clinic-bytes", label="clinic", old=old, delta=None, reason="again")
    with pytest.raises(DpiwError, match="not a dpiw ledger file"):
        L.import_json(store, digest="other", label="x", old={"dataset": "x"}, delta=None, reason="bad")


def test_the_witnesses_name_the_other_stores_a_user_wrote_to(tmp_path, capsys, monkeypatch):
    """A table's first release in one store (or its budget set there first) is told of the other stores this
    user's witnesses saw entries in (a table released through one of them is counted there: a trial's `--ledger
    other.sqlite`)."""
    from dpiw.commands.release import elsewhere_line

    monkeypatch.setenv("DPIW_HOME", str(tmp_path / "home"))  # this user's witnesses only
    admit(Store(str(tmp_path / "first.sqlite")), 0.3, "r1", epsilon=5)
    assert witness.identity(str(tmp_path / "first.sqlite")) in witness.others(str(tmp_path / "second.sqlite"))
    assert witness.identity(str(tmp_path / "first.sqlite")) not in witness.others(str(tmp_path / "first.sqlite"))
    elsewhere_line(str(tmp_path / "second.sqlite"))
    said = capsys.readouterr().out
    assert "your dpiw folder has also written to" in said and str(tmp_path / "first.sqlite") in said


def test_a_curve_infinite_at_high_orders_is_admitted_and_one_with_no_finite_order_is_not():
    """DP-SGD's curve under replace-one (the weak triangle inequality) is +inf past order 300: a mechanism whose
    composed curve is finite at some orders is admitted (the conversion takes the best finite one; a red team's
    dpgan release failed at its admission, and was charged its reservation); NaN, a negative value, or no
    finite order at all is refused."""
    from dpiw import DpiwError
    from dpiw.privacy.accounting import ALL_ORDERS
    from dpiw.privacy.ledger import check_mechanism

    orders = [float(a) for a in ALL_ORDERS]
    values = [0.01 * a if a < 300 else float("inf") for a in orders]
    base = {"epsilon": 1.0, "delta": 1e-6, "neighbours": "replace_one"}
    check_mechanism({**base, "rdp": [{"kind": "rdp_curve", "orders": orders, "rdp": values}]}, "dpgan")
    for bad, said in (([float("nan")] + values[1:], "RDP curve is negative, undefined or infinite at every order"),
                      ([-0.1] * len(orders), "RDP curve is negative, undefined or infinite at every order"),
                      ([float("inf")] * len(orders), "rdp_curve event was computed on other orders")):
        with pytest.raises(DpiwError, match=said):
            check_mechanism({**base, "rdp": [{"kind": "rdp_curve", "orders": orders, "rdp": bad}]}, "bad")


def test_a_workflow_in_another_folder_cannot_settle_or_cancel_a_killed_releases_reservation(store):
    """A red team killed a release after its rows were drawn (its reservation open), wrote its token into a
    finished release's config and ran that folder's workflow by hand with it: the finished bundle, admitted
    before, cancelled the killed release's reservation ("nothing new was drawn"), and a new bundle there would
    have settled it. The token is bound to the folder its reservation was made for: from any other folder it
    settles and cancels nothing, and the run is charged in full."""
    reserve(store, 0.5, "clinic/done", epsilon=5)
    done = ledger(store)
    (done_token,) = done.reservations
    L.admit(store, digest="clinic-bytes", label="clinic", manifest=manifest(0.5, "done"), bundle_id="done",
            reservation=done_token, folder="/releases/clinic/done")
    killed = reserve(store, 0.6, "clinic/killed")["token"]
    spent = ledger(store).spent()["epsilon"]
    again = L.admit(store, digest="clinic-bytes", label="clinic", manifest=manifest(0.5, "done"), bundle_id="done",
                    reservation=killed, folder="/releases/clinic/done")
    assert again["again"] and killed in ledger(store).reservations  # not cancelled
    new = L.admit(store, digest="clinic-bytes", label="clinic", manifest=manifest(0.2, "new"), bundle_id="new",
                  reservation=killed, folder="/releases/clinic/done")
    assert not new["settled"] and killed in ledger(store).reservations
    assert ledger(store).spent()["epsilon"] > spent  # charged in full, the killed plan still counted
    assert L.verify(store)["kinds"].get("cancellation", 0) == 0
