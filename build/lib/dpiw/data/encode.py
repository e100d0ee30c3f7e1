"""The record x-tilde that weight classifiers and metrics see: every column in [0, 1], the label
included (one 0/1 column for a binary label, one-hot for more classes)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from dpiw.data.schema import Schema


def encoded_names(schema: Schema) -> list[str]:
    names = []
    for c in schema.columns:
        if c.is_numeric:
            names.append(c.name)
        elif len(c.categories) == 2:
            names.append(f"{c.name}={c.categories[1]}")
        else:
            names.extend(f"{c.name}={cat}" for cat in c.categories)
    return names


def encode(df: pd.DataFrame, schema: Schema) -> np.ndarray:
    """Scaled frame -> float matrix in [0, 1]^p (no intercept column)."""
    blocks = []
    for c in schema.columns:
        v = df[c.name].to_numpy()
        if c.is_numeric:
            blocks.append(v.astype(float)[:, None])
        elif len(c.categories) == 2:
            blocks.append((v == 1).astype(float)[:, None])
        else:
            blocks.append((v[:, None] == np.arange(len(c.categories))[None, :]).astype(float))
    return np.hstack(blocks)


def encode_features(df: pd.DataFrame, schema: Schema) -> np.ndarray:
    """The feature columns (not the target) as the design matrix of the downstream models: numeric
    columns as they are ([0, 1]), a categorical column with K categories as K - 1 indicator columns (the
    first category is the reference level, so the columns are not collinear with an intercept).

    >>> from dpiw.data.schema import parse_schema
    >>> s = parse_schema({"name": "t", "task": "regression", "target": "y", "source": {"kind": "toy_triangle"},
    ...     "columns": [{"name": "c", "type": "categorical", "categories": ["a", "b", "z"]},
    ...                 {"name": "y", "type": "numeric", "lower": 0, "upper": 1}]})
    >>> encode_features(pd.DataFrame({"c": [0, 2, 1], "y": [0.1, 0.2, 0.3]}), s).tolist()
    [[0.0, 0.0], [0.0, 1.0], [1.0, 0.0]]
    """
    blocks = []
    for c in schema.features:
        v = df[c.name].to_numpy()
        if c.is_numeric:
            blocks.append(v.astype(float)[:, None])
        else:
            blocks.append((v[:, None] == np.arange(1, len(c.categories))[None, :]).astype(float))
    return np.hstack(blocks) if blocks else np.zeros((len(df), 0))


def norm_bound(schema: Schema) -> float:
    """max ||x||_2 over the encoded records, from the schema alone (public).

    Each numeric column contributes at most 1, each categorical block at most 1 (one-hot).
    """
    return math.sqrt(len(schema.columns))
