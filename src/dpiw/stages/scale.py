"""Stage `scale`: load a dataset, split it (benchmark mode) and map it to [0, 1] with public bounds.

benchmark mode: a seeded 80/20 train/test split, stratified on a classification target, and an optional
slice of the train split that plays the part of public data (`--public-fraction`). Both depend on the
private labels; that is part of the experiment's design, and nothing a benchmark writes is fit to release.

release mode: every input row is private data D. There is no test split and no public slice, unless the
schema names a separate file the curator declares public (`source.public_path`).

Outputs the private rows D, the test rows (empty in release mode), the public rows (maybe empty) and a
privacy record. With public bounds (the default) the map is a fixed per-record transform and spends
nothing; `--bounds data` uses the private min/max (the paper's choice) and is recorded as NOT DP. The
share of values clipped to the bounds goes to the log, per column; a column with more than
`--max-clip-fraction` clipped is refused (a unit error, most often).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from dpiw import DpiwError
from dpiw.data import load_raw, load_schema
from dpiw.data.datasets import CHUNK_ROWS, RowChecks, load_public, validate_rows
from dpiw.io import write_parquet, write_parquet_chunks
from dpiw.privacy.seeding import MODES
from dpiw.privacy.spend import PrivacySpend, no_spend
from dpiw.scale import check_clipping, column_bounds, iter_scaled, scale_frame, split_public, split_rows
from dpiw.stages._cli import Parser, run


def parse_args(argv):
    p = Parser(prog="dpiw scale", description=__doc__)
    p.add_argument("--schema", required=True)
    p.add_argument("--dataset", required=True, help="must equal the schema's name")
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--test-fraction", type=float, required=True,
                   help="scale.test_fraction: the share of rows held out as the real test split")
    p.add_argument("--public-fraction", type=float, default=0.0,
                   help="share of all rows declared public (excluded from the private split)")
    p.add_argument("--bounds", choices=["schema", "data"], required=True,
                   help="scale.bounds: the schema's public bounds, or the private min/max (NOT DP)")
    p.add_argument("--out-of-bounds", choices=["clip", "fail"], default="clip",
                   help="numeric values outside the schema's public bounds: clip them, or stop with an error")
    p.add_argument("--max-clip-fraction", type=float, default=0.05,
                   help="refuse a column with a larger share of its values clipped to the bounds")
    p.add_argument("--mode", choices=MODES, default="benchmark",
                   help="benchmark: train/test split and simulated public slice; release: every row is private")
    p.add_argument("--n-rows", type=int, help="rows to generate (generated datasets only)")
    p.add_argument("--data-seed", type=int, default=0, help="seed of the generated private data")
    p.add_argument("--chunk-rows", type=int, default=CHUNK_ROWS,
                   help="release mode on a file: rows read, checked and scaled at a time (memory, not results)")
    p.add_argument("--train-out", required=True, help="the private train split (parquet, scaled)")
    p.add_argument("--test-out", required=True, help="the real test split (parquet, scaled)")
    p.add_argument("--public-out", help="the public slice (required when --public-fraction > 0)")
    p.add_argument("--privacy-out", required=True)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    schema = load_schema(args.schema)
    if schema.name != args.dataset:
        raise DpiwError(f"{args.schema}: schema name '{schema.name}' does not match dataset '{args.dataset}'")
    if args.mode == "release" and schema.source.get("kind") == "file" and args.bounds == "schema":
        n_train, test, public, design = stream_release(schema, args)  # writes the train split
    else:
        raw = load_raw(schema, n_rows=args.n_rows, data_seed=args.data_seed)
        checks = RowChecks(schema, out_of_bounds=args.out_of_bounds)  # validate_rows, keeping what it counted
        checks.add(raw)
        checks.finish()
        log_rounding(checks.rounded())
        clipped = check_clipping(raw, schema, max_fraction=args.max_clip_fraction) if args.bounds == "schema" else {}
        log_clipping(clipped)
        if args.mode == "release":
            train_raw, test_raw, public_raw, design = release_split(raw, schema, args)
        else:
            train_raw, test_raw, public_raw, design = benchmark_split(raw, schema, args)
        bounds = column_bounds(train_raw, schema, bounds=args.bounds)
        train, test = scale_frame(train_raw, schema, bounds), scale_frame(test_raw, schema, bounds)
        public = scale_frame(public_raw, schema, bounds)
        n_train = len(train)
        write_parquet(train, args.train_out)
    facts = {"dataset": schema.name, "mode": args.mode, "n_train": n_train, "n_test": len(test),
             "n_public": len(public), "public_fraction": args.public_fraction if args.mode == "benchmark" else 0.0,
             **design}
    if args.bounds == "schema":
        record = no_spend("scale", basis="per-record map with public bounds from the schema; " + design["split"],
                          reads_private=("raw",), bounds="schema", **facts)
    else:
        record = PrivacySpend(stage="scale", mechanism="min-max scaling on the private rows", epsilon=None,
                              delta=None, dp=False, reads_private=("raw",),
                              basis="bounds: data takes min/max of the private rows, which is NOT DP",
                              details={"bounds": "data", **facts})
    write_parquet(test, args.test_out)
    if args.public_out:
        write_parquet(public, args.public_out)
    record.write(args.privacy_out)
    print(f"scale: {schema.name} ({args.mode} mode) seed={args.seed}: {n_train} private / {len(test)} test / "
          f"{len(public)} public rows, bounds={args.bounds}")


def log_rounding(rounded: dict[str, float]) -> None:
    from dpiw.scale import share_text

    for name, frac in rounded.items():  # to the log only, as the clipping
        print(f"scale: column '{name}': {share_text(frac)} of the values rounded to whole numbers (integer: true)")


def log_clipping(clipped: dict[str, float]) -> None:
    from dpiw.scale import share_text

    for name, frac in clipped.items():  # to the log only: it describes the private rows
        if frac > 0:
            print(f"scale: column '{name}': {share_text(frac)} of the values clipped to the public bounds")


def stream_release(schema, args):
    """Release mode on a file: its rows read, checked and scaled a chunk at a time straight into the train
    split (memory holds one chunk: :func:`dpiw.data.datasets.iter_table`), with the rows and checks of the
    in-memory path; a check that fails leaves no train split behind. Returns N_D, the (empty) test split, the
    public rows and the design facts."""
    checks = RowChecks(schema, out_of_bounds=args.out_of_bounds)
    bounds = column_bounds(None, schema, bounds="schema")

    def scaled():
        yield from iter_scaled(schema, schema.source["path"], checks, bounds, chunk_rows=args.chunk_rows)
        checks.finish()
        log_clipping(checks.clipped(max_fraction=args.max_clip_fraction))
        log_rounding(checks.rounded())

    n_train = write_parquet_chunks(scaled(), args.train_out)
    none = pd.DataFrame({c: [] for c in schema.names})
    _, test_raw, public_raw, design = release_split(none, schema, args)
    return n_train, scale_frame(test_raw, schema, bounds), scale_frame(public_raw, schema, bounds), design


def benchmark_split(raw, schema, args):
    """The experiment's split: seeded, stratified on a classification target (so it depends on the
    private labels), with a slice of the train rows that simulates public data."""
    train_raw, test_raw = split_rows(raw, schema, test_fraction=args.test_fraction, seed=args.seed)
    if not (0 <= args.public_fraction < 1 - args.test_fraction):
        raise DpiwError(f"scale.public_fraction must be in [0, 1 - test_fraction), got {args.public_fraction}")
    n_public = int(round(len(raw) * args.public_fraction))
    if n_public and not args.public_out:
        raise DpiwError("--public-fraction > 0 needs --public-out (where the public slice goes)")
    train_raw, public_raw = split_public(train_raw, schema, n_public=n_public, seed=args.seed)
    stratified = schema.task == "classification"
    design = {"split": ("benchmark mode: D is the train split; the seeded train/test split"
                        + (" and the simulated public slice are stratified on the private labels, so they depend "
                           "on private values" if stratified else " and the simulated public slice use no values")
                        + " - part of the experiment, never a release"),
              "split_depends_on_private": stratified,
              "public_rows": "simulated: rows of the private data set aside (scale.public_fraction), excluded from D"}
    return train_raw, test_raw, public_raw, design


def release_split(raw, schema, args):
    """Release mode: every row is private data D; no test split; public rows only from a separate file."""
    if args.public_fraction:
        raise DpiwError(f"scale.public_fraction = {args.public_fraction}: release mode never declares private rows "
                        "public; set it to 0 and, for post `calibrate`, name a file of public rows in the schema "
                        "(source.public_path)")
    public_raw = load_public(schema)
    if public_raw is None:
        public_raw = raw.iloc[:0]
    else:
        validate_rows(public_raw, schema, out_of_bounds="clip")
    if len(public_raw) and not args.public_out:
        raise DpiwError("the schema names public rows (source.public_path): --public-out is required")
    design = {"split": "release mode: every input row is in D; no test split, no rows taken out",
              "split_depends_on_private": False,
              "public_rows": ("none" if not len(public_raw) else
                              f"{Path(schema.source['public_path']).name}: a separate file the curator declares "
                              "public")}  # its name only: the bundle publishes this, not the curator's folders
    return raw, raw.iloc[:0], public_raw, design


if __name__ == "__main__":
    run(main)
