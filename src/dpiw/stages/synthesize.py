"""Stage `synthesize`: fit an SDGP on the private train split and sample N_G synthetic rows.

`--share full` gives the SDGP the whole run budget (weights that spend nothing); `--share split`
leaves the weight estimator its fraction (the budget split). Under `--neighbours add_remove` N_D is
private: the stage first spends `--count-epsilon-fraction` of its epsilon on a noisy row count, which the
SDGP and N_G = rows_factor * count then use in its place (dpiw.privacy.neighbours). The GAN SDGPs also write their
kept generators and discriminators to `--models-out` (.npz, see dpiw.sdgp.gan_models).
"""

from __future__ import annotations

import time
from dataclasses import replace

from dpiw import DpiwError, registry
from dpiw.data import load_schema
from dpiw.io import read_parquet, write_parquet
from dpiw.planning.grid import GAN_KEYS, SDGP_KEY_DEFAULTS, SDGP_KEYS
from dpiw.privacy.spend import ACCOUNTINGS, dpsgd_neighbours, paper_ablation, run_delta, split_budget, with_row_count
from dpiw.sdgp import GAN_SDGPS, make_sdgp
from dpiw.stages._cli import (
    Parser,
    add_engine_argument,
    add_neighbours_args,
    add_noise_args,
    boolean,
    count_epsilon,
    delta_arg,
    identity,
    noise_from,
    positive_float,
    positive_int,
    run,
    stage_rows,
)

#: the sdgp.<name> keys that are not integers
SDGP_KEY_TYPES = {"structure_epsilon_fraction": float, "fine_fraction": float,
                  "root": str, "tree": str, "max_model_size": float, "target_triples": boolean}


def parse_args(argv):
    p = Parser(prog="dpiw synthesize", description=__doc__)
    p.add_argument("--train", required=True)
    p.add_argument("--schema", required=True)
    p.add_argument("--sdgp", required=True)
    p.add_argument("--epsilon", type=positive_float, required=True, help="the run's total epsilon")
    p.add_argument("--delta", type=delta_arg, required=True)
    p.add_argument("--share", choices=["full", "split"], required=True,
                   help="the SDGP's budget: the whole run (full) or what the weights leave (split)")
    p.add_argument("--weights-epsilon-fraction", type=float)
    p.add_argument("--weights-delta-fraction", type=float)
    p.add_argument("--rows-factor", type=positive_float, default=1.0, help="sdgp.rows_factor: N_G = rows_factor * N_D")
    p.add_argument("--max-rows", type=positive_int, default=1_000_000,
                   help="sdgp.max_rows: N_G is at most this (a public cap)")
    p.add_argument("--seed", type=int, required=True)
    add_engine_argument(p)
    p.add_argument("--bins", type=int, help="sdgp.marginals.bins: public equal-width bins per numeric column")
    p.add_argument("--structure", help="sdgp.marginals.structure: independent or naive_bayes")
    gan_types = {"lr": float, "weight_clip": float, "max_grad_norm": float, "label_epsilon_fraction": float,
                 "gumbel_tau": float, "accountant": str}
    for key in GAN_KEYS:
        p.add_argument(f"--gan-{key.replace('_', '-')}", dest=f"gan_{key}", type=gan_types.get(key, int),
                       help=f"sdgp.gan.{key} (the GAN SDGPs)")
    for name, keys in SDGP_KEYS.items():
        for key in keys:
            # a key added later defaults to the behaviour before it, which the noise's identity leaves out
            # (stages/_cli.py: NEUTRAL), so a run of another SDGP, which never passes it, keys its noise as before
            p.add_argument(f"--{name}-{key.replace('_', '-')}", dest=f"{name}_{key}",
                           type=SDGP_KEY_TYPES.get(key, int), default=SDGP_KEY_DEFAULTS.get(f"{name}.{key}"),
                           help=f"sdgp.{name}.{key}")
    p.add_argument("--out", required=True)
    p.add_argument("--privacy-out", required=True)
    p.add_argument("--models-out", help="GAN SDGPs: where the kept generators and discriminators go")
    p.add_argument("--measurements-out", help="zCDP SDGPs (MST): where their noisy measurements go (JSON)")
    p.add_argument("--accounting", choices=ACCOUNTINGS, default="dpiw",
                   help="privacy.accounting: 'paper' calibrates the DP GANs' DP-SGD for add/remove neighbours "
                        "and marks the record NOT DP (an ablation)")
    add_neighbours_args(p)
    add_noise_args(p)
    return p.parse_args(argv)


def sdgp_budget(args, n_train: int) -> tuple[float, float]:
    delta = run_delta(args.delta, n_train, args.neighbours)
    if args.share == "full":
        return args.epsilon, delta
    if args.weights_epsilon_fraction is None or args.weights_delta_fraction is None:
        raise DpiwError("--share split needs --weights-epsilon-fraction and --weights-delta-fraction")
    split = split_budget(args.epsilon, delta, weights_method="beta_noised",
                         weights_epsilon_fraction=args.weights_epsilon_fraction,
                         weights_delta_fraction=args.weights_delta_fraction)
    return split.sdgp_epsilon, split.sdgp_delta


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    noise = noise_from(args)
    schema = load_schema(args.schema)
    params = {k: v for k, v in (("bins", args.bins), ("structure", args.structure)) if v is not None}
    if args.sdgp in SDGP_KEYS:
        params = {k: getattr(args, f"{args.sdgp}_{k}") for k in SDGP_KEYS[args.sdgp]
                  if getattr(args, f"{args.sdgp}_{k}") is not None}
    is_gan = args.sdgp in GAN_SDGPS
    if is_gan:
        if not args.models_out:
            raise DpiwError(f"SDGP {args.sdgp} writes its kept networks: --models-out is required")
        import torch

        torch.set_num_threads(1)  # reproducible, and Snakemake runs jobs side by side
        params.update({k: getattr(args, f"gan_{k}") for k in GAN_KEYS if getattr(args, f"gan_{k}") is not None})
        params["neighbours"] = dpsgd_neighbours(args.accounting, args.neighbours)
    elif args.models_out:
        raise DpiwError(f"SDGP {args.sdgp} has no networks: drop --models-out")
    if args.measurements_out and not registry.sdgp(args.sdgp).zcdp:
        raise DpiwError(f"SDGP {args.sdgp} keeps no measurements to reuse: drop --measurements-out")
    gen = make_sdgp(args.sdgp, **params)
    if registry.sdgp(args.sdgp).zcdp:  # they read the rows only through marginal counts: one pass, batch by batch
        from dpiw.sdgp.engines import open_counter

        train = open_counter(args.train, schema, gen.bins, args.engine)
        n_train = train.total
    else:
        train = read_parquet(args.train, columns=schema.names)
        n_train = len(train)
    eps_stage, delta = sdgp_budget(args, n_train)
    eps_count = count_epsilon(args, eps_stage)
    eps = eps_stage - eps_count
    # keyed by everything this invocation privatises (budget share, epsilon, SDGP, data digest, ...)
    who = {**identity(args, inputs=("train", "schema"), outputs=("out", "privacy_out", "models_out",
                                                                  "measurements_out")),
           "sdgp_epsilon": eps, "sdgp_delta": delta}
    rows = stage_rows(args, n_train, eps_count, noise, "synthesize-count", who)
    t0 = time.perf_counter()
    fit = gen.fit_counts if registry.sdgp(args.sdgp).zcdp else gen.fit
    fit(train, schema, epsilon=eps, delta=delta, rng=noise.rng("synthesize-fit", who), rows=rows)
    seconds = time.perf_counter() - t0
    n_synth = min(max(1, int(round(args.rows_factor * rows.n))), args.max_rows)
    synth = gen.sample(n_synth, rng=noise.rng("synthesize-sample", who))
    record = with_row_count(gen.privacy_, rows)
    if args.accounting == "paper" and is_gan:
        record = paper_ablation(record)
    if is_gan:
        from dpiw.sdgp.gan_models import save_models

        save_models(gen.models(), args.models_out)
    if args.measurements_out:
        from dpiw.weights.marginal_match import write_measurements

        write_measurements(gen, args.measurements_out)
    write_parquet(synth, args.out)
    # the streams and what they went into (the ledger refuses the same streams spent on other rows or measurements)
    replace(record, seeding=noise.record(published=[args.out, args.measurements_out])).write(args.privacy_out)
    print(f"synthesize: fit took {seconds:.2f} s")
    print(f"synthesize: {args.sdgp} on {schema.name}: {n_synth} rows, spend eps={record.epsilon} "
          f"delta={record.delta} (share {args.share} of eps={args.epsilon})")


if __name__ == "__main__":
    run(main)
