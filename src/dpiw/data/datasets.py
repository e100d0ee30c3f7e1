"""Raw data loaders. Nothing is downloaded: data come from the repo, from scikit-learn's bundled
files, or are generated from a seed."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpiw import DpiwError
from dpiw.data.schema import Schema

SKLEARN_LOADERS = ("load_iris", "load_breast_cancer")


def toy_triangle(n_rows: int, *, seed: int) -> pd.DataFrame:
    """n_rows points uniform on the triangle {x1, x2 >= 0, x1 + x2 < 1} (the paper's toy DGP).

    Points of the unit square above the anti-diagonal are reflected through (1/2, 1/2), which maps
    the upper triangle onto the lower one and preserves the uniform law.

    >>> df = toy_triangle(1000, seed=0)
    >>> bool(((df.x1 + df.x2) < 1).all()), df.shape
    (True, (1000, 2))
    """
    if n_rows < 10:
        raise DpiwError(f"datasets.toy.n_rows must be at least 10, got {n_rows}")
    u = np.random.default_rng(seed).uniform(size=(n_rows, 2))
    upper = u.sum(axis=1) >= 1
    u[upper] = 1.0 - u[upper]
    return pd.DataFrame({"x1": u[:, 0], "x2": u[:, 1]})


def load_raw(schema: Schema, *, n_rows: int | None = None, data_seed: int = 0) -> pd.DataFrame:
    """The private rows of a dataset in raw units, with the schema's column names.

    Classification targets come back as their category labels (strings).
    """
    kind = schema.source.get("kind")
    if kind == "toy_triangle":
        if n_rows is None:
            raise DpiwError("the toy dataset needs datasets.toy.n_rows in params.yaml")
        df = toy_triangle(n_rows, seed=data_seed)
    elif kind == "sklearn":
        loader = schema.source.get("loader")
        if loader not in SKLEARN_LOADERS:
            raise DpiwError(f"schema '{schema.name}': source.loader must be one of {SKLEARN_LOADERS}, "
                            f"got {loader!r}")
        import sklearn.datasets

        bunch = getattr(sklearn.datasets, loader)()
        feats = schema.features
        if bunch.data.shape[1] != len(feats):
            raise DpiwError(f"schema '{schema.name}' lists {len(feats)} features but {loader} has "
                            f"{bunch.data.shape[1]}")
        df = pd.DataFrame(bunch.data, columns=[c.name for c in feats])
        target = schema.target_column
        if schema.task == "classification":
            df[target.name] = np.asarray(target.categories, dtype=object)[bunch.target]
        else:
            df[target.name] = bunch.target
    else:
        raise DpiwError(f"schema '{schema.name}': unknown source.kind {kind!r} "
                        "(known: toy_triangle, sklearn)")
    return df[schema.names]
