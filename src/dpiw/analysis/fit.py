"""A weighted model fitted on a bundle, with intervals on its coefficients.

The coefficients' variance has the three parts a weighted mean's has (:mod:`dpiw.analysis.noise_aware`):

- **the mechanisms' noise**: the same model refitted on every replicate of the noise-aware bootstrap (its rows
  and weights), the variance of the coefficients over the replicates;
- **the synthetic rows' sampling**: the model refitted on ``SAMPLING_RESAMPLES`` resamples of the bundle's rows
  (with replacement, each keeping its weight), the variance over them;
- **the private rows' sampling**: the same variance scaled from the synthetic rows' effective sample size to the
  private rows' count (Kish's ESS over N_D), as for a mean.

Without published measurements only the second part is there (and the intervals say so).

What a published marginal shows and the rows do not (:mod:`dpiw.analysis.measured`) is checked feature by
feature: the target's mean (or each class's rate) within each bin or category of a feature, read off the
marginal that holds the two, against the released rows' (the check of ``b.mean``, made family-wise over the
fit's subgroups: :data:`FIT_RULE`). Where a subgroup's two lie apart beyond it, the rows fall short of a relation
the fit's coefficients on that feature rest on: the fit warns (:class:`dpiw.analysis.MeasurementWarning`, once,
naming the subgroups) and marks those coefficients (``table.measured_gap``); their intervals do not reach over
it, since no marginal reads a coefficient adjusted for the other features. Measured (bench/fit_check.py), it
rarely speaks: the misses it was built for lay 2.3-2.8 standard errors from their marginals, under the
family-wise threshold. (Reading the coefficients off the marginals' moments was tried: on BudgetFood its
standard error came out ten times the released fit's, too wide to see anything.)
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
import pandas as pd

from dpiw.analysis.estimates import NOISE_AWARE_FIT, SAMPLING_ONLY, fixed, interval_digits, kish_ess
from dpiw.scale import part_text

#: the resamples of the synthetic rows for the sampling part of a coefficient's variance
SAMPLING_RESAMPLES = 30


def coefficients(model, columns: list[str]) -> pd.Series:
    """A fitted linear model's intercept and coefficients by name (``class:feature`` past two classes)."""
    coef = np.atleast_2d(np.asarray(model.coef_, float))
    intercept = np.atleast_1d(np.asarray(getattr(model, "intercept_", np.zeros(len(coef))), float))
    classes = list(getattr(model, "classes_", []))
    prefixes = [""] if len(coef) == 1 else [f"{c}:" for c in classes[: len(coef)]]
    values, names = [], []
    for k, p in enumerate(prefixes):
        values += [intercept[k], *coef[k]]
        names += [f"{p}(intercept)", *(f"{p}{c}" for c in columns)]
    return pd.Series(values, index=names, dtype=float)


@dataclass
class Fit:
    """A fitted estimator (any attribute not found here is the estimator's: ``predict``, ``coef_``...) and, for a
    linear model, its coefficients with standard errors and 95% intervals (``table``)."""

    estimator: object
    table: pd.DataFrame | None
    covers: str

    def __getattr__(self, name):
        if name in ("estimator", "table", "covers"):
            raise AttributeError(name)
        return getattr(self.estimator, name)

    def __str__(self) -> str:
        if self.table is None:
            return f"{self.estimator!r} (no coefficients: no interval)"
        gap = self.table["measured_gap"] if "measured_gap" in self.table else pd.Series(False, self.table.index)
        classes = [str(c) for c in getattr(self.estimator, "classes_", [])]
        logistic = "Logistic" in type(self.estimator).__name__  # LogisticRegression(CV): log-odds; others: scores
        lines = [f"(the {'log-odds' if logistic else 'coefficients'} of {classes[1]!r} against {classes[0]!r})"] \
            if len(classes) == 2 else []
        lines.append(f"{'':<28} {'estimate':>11} {'95% interval':>26}")
        for name, r in self.table.iterrows():  # each row to its own interval's precision, as an Estimate prints
            d = interval_digits(r.lo, r.hi)
            lines.append(f"{name[:28]:<28} {fixed(r.value, d):>11}   {fixed(r.lo, d):>11} to {fixed(r.hi, d):<11}"
                         + (" *" if gap[name] else ""))
        note = ("\n* the rows fall short of what a published marginal measured of the target within this feature "
                "(MeasurementWarning): the interval does not cover that") if gap.any() else ""
        return "\n".join(lines) + f"\n(intervals cover {self.covers})" + note


def fit_with_intervals(bundle, estimator, features: list[str], target: str, *, interval: str) -> Fit:
    """Fit ``estimator`` on the bundle's weighted rows; intervals for a linear model's coefficients
    (``interval``: "auto" / "noise" as for a mean, "sampling" for the synthetic rows' part only). A warning the
    estimator gives (a ConvergenceWarning...) is shown once, with how many of the fits gave it, not once a fit;
    also when a fit fails."""
    import warnings

    said: dict = {}  # (category, message with its numbers masked) -> [first message, fits that gave it]
    fits = [0]
    used = [*features, target]
    empty = int(bundle.data[[c for c in used if c in bundle.data]].isna().any(axis=1).sum()) if used else 0
    if empty > 0:  # `missing: indicator` columns: the fits use the complete cases only, and the analyst is told
        share = part_text(empty / len(bundle.data))
        warnings.warn(f"b.fit: {empty:,} of the {len(bundle.data):,} rows ({share}) have an empty value in "
                      f"{used} and are left out of the fit and its intervals (complete cases)",
                      UserWarning, stacklevel=3)
    try:
        return _fit_with_intervals(bundle, estimator, features, target, interval=interval, fits=fits, said=said)
    finally:
        for category, (message, k) in ((key[0], v) for key, v in said.items()):
            warnings.warn(f"{message}\n(b.fit: {k} of the {fits[0]} fits behind the estimate and its interval gave "
                          "this warning)", category, stacklevel=3)


def _fit_with_intervals(bundle, estimator, features: list[str], target: str, *, interval: str, fits: list,
                        said: dict) -> Fit:
    import re
    import warnings

    from sklearn.base import clone
    from threadpoolctl import threadpool_limits

    def fit_on(data: pd.DataFrame, w: np.ndarray):
        keep = data[[*features, target]].notna().all(axis=1).to_numpy()  # complete cases (`missing: indicator`)
        data, w = data[keep], w[keep]
        x = bundle.design(features, data, reference=refs)
        y = data[target]
        y = y.astype(str).to_numpy() if isinstance(y.dtype, pd.CategoricalDtype) else y.to_numpy()
        fits[0] += 1
        # one BLAS thread: scipy >= 1.15's L-BFGS-B (LogisticRegression's solver) calls BLAS on vectors of a few
        # coefficients, and on a busy machine its threads wait for a core (a 6,000-row, 12-coefficient logistic
        # fit and its 72 refits: bench/README.md)
        with threadpool_limits(limits=1, user_api="blas"), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                return clone(estimator).fit(x, y, sample_weight=w)
            finally:  # each fit counted once per kind of warning, whatever numbers its text carries
                kinds = {(c.category, re.sub(r"[-+]?\d[\d.eE+-]*", "#", str(c.message))): str(c.message)
                         for c in caught}
                for key, message in kinds.items():
                    said.setdefault(key, [message, 0])[1] += 1

    refs = references(bundle, features, target)
    model = fit_on(bundle.data, bundle.weights)
    try:
        names = list(bundle.design(features, reference=refs).columns)
        point = coefficients(model, names)
    except AttributeError:  # not a linear model: no coefficients to give intervals for
        return Fit(model, None, SAMPLING_ONLY)
    rng = np.random.default_rng(0)
    n = len(bundle.data)
    boot = []
    for _ in range(SAMPLING_RESAMPLES):
        idx = rng.integers(0, n, n)
        boot.append(coefficients(fit_on(bundle.data.iloc[idx].reset_index(drop=True), bundle.weights[idx]), names))
    var = {"synthetic_rows": pd.concat(boot, axis=1).var(axis=1, ddof=1)}
    covers, bias = SAMPLING_ONLY, pd.Series(0.0, index=point.index)
    if interval != "sampling" and bundle.noise_aware:
        n_private = float(bundle.measurements["generator"]["total"])
        var["private_rows"] = var["synthetic_rows"] * kish_ess(bundle.weights) / max(n_private, 1.0)
        boot_set = bundle.bootstrap()
        reps = [coefficients(fit_on(r.data, r.weights), names) for r in boot_set.made()]
        var["noise"] = pd.concat(reps, axis=1).var(axis=1, ddof=1)
        base, shrunk = boot_set.bias_set()
        if base is not None and shrunk:  # how far the weights fall short of D (as for a mean: Estimate.bias)
            at_base = coefficients(fit_on(base.data, base.weights), names)
            at_gen = coefficients(fit_on(base.data, np.ones(len(base.weights))), names)
            refits = pd.concat([coefficients(fit_on(r.data, r.weights), names) for r in shrunk], axis=1)
            from dpiw.analysis.noise_aware import shortfall

            bias = pd.Series(shortfall(refits.mean(axis=1) - at_base, at_base - at_gen), index=at_base.index)
        covers = NOISE_AWARE_FIT
    se = np.sqrt(sum(var.values()))
    z = 1.959963984540054
    corrected = point - bias
    table = pd.DataFrame({"value": point, "se": se, "lo": np.minimum(point, corrected) - z * se,
                          "hi": np.maximum(point, corrected) + z * se, "bias": bias,
                          **{f"var_{k}": v for k, v in var.items()}})
    if covers == NOISE_AWARE_FIT:
        short = fit_gaps(*short_of_marginals(bundle, features, target, list(getattr(model, "classes_", []))))
        if short:
            table["measured_gap"] = [_feature_of(name, features) in short for name in table.index]
            said = "; ".join("; ".join(found[:2]) + (f" (and {len(found) - 2} more)" if len(found) > 2 else "")
                             for found in short.values())
            warnings.warn(f"b.fit: the released rows fall short of what a published marginal measured of "
                          f"{target!r} within {', '.join(map(repr, short))}: {said}. The coefficients on "
                          f"{'that feature' if len(short) == 1 else 'those features'} rest on that relation, and "
                          "their intervals do not cover it (table.measured_gap; b.mean or b.rate within those "
                          "subgroups give intervals that do)", _measurement_warning(), stacklevel=4)
    absent = _absent_levels(bundle, features, target, refs)
    if absent:  # a level no released row holds: the fit gives it whatever its penalty or solver leaves (0), no estimate
        rows = [r for r in table.index if r in absent]
        table.loc[rows, ["value", "se", "lo", "hi", "bias"]] = np.nan
        warnings.warn(f"b.fit: no released row holds {', '.join(absent)} (among the complete cases with a weight): "
                      "this release cannot estimate its coefficient, which is NaN in the table, not the 0 the "
                      "estimator leaves (the category's noisy count came out near nothing)", UserWarning, stacklevel=4)
    return Fit(model, table, covers)


def _measurement_warning():
    from dpiw.analysis.bundle import MeasurementWarning

    return MeasurementWarning


def _feature_of(name: str, features: list[str]) -> str | None:
    """The feature a coefficient's name is of (``x``, ``g=1``, ``yes:g=1``), or None for an intercept."""
    bare = name.split(":", 1)[1] if ":" in name and name.split(":", 1)[1] != "" else name
    return next((f for f in features if bare == f or bare.startswith(f"{f}=")), None)


#: how a fit's subgroups decide it: "subgroup", where b.mean's own test finds one of them apart (DISAGREE_Z), or
#: "family", at the two-sided 5% level over all of them (Bonferroni). Chosen by a rule named before its run
#: (bench/fit_check.py): "subgroup" marked 10 of 80 fits on the simulated populations, every marked coefficient
#: covering its truth, past the 10% the rule allowed
FIT_RULE = "family"


def fit_gaps(found: list, tests: int, rule: str | None = None) -> dict[str, list[str]]:
    """:func:`short_of_marginals`'s findings that decide a fit, by feature, farthest first."""
    from dpiw.analysis.bundle import DISAGREE_Z

    rule = rule or FIT_RULE
    z = DISAGREE_Z if rule == "subgroup" else NormalDist().inv_cdf(1 - 0.025 / max(tests, 1))
    out: dict[str, list[str]] = {}
    for apart, f, text in sorted(found, key=lambda x: -x[0]):
        if apart > z:
            out.setdefault(f, []).append(text)
    return out


def short_of_marginals(bundle, features: list[str], target: str, classes: list) -> tuple[list, int]:
    """The subgroups (each feature's bins or categories) where the target's mean, or a class's rate, from the
    released rows lies beyond both their noise from a published marginal's reading of it (``b.mean`` /
    ``b.rate``'s check, :meth:`dpiw.analysis.Bundle._against_marginal`): (standard errors apart, feature, in
    words) each, and how many subgroups were tested."""
    import warnings

    from dpiw import DpiwError
    from dpiw.analysis.bin_bias import bin_text

    numeric_target = bundle.schema.column(target).is_numeric
    labels = [None] if numeric_target else (classes[1:] if len(classes) > 1 else [])
    found: list[tuple[float, str, str]] = []  # (standard errors apart, feature, in words)
    tests = 0
    for f in features:
        spec = bundle.schema.column(f)
        if spec.is_numeric:
            try:
                groups = [(f"{f} {bin_text(lo, hi)}", lambda d, f=f, lo=lo, hi=hi: d[f].between(lo, hi))
                          for lo, hi in bundle.bins(f)]
            except DpiwError:
                continue
        else:
            groups = [(f"{f}={k}", {f: k}) for k in bundle.data[f].cat.categories]
        for text, where in groups:
            for label in labels:
                tests += 1
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    try:
                        est = (bundle.mean(target, where) if label is None else bundle.rate(target, label, where))
                    except DpiwError:  # no released row in it
                        continue
                if est.measured is None:  # within DISAGREE_Z of its reading (or none made)
                    continue
                apart = est.measured[2]  # standard errors of the difference (Bundle._against_marginal)
                of = f"mean {target}" if label is None else f"rate of {label!r}"
                found.append((apart, f, f"{of} for {text}: {est.value:.4g} from the rows, {est.measured[0]:.4g} ± "
                                        f"{est.measured[1]:.2g} from the marginal"))
    return found, tests


def references(bundle, features: list[str], target: str) -> dict:
    """Each categorical feature's reference category for a fit: its first category that a released complete case
    with a positive weight holds (the schema's first, unless no row holds it: a design against a category no row
    holds has its intercept and that feature's columns collinear, and every coefficient against nothing). Said in
    a warning where it is not the first."""
    import warnings

    keep = bundle.data[[*features, target]].notna().all(axis=1).to_numpy() & (bundle.weights > 0)
    out = {}
    for f in features:
        col = bundle.data[f]
        if not isinstance(col.dtype, pd.CategoricalDtype):
            continue
        held = set(col[keep].unique())
        first = next((c for c in col.cat.categories if c in held), col.cat.categories[0])
        out[f] = first
        if first != col.cat.categories[0]:
            warnings.warn(f"b.fit: no released row holds {f}={col.cat.categories[0]} (the first category, the "
                          f"usual reference): the coefficients of {f!r} are against {f}={first}, the first one "
                          "the rows hold", UserWarning, stacklevel=5)
    return out


def _absent_levels(bundle, features: list[str], target: str, refs: dict | None = None) -> list[str]:
    """The indicator columns of the design (``name=label``) that no released complete case with a positive weight
    holds."""
    keep = bundle.data[[*features, target]].notna().all(axis=1).to_numpy() & (bundle.weights > 0)
    x = bundle.design(features, bundle.data[keep], reference=refs)
    return [c for c in x.columns if "=" in c and not x[c].any()]
