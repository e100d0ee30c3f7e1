"""Stage `scale`: load a dataset, split it 80/20 (seeded, stratified), map it to [0, 1].

Outputs the private train split, the held-out test split, the slice declared public (taken out of
the train split when `--public-fraction` > 0; it calibrates the weights) and a privacy record. With public bounds
(the default) the map is a fixed per-record transform and spends nothing; `--bounds data` uses the
private min/max (the paper's choice) and is recorded as NOT DP.
"""

from __future__ import annotations

from dpiw import DpiwError
from dpiw.data import load_raw, load_schema
from dpiw.data.datasets import validate_rows
from dpiw.io import write_parquet
from dpiw.privacy import PrivacySpend, no_spend
from dpiw.scale import column_bounds, scale_frame, split_public, split_rows
from dpiw.stages._cli import Parser, run


def parse_args(argv):
    p = Parser(prog="dpiw.stages.scale", description=__doc__)
    p.add_argument("--schema", required=True)
    p.add_argument("--dataset", required=True, help="must equal the schema's name")
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--test-fraction", type=float, required=True)
    p.add_argument("--public-fraction", type=float, default=0.0,
                   help="share of all rows declared public (excluded from the private split)")
    p.add_argument("--bounds", choices=["schema", "data"], required=True)
    p.add_argument("--out-of-bounds", choices=["clip", "fail"], default="clip",
                   help="numeric values outside the schema's public bounds: clip them, or stop with an error")
    p.add_argument("--n-rows", type=int, help="rows to generate (generated datasets only)")
    p.add_argument("--data-seed", type=int, default=0, help="seed of the generated private data")
    p.add_argument("--train-out", required=True)
    p.add_argument("--test-out", required=True)
    p.add_argument("--public-out", help="the public slice (required when --public-fraction > 0)")
    p.add_argument("--privacy-out", required=True)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    schema = load_schema(args.schema)
    if schema.name != args.dataset:
        raise DpiwError(f"{args.schema}: schema name '{schema.name}' does not match dataset '{args.dataset}'")
    raw = load_raw(schema, n_rows=args.n_rows, data_seed=args.data_seed)
    validate_rows(raw, schema, out_of_bounds=args.out_of_bounds)
    train_raw, test_raw = split_rows(raw, schema, test_fraction=args.test_fraction, seed=args.seed)
    if not (0 <= args.public_fraction < 1 - args.test_fraction):
        raise DpiwError(f"scale.public_fraction must be in [0, 1 - test_fraction), got {args.public_fraction}")
    n_public = int(round(len(raw) * args.public_fraction))
    if n_public and not args.public_out:
        raise DpiwError("--public-fraction > 0 needs --public-out (where the public slice goes)")
    train_raw, public_raw = split_public(train_raw, schema, n_public=n_public, seed=args.seed)
    bounds = column_bounds(train_raw, schema, bounds=args.bounds)
    train, test = scale_frame(train_raw, schema, bounds), scale_frame(test_raw, schema, bounds)
    public = scale_frame(public_raw, schema, bounds)
    public_note = {"n_public": len(public), "public_fraction": args.public_fraction,
                   "public_rows": "declared public by the curator (scale.public_fraction), excluded from D"}
    if args.bounds == "schema":
        record = no_spend("scale", basis="per-record map with public bounds from the schema; the split "
                          "is seeded and data-independent", reads_private=("raw",), n_train=len(train),
                          n_test=len(test), bounds="schema", **public_note)
    else:
        record = PrivacySpend(stage="scale", mechanism="min-max scaling on the private rows", epsilon=None,
                              delta=None, dp=False, reads_private=("raw",),
                              basis="bounds: data takes min/max of the private rows, which is NOT DP",
                              details={"n_train": len(train), "n_test": len(test), "bounds": "data",
                                       **public_note})
    write_parquet(train, args.train_out)
    write_parquet(test, args.test_out)
    if args.public_out:
        write_parquet(public, args.public_out)
    record.write(args.privacy_out)
    print(f"scale: {schema.name} seed={args.seed}: {len(train)} train / {len(test)} test / {len(public)} public "
          f"rows, bounds={args.bounds}")


if __name__ == "__main__":
    run(main)
