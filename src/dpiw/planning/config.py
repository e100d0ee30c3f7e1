"""Validation of params.yaml: the JSON schema (structure, types, bounds) plus the checks a schema
cannot express (known datasets, the per-dataset options). One clear error naming the field."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

import yaml

from dpiw import DpiwError, registry


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


def with_registry(schema: dict) -> dict:
    """The schema with the enums of grid.sdgps, grid.weights, the post steps and MST's trees filled in from
    dpiw.registry (the schema file leaves them empty: one list, not two)."""
    import copy

    from dpiw import registry

    schema = copy.deepcopy(schema)
    grid = schema["properties"]["grid"]["properties"]
    grid["sdgps"]["items"]["enum"] = list(registry.sdgp_names())
    grid["weights"]["items"]["enum"] = list(registry.weight_names())
    first = "|".join(s for s in registry.POST_STEPS)
    rest = "|".join(s for s in registry.POST_STEPS if s not in ("none", "calibrate"))
    grid["posts"]["items"]["pattern"] = f"^({first})(\\+({rest}))*$"
    schema["properties"]["sdgp"]["properties"]["mst"]["properties"]["tree"]["enum"] = list(registry.MST_TREES)
    return schema


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
    _check_finite_numbers(params, [], params_name)
    validator = jsonschema.Draft202012Validator(with_registry(schema))
    errors = sorted(validator.iter_errors(params), key=lambda e: (len(e.absolute_path), str(e.absolute_path)))
    if errors:
        raise _schema_error(errors[0], params_name)
    schema_dir = Path(schema_dir)
    known = sorted(p.stem for p in schema_dir.glob("*.yaml"))
    for key, names in (("grid.datasets", params["grid"]["datasets"]),
                       ("evaluation.skip_bayes", params["evaluation"].get("skip_bayes") or [])):
        for name in names:
            if name not in known:
                close = difflib.get_close_matches(name, known, n=1)
                raise DpiwError(f"{params_name}: {key}: unknown dataset '{name}'"
                                + (f" (did you mean '{close[0]}'?)" if close else "")
                                + f"; known: {known} (one schema each in {schema_dir}/)")
    _check_exclude(params, known, params_name)
    calibrates = any("calibrate" in str(p).split("+") for p in params["grid"]["posts"])
    if params["mode"] == "release":
        _check_release(params, schema_dir, params_name, calibrates)
    elif calibrates and not params["scale"]["public_fraction"]:
        raise DpiwError(f"{params_name}: grid.posts has 'calibrate', which needs rows declared public: set "
                        "scale.public_fraction > 0 (e.g. 0.1; those rows leave the private data D) or drop it")
    _check_neighbours(params["privacy"], params_name)
    mm = params["weights"]["marginal_match"]
    for sdgp in registry.sdgp_names(zcdp=True):  # the zCDP SDGPs whose measurements marginal_match reuses
        if (mm["reuse_sdgp"] and "marginal_match" in params["grid"]["weights"] and sdgp in params["grid"]["sdgps"]
                and mm["bins"] != params["sdgp"][sdgp]["bins"]):
            raise DpiwError(f"{params_name}: weights.marginal_match.reuse_sdgp matches {sdgp}'s measurements, which "
                            f"need the same bins: weights.marginal_match.bins = {mm['bins']}, sdgp.{sdgp}.bins = "
                            f"{params['sdgp'][sdgp]['bins']}; make them equal or set reuse_sdgp: false")
    if params["evaluation"]["against"] == "public" and not params["scale"]["public_fraction"]:
        raise DpiwError(f"{params_name}: evaluation.against: public compares with the public slice, but "
                        "scale.public_fraction is 0: set it above 0 (e.g. 0.1) or evaluate against: test")
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


def _check_finite_numbers(node: Any, path: list, params_name: str) -> None:
    """NaN and inf pass JSON-schema bounds (every comparison with NaN is false): refuse them anywhere."""
    import math

    if isinstance(node, dict):
        for k, v in node.items():
            _check_finite_numbers(v, [*path, k], params_name)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            _check_finite_numbers(v, [*path, i], params_name)
    elif isinstance(node, float) and not math.isfinite(node):
        raise DpiwError(f"{params_name}: {_where(path)} = {node}: must be a finite number")


def _check_exclude(params: dict, datasets: list[str], params_name: str) -> None:
    """Every value named in grid.exclude must be a known name: a typo would silently exclude nothing."""
    from dpiw import registry
    from dpiw.postprocess import parse_post

    known = {"dataset": datasets, "sdgp": list(registry.sdgp_names()), "weights": list(registry.weight_names())}
    for i, rule in enumerate(params["grid"].get("exclude") or []):
        for key, values in rule.items():
            for v in values if isinstance(values, list) else [values]:
                where = f"grid.exclude[{i}].{key}"
                if key in known and v not in known[key]:
                    close = difflib.get_close_matches(str(v), known[key], n=1)
                    raise DpiwError(f"{params_name}: {where}: unknown {key} {v!r}"
                                    + (f" (did you mean '{close[0]}'?)" if close else "")
                                    + f"; known: {known[key]}")
                if key == "post":
                    try:
                        parse_post(str(v))
                    except DpiwError as exc:
                        raise DpiwError(f"{params_name}: {where}: {exc}") from None


def _check_neighbours(privacy: dict, params_name: str) -> None:
    """privacy.neighbours: add_remove keeps N_D private, so nothing may be derived from it in the config."""
    if privacy["neighbours"] != "add_remove":
        return
    if privacy["delta"] in ("paper", "auto"):
        raise DpiwError(f"{params_name}: privacy.neighbours: add_remove keeps N_D private, but privacy.delta: "
                        f"{privacy['delta']} is computed from N_D; set privacy.delta to a number well below 1/N_D "
                        "(e.g. 1e-6)")
    if privacy["accounting"] != "dpiw":
        raise DpiwError(f"{params_name}: privacy.accounting: {privacy['accounting']} is an ablation of the "
                        "replace-one accounting; set privacy.neighbours: replace_one or privacy.accounting: dpiw")


def _check_release(params: dict, schema_dir: Path, params_name: str, calibrates: bool) -> None:
    """mode: release runs only what may be published: DP methods, public bounds, no private row declared
    public, and the secret key when the config asks for it."""
    import os

    from dpiw.data.schema import load_schema
    from dpiw.privacy.seeding import SECRET_ENV
    from dpiw.privacy.spend import NON_DP_WEIGHT_METHODS
    from dpiw.sdgp import NON_DP_SDGPS

    grid = params["grid"]
    non_dp = [w for w in grid["weights"] if w in NON_DP_WEIGHT_METHODS] + [s for s in grid["sdgps"]
                                                                          if s in NON_DP_SDGPS]
    if non_dp:
        raise DpiwError(f"{params_name}: mode: release, but grid lists {non_dp}, which are not differentially "
                        "private; drop them (they are benchmark references)")
    if params["privacy"]["accounting"] != "dpiw":
        raise DpiwError(f"{params_name}: mode: release, but privacy.accounting = {params['privacy']['accounting']!r}: "
                        "that is the paper-accounting ablation, which is NOT DP; set privacy.accounting: dpiw")
    if params["scale"]["bounds"] != "schema":
        raise DpiwError(f"{params_name}: mode: release needs scale.bounds: schema (public bounds); `data` reads "
                        "the private min/max")
    if params["scale"]["public_fraction"]:
        raise DpiwError(f"{params_name}: mode: release, but scale.public_fraction = "
                        f"{params['scale']['public_fraction']}: release mode never declares private rows public; "
                        "set it to 0 (for post `calibrate`, name a public file in the schema: source.public_path)")
    if calibrates:
        for name in grid["datasets"]:
            if "public_path" not in load_schema(schema_dir / f"{name}.yaml").source:
                raise DpiwError(f"{params_name}: grid.posts has 'calibrate', which needs public rows; in release "
                                f"mode they come from a separate file: set source.public_path in "
                                f"{schema_dir}/{name}.yaml or drop 'calibrate'")
    if params["privacy"]["release_noise"] == "secret_key" and not os.environ.get(SECRET_ENV):
        raise DpiwError(f"{params_name}: privacy.release_noise: secret_key, but {SECRET_ENV} is not set: export it "
                        "(a long random string kept out of the repository) or set privacy.release_noise: entropy")
