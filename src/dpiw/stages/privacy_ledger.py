"""Stage `privacy_ledger`: a run's manifest and release bundle. Collects the privacy records of every
stage that shapes the release, sums them (basic composition) and composes them in RDP, and refuses a
run over its budget: non-zero exit and no manifest or release, so nothing downstream is built from it.
Then writes ``release/`` (dpiw.privacy.release): the synthetic rows, the weights and the manifest, or a
refusal for a run that is not DP or fails the k-hat gate. A bundle fit to release (release mode, secret
noise) is first admitted to its dataset's lifetime ledger (dpiw.privacy.ledger), which refuses it when
the table's composed lifetime spend would pass its budget. Under `dpiw release` the admission also settles the
release's reservation (``--reservation``: the planned spend `dpiw release` charged before the workflow ran), so that
its real mechanisms count instead; without one (a workflow run by hand) the run is charged at its end, as before."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from dpiw import DpiwError
from dpiw.io import write_json
from dpiw.privacy.accounting import composed_spend
from dpiw.privacy.neighbours import DESCRIPTION
from dpiw.privacy.release import write_release
from dpiw.privacy.seeding import OS_ENTROPY, PUBLIC_SEED, SECRET_KEY
from dpiw.privacy.spend import Ledger, PrivacySpend, run_delta
from dpiw.stages._cli import Parser, add_engine_argument, boolean, delta_arg, positive_float, run


def parse_args(argv):
    p = Parser(prog="dpiw privacy_ledger", description=__doc__)
    p.add_argument("--records", nargs="+", required=True, help="privacy JSONs of the run's release stages")
    p.add_argument("--epsilon", type=positive_float, required=True, help="the run's epsilon budget")
    p.add_argument("--delta", type=delta_arg, required=True, help="'auto', 'paper' or the run's delta budget")
    p.add_argument("--allow-non-dp", type=boolean, required=True,
                   help="privacy.allow_non_dp_baselines: true or false; false refuses a run that is not DP")
    p.add_argument("--run", required=True, help="the run's id (its results path)")
    p.add_argument("--out", required=True)
    p.add_argument("--synth", help="the run's synthetic rows (for the release bundle)")
    p.add_argument("--log-weights", help="the run's post-processed log weights (for the release bundle)")
    p.add_argument("--release-out", help="the release directory to write")
    p.add_argument("--measurements", nargs="+", default=[],
                   help="the noisy measurements the bundle publishes (a zCDP SDGP's, marginal_match's): DP outputs, "
                        "for an analyst's noise-aware intervals")
    p.add_argument("--ledger", help="the lifetime ledger store (a SQLite path or a postgresql:// URL; "
                                    "$DPIW_LEDGER_URL wins; default: the user's store), for bundles fit to release")
    p.add_argument("--schema", help="the dataset's schema: where its private rows are (whose ledger it is)")
    add_engine_argument(p)  # where the release's rows are read to measure the table (a folder on dask)
    p.add_argument("--measured-table",
                   help="privacy.measured_table: the table's identity `dpiw release` measured before the run (read "
                        "instead of the rows while the table's files are unchanged)")
    p.add_argument("--new-population", metavar="REASON",
                   help="the table holds other people than a ledgered table it overlaps: give it a ledger of its own "
                        "(the reason is recorded)")
    p.add_argument("--dataset-epsilon", type=positive_float,
                   help="the table's lifetime epsilon when its ledger is created (default 10); elsewhere it must "
                        "equal the stored one")
    p.add_argument("--dataset-delta", type=positive_float,
                   help="the table's lifetime delta when its ledger is created (default: this run's delta)")
    p.add_argument("--reservation", metavar="TOKEN",
                   help="privacy.reservation: the token of the reservation `dpiw release` made of this release's "
                        "planned spend before its workflow ran; the admission settles it (only when $DPIW_RESERVATION "
                        "names the same token: `dpiw release` sets it for its own workflow)")
    args = p.parse_args(argv)
    if args.release_out and not (args.synth and args.log_weights):
        p.error("--release-out needs --synth and --log-weights")
    if args.ledger and not args.schema:
        p.error("--ledger needs --schema")
    return args


def build_manifest(records: list[PrivacySpend], *, epsilon: float, delta, allow_non_dp: bool, run_id: str
                   ) -> dict:
    scale = [r for r in records if r.stage == "scale"]
    if not scale or "n_train" not in scale[0].details:
        raise DpiwError("the ledger needs the scale record (it holds N_D)")
    ledger = Ledger(tuple(records))
    neighbours = ledger.neighbours
    delta = run_delta(delta, int(scale[0].details["n_train"]), neighbours)
    verdict = ledger.check(budget_epsilon=epsilon, budget_delta=delta, allow_non_dp=allow_non_dp)
    if neighbours == "add_remove":  # N_D is private: the split's sizes stay out of the manifest
        records = [withhold_sizes(r) if r.stage == "scale" else r for r in records]
        scale = [withhold_sizes(scale[0])]
    mode = scale[0].details.get("mode", "benchmark")
    seeds = noise_seeds(records)
    return {
        "run": run_id,
        "mode": mode,
        "budget": {"epsilon": epsilon, "delta": delta},
        "neighbours": {"relation": neighbours, "means": DESCRIPTION[neighbours]},
        "spent": {"epsilon": ledger.epsilon, "delta": ledger.delta, "composition": "basic (sum)",
                  **composed_accounting(records, ledger, delta)},
        "dp": ledger.dp,
        "verdict": verdict,
        "release": release_verdict(records, dp=ledger.dp, mode=mode, seeds=seeds),
        "noise_seeds": seeds,
        "data": {key: scale[0].details.get(key) for key in ("split", "split_depends_on_private", "n_train")},
        "public_data": {"n_public": scale[0].details.get("n_public", 0),
                        "rows": scale[0].details.get("public_rows", "none"),
                        "note": "public rows spend no budget and are used only for calibration"},
        "records": [r.to_dict() for r in records],
    }


def withhold_sizes(record: PrivacySpend) -> PrivacySpend:
    """The scale record without the split's row counts (private under add/remove neighbours)."""
    hidden = "withheld: private under add/remove neighbours"
    details = {k: (hidden if k in ("n_train", "n_test") else v) for k, v in record.details.items()}
    return replace(record, details=details)


def composed_accounting(records: list[PrivacySpend], ledger: Ledger, delta: float) -> dict:
    """The RDP composition of the run's mechanisms at the budget's delta, and the tighter of the two
    statements at that delta (basic (eps_b, delta_b) with delta_b <= delta also holds at delta)."""
    if not ledger.dp:
        return {}
    rdp = composed_spend(records, delta)
    use_rdp = rdp["epsilon"] is not None and rdp["epsilon"] < ledger.epsilon
    return {"rdp": rdp, "tightest": {"epsilon": rdp["epsilon"] if use_rdp else ledger.epsilon, "delta": delta,
                                     "from": "rdp" if use_rdp else "basic"}}


def noise_seeds(records: list[PrivacySpend]) -> dict:
    """How the run's noise was seeded, read from each stage's own record (never from this process's
    environment): whether anyone could regenerate it."""
    drawn = {r.stage: r.seeding.get("source") for r in records if r.seeding.get("streams")}
    unknown = [r.stage for r in records if r.dp and (r.epsilon or r.delta) and not r.seeding]
    public = sorted(stage for stage, src in drawn.items() if src == PUBLIC_SEED)
    regenerable = bool(public or unknown)
    if unknown:
        note = f"the records of {unknown} do not say how their noise was seeded: treated as regenerable"
    elif public:
        note = (f"public seeds in {public}: anyone with the config can regenerate the noise - a benchmark, "
                "NOT a release")
    else:
        said = {OS_ENTROPY: "the operating system's entropy",
                SECRET_KEY: "streams keyed by DPIW_SECRET_KEY (only the key regenerates them)"}
        sources = " and ".join(said.get(s, s) for s in sorted(set(drawn.values())))
        note = (f"secret: drawn from {sources}, so nobody can regenerate it from the config" if sources else
                "no noise drawn")
    return {"sources": drawn, "regenerable": regenerable, "note": note}


def release_verdict(records: list[PrivacySpend], *, dp: bool, mode: str = "benchmark", seeds: dict | None = None
                    ) -> dict:
    """Fit to release: release mode, noise nobody can regenerate, DP, and the raw weights' Pareto k-hat at
    most min(1 - 1/log10 S, 0.7) (PSIS gate, from the post-processing record), unless the weights carry no
    signal beyond their noise: the bundle then holds unit weights, whatever the noisy ones' k-hat."""
    post = [r for r in records if r.stage == "postprocess_weights"]
    gate = post[0].details.get("release_gate") if post else None
    if gate is None:
        raise DpiwError("the run's post-processing record carries no release gate (k-hat): rerun postprocess_weights")
    seeds = seeds if seeds is not None else noise_seeds(records)
    signal = weights_signal(records)
    reasons = [] if dp else ["not differentially private"]
    if not gate["fit_to_release"] and not signal["unit"]:  # unit weights are released: their k-hat is moot
        reasons.append(gate["note"])
    if mode != "release":
        reasons.append("benchmark mode: a train/test split of the data and public seeds - NOT fit to release "
                       "(run with mode: release)")
    elif seeds["regenerable"]:
        reasons.append(seeds["note"])
    fit = not reasons
    # its mechanisms ran on the private rows with noise nobody can regenerate: the table's budget is spent whether
    # or not the gate lets the bundle out (trying again until one passes would choose among noisy releases)
    spends = dp and mode == "release" and not seeds["regenerable"]
    checked = gate["pareto_k"] is not None and not signal["unit"]
    # pareto_k_ok: the gate alone, on the weights the run computed (the benchmark tables' mark); pareto_k: the
    # released weights' (none for unit weights; the noisy ones' is kept beside it)
    return {"fit_to_release": fit, "spends": spends, "pareto_k_ok": bool(gate["fit_to_release"]),
            "pareto_k": None if signal["unit"] else gate["pareto_k"],
            **({"pareto_k_noisy_weights": gate["pareto_k"]} if signal["unit"] else {}),
            "pareto_k_threshold": gate["pareto_k_threshold"], "weights": signal,
            "reasons": reasons or ["release mode, secret noise, DP and " + (
                "k-hat within the threshold" if checked else "unit weights (no k-hat to check)")]}


def weights_signal(records: list[PrivacySpend]) -> dict:
    """Whether the DP weights carry signal beyond their noise (the weight method's own check, post-processing of
    its noisy output; dpiw.weights). Weights without signal are released as unit weights (dpiw.privacy.release)."""
    fitted = [r for r in records if r.stage == "fit_weights"]
    check = fitted[0].details.get("signal") if fitted else None
    if not check:
        return {"checked": False, "unit": False, "note": "this weight method has no signal check"}
    if check["signal"]:
        return {"checked": True, "unit": False, "note": "the weights carry signal beyond their noise",
                "check": check}
    return {"checked": True, "unit": True, "check": check,
            "note": "the weights are indistinguishable from their noise: the bundle holds unit weights (the DP "
                    "rows as they are), not random ones"}


def admit_release(args, manifest: dict) -> dict:
    """Admit the bundle to its table's lifetime ledger (dpiw.privacy.ledger) before anything is written; what
    the manifest says of it: the ledger entry's hash, the lifetime budget and the lifetime spend after it. A run
    the gate refused is charged too (its entry says so): it spent the budget, and publishes nothing."""
    import os

    from dpiw.data import load_schema
    from dpiw.privacy.ledger import DEFAULT_LIFETIME_EPSILON, RESERVATION_ENV, admit, release_id, resolve
    from dpiw.privacy.store import Store, describe, store_url

    schema = load_schema(args.schema)
    earlier = Path("ledgers") / f"{schema.name}.json"
    if earlier.is_file():
        raise DpiwError(f"{earlier} holds earlier releases of '{schema.name}' in the old one-file format: bring them "
                        f"into the ledger store first (`dpiw ledger import {earlier} DATA --schema S`)")
    store = Store(store_url(None, args.ledger))
    measured = None
    if args.measured_table:  # dpiw release measured the rows before the run: not again while they are unchanged
        from dpiw.privacy.identity import load_measured

        measured = load_measured(args.measured_table, schema.source["path"])
    table = resolve(store, schema, new_population=args.new_population, engine=args.engine, measured=measured)
    if table.note():
        print(f"privacy_ledger: {table.note()}")
    reservation = args.reservation
    if reservation and os.environ.get(RESERVATION_ENV) != reservation:  # not `dpiw release`'s own workflow
        print(f"privacy_ledger: reservation {reservation[:16]} left as it is: this workflow was not started by the "
              f"`dpiw release` that made it (${RESERVATION_ENV}); the run is charged in full")
        reservation = None
    out = admit(store, table=table, label=schema.name, manifest=manifest,
                bundle_id=release_id(args.synth, args.log_weights), epsilon=args.dataset_epsilon,
                delta=args.dataset_delta, refused=not manifest["release"]["fit_to_release"], reservation=reservation,
                folder=str(Path.cwd()))  # the workflow runs in its release's folder
    if reservation and not out.get("settled") and not out.get("again"):
        print(f"privacy_ledger: reservation {reservation[:16]} left as it is: it is not open for this release folder; "
              "the run is charged in full")
    if out.get("settled"):
        print(f"privacy_ledger: reservation {reservation[:16]} settled: the release's own mechanisms count instead "
              "of its planned spend")
    budget, spent = out["budget"], out["lifetime"]
    if out["created"]:
        note = "" if args.dataset_epsilon else f" (the default; set privacy.dataset_epsilon, default " \
                                                f"{DEFAULT_LIFETIME_EPSILON:g})"
        print(f"privacy_ledger: a new lifetime ledger for table '{schema.name}' in {describe(store.url)}: budget "
              f"epsilon {budget['epsilon']:g}{note}, delta {budget['delta']:.3g}, {budget['neighbours']} neighbours")
    print(f"privacy_ledger: table '{schema.name}': lifetime epsilon {spent['epsilon']:.6g} of {budget['epsilon']:g} "
          f"at delta {budget['delta']:.3g} over {out['releases']} release(s) ({describe(store.url)})")
    for o in out.get("also", []):  # the ledgers of tables whose rows this one holds too
        print(f"privacy_ledger: also charged to table '{', '.join(o['labels'])}' (its rows are in this table): "
              f"lifetime epsilon {o['lifetime']['epsilon']:.6g} of {o['budget']['epsilon']:g}")
    return {"entry": out["entry"], "budget": budget,
            "lifetime": {"epsilon": spent["epsilon"], "delta": spent["delta"], "composition": spent["from"]},
            "releases": out["releases"], "default_budget": bool(out["created"] and args.dataset_epsilon is None),
            "note": "this bundle's entry in its table's hash-chained lifetime ledger (`dpiw ledger verify`)"}


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    records = [PrivacySpend.read(p) for p in args.records]
    manifest = build_manifest(records, epsilon=args.epsilon, delta=args.delta, allow_non_dp=args.allow_non_dp,
                              run_id=args.run)
    if manifest["release"]["spends"] and args.release_out:  # fit to release, or refused by the gate alone
        if not args.schema:
            raise DpiwError("a release-mode run needs its table's schema (--schema) for its lifetime ledger")
        manifest["ledger"] = admit_release(args, manifest)
    write_json(manifest, args.out)
    if args.release_out:
        from dpiw.data import load_schema

        released = write_release(args.release_out, manifest=manifest, synth=args.synth, log_weights=args.log_weights,
                                 schema=load_schema(args.schema) if args.schema else None,
                                 measurements=args.measurements)
        print(f"privacy_ledger: {args.run}: release/ " + ("written" if released else "refused (see refused.json)"))
        if released and manifest.get("ledger"):  # the witness outside the store keeps the published bundle
            from dpiw.privacy import witness
            from dpiw.privacy.store import store_url

            witness.record(store_url(None, args.ledger), manifest["ledger"]["entry"],
                           bundle=str(Path(args.release_out).resolve()))
    print(f"privacy_ledger: {args.run}: spent eps={manifest['spent']['epsilon']} of {args.epsilon}: "
          f"{manifest['verdict']}; fit to release: {manifest['release']['fit_to_release']}")


if __name__ == "__main__":
    run(main)
