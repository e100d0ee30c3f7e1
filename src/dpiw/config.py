"""Validation of params.yaml: the JSON schema (structure, types, bounds) plus the checks a schema
cannot express (known datasets, the per-dataset options). One clear error naming the field."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

import yaml

from dpiw import DpiwError


def load_yaml(path: str | Path) -> Any:
    path = Path(path)
    if not path.is_file():
        raise DpiwError(f"{path}: file not found")
    try:
        return yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise DpiwError(f"{path}: not valid YAML{where}: {problem}") from exc


def _where(path) -> str:
    return ".".join(str(p) for p in path) or "<top level>"


def _schema_error(err, params_name: str) -> DpiwError:
    where = _where(err.absolute_path)
    if err.validator == "additionalProperties":
        allowed = sorted(err.schema.get("properties", {}))
        extra = sorted(set(err.instance) - set(allowed)) if isinstance(err.instance, dict) else []
        hints = []
        for key in extra:
            close = difflib.get_close_matches(str(key), allowed, n=1)
            hints.append(f"'{key}'" + (f" (did you mean '{close[0]}'?)" if close else ""))
        return DpiwError(f"{params_name}: unknown key {', '.join(hints)} under {where}; allowed keys: {allowed}")
    if err.validator == "required":
        return DpiwError(f"{params_name}: {where}: {err.message}")
    if err.validator in ("enum", "const", "oneOf"):
        options = err.schema.get("enum")
        if options is None and err.validator == "oneOf":
            return DpiwError(f"{params_name}: {where} = {err.instance!r} is not allowed: "
                             f"{err.schema.get('description', 'see the schema')}")
        return DpiwError(f"{params_name}: {where} = {err.instance!r} is not one of {options}")
    return DpiwError(f"{params_name}: {where} = {err.instance!r}: {err.message}")


def validate_params(params: Any, schema: dict, *, schema_dir: str | Path, params_name: str = "params.yaml"
                    ) -> dict:
    """Raise DpiwError on the first problem; return ``params`` unchanged when valid."""
    import jsonschema

    if not isinstance(params, dict):
        raise DpiwError(f"{params_name}: must be a mapping of sections (grid, datasets, ...), "
                        f"got {type(params).__name__}")
    posts = params.get("grid", {}).get("posts") if isinstance(params.get("grid"), dict) else None
    if isinstance(posts, list):
        from dpiw.postprocess import parse_post

        for i, post in enumerate(posts):
            if isinstance(post, str):
                try:
                    parse_post(post)
                except DpiwError as exc:
                    raise DpiwError(f"{params_name}: grid.posts[{i}]: {exc}") from None
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(params), key=lambda e: (len(e.absolute_path), str(e.absolute_path)))
    if errors:
        raise _schema_error(errors[0], params_name)
    schema_dir = Path(schema_dir)
    known = sorted(p.stem for p in schema_dir.glob("*.yaml"))
    for name in params["grid"]["datasets"]:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            raise DpiwError(f"{params_name}: grid.datasets: unknown dataset '{name}'"
                            + (f" (did you mean '{close[0]}'?)" if close else "")
                            + f"; known: {known} (one schema each in {schema_dir}/)")
    calibrates = any("calibrate" in str(p).split("+") for p in params["grid"]["posts"])
    if calibrates and not params["scale"]["public_fraction"]:
        raise DpiwError(f"{params_name}: grid.posts has 'calibrate', which needs rows declared public: set "
                        "scale.public_fraction > 0 (e.g. 0.1; those rows leave the private data D) or drop it")
    from dpiw.data.schema import load_schema

    for name in params["grid"]["datasets"]:
        schema_d = load_schema(schema_dir / f"{name}.yaml")
        generated = schema_d.source.get("kind") == "toy_triangle"
        opts = params["datasets"].get(name, {})
        if generated and "n_rows" not in opts:
            raise DpiwError(f"{params_name}: datasets.{name}.n_rows is required (the dataset is generated)")
        if not generated and opts:
            raise DpiwError(f"{params_name}: datasets.{name} takes no options ({sorted(opts)} given): only "
                            "generated datasets do")
    return params
