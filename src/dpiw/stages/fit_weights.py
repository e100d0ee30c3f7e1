"""Stage `fit_weights`: estimate log importance weights log p_D/p_G at the synthetic rows.

Writes `log_ratio` per synthetic row (row order of the synthetic parquet) and a privacy record. Under
`--neighbours add_remove` a method with a budget of its own first spends `--count-epsilon-fraction` of it
on a noisy row count, which stands in for N_D (prior odds, divisors, sensitivities; dpiw.privacy.neighbours).
The GAN-based methods (`discriminator`, `pgb`, `drs`) also read the GAN's kept networks (`--models`).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from dpiw import DpiwError, registry
from dpiw.data import load_schema
from dpiw.data.encode import encode, norm_bound
from dpiw.io import parquet_rows, read_parquet, write_parquet
from dpiw.planning.grid import MARGINAL_MATCH_KEYS, MLP_KEYS
from dpiw.privacy.spend import (
    ACCOUNTINGS,
    CALIBRATABLE_WEIGHT_METHODS,
    GAN_WEIGHT_METHODS,
    LOGISTIC_WEIGHT_METHODS,
    MLP_WEIGHT_METHODS,
    WEIGHT_METHODS,
    WEIGHT_METHODS_WITH_OWN_BUDGET,
    dpsgd_neighbours,
    paper_ablation,
    run_delta,
    split_budget,
    split_rule,
    with_row_count,
)
from dpiw.sdgp import GAN_SDGPS
from dpiw.stages._cli import (
    Parser,
    add_engine_argument,
    add_neighbours_args,
    add_noise_args,
    count_epsilon,
    delta_arg,
    identity,
    noise_from,
    positive_float,
    run,
    stage_rows,
)
from dpiw.weights import make_estimator
from dpiw.weights.estimators import LAMBDA_RULES
from dpiw.weights.marginal_match import read_binning, read_measurements

#: the weight families that read the private rows into memory (the rest count them, or read none)
ROW_FAMILIES = ("logistic", "output", "mlp", "gan")
#: the weight methods whose noise privacy.accounting 'paper' changes (the rest keep dpiw's accounting)
PAPER_ABLATED = ("beta_noised", "beta_debiased", "dp_mlp")


def lambda_arg(text: str) -> str | float:
    return text if text in LAMBDA_RULES else positive_float(text)


def parse_args(argv):
    p = Parser(prog="dpiw fit_weights", description=__doc__)
    p.add_argument("--real", required=True, help="private train split (scaled)")
    p.add_argument("--synth", required=True)
    p.add_argument("--public", help="the slice declared public (may hold no rows)")
    p.add_argument("--schema", required=True)
    p.add_argument("--method", choices=WEIGHT_METHODS, required=True, help="the weight method (dpiw.registry)")
    add_engine_argument(p)
    p.add_argument("--dataset", required=True)
    p.add_argument("--sdgp", required=True)
    p.add_argument("--epsilon", type=positive_float, required=True, help="the run's total epsilon")
    p.add_argument("--delta", type=delta_arg, default="paper")
    p.add_argument("--weights-epsilon-fraction", type=float)
    p.add_argument("--weights-delta-fraction", type=float)
    p.add_argument("--lambda", dest="lam", type=lambda_arg,
                   help="'auto' (noise scale = --rho-target), 'rate' (noise falling like 1/sqrt(N eps), capped "
                        "there) or a positive number")
    p.add_argument("--rho-target", type=float, default=0.3,
                   help="Laplace scale (below 0.5) or Gaussian std that lambda 'auto' aims at")
    p.add_argument("--logreg-c", type=positive_float,
                   help="logreg (not DP): its own regularisation, scikit-learn's C (lambda = 1/(C (N_D + N_G)))")
    p.add_argument("--sensitivity-n", choices=["private", "total"],
                   help="weights.beta.sensitivity_n: the n of the sensitivity 2R/(n lambda)")
    p.add_argument("--output-scale-target", type=positive_float, default=0.25,
                   help="output_*: noise scale (Laplace b or Gaussian s) that lambda 'auto' aims at")
    p.add_argument("--models", help="GAN model file (discriminator, pgb, drs)")
    mlp_types = {"lr": float, "max_grad_norm": float, "accountant": str, "weight_decay": float}
    for key in MLP_KEYS:
        p.add_argument(f"--mlp-{key.replace('_', '-')}", dest=f"mlp_{key}", type=mlp_types.get(key, int),
                       help=f"weights.mlp.{key} (mlp, dp_mlp)")
    for key in MARGINAL_MATCH_KEYS:
        p.add_argument(f"--marginal-match-{key.replace('_', '-')}", dest=f"mm_{key}", type=int,
                       help=f"weights.marginal_match.{key} (marginal_match)")
    p.add_argument("--pgb-rounds", type=int, default=50,
                   help="weights.pgb.rounds: T, the rounds of Private Post-GAN Boosting")
    p.add_argument("--pgb-eta", type=lambda t: t if t == "auto" else positive_float(t), default="auto",
                   help="weights.pgb.eta: the step size, or 'auto' (2 sqrt(log|B| / T))")
    p.add_argument("--drs-percentile", type=float, default=95.0,
                   help="weights.drs.percentile: the discriminator percentile of rejection sampling")
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--public-out",
                   help="log ratios at the public rows (methods that score any row; else no rows)")
    p.add_argument("--measurements", help="marginal_match: the zCDP SDGP's noisy measurements to match too "
                                          "(weights.marginal_match.reuse_sdgp)")
    p.add_argument("--privacy-out", required=True)
    p.add_argument("--measurements-out", help="marginal_match: where its noisy measurements go (JSON; the bundle "
                                              "publishes them)")
    p.add_argument("--accounting", choices=ACCOUNTINGS, default="dpiw",
                   help="privacy.accounting: 'paper' gives beta_noised/beta_debiased the paper's Laplace scale and "
                        "dp_mlp add/remove DP-SGD, and marks their records NOT DP (an ablation)")
    add_neighbours_args(p)
    add_noise_args(p)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    noise = noise_from(args)
    schema = load_schema(args.schema)
    if args.method == "true" and not (schema.source.get("kind") == "toy_triangle" and args.sdgp == "uniform"):
        raise DpiwError(f"weight method 'true' is known only for the toy data with the uniform SDGP, not "
                        f"dataset '{args.dataset}' with SDGP '{args.sdgp}'")
    if args.method in GAN_WEIGHT_METHODS:
        if args.sdgp not in GAN_SDGPS:
            raise DpiwError(f"weight method '{args.method}' needs a GAN SDGP ({', '.join(GAN_SDGPS)}), "
                            f"not '{args.sdgp}'")
        if not args.models:
            raise DpiwError(f"weight method '{args.method}' needs --models (the GAN's kept networks)")
    for flag, value in (("--measurements", args.measurements), ("--measurements-out", args.measurements_out)):
        if value and registry.weight_method(args.method).family != "marginal":
            raise DpiwError(f"{flag} is for marginal_match, not weight method '{args.method}': drop it")
    family = registry.weight_method(args.method).family
    # the private rows in memory only for the classifiers; marginal matching counts them batch by batch, and
    # the methods without a budget read none
    real = read_parquet(args.real, columns=schema.names) if family in ROW_FAMILIES else None
    synth = read_parquet(args.synth, columns=schema.names)
    n_real = len(real) if real is not None else parquet_rows(args.real)
    for flag, path, rows_in in (("--real", args.real, n_real), ("--synth", args.synth, len(synth))):
        if not rows_in:
            raise DpiwError(f"{path}: no rows ({flag}); rerun the stage that wrote it")
    if bool(args.public) != bool(args.public_out):
        raise DpiwError("--public and --public-out go together")
    public = read_parquet(args.public, columns=schema.names) if args.public else synth.iloc[:0]
    if args.method not in CALIBRATABLE_WEIGHT_METHODS:
        public = public.iloc[:0]
    eps_w, delta_w = 0.0, 0.0
    if args.method in WEIGHT_METHODS_WITH_OWN_BUDGET:
        if args.weights_epsilon_fraction is None or args.weights_delta_fraction is None:
            raise DpiwError(f"weight method '{args.method}' needs the budget fractions")
        delta = run_delta(args.delta, n_real, args.neighbours)
        split = split_budget(args.epsilon, delta, weights_method=args.method,
                             weights_epsilon_fraction=args.weights_epsilon_fraction,
                             weights_delta_fraction=args.weights_delta_fraction,
                             rule=split_rule(args.sdgp, args.method, args.neighbours, args.accounting))
        eps_w, delta_w = split.weights_epsilon, split.weights_delta
    # one stream per invocation: method, epsilon, share, inputs' digests... (never shared between two
    # weight files that could be released side by side: their difference would cancel the noise)
    who = identity(args, inputs=("real", "synth", "public", "schema", "models", "measurements"),
                   outputs=("out", "public_out", "privacy_out", "measurements_out"))
    rng = noise.rng("fit_weights", {**who, "weights_epsilon": eps_w, "weights_delta": delta_w})
    eps_count = count_epsilon(args, eps_w)  # add/remove: the noisy row count's part of the weights' share
    rows = stage_rows(args, n_real, eps_count, noise, "fit_weights-count", who)
    eps_w -= eps_count
    fit_rows = {} if rows is None else {"rows": rows}
    if args.method in GAN_WEIGHT_METHODS:
        from dpiw.sdgp.gan_models import Discriminators, load_models
        from dpiw.weights.gan_weights import make_gan_weights

        params = {"pgb": {"rounds": args.pgb_rounds, "eta": args.pgb_eta},
                  "drs": {"percentile": args.drs_percentile}}.get(args.method, {})
        discs = Discriminators(load_models(args.models), schema)
        est = make_gan_weights(args.method, **params).fit_gan(discs, real, synth, epsilon=eps_w, delta=delta_w,
                                                              rng=rng, **fit_rows)
        log_ratio = est.log_ratio_
        public_lr = est.log_ratio_at(public) if len(public) else []
    elif family == "marginal":
        from dpiw.sdgp.engines import open_counter

        params = {k: getattr(args, f"mm_{k}") for k in MARGINAL_MATCH_KEYS if getattr(args, f"mm_{k}") is not None}
        est = make_estimator(args.method, **params)
        if args.measurements:  # the SDGP's bins, shaped by its fine histograms (DP outputs): the same cells
            est.binning = read_binning(args.measurements, schema)
        est.measure_counts(open_counter(args.real, schema, est.discretisation, args.engine), schema, epsilon=eps_w,
                           delta=delta_w, rng=rng, **fit_rows)
        extra = read_measurements(args.measurements, schema, bins=est.bins) if args.measurements else ()
        est.reweight(synth, extra=extra)
        if extra:
            est.privacy_.details["reused"] = {"from": args.sdgp, "measurements": len(extra),
                                              "note": "the SDGP's own noisy measurements, matched too "
                                                      "(post-processing: no further spend)"}
        log_ratio, public_lr = est.log_ratio_, []
        if args.measurements_out:
            from dpiw.weights.marginal_match import write_measurements

            write_measurements(est, args.measurements_out)
    else:
        unit = family == "" and args.method != "true"

        def features(df):  # unit weights read no features: a wide table's one-hot need not fit in memory
            return np.empty((len(df), 0)) if unit else encode(df, schema)

        X_synth = features(synth)
        X_real = features(real) if real is not None else X_synth[:0]
        params, fit_kw = {}, {}
        if args.method == "logreg":
            if args.logreg_c is None:
                raise DpiwError("weight method 'logreg' needs --logreg-c (weights.logreg.C)")
            params = {"C": args.logreg_c}
            fit_kw = {"norm_bound": norm_bound(schema)}
        elif args.method in LOGISTIC_WEIGHT_METHODS:
            if args.lam is None or args.sensitivity_n is None:
                raise DpiwError(f"weight method '{args.method}' needs --lambda and --sensitivity-n")
            target = args.output_scale_target if args.method.startswith("output_") else args.rho_target
            params = {"lam": args.lam, "sensitivity_n": args.sensitivity_n, "rho_target": target}
            if args.method in PAPER_ABLATED:
                params["noise_rule"] = args.accounting
            fit_kw = {"norm_bound": norm_bound(schema)}
        if args.method in MLP_WEIGHT_METHODS:
            import torch

            torch.set_num_threads(1)
            params = {k: getattr(args, f"mlp_{k}") for k in MLP_KEYS if getattr(args, f"mlp_{k}") is not None}
            params["neighbours"] = dpsgd_neighbours(args.accounting if args.method in PAPER_ABLATED else "dpiw",
                                                    args.neighbours)
        est = make_estimator(args.method, **params)
        est.fit(X_real, X_synth, epsilon=eps_w, delta=delta_w, rng=rng, **fit_kw, **fit_rows)
        log_ratio = est.log_ratio(X_synth)
        public_lr = est.log_ratio(features(public)) if len(public) else []
    if args.public_out:
        write_parquet(pd.DataFrame({"row": range(len(public)), "log_ratio": np.asarray(public_lr, float)}),
                      args.public_out)
    write_parquet(pd.DataFrame({"row": range(len(synth)), "log_ratio": log_ratio}), args.out)
    record = est.privacy_ if rows is None else with_row_count(est.privacy_, rows)
    record = replace(record, seeding=noise.record(published=[args.out, args.public_out, args.measurements_out]))
    if args.accounting == "paper" and args.method in PAPER_ABLATED:
        record = paper_ablation(record)
    record.write(args.privacy_out)
    print(f"fit_weights: {args.method} on {args.dataset}/{args.sdgp}: {len(synth)} weights, "
          f"spend eps={est.privacy_.epsilon}")


if __name__ == "__main__":
    run(main)
