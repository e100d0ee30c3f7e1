"""Stage `privacy_ledger`: a run's manifest and release bundle. Collects the privacy records of every
stage that shapes the release, sums them (basic composition) and composes them in RDP, and refuses a
run over its budget: non-zero exit and no manifest or release, so nothing downstream is built from it.
Then writes ``release/`` (dpiw.release): the synthetic rows, the weights and the manifest, or a
refusal for a run that is not DP or fails the k-hat gate."""

from __future__ import annotations

from dpiw import DpiwError
from dpiw.accounting import composed_spend
from dpiw.io import write_json
from dpiw.privacy import Ledger, PrivacySpend, run_delta
from dpiw.release import write_release
from dpiw.seeding import noise_seeds_note
from dpiw.stages._cli import Parser, boolean, delta_arg, positive_float, run


def parse_args(argv):
    p = Parser(prog="dpiw.stages.privacy_ledger", description=__doc__)
    p.add_argument("--records", nargs="+", required=True, help="privacy JSONs of the run's release stages")
    p.add_argument("--epsilon", type=positive_float, required=True, help="the run's epsilon budget")
    p.add_argument("--delta", type=delta_arg, required=True, help="'paper' or the run's delta budget")
    p.add_argument("--allow-non-dp", type=boolean, required=True)
    p.add_argument("--run", required=True, help="the run's id (its results path)")
    p.add_argument("--out", required=True)
    p.add_argument("--synth", help="the run's synthetic rows (for the release bundle)")
    p.add_argument("--log-weights", help="the run's post-processed log weights (for the release bundle)")
    p.add_argument("--release-out", help="the release directory to write")
    args = p.parse_args(argv)
    if args.release_out and not (args.synth and args.log_weights):
        p.error("--release-out needs --synth and --log-weights")
    return args


def build_manifest(records: list[PrivacySpend], *, epsilon: float, delta, allow_non_dp: bool, run_id: str
                   ) -> dict:
    scale = [r for r in records if r.stage == "scale"]
    if not scale or "n_train" not in scale[0].details:
        raise DpiwError("the ledger needs the scale record (it holds N_D)")
    delta = run_delta(delta, int(scale[0].details["n_train"]))
    ledger = Ledger(tuple(records))
    verdict = ledger.check(budget_epsilon=epsilon, budget_delta=delta, allow_non_dp=allow_non_dp)
    return {
        "run": run_id,
        "budget": {"epsilon": epsilon, "delta": delta},
        "spent": {"epsilon": ledger.epsilon, "delta": ledger.delta, "composition": "basic (sum)",
                  **composed_accounting(records, ledger, delta)},
        "dp": ledger.dp,
        "verdict": verdict,
        "release": release_verdict(records, dp=ledger.dp),
        "noise_seeds": noise_seeds_note(),
        "public_data": {"n_public": scale[0].details.get("n_public", 0) if scale else 0,
                        "note": "rows declared public by the curator (scale.public_fraction), excluded from D; "
                                "they spend no budget and may be used only for calibration"},
        "records": [r.to_dict() for r in records],
    }


def composed_accounting(records: list[PrivacySpend], ledger: Ledger, delta: float) -> dict:
    """The RDP composition of the run's mechanisms at the budget's delta, and the tighter of the two
    statements at that delta (basic (eps_b, delta_b) with delta_b <= delta also holds at delta)."""
    if not ledger.dp:
        return {}
    rdp = composed_spend(records, delta)
    use_rdp = rdp["epsilon"] is not None and rdp["epsilon"] < ledger.epsilon
    return {"rdp": rdp, "tightest": {"epsilon": rdp["epsilon"] if use_rdp else ledger.epsilon, "delta": delta,
                                     "from": "rdp" if use_rdp else "basic"}}


def release_verdict(records: list[PrivacySpend], *, dp: bool) -> dict:
    """Fit to release: DP, and the raw weights' Pareto k-hat at most min(1 - 1/log10 S, 0.7) (PSIS gate,
    from the post-processing record)."""
    post = [r for r in records if r.stage == "postprocess_weights"]
    gate = post[0].details.get("release_gate") if post else None
    if gate is None:
        raise DpiwError("the run's post-processing record carries no release gate (k-hat): rerun postprocess_weights")
    fit = bool(gate["fit_to_release"]) and dp
    reasons = [] if dp else ["not differentially private"]
    if not gate["fit_to_release"]:
        reasons.append(gate["note"])
    return {"fit_to_release": fit, "pareto_k_ok": bool(gate["fit_to_release"]), "pareto_k": gate["pareto_k"],
            "pareto_k_threshold": gate["pareto_k_threshold"],
            "reasons": reasons or ["DP and k-hat within the threshold"]}


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    records = [PrivacySpend.read(p) for p in args.records]
    manifest = build_manifest(records, epsilon=args.epsilon, delta=args.delta, allow_non_dp=args.allow_non_dp,
                              run_id=args.run)
    write_json(manifest, args.out)
    if args.release_out:
        released = write_release(args.release_out, manifest=manifest, synth=args.synth, log_weights=args.log_weights)
        print(f"privacy_ledger: {args.run}: release/ " + ("written" if released else "refused (see refused.json)"))
    print(f"privacy_ledger: {args.run}: spent eps={manifest['spent']['epsilon']} of {args.epsilon}: "
          f"{manifest['verdict']}; fit to release: {manifest['release']['fit_to_release']}")


if __name__ == "__main__":
    run(main)
