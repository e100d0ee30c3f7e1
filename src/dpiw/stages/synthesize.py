"""Stage `synthesize`: fit an SDGP on the private train split and sample N_G synthetic rows.

`--share full` gives the SDGP the whole run budget (weights that spend nothing); `--share split`
leaves the weight estimator its fraction (METHOD.md, budget split).
"""

from __future__ import annotations

from dpiw import DpiwError
from dpiw.data import load_schema
from dpiw.io import read_parquet, write_parquet
from dpiw.privacy import paper_delta, split_budget
from dpiw.sdgp import make_sdgp
from dpiw.seeding import rng_for
from dpiw.stages._cli import Parser, delta_arg, positive_float, run


def parse_args(argv):
    p = Parser(prog="dpiw.stages.synthesize", description=__doc__)
    p.add_argument("--train", required=True)
    p.add_argument("--schema", required=True)
    p.add_argument("--sdgp", required=True)
    p.add_argument("--epsilon", type=positive_float, required=True, help="the run's total epsilon")
    p.add_argument("--delta", type=delta_arg, required=True)
    p.add_argument("--share", choices=["full", "split"], required=True)
    p.add_argument("--weights-epsilon-fraction", type=float)
    p.add_argument("--weights-delta-fraction", type=float)
    p.add_argument("--rows-factor", type=positive_float, default=1.0)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--bins", type=int)
    p.add_argument("--structure")
    p.add_argument("--out", required=True)
    p.add_argument("--privacy-out", required=True)
    return p.parse_args(argv)


def sdgp_budget(args, n_train: int) -> tuple[float, float]:
    delta = paper_delta(n_train) if args.delta == "paper" else args.delta
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
    schema = load_schema(args.schema)
    train = read_parquet(args.train, columns=schema.names)
    eps, delta = sdgp_budget(args, len(train))
    params = {k: v for k, v in (("bins", args.bins), ("structure", args.structure)) if v is not None}
    gen = make_sdgp(args.sdgp, **params)
    gen.fit(train, schema, epsilon=eps, delta=delta, rng=rng_for(args.seed, "synthesize-fit", schema.name))
    n_synth = max(1, int(round(args.rows_factor * len(train))))
    synth = gen.sample(n_synth, rng=rng_for(args.seed, "synthesize-sample", schema.name))
    record = gen.privacy_
    write_parquet(synth, args.out)
    record.write(args.privacy_out)
    print(f"synthesize: {args.sdgp} on {schema.name}: {n_synth} rows, spend eps={record.epsilon} "
          f"delta={record.delta} (share {args.share} of eps={args.epsilon})")


if __name__ == "__main__":
    run(main)
