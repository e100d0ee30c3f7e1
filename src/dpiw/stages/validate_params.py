"""Check a config (params.yaml, or params.yaml with a configfile laid over it) without running anything:
the schema, the dataset list, the grid's exclusions and the release-mode rules. Snakemake runs the same
check when it reads the workflow.

    python -m dpiw.stages.validate_params --params params.yaml [--configfile configs/paper.yaml]
"""

from __future__ import annotations

from dpiw.io import write_json
from dpiw.planning.config import load_yaml, validate_params
from dpiw.stages._cli import Parser, run


def parse_args(argv):
    p = Parser(prog="dpiw validate_params", description=__doc__)
    p.add_argument("--params", required=True, help="the params file to check (params.yaml)")
    p.add_argument("--configfile", action="append", default=[], help="laid over --params, as Snakemake does")
    p.add_argument("--schema", default="workflow/schemas/params.schema.yaml", help="the JSON schema of the params")
    p.add_argument("--datasets-dir", default="data/schemas", help="the folder of the dataset schemas")
    p.add_argument("--out", help="write {valid: true} here")
    return p.parse_args(argv)


def _overlay(base: dict, top: dict) -> dict:
    """Snakemake's configfile semantics: mappings merge key by key, anything else replaces."""
    out = dict(base)
    for k, v in top.items():
        out[k] = _overlay(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    params = load_yaml(args.params)
    for extra in args.configfile:
        params = _overlay(params, load_yaml(extra) or {})
    name = " over ".join([*args.configfile, args.params])
    validate_params(params, load_yaml(args.schema), schema_dir=args.datasets_dir, params_name=name)
    if args.out:
        write_json({"valid": True}, args.out)
    print(f"validate_params: {name} is valid")


if __name__ == "__main__":
    run(main)
