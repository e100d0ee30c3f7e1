"""Stage `privacy_ledger`: a run's manifest. Collects the privacy records of every stage that shapes
the release, sums them (basic composition) and refuses a run over its budget: non-zero exit and no
manifest, so nothing downstream (tables, release) is built from it."""

from __future__ import annotations

from dpiw import DpiwError
from dpiw.io import write_json
from dpiw.privacy import Ledger, PrivacySpend, paper_delta
from dpiw.stages._cli import Parser, boolean, delta_arg, positive_float, run


def parse_args(argv):
    p = Parser(prog="dpiw.stages.privacy_ledger", description=__doc__)
    p.add_argument("--records", nargs="+", required=True, help="privacy JSONs of the run's release stages")
    p.add_argument("--epsilon", type=positive_float, required=True, help="the run's epsilon budget")
    p.add_argument("--delta", type=delta_arg, required=True, help="'paper' or the run's delta budget")
    p.add_argument("--allow-non-dp", type=boolean, required=True)
    p.add_argument("--run", required=True, help="the run's id (its results path)")
    p.add_argument("--out", required=True)
    return p.parse_args(argv)


def build_manifest(records: list[PrivacySpend], *, epsilon: float, delta, allow_non_dp: bool, run_id: str
                   ) -> dict:
    scale = [r for r in records if r.stage == "scale"]
    if delta == "paper":
        if not scale or "n_train" not in scale[0].details:
            raise DpiwError("delta 'paper' needs the scale record (it holds N_D)")
        delta = paper_delta(int(scale[0].details["n_train"]))
    ledger = Ledger(tuple(records))
    verdict = ledger.check(budget_epsilon=epsilon, budget_delta=delta, allow_non_dp=allow_non_dp)
    return {
        "run": run_id,
        "budget": {"epsilon": epsilon, "delta": delta},
        "spent": {"epsilon": ledger.epsilon, "delta": ledger.delta, "composition": "basic (sum)"},
        "dp": ledger.dp,
        "verdict": verdict,
        "release": release_verdict(records, dp=ledger.dp),
        "public_data": {"n_public": scale[0].details.get("n_public", 0) if scale else 0,
                        "note": "rows declared public by the curator (scale.public_fraction), excluded from D; "
                                "they spend no budget and may be used only for calibration"},
        "records": [r.to_dict() for r in records],
    }


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
    print(f"privacy_ledger: {args.run}: spent eps={manifest['spent']['epsilon']} of {args.epsilon}: "
          f"{manifest['verdict']}; fit to release: {manifest['release']['fit_to_release']}")


if __name__ == "__main__":
    run(main)
