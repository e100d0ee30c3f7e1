"""A weighted model fitted on a bundle, with intervals on its coefficients.

The coefficients' variance has the three parts a weighted mean's has (:mod:`dpiw.analysis.noise_aware`):

- **the mechanisms' noise**: the same model refitted on every replicate of the noise-aware bootstrap (its rows
  and weights), the variance of the coefficients over the replicates;
- **the synthetic rows' sampling**: the model refitted on ``SAMPLING_RESAMPLES`` resamples of the bundle's rows
  (with replacement, each keeping its weight), the variance over them;
- **the private rows' sampling**: the same variance scaled from the synthetic rows' effective sample size to the
  private rows' count (Kish's ESS over N_D), as for a mean.

Without published measurements only the second part is there (and the intervals say so).

What a published marginal shows and the rows do not (:mod:`dpiw.analysis.measured`) is checked in two families, each
family-wise at 5% (:data:`FIT_RULE`): the target's mean (or each class's rate) within each bin or category of each
feature (:func:`short_of_marginals`), and the features two by two, one's rate or mean within the other's bins or
categories (:func:`pairs_short_of_marginals`: a coefficient is adjusted for the other features, so it rests on their
relations to each other too). Each is read off the marginal that holds its columns, against the released rows', by
``b.mean``'s test. Where a subgroup lies apart, the fit warns (:class:`dpiw.analysis.MeasurementWarning`, once,
naming the subgroups), marks the coefficients of the features involved (``table.measured_gap``), and refits on the
rows moved to what the marginal read in the subgroups found (:func:`moved`: a numeric column's values shifted, a
label's rows reweighted); every coefficient's interval reaches over that refit's, give or take its standard error
(``table.measured_reach``: how far the refit moved it). The marginal reads a relation that is not adjusted for the
other features, so the refit is a reading of the direction and size of the gap, not the coefficient the table would
give: on a logistic fit whose coefficient is larger adjusted than not, it falls a little short
(tests/unit/test_measured.py). Measured (bench/fit_check.py, bench/README.md): the pair check marks 4 of 80
simulated fits, and on real releases the coefficients it marks cover no more often than the others (13 of 20 against
73 of 112); it turned a trial's CPSSW8 misses, unwarned before, into warned ones. The reach moved 16 of 260
simulated intervals (median width x1.01) and covered one more of the trials' 115 coefficients (an intercept).
(Reading the coefficients off the marginals' moments was tried: on BudgetFood its standard error came out ten times
the released fit's, too wide to see anything.)
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
        unmeasured = ~self.table["measured"].astype(bool) if "measured" in self.table else gap & False
        classes = [str(c) for c in getattr(self.estimator, "classes_", [])]
        logistic = "Logistic" in type(self.estimator).__name__  # LogisticRegression(CV): log-odds; others: scores
        lines = [f"(the {'log-odds' if logistic else 'coefficients'} of {classes[1]!r} against {classes[0]!r})"] \
            if len(classes) == 2 else []
        lines.append(f"{'':<28} {'estimate':>11} {'95% interval':>26}")
        for name, r in self.table.iterrows():  # each row to its own interval's precision, as an Estimate prints
            d = interval_digits(r.lo, r.hi)
            lines.append(f"{name[:28]:<28} {fixed(r.value, d):>11}   {fixed(r.lo, d):>11} to {fixed(r.hi, d):<11}"
                         + (" *" if gap[name] else "") + (" †" if unmeasured[name] else ""))
        note = ("\n* the rows fall short of what a published marginal measured of the target within this feature, or "
                "of this feature with another (MeasurementWarning): the intervals reach over the fit on the rows "
                "moved to those readings") if gap.any() else ""
        if unmeasured.any():
            note += ("\n† no published marginal measured this feature with the target (for the intercept: some "
                     "feature): the estimate is the generator's model of that relation, which the interval does not "
                     "cover (table.measured)")
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
        if BIN_MEANS:
            x = bin_means(bundle, x, data, w, features)
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
        table = _reach_gaps(bundle, table, model, features, target,
                            lambda data, w: coefficients(fit_on(data, w), names))
    if bundle.measured_pairs is not None:  # a bundle without marginals says nothing of what was measured
        table["measured"] = measured_coefficients(bundle, list(table.index), features, target)
    absent = _absent_levels(bundle, features, target, refs)
    if absent:  # a level no released row holds: the fit gives it whatever its penalty or solver leaves (0), no estimate
        rows = [r for r in table.index if r in absent]
        table.loc[rows, [c for c in ("value", "se", "lo", "hi", "bias", "measured_reach") if c in table]] = np.nan
        warnings.warn(f"b.fit: no released row holds {', '.join(absent)} (among the complete cases with a weight): "
                      "this release cannot estimate its coefficient, which is NaN in the table, not the 0 the "
                      "estimator leaves (the category's noisy count came out near nothing)", UserWarning, stacklevel=4)
    return Fit(model, table, covers)


#: whether a numeric feature enters the fit as its bin's mean (:func:`bin_means`): off, by the rule named before
#: it was measured (bench/README.md, 2026-11-29): on the simulated populations it covered 107 of 120 numeric
#: coefficients against 104 and came closer in 86, but on three fresh real tables 21 of 45 against 22, closer in 21
#: (the model's errors there dwarf the bins'); bench/fit_check.py --bins pairs the two
BIN_MEANS = False


def bin_means(bundle, x: pd.DataFrame, data: pd.DataFrame, w: np.ndarray, features: list[str]) -> pd.DataFrame:
    """The design ``x`` of ``data`` (weights ``w``) with each numeric feature that has released bins replaced by
    the weighted mean of its values in the row's bin, over these rows.

    Inside a bin the release draws a column's values from its own fine histogram, apart from every other column:
    what is left of a value once its bin is known is noise, and a slope fitted on it is pulled towards zero
    (regression dilution: the between-bin share of the column's variance times the slope, for one feature). Its
    bin's mean carries everything the rows know of the column's relation to the others (regression calibration);
    the mean is over the rows being fitted, so every resample and replicate takes its own."""
    x = x.copy()
    for f in features:
        spec = bundle._spec(f)
        nb = bundle._bins(f) if spec is not None and spec.is_numeric else None
        if nb is None or f not in x:
            continue
        v = x[f].to_numpy(float)
        cell = nb.cells(spec.to_unit(v))
        total = np.bincount(cell, weights=w, minlength=nb.card)
        mean = np.bincount(cell, weights=w * v, minlength=nb.card) / np.where(total > 0, total, 1.0)
        plain = np.bincount(cell, weights=v, minlength=nb.card) / np.maximum(np.bincount(cell, minlength=nb.card), 1)
        x[f] = np.where(total > 0, mean, plain)[cell]
    return x


#: whether the intervals reach over the refit on the moved rows (:func:`_reach_gaps`); off only for
#: bench/fit_check.py's paired arm
REACH = True


def _reach_gaps(bundle, table: pd.DataFrame, model, features: list[str], target: str, refit) -> pd.DataFrame:
    """Check the fit against the published marginals, each family at its own 5% (:data:`FIT_RULE`): the target
    within each feature's subgroups (:func:`short_of_marginals`), and the features two by two
    (:func:`pairs_short_of_marginals`). Where a relation is found apart, mark the coefficients of its features
    (``table.measured_gap``), refit on the rows moved to what the marginals read of it in the subgroups found
    (:func:`moved`; ``refit(data, weights)``: the coefficients), and let every coefficient's interval reach over
    that refit's (``table.measured_reach``: the farthest it moved); one warning says what was found. Both columns
    are there whenever the checks ran (False and 0 where nothing was found)."""
    import warnings

    short = fit_gaps(*short_of_marginals(bundle, features, target, list(getattr(model, "classes_", [])),
                                         family_only=True))
    pairs = fit_gaps(*pairs_short_of_marginals(bundle, features, family_only=True)) if len(features) > 1 else {}
    table = table.copy()
    marked = set(short) | {f for pair in pairs for f in pair}
    table["measured_gap"] = [_feature_of(name, features) in marked for name in table.index]
    if not marked:
        table["measured_reach"] = 0.0
        return table
    z, reach, unfitted = NormalDist().inv_cdf(0.975), pd.Series(0.0, index=table.index), 0
    for entries in (*short.values(), *pairs.values()) if REACH else ():
        data, w = moved(bundle.data, bundle.weights, [move for _, move in entries])
        try:
            at = refit(data, w).reindex(table.index)
        except ValueError:  # the moved rows cannot be fitted (a reading of 0 took a class's every row): no reach
            at = pd.Series(np.nan, index=table.index)
        ok = at.notna() & table.value.notna()
        if not ok.any():
            unfitted += 1
            continue
        table.loc[ok, "lo"] = np.minimum(table.lo[ok], at[ok] - z * table.se[ok])
        table.loc[ok, "hi"] = np.maximum(table.hi[ok], at[ok] + z * table.se[ok])
        reach[ok] = np.maximum(reach[ok], (at[ok] - table.value[ok]).abs())
    table["measured_reach"] = reach

    def listed(found):
        return "; ".join(text for text, _ in found[:2]) + (f" (and {len(found) - 2} more)" if len(found) > 2 else "")

    said = []
    if short:
        said.append(f"Of {target!r} within {', '.join(map(repr, short))}: "
                    + "; ".join(listed(found) for found in short.values()) + ".")
    if pairs:
        said.append("Of " + " and ".join(f"{f!r} with {g!r}" for f, g in pairs) + " (the features' relation to each "
                    "other, which every coefficient is adjusted for): "
                    + "; ".join(listed(found) for found in pairs.values()) + ".")
    names = sorted(marked, key=features.index)
    warnings.warn(f"b.fit: the released rows fall short of what the published marginals measured. {' '.join(said)} "
                  f"The coefficients on {', '.join(map(repr, names))} rest on "
                  f"{'that relation' if len(short) + len(pairs) == 1 else 'those relations'} (table.measured_gap): "
                  "every interval reaches over the fit on the rows moved to those readings (table.measured_reach, "
                  "how far that moved each coefficient)" + (f"; the rows moved to {unfitted} of those relations' "
                                                            "readings could not be fitted and give no reach"
                                                            if unfitted else ""), _measurement_warning(),
                  stacklevel=5)
    return table


def measured_coefficients(bundle, names: list[str], features: list[str], target: str) -> list[bool]:
    """Per coefficient (``names``: a fit table's index), whether some published marginal holds its feature's values
    together with the target (:meth:`dpiw.analysis.bundle.Bundle.measured_with_target`); the intercept's, whether
    every feature's does. A coefficient whose feature no marginal measured with the target is the generator's
    model of that relation: in user trials on 15 real tables (ε = 1, one release at 3; MST with or without
    weights) such coefficients' 95% intervals held the table's value 63 times in 123, the others 123 in 144
    (bench/README.md, 2026-11-29)."""
    with_target = {f: bundle.measured_with_target(f, target) for f in features}
    everyone = all(with_target.values())
    return [with_target[f] if (f := _feature_of(name, features)) is not None else everyone for name in names]


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


def fit_gaps(found: list, tests: int, rule: str | None = None) -> dict:
    """:func:`short_of_marginals`'s (or :func:`pairs_short_of_marginals`') findings that decide a fit, by feature
    (or pair of features), farthest first: (in words, :class:`Move`) each."""
    z = _threshold(tests, rule)
    out: dict = {}
    for apart, f, text, move in sorted(found, key=lambda x: -x[0]):
        if apart > z:
            out.setdefault(f, []).append((text, move))
    return out


def _groups(bundle, f: str) -> list[tuple[str, object]]:
    """A feature's subgroups as (in words, where): a numeric feature's released bins, a categorical one's
    categories; none where its bins cannot be had."""
    from dpiw import DpiwError
    from dpiw.analysis.bin_bias import bin_text

    if not bundle.schema.column(f).is_numeric:
        return [(f"{f}={k}", {f: k}) for k in bundle.data[f].cat.categories]
    try:
        return [(f"{f} {bin_text(lo, hi)}", lambda d, f=f, lo=lo, hi=hi: _between(d[f], lo, hi))
                for lo, hi in bundle.bins(f)]
    except DpiwError:
        return []


@dataclass(frozen=True)
class Move:
    """What a published marginal read of the rows' subgroup ``where``, and the rows had: ``of``'s mean (``label``
    None) or the rate of ``label``; :func:`moved` shifts or reweights the rows to the reading."""

    of: str
    label: object
    where: object
    reading: float
    rows: float


def moved(data: pd.DataFrame, weights: np.ndarray, moves: list[Move]) -> tuple[pd.DataFrame, np.ndarray]:
    """The rows as the marginals read them in the subgroups of ``moves``: a numeric column's values shifted by the
    reading less the rows' mean within its subgroup; a label's rows reweighted within it by reading over rate, the
    subgroup's other rows by the rest (its total weight kept). One after another, in order, each from the rows as
    the earlier ones left them (its reading holds until a later move in the same subgroup)."""
    from dpiw.analysis.noise_aware import subgroup

    data, w = data.copy(), np.asarray(weights, float).copy()
    for m in moves:
        inside = subgroup(data, m.where)
        if m.label is None:  # a whole-number column's mean moves by a fraction too
            v = data[m.of].to_numpy(dtype=float, na_value=np.nan)
            keep = inside & ~np.isnan(v)
            if keep.any() and w[keep].sum() > 0:
                now = float(np.average(v[keep], weights=w[keep]))  # as the earlier moves left it
                data[m.of] = np.where(inside, v + (m.reading - now), v)
            continue
        has = inside & (data[m.of] == m.label).to_numpy()
        total = w[inside].sum()
        now = w[has].sum() / total if total > 0 else 0.0  # the rate as the earlier moves left it
        if not 0 < now < 1:
            continue
        reading = min(max(m.reading, 0.0), 1.0)
        w[has] *= reading / now
        w[inside & ~has] *= (1 - reading) / (1 - now)
    return data, w


def _between(values: pd.Series, lo: float, hi: float) -> np.ndarray:
    """``values.between(lo, hi)`` in numpy (an empty value is out): a fit's checks call it on every replicate's rows,
    hundreds of times a fit, where pandas' own costs a tenth of a second per thousand calls more."""
    v = values.to_numpy(dtype=float, na_value=np.nan)
    return (v >= lo) & (v <= hi)


def _apart_within(bundle, of: str, labels: list, groups: list, z: float | None = None) -> list[tuple]:
    """Where ``of``'s mean (label None) or a label's rate within each group lies apart from a published marginal's
    reading beyond ``b.mean`` / ``b.rate``'s own check (:meth:`dpiw.analysis.Bundle._against_marginal`): (standard
    errors apart, in words, :class:`Move`) each. ``z``: a group whose :meth:`~dpiw.analysis.Bundle._apart_bound`
    is not past it is not estimated (it could not be found that far apart)."""
    import warnings

    from dpiw import DpiwError

    found = []
    for text, where in groups:
        for label in labels:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    if z is not None and not bundle._apart_bound(of, label, where) > z:
                        continue
                    est = bundle.mean(of, where) if label is None else bundle.rate(of, label, where)
                except DpiwError:  # no released row in it
                    continue
            if est.measured is None:  # within DISAGREE_Z of its reading (or none made)
                continue
            what = f"mean {of}" if label is None else f"rate of {label!r}"
            read, se = est.measured[0], est.measured[1]
            found.append((est.measured[2], f"{what} for {text}: {est.value:.4g} from the rows, {read:.4g} "
                                           f"(standard error {se:.2g}) from the marginal",
                          Move(of, label, where, float(read), float(est.value))))
    return found


def _threshold(tests: int, rule: str | None = None) -> float:
    """How many standard errors apart decide a fit by ``rule`` (:data:`FIT_RULE`) over ``tests`` subgroups: b.mean's
    own test's, or the two-sided 5% level over them all (Bonferroni)."""
    from dpiw.analysis.bundle import DISAGREE_Z

    return DISAGREE_Z if (rule or FIT_RULE) == "subgroup" else NormalDist().inv_cdf(1 - 0.025 / max(tests, 1))


def short_of_marginals(bundle, features: list[str], target: str, classes: list, *,
                       family_only: bool = False) -> tuple[list, int]:
    """The subgroups (each feature's bins or categories) where the target's mean, or a class's rate, from the
    released rows lies beyond both their noise from a published marginal's reading of it (``b.mean`` /
    ``b.rate``'s check, :meth:`dpiw.analysis.Bundle._against_marginal`): (standard errors apart, feature, in
    words, :class:`Move`) each, and how many subgroups were tested. ``family_only``: only those past
    :data:`FIT_RULE`'s threshold are sure to be found; the rest are skipped where they cannot reach it (b.fit's)."""
    if bundle.schema.column(target).is_numeric:
        labels = [None]
    else:  # the estimator's classes are the labels as text (b.fit fits on them): back to the categories, [0, 1] too
        category = {str(c): c for c in bundle.data[target].cat.categories}
        labels = [category.get(str(k), k) for k in classes[1:]] if len(classes) > 1 else []
    groups = {f: _groups(bundle, f) for f in features}
    tests = sum(len(g) for g in groups.values()) * len(labels)
    z = _threshold(tests) if family_only else None
    found = [(apart, f, text, move) for f in features
             for apart, text, move in _apart_within(bundle, target, labels, groups[f], z)]
    return found, tests


def pair_direction(bundle, f: str, g: str) -> tuple[str, str]:
    """Which of two features a pair's check reads within the other's subgroups: a categorical one's rates (the
    one of fewer categories where both are), within the other's bins or categories; where both are numeric, the
    first one's mean within the second's bins."""
    def classes(c):
        spec = bundle.schema.column(c)
        return None if spec.is_numeric else len(bundle.data[c].cat.categories)

    kf, kg = classes(f), classes(g)
    if kg is not None and (kf is None or kg < kf):
        return g, f
    return f, g


def pairs_short_of_marginals(bundle, features: list[str], *, family_only: bool = False) -> tuple[list, int]:
    """The fit's features two by two: where one's mean, or a category's rate, within the other's bins or categories
    from the released rows lies beyond their noise from a published marginal's reading (:func:`pair_direction`,
    every category but the first). A coefficient is each feature's relation to the target *adjusted for the other
    features*, so it rests on the features' relations to each other as much as on each one's to the target: a
    trial's CPSSW8 release (earnings on age, education and gender) kept every feature's relation to earnings, lost
    part of that of gender to education (the share of women among those of 16+ years of schooling, 3.0-4.3
    standard errors from the weights' marginal), and missed education's coefficient in 3 of 3 releases and gender's
    in 2. (standard errors apart, (the two features), in words, :class:`Move`) each, and how many were tested;
    ``family_only`` as for :func:`short_of_marginals`."""
    import itertools

    checks = []  # (the pair, the one read, its labels, the other's subgroups)
    for f, g in itertools.combinations(features, 2):
        of, by = pair_direction(bundle, f, g)
        labels = [None] if bundle.schema.column(of).is_numeric else list(bundle.data[of].cat.categories[1:])
        checks.append(((f, g), of, labels, _groups(bundle, by)))
    tests = sum(len(labels) * len(groups) for _, _, labels, groups in checks)
    z = _threshold(tests) if family_only else None
    found = [(apart, pair, text, move) for pair, of, labels, groups in checks
             for apart, text, move in _apart_within(bundle, of, labels, groups, z)]
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
