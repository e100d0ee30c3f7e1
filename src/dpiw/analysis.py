"""The analyst's side: importance-weighted estimates from a release bundle.

A bundle (``.../release/``) holds ``synthetic.parquet`` (the synthetic rows: numeric columns scaled to
[0, 1] by the schema's public bounds, value = lower + v (upper - lower); categorical columns as category
codes), ``weights.parquet`` (one weight per row, column ``weight``), ``manifest.json`` (the privacy spend
and the weights' diagnostics) and ``schema.json`` (the public bounds and categories), with which
:func:`load_bundle` gives the rows back in their units and labels. Everything here is post-processing of the
release: it costs no privacy.

    from dpiw.analysis import load_bundle
    b = load_bundle("results/release_clinic/runs/clinic/eps=1/seed=0/mst/none/none/release")
    b.mean("age").value, b.mean("age").ci()                    # the IW mean in years and its 95% interval
    b.rate("outcome", "ill", where=b.data.smoker == "yes")     # a subgroup's weighted share of a label
    b.fit(LogisticRegression(), ["age", "region"], "outcome")  # any estimator with sample_weight

The standard error of a self-normalised weighted mean is the weighted standard deviation over the square
root of Kish's effective sample size (sum w)^2 / sum w^2. When the bundle's Pareto k-hat is above its
threshold or the ESS is below ``MIN_ESS_FRACTION`` of the rows, :func:`load_bundle` warns: the weights then
rest on a few rows and the intervals are not to be trusted.
"""

from __future__ import annotations

import json
import math
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from dpiw import DpiwError

#: below this share of the rows, Kish's ESS says the weights are too concentrated to trust
MIN_ESS_FRACTION = 0.1


class UnreliableWeightsWarning(UserWarning):
    """The bundle's weights rest on a few rows (heavy tail or small effective sample size)."""


def kish_ess(weights) -> float:
    """Kish's effective sample size (sum w)^2 / sum w^2.

    Parameters
    ----------
    weights : array_like
        Non-negative weights, not all zero.

    Returns
    -------
    float
        Between 1 and the number of weights; equal to it for constant weights.

    >>> kish_ess([1, 1, 1, 1]), kish_ess([2, 0, 0, 0])
    (4.0, 1.0)
    """
    w = _check_weights(weights)
    return float(w.sum() ** 2 / (w * w).sum())


def _check_weights(weights) -> np.ndarray:
    w = np.asarray(weights, dtype=float)
    if w.ndim != 1 or w.size == 0:
        raise DpiwError("weights must be a non-empty 1-D array")
    if not np.all(np.isfinite(w)) or np.any(w < 0) or not w.sum() > 0:
        raise DpiwError("weights must be finite, >= 0 and not all 0")
    return w


@dataclass(frozen=True)
class Estimate:
    """A weighted mean with its Kish-ESS standard error.

    Attributes
    ----------
    value : float
        The self-normalised weighted mean sum w h / sum w.
    se : float
        sqrt(weighted variance / ESS).
    ess : float
        Kish's effective sample size of the weights used.
    """

    value: float
    se: float
    ess: float

    def ci(self, level: float = 0.95) -> tuple[float, float]:
        """The normal interval value +- z se at ``level`` (e.g. 0.95)."""
        from scipy.stats import norm

        if not 0 < level < 1:
            raise DpiwError(f"level must lie in (0, 1), got {level}")
        z = float(norm.ppf(0.5 + level / 2))
        return self.value - z * self.se, self.value + z * self.se


def weighted_mean(values, weights) -> Estimate:
    """Importance-weighted mean of ``values`` with a Kish-ESS standard error.

    Parameters
    ----------
    values : array_like
        One value per synthetic row (a column, or any function of the rows).
    weights : array_like
        The bundle's weights, same length (any scale: they are normalised).

    Returns
    -------
    Estimate
        value, se and ess; ``Estimate.ci(level)`` gives the interval.
    """
    h = np.asarray(values, dtype=float)
    w = _check_weights(weights)
    if h.shape != w.shape:
        raise DpiwError(f"values ({h.shape}) and weights ({w.shape}) differ in length")
    p = w / w.sum()
    mean = float(p @ h)
    var = float(p @ (h - mean) ** 2)
    ess = kish_ess(w)
    return Estimate(mean, math.sqrt(var / ess), ess)


@dataclass(frozen=True)
class Bundle:
    """A loaded release bundle.

    Attributes
    ----------
    data : pandas.DataFrame
        The synthetic rows in the table's own units: numeric columns in their units, categorical columns as
        their labels (pandas Categorical). A bundle written before bundles carried their schema has no
        ``schema.json``: its ``data`` is then the scaled view (with a warning).
    scaled : pandas.DataFrame
        The rows as released: numeric columns in [0, 1] by the public bounds, categories as codes.
    weights : numpy.ndarray
        One importance weight per row.
    manifest : dict
        The bundle's manifest (privacy spend, verdict, the weights' Pareto k-hat).
    schema : dpiw.data.schema.Schema or None
        The table's public schema (columns, bounds, categories, target, task).
    """

    data: pd.DataFrame
    weights: np.ndarray
    manifest: dict
    scaled: pd.DataFrame | None = None
    schema: object = None

    @property
    def ess_fraction(self) -> float:
        """Kish's ESS over the number of rows."""
        return kish_ess(self.weights) / len(self.weights)

    def _column(self, column: str) -> pd.Series:
        if column not in self.data:
            raise DpiwError(f"no column {column!r} in the bundle; it has {list(self.data.columns)}")
        return self.data[column]

    def _where(self, where) -> np.ndarray:
        if where is None:
            return np.ones(len(self.data), dtype=bool)
        mask = np.asarray(where, dtype=bool)
        if mask.shape != (len(self.data),):
            raise DpiwError(f"where: a boolean mask of the {len(self.data)} rows, got shape {mask.shape}")
        if not mask.any():
            raise DpiwError("where: no synthetic row is in this subgroup")
        return mask

    def mean(self, column: str, where=None) -> Estimate:
        """The weighted mean of a numeric column, in its units (see :func:`weighted_mean`), over the rows where
        ``where`` (a boolean mask, e.g. ``b.data.region == "north"``) holds, or over all of them."""
        col = self._column(column)
        if isinstance(col.dtype, pd.CategoricalDtype) or not pd.api.types.is_numeric_dtype(col):
            raise DpiwError(f"column {column!r} is categorical: use rate({column!r}, label) for the share of a label")
        mask = self._where(where)
        return weighted_mean(col.to_numpy(float)[mask], self.weights[mask])

    def rate(self, column: str, label, where=None) -> Estimate:
        """The weighted share of rows whose ``column`` is ``label`` (a category's label), over the rows where
        ``where`` holds, or over all of them."""
        col = self._column(column)
        if isinstance(col.dtype, pd.CategoricalDtype) and label not in col.cat.categories:
            raise DpiwError(f"{label!r} is not a category of {column!r}: {list(col.cat.categories)}")
        mask = self._where(where)
        return weighted_mean((col == label).to_numpy(float)[mask], self.weights[mask])

    def design(self, features: list[str]) -> pd.DataFrame:
        """The features as a numeric design matrix: numeric columns in their units, a categorical column with K
        categories as K - 1 indicator columns ``name=label`` (the first category is the reference)."""
        blocks = []
        for name in features:
            col = self._column(name)
            if isinstance(col.dtype, pd.CategoricalDtype):
                blocks.append(pd.DataFrame({f"{name}={c}": (col == c).to_numpy(float)
                                            for c in col.cat.categories[1:]}, index=self.data.index))
            else:
                blocks.append(col.astype(float).to_frame())
        return pd.concat(blocks, axis=1)

    def fit(self, estimator, features: list[str], target: str):
        """Fit a scikit-learn style estimator on the synthetic rows with ``sample_weight`` = the weights.

        Parameters
        ----------
        estimator : object
            Anything with ``fit(X, y, sample_weight=...)`` (LogisticRegression, LinearRegression, ...).
        features : list of str
            The columns used as inputs (:meth:`design`: categorical ones as indicator columns).
        target : str
            The column to predict (a categorical one as its labels).

        Returns
        -------
        object
            The fitted estimator.
        """
        y = self._column(target)
        y = y.astype(str).to_numpy() if isinstance(y.dtype, pd.CategoricalDtype) else y.to_numpy()
        return estimator.fit(self.design(features), y, sample_weight=self.weights)


def load_bundle(path: str | Path, *, warn: bool = True) -> Bundle:
    """Load a release bundle (``synthetic.parquet``, ``weights.parquet``, ``manifest.json``).

    Parameters
    ----------
    path : str or Path
        The bundle's folder.
    warn : bool
        Warn (:class:`UnreliableWeightsWarning`) when the manifest's Pareto k-hat is above its threshold or
        the weights' Kish ESS is below ``MIN_ESS_FRACTION`` of the rows.

    Returns
    -------
    Bundle
    """
    folder = Path(path)
    if (folder / "refused.json").exists():
        why = json.loads((folder / "refused.json").read_text())
        raise DpiwError(f"{folder}: this run was refused a bundle: {why}")
    files = {name: folder / name for name in ("synthetic.parquet", "weights.parquet", "manifest.json")}
    missing = [n for n, p in files.items() if not p.exists()]
    if missing:
        raise DpiwError(f"{folder}: not a release bundle, it lacks {missing}")
    scaled = pd.read_parquet(files["synthetic.parquet"])
    weights = pd.read_parquet(files["weights.parquet"])["weight"].to_numpy(float)
    if len(weights) != len(scaled):
        raise DpiwError(f"{folder}: {len(weights)} weights for {len(scaled)} synthetic rows")
    schema, data = None, scaled
    if (folder / "schema.json").is_file():
        from dpiw.data.schema import parse_schema
        from dpiw.scale import decode_frame

        schema = parse_schema(json.loads((folder / "schema.json").read_text())["schema"],
                              path=str(folder / "schema.json"))
        data = decode_frame(scaled, schema)
    elif warn:
        warnings.warn(f"{folder}: a bundle without schema.json (written before bundles carried their schema): its "
                      "data are the scaled rows (numeric columns in [0, 1], categories as codes)", stacklevel=2)
    bundle = Bundle(data, _check_weights(weights), json.loads(files["manifest.json"].read_text()), scaled, schema)
    if warn:
        release = bundle.manifest.get("release", {})
        k, limit = release.get("pareto_k"), release.get("pareto_k_threshold")
        if k is not None and limit is not None and k > limit:
            warnings.warn(f"{folder}: the weights' Pareto k-hat {k:.2f} is above {limit:.2f}: heavy-tailed weights, "
                          "estimates and intervals are unreliable", UnreliableWeightsWarning, stacklevel=2)
        if bundle.ess_fraction < MIN_ESS_FRACTION:
            warnings.warn(f"{folder}: Kish ESS is {bundle.ess_fraction:.1%} of the rows: the weights rest on a few "
                          "rows, estimates and intervals are unreliable", UnreliableWeightsWarning, stacklevel=2)
    return bundle
