"""Read, check and set the lifetime ledgers of your private tables (the budget every release draws on).

A table's ledger is found by its rows as its schema reads them, not by its file or name: the same rows in another
file, format or order, under another name or from another project folder, are the same table, and a table that
shares most of its rows with a ledgered one is charged to that ledger. The store is --store, else
$DPIW_LEDGER_URL, else the project's privacy.ledger (--project), else ledger.sqlite in the user's dpiw folder
($DPIW_HOME or the platform's user data folder). Every command checks the store against its witness outside it.

    dpiw ledger show                                     every table: budget, lifetime spend, releases, and
                                                         interrupted releases (charged their planned spend)
    dpiw ledger verify [--bundles DIR ...]               check the hash chain, every entry, the witness and every
                                                         bundle admitted through it; exit 2 and one line if not
    dpiw ledger set-budget DATA --schema S --epsilon 3 --delta 1e-6 --reason "agreed with the data owners"
    dpiw ledger import ledgers/clinic.json DATA --schema S   bring in a ledger of the earlier one-file-per-name format
"""

from __future__ import annotations

import argparse
import math

from dpiw import DpiwError


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    for name, text in (("show", "every table's budget, lifetime spend and releases"),
                       ("verify", "check the chain and every entry (exit 2 and one line if it is broken)"),
                       ("set-budget", "set a table's lifetime budget on the record (creates its ledger)"),
                       ("import", "bring a ledgers/<name>.json of the earlier format into the store")):
        sp = sub.add_parser(name, help=text, description=text)
        sp.add_argument("--store", help="the ledger store: a SQLite path or a postgresql:// URL (it beats "
                                        "$DPIW_LEDGER_URL; default: the project's privacy.ledger, else ledger.sqlite "
                                        "in the user's dpiw folder)")
        sp.add_argument("--project", metavar="DIR", default=".",
                        help="the project folder whose params.yaml may name the store (privacy.ledger; default: the "
                             "current directory)")
        if name in ("set-budget", "import"):
            sp.add_argument("--schema", required=True, help="the table's schema: how its rows are read (its identity)")
        if name == "verify":
            sp.add_argument("--bundles", nargs="+", default=[], metavar="DIR",
                            help="published bundles (folders or manifest.json files): each one's ledger entry must be "
                                 "in the chain (an entry removed and the chain rewritten shows here)")
        if name == "import":
            sp.add_argument("old", metavar="LEDGER_JSON", help="the earlier ledger file (ledgers/<name>.json)")
            sp.add_argument("data", metavar="DATA", help="the private table it counted (CSV or parquet)")
            sp.add_argument("--delta", type=float,
                            help="the lifetime delta (default: the largest delta of its releases)")
        if name == "set-budget":
            sp.add_argument("data", metavar="DATA", help="the private table (CSV or parquet) whose budget this is")
            sp.add_argument("--epsilon", type=float,
                            help="the lifetime epsilon (a new ledger needs it; an existing ledger keeps its own "
                                 "when only --delta is given)")
            sp.add_argument("--delta", type=float,
                            help="the lifetime delta: a new ledger's, or a lower one for an existing ledger (never "
                                 "higher; every release so far is composed again at it)")
            sp.add_argument("--reason", required=True, help="why: kept in the ledger with the change")
            sp.add_argument("--label", help="a name for the table in `dpiw ledger show` (default: the schema's name)")
            sp.add_argument("--neighbours", choices=("replace_one", "add_remove"), default="replace_one",
                            help="the neighbouring relation of a new ledger")


def _lines(summary: dict) -> list[str]:
    words = {"budget": "budget(s) set", "table": "table identit(ies)", "release": "release(s)",
             "mechanism": "mechanism spend(s)", "reservation": "reservation(s) of planned spend",
             "cancellation": "cancellation(s)"}
    kinds = ", ".join(f"{n} {words.get(k, k)}" for k, n in summary.get("kinds", {}).items() if n)
    out = [f"store {summary['store']}: {summary['entries']} entries ({kinds}), chain intact"
           + (f", head {summary['head'][:16]}" if summary["head"] else "")]
    for t in summary["tables"]:
        b, s = t["budget"], t["lifetime"]
        eps = f"{s['epsilon']:.6g}" if math.isfinite(s["epsilon"]) else "over"
        out.append(f"  {', '.join(t['labels']) or '?':<20} key {t['dataset_key']}  lifetime epsilon {eps} of "
                   f"{b['epsilon']:g} at delta {b['delta']:.3g} ({s['from']}), {t['releases']} release(s)"
                   + (f" ({t['refused']} refused by the gate, charged all the same)" if t.get("refused") else "")
                   + (f", {t['interrupted']} interrupted release(s), charged their planned spend (or still running)"
                      if t.get("interrupted") else "")
                   + f", {b['neighbours']}")
    return out


def _bundle_entries(paths: list[str]) -> dict[str, str]:
    """{bundle: its manifest's ledger entry hash}; DpiwError for a bundle without one."""
    from dpiw.privacy.ledger import bundle_entry

    out = {}
    for p in paths:
        entry = bundle_entry(p)
        if not entry:
            raise DpiwError(f"--bundles {p}: its manifest names no ledger entry (not a release-mode bundle)")
        out[p] = entry
    return out


def _resolve(store, args):
    from dataclasses import replace

    from dpiw.data.schema import load_schema
    from dpiw.privacy.ledger import resolve

    schema = load_schema(args.schema)
    table = resolve(store, replace(schema, source={**schema.source, "kind": "file", "path": str(args.data)}))
    if table.note():
        print(table.note())
    return schema.name, table


def _store_url(args) -> str:
    from pathlib import Path

    from dpiw.planning.config import load_yaml
    from dpiw.privacy.store import store_url

    params = Path(args.project) / "params.yaml"
    configured = (load_yaml(params).get("privacy") or {}).get("ledger") if params.is_file() else None
    if configured and "://" not in configured and not Path(configured).is_absolute():
        configured = str(Path(args.project) / configured)
    return store_url(args.store, configured)


def main(args) -> None:
    from pathlib import Path

    from dpiw.privacy import ledger, witness
    from dpiw.privacy.store import Store, describe

    url = _store_url(args)
    if args.action in ("show", "verify"):
        bundles = _bundle_entries(getattr(args, "bundles", []))
        known = {f"{info.get('bundle') or entry[:16]} (witness)": entry for entry, info in witness.bundles(url).items()}
        summary = ledger.verify(Store(url, create=False), entries={**known, **bundles})
        print("\n".join(_lines(summary)))
        if getattr(args, "bundles", []):
            print(f"  the {len(args.bundles)} bundle(s)' ledger entries are all in the chain")
        return
    data = Path(args.data)
    if not data.is_file():
        raise DpiwError(f"DATA {data}: no such file")
    store = Store(url)
    label, table = _resolve(store, args)
    if args.action == "import":
        from dpiw.io import read_json

        old = Path(args.old)
        if not old.is_file():
            raise DpiwError(f"LEDGER_JSON {old}: no such file")
        label = read_json(old).get("dataset") or label
        out = ledger.import_json(store, table=table, label=label, old=read_json(old), delta=args.delta,
                                 reason=f"imported from {old.name}")
        old.rename(old.with_name(old.name + ".imported"))
        b, s = out["budget"], out["lifetime"]
        over = "  OVER the budget: nothing more is admitted" if s["epsilon"] > b["epsilon"] else ""
        print(f"{describe(url)}: imported {out['releases']} release(s) of '{label}': lifetime epsilon "
              f"{s['epsilon']:.6g} of {b['epsilon']:g} at delta {b['delta']:.3g}{over}; {old} is now "
              f"{old.name}.imported")
        return
    out = ledger.set_budget(store, table=table, label=args.label or label, epsilon=args.epsilon, delta=args.delta,
                            reason=args.reason, neighbours=args.neighbours)
    b = out["budget"]
    prev = out["previous"] or {}
    was = "" if out["created"] else " (was " + ", ".join(
        [f"epsilon {prev['epsilon']:g}"] * (prev.get("epsilon") != b["epsilon"])
        + [f"delta {prev['delta']:.3g}"] * (prev.get("delta") != b["delta"]) or ["the same"]) + ")"
    print(f"{describe(url)}: {data.name}: lifetime budget epsilon {b['epsilon']:g}, delta {b['delta']:.3g}{was}; "
          f"entry {out['entry'][:16]}")
    if out["created"]:  # a new ledger here: the table may have been released through another store
        from dpiw.commands.release import elsewhere_line

        elsewhere_line(url)
