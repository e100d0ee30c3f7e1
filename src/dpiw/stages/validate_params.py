"""Stage `validate_params`: check params.yaml against the schema and dataset list, and (for DVC)
that dvc.yaml was generated for the same grid. Its output does not change with the values, so a
valid edit re-runs nothing downstream of it."""

from __future__ import annotations

import hashlib
import json

from dpiw import DpiwError
from dpiw.config import load_yaml, validate_params
from dpiw.io import write_json
from dpiw.stages._cli import Parser, run


def grid_digest(params: dict) -> str:
    """A short digest of the run grid (and the dataset options that decide stage arguments)."""
    key = {"grid": params["grid"], "dataset_keys": {k: sorted(v) for k, v in params["datasets"].items()}}
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]


def parse_args(argv):
    p = Parser(prog="dpiw.stages.validate_params", description=__doc__)
    p.add_argument("--params", required=True)
    p.add_argument("--schema", required=True, help="workflow/schemas/params.schema.yaml")
    p.add_argument("--datasets-dir", required=True, help="data/schemas")
    p.add_argument("--grid-digest", help="the digest dvc.yaml was generated for")
    p.add_argument("--out", required=True)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    params = validate_params(load_yaml(args.params), load_yaml(args.schema), schema_dir=args.datasets_dir,
                             params_name=args.params)
    if args.grid_digest is not None and args.grid_digest != grid_digest(params):
        raise DpiwError(f"dvc.yaml was generated for another grid than {args.params} now lists; "
                        "run `make dvc-yaml` to regenerate it")
    write_json({"valid": True}, args.out)
    print(f"validate_params: {args.params} is valid")


if __name__ == "__main__":
    run(main)
