"""A loaded release bundle: its rows in their units and labels, its weights, and estimates with intervals."""

from __future__ import annotations

import itertools
import json
import math
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

from dpiw import DpiwError
from dpiw.analysis.bin_bias import bin_text
from dpiw.analysis.estimates import (
    MIN_ESS_FRACTION,
    NOISE_AWARE,
    Estimate,
    Quantile,
    UnreliableWeightsWarning,
    _check_weights,
    fixed,
    interval_digits,
    kish_ess,
    weighted_mean,
    weighted_quantile,
)


def _said(where) -> str:
    """A subgroup as a warning names it: a dict as written, a function as '...'."""
    return repr(where) if isinstance(where, dict) or where is None else "..."


def _as_category(col: pd.Series, spec) -> pd.Series:
    """A categorical column of rows not read as one (a CSV's text or numbers) as the schema's categories; a value
    that is none of them is refused, naming it."""
    labels = list(spec.labels)
    text = {str(x): x for x in labels}
    label = col.map(lambda v: v if v in labels else text.get(str(v)), na_action="ignore")  # 2 or "2": the label 2
    odd = col[col.notna() & label.isna()]
    if len(odd):
        raise DpiwError(f"design: column {col.name!r} holds {odd.iloc[0]!r}, which is not one of its categories "
                        f"{labels}; give rows with the schema's labels (b.data's are)")
    return pd.Series(pd.Categorical(label, categories=labels), index=col.index, name=col.name)


def _is_mask(where) -> bool:
    """Whether a subgroup is given as a boolean mask of the rows (not None, a mapping or a function)."""
    return where is not None and not callable(where) and not isinstance(where, dict)


def indicator_of(schema) -> dict[str, str]:
    """Each `missing: indicator` 0/1 column's numeric column (a pair with it is a pair with that column)."""
    return {c.name: c.indicator_of for c in getattr(schema, "columns", ()) if c.indicator_of}


def cliques_of(measurements: dict, of: dict[str, str]):
    """The set of columns of each marginal of ``measurements`` (parts as in measurements.json), each column named
    as ``of`` maps it (a `missing: indicator` 0/1 column as its numeric column)."""
    for part in measurements.values():
        if not isinstance(part, dict):
            continue
        names = part.get("columns", [])
        for m in part.get("measurements", []):
            yield {of.get(names[j], names[j]) for j in m["clique"]}


def pairs_of(measurements: dict, of: dict[str, str]) -> set[frozenset]:
    """The pairs of columns the marginals of ``measurements`` hold together (:func:`cliques_of`)."""
    pairs = set()
    for cols in cliques_of(measurements, of):
        pairs |= {frozenset(p) for p in itertools.combinations(sorted(cols), 2)}
    return pairs


def measured_with(schema, measurements: dict, column: str, raw: bool = False) -> tuple[list[str], list[str]]:
    """The schema's other columns (0/1 indicator columns left out) that some marginal of ``measurements`` holds
    together with ``column``, and the rest; with ``raw``, a numeric column's `missing: indicator` 0/1 column does not
    stand for it (a marginal of (x_missing, y) measures whether x is empty, not how its values go with y)."""
    pairs = pairs_of(measurements, {} if raw else indicator_of(schema))
    names = [c.name for c in schema.columns if c.indicator_of is None and c.name != column]
    partners = [n for n in names if frozenset((n, column)) in pairs]
    return partners, [n for n in names if n not in partners]


class MeasurementWarning(UserWarning):
    """A subgroup's estimate from the released rows lies beyond both their noise from the same estimate read off
    a published noisy marginal that holds its columns (:mod:`dpiw.analysis.measured`); or a published marginal
    measured the subgroup, or the column within it, under its noise (the table may hold no such row; how the
    column lies within it is the model's guess)."""


#: the released rows' estimate and a published marginal's reading of it disagree where they lie more than this
#: many of sqrt(their difference's variance over the noise bootstrap's replicates + the released rows' sampling
#: variance) apart (the private rows' sampling left out: they share it); set before it was scored, as a two-sided
#: 95% test. Until 2026-11-28 the first term was the sum of the reading's and the estimate's noise variances,
#: which both come from the same measurements: a test that fired on few of the gaps it was built for
DISAGREE_Z = 1.96

#: the fewest of the bootstrap's replicates whose difference (rows - reading) gives the check its spread (fewer:
#: the sum of the two variances, as before)
MIN_JOINT = 10

#: a noise-aware estimate over a subgroup that no published marginal gave a reading of warns where the least noisy
#: marginal that holds the estimated column with the subgroup's columns measured the subgroup under MIN_SIGNAL noise
#: sds (Bundle._weak); False: as before 2026-11-29's twenty-fourth session (a paired arm)
WEAK_WARNS = True

#: a noise-aware quantile's interval is inverted from the shares at the released values in the window of probabilities
#: q +- INVERT_WINDOW half-widths of its share's interval (:meth:`Bundle._inverted`); set before it was scored
INVERT_WINDOW = 3.0
#: the level the inversion's values are found at: Quantile.ci at another level is Woodruff's alone
INVERT_LEVEL = 0.95
#: True: a noise-aware quantile's interval also holds every value whose share's interval holds q (Bundle._inverted).
#: Off: it failed the rule named before it was scored (bench/README.md, 2026-11-29's twenty-fourth session): no miss
#: of a fresh trial's 231 quantiles or of 75 more on a second table to cover, though the simulated populations' 800
#: went from 96.4% to 97.5% covered at a median width ratio of 1.00 (bench/interval_coverage.py --inverted)
INVERT = False

#: the comparisons :meth:`Bundle.share` takes
COMPARISONS = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal}


class UnmeasuredWarning(UserWarning):
    """An estimate needs a relation between columns that no noisy marginal of the release measured."""


class WithinBinWarning(UserWarning):
    """A subgroup cuts inside a numeric column's bins, inside which the release draws that column apart from the
    rest."""


#: a subgroup whose rows in the bins of a numeric column it cuts, each counted by the share of its bin the subgroup
#: leaves out, make up at least this share of it warns (:class:`WithinBinWarning`); set before it was scored, from a
#: user's trial (months 1-12 in 8 bins: the mean temperature missed in 5 of 12 months, each half of its bin: 50%)
WITHIN_BIN_SHARE = 0.10
#: an integer column of at most this many whole numbers: the warning suggests declaring it categorical
FEW_WHOLE = 24


class TailWarning(UserWarning):
    """A mean rests on a column's far tail: a few rows that the release draws from few, noisy fine cells."""


#: a mean whose released rows' top TAIL_ROWS (by weight) carry at least TAIL_SHARE of its sum above the column's
#: lower bound warns (:class:`TailWarning`). Set before the trials that measured it: heavier than a lognormal of
#: shape 1.2 (13%; 6% for shape 0.78 and an exponential); on real tables the released rows gave 9-21% for
#: txhousing's volume and sales and NMES1988's hospital stays, whose means missed their intervals in 25% of releases
#: or were 2.3 times the truth, and 2-4% for CPS1988's wage, Ecdat HI's husband's income and txhousing's median
TAIL_ROWS = 0.01
TAIL_SHARE = 0.10

#: the rows far out that may be the noise's warn where leaving them out moves the estimate by more than FAR_MOVES of
#: its interval's half width (:meth:`Bundle._far`; the interval reaches that estimate all the same)
FAR_MOVES = 0.25


#: whose published marginal a part of measurements.json is, for a person
WHOSE = {"weights": "the weights'", "generator": "the generator's"}


class CellWarning(UserWarning):
    """A share's threshold (or a quantile) falls inside a fine cell where rows pile up: where they lie inside it
    was not measured, and the interval reaches over them."""


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
    measurements: dict | None = None
    _bootstrap: dict = field(default_factory=dict, repr=False, compare=False)
    _cells: dict = field(default_factory=dict, repr=False, compare=False)
    #: a replicate's subgroup masks, kept only within one quantile's inversion (Bundle._inverted; "on" while it runs)
    _masks: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def ess_fraction(self) -> float:
        """Kish's ESS over the number of rows."""
        return kish_ess(self.weights) / len(self.weights)

    def _column(self, column: str) -> pd.Series:
        if column not in self.data:
            raise DpiwError(f"no column {column!r} in the bundle; it has {list(self.data.columns)}")
        return self.data[column]

    @property
    def _indicator_of(self) -> dict[str, str]:
        """:func:`indicator_of` of the bundle's schema."""
        return indicator_of(self.schema)

    def measured_with(self, column: str) -> tuple[list[str], list[str]] | None:
        """The schema's other columns (0/1 indicator columns left out) that some published marginal holds
        together with ``column``, and the rest; None when the bundle publishes no measurements."""
        if not self.measurements or self.schema is None:
            return None
        return measured_with(self.schema, self.measurements, column)

    @property
    def measured_pairs(self) -> set[frozenset] | None:
        """The pairs of columns some noisy marginal of the release holds together (the generator's, and the
        weights' where they measured their own): an estimate that needs a pair outside this set (a rate in a
        subgroup, a coefficient) shows the generator's model of that relation, not the table's, and its interval
        does not cover that. A `missing: indicator` column counts as its numeric column. None when the bundle
        publishes no measurements."""
        return self._pairs(self.measurements) if self.measurements else None

    @property
    def generator_pairs(self) -> set[frozenset] | None:
        """The pairs of :attr:`measured_pairs` that the generator's own marginals hold: the rest were measured by
        the weights alone, which move the generator's model of that relation only as far as their noisy
        measurement shows it. None when the bundle publishes no measurements."""
        return self._pairs({k: v for k, v in self.measurements.items() if k == "generator"}) if (
            self.measurements) else None

    def _pairs(self, measurements: dict, *, raw: bool = False) -> set[frozenset]:
        """The pairs of columns the marginals of ``measurements`` (parts as in measurements.json) hold together (a
        `missing: indicator` 0/1 column as its numeric column, but ``raw``)."""
        return pairs_of(measurements, {} if raw else self._indicator_of)

    def _cliques(self, measurements: dict, *, raw: bool = False):
        """The set of columns of each marginal of ``measurements`` (a `missing: indicator` 0/1 column as its
        numeric column, but ``raw``)."""
        return cliques_of(measurements, {} if raw else self._indicator_of)

    def measured_with_target(self, feature: str, target: str) -> bool:
        """Whether a published marginal holds ``feature``'s values together with ``target`` (a fit's
        coefficient: ``fit.table.measured``). Unlike :attr:`measured_pairs`, a numeric column's 0/1 `missing:
        indicator` column does not stand for it here: a marginal of (x_missing, y) measures whether x is empty,
        not how its values go with y; the 0/1 column itself counts either (its empty rows sit in x's lowest bin)."""
        if self.measurements is None:
            return False
        raw = self._pairs(self.measurements, raw=True)
        if frozenset((feature, target)) in raw:
            return True
        of = self._indicator_of
        return feature in of and frozenset((of[feature], target)) in raw

    def _where_columns(self, where) -> list[str]:
        """The columns a subgroup reads: a dict's keys, or the columns a function of the rows looks up (``d.age``,
        ``d["age"]``), found by calling it on a recording view of the rows; none for a mask."""
        if isinstance(where, dict):
            for column in where:  # a misspelt column: its error, before any warning about its pairs
                self._column(column)
            from dpiw.analysis.noise_aware import subgroup

            if not subgroup(self.data, where).any():  # a bad label or value: its error, before any warning
                raise DpiwError(f"where: no synthetic row is in the subgroup {where}" + self._empty_why(where))
            return list(where)
        if not callable(where):
            return []
        data, seen = self.data, []

        class Rows:  # the rows, noting which columns are read
            def __getattr__(self, name):
                if name in data.columns:
                    seen.append(name)
                return getattr(data, name)

            def __getitem__(self, key):
                for k in key if isinstance(key, list) else [key]:
                    if isinstance(k, str) and k in data.columns:
                        seen.append(k)
                return data[key]

            def get(self, key, default=None):
                return self[key] if key in data.columns else default

        try:
            where(Rows())
        except Exception:  # noqa: BLE001 - a function that needs the frame itself: its columns stay unknown
            return []
        return list(dict.fromkeys(seen))

    def _none_in(self, where):
        """The error for a subgroup no released row is in."""
        raise DpiwError("where: no synthetic row is in this subgroup (the release drew none there: where a "
                        "numeric column's noisy fine histogram held nothing above its noise, as at a sparse "
                        "edge of its values, it releases no value; b.bins(column) lists its bins, and a "
                        "subgroup of whole bins has rows)" + self._held(where))

    def _held(self, where) -> str:
        """What the released rows hold of each numeric column a subgroup function reads (for an empty subgroup:
        a trial's `d.sales > 5000`, 2.5% of the table, where the release's largest sales were 4,922)."""
        if not callable(where) or _is_mask(where):
            return ""
        said = []
        for column in self._where_columns(where):
            spec = self._spec(column)
            values = self.data[column] if spec is not None and spec.is_numeric else None
            if values is not None and values.notna().any():
                said.append(f"'{column}' {bin_text(float(values.min()), float(values.max()))}")
        return ("; the released rows hold " + ", ".join(said) + " (the noise-aware interval of a share, "
                "b.share(column, '>', value), says how many rows of the table may lie past them)") if said else ""

    def _empty_why(self, where: dict) -> str:
        """Why a subgroup of whole numbers holds no released row: each integer column's bin that holds the asked
        values, the values its released rows hold, and the subgroup of the whole bin that has rows."""
        said = []
        for column, value in where.items():
            spec = self._spec(column)
            if spec is None or not spec.integer or self._bins(column) is None:
                continue
            asked = set(value) if isinstance(value, list | tuple | set) else {value}
            col = self.data[column]
            for lo, hi in self.bins(column):
                if any(lo <= v <= hi for v in asked) and not col.isin(asked).any():
                    held = sorted(int(v) for v in col[col.between(lo, hi)].unique())
                    shown = ", ".join(map(str, held[:8])) + (", ..." if len(held) > 8 else "")
                    said.append(f"the bin {bin_text(lo, hi)} of {column!r} holds released rows of "
                                f"{shown or 'no value'} only (inside a bin the values come from the column's fine "
                                "histogram, and a value whose noisy count fell within the noise holds none); the "
                                f"whole bin, where=lambda d: d[{column!r}].between({lo:g}, {hi:g}), has rows")
                    break
        return ": " + "; ".join(said) if said else ""

    def _subgroup_checks(self, call: str, column: str, where) -> None:
        """An estimate of ``column`` over the subgroup ``where``: warn where the pairs it needs were never measured
        (:meth:`_unmeasured`) and where it cuts inside another numeric column's bins (:meth:`_cuts`)."""
        columns = self._where_columns(where)
        self._unmeasured(call, column, columns, stacklevel=4)
        self._cuts(call, column, where, columns)

    def bins(self, column: str) -> list[tuple[float, float]]:
        """A numeric column's released bins, each as its lowest and highest value in the column's units (whole
        numbers for an integer column; a continuous column's edges, to a millionth of its bounds' span): inside a
        bin, the release draws the column's values from its own fine histogram, apart from every other column, so
        a subgroup whose edges fall between bins keeps the table's relations and one that cuts inside a bin does
        not (:class:`WithinBinWarning`)."""
        spec, nb = self._spec(column), None
        if spec is not None and spec.is_numeric:
            nb = self._bins(column)
        if nb is None:
            raise DpiwError(f"bins: {column!r} is not a numeric column of a bundle that publishes its generator's "
                            "bins (measurements.json)")
        from dpiw.analysis.bin_bias import bin_ends

        lowest, highest = bin_ends(nb, spec)
        if not spec.integer:  # to a millionth of the bounds' span: the bin after a spike at 0 starts at 0, not 3.9e-10
            digits = max(0, 6 - int(np.floor(np.log10(spec.upper - spec.lower))))
            lowest, highest = np.round(lowest, digits), np.round(highest, digits)
        return [(float(a) + 0.0, float(b) + 0.0) for a, b in zip(lowest, highest, strict=True)]  # no -0

    def _cuts(self, call: str, column: str, where, columns) -> None:
        """Warn (:class:`WithinBinWarning`) where the subgroup ``where`` cuts inside the bins of a numeric column
        other than ``column`` (:func:`dpiw.analysis.bin_bias.cut_bins`: the subgroup's rows in a cut bin, each
        counted by the share of the bin the subgroup leaves out) by at least :data:`WITHIN_BIN_SHARE` of it."""
        if where is None or _is_mask(where):
            return
        from dpiw.analysis import bin_bias

        for c in columns:
            spec = self._spec(c)
            nb = self._bins(c) if c != column and spec is not None and spec.is_numeric else None
            if nb is None:
                continue
            try:
                share, cut = bin_bias.cut_bins(where, self.data, self.weights, c, nb, spec)
            except DpiwError:  # a function that fails on values moved inside their bins: its subgroup is unknown
                continue
            if share < WITHIN_BIN_SHARE:
                continue
            ranges = self.bins(c)
            said = ", ".join(f"{bin_bias.bin_text(*ranges[k])} ({held:.0%} of the bin's rows in the subgroup, "
                             f"{of:.0%} of the subgroup)" for k, (held, of) in cut.items())
            whole = int(spec.upper - spec.lower) + 1 if spec.integer else None
            few = (f", and `type: categorical` for {c!r} in the next release keeps each of its {whole} whole numbers "
                   f"apart (here in {nb.card} bins)") if whole is not None and whole <= FEW_WHOLE else ""
            warnings.warn(f"{call}: the subgroup cuts inside the bin{'s' * (len(cut) > 1)} of {c!r} {said}: inside "
                          f"a bin the release draws {c!r} apart from every other column, so the subgroup's rows there "
                          "carry their whole bin's relation to the rest, not their own, and the interval does not "
                          f"cover that. A subgroup whose edges fall between bins (b.bins({c!r})) keeps the "
                          f"relation{few}", WithinBinWarning, stacklevel=4)

    def _unmeasured(self, call: str, column: str, others, *, among: bool = False, stacklevel: int = 3) -> None:
        """Warn (:class:`UnmeasuredWarning`) when ``column`` and some of ``others`` (a subgroup's columns, a
        model's features) were measured together in no marginal of the release; with ``among`` (a model's
        features, each coefficient adjusted for the others) also pairs of ``others`` never measured together."""
        others = list(dict.fromkeys(others))
        pairs = self.measured_pairs
        if pairs is None:
            return
        of = self._indicator_of
        base = of.get(column, column)
        missing = [o for o in others if of.get(o, o) != base and (not self.measured_with_target(o, column) if among
                                                                 else frozenset((of.get(o, o), base)) not in pairs)]
        apart = [(a, b) for i, a in enumerate(others) for b in others[i + 1:] if among
                 and of.get(a, a) != of.get(b, b) and frozenset((of.get(a, a), of.get(b, b))) not in pairs]
        said = ([f"{column!r} together with {' or '.join(map(repr, missing))}"] if missing else []) + (
            [", ".join(f"{a!r} with {b!r}" for a, b in apart) + " (each coefficient is adjusted for the other "
             "features through their relation)"] if apart else [])
        which = (f"; for a linear model, the coefficients of {', '.join(map(repr, missing))} and the intercept(s) are "
                 "those whose feature was not measured with the target (False in the fit's table.measured, † when "
                 "printed)") if among and missing else ""
        if said:
            warnings.warn(f"{call}: no marginal of the release measured {'; nor '.join(said)} (b.measured_pairs): "
                          "the estimate shows the generator's model of that relation, not the table's, and its "
                          f"interval does not cover that{which}", UnmeasuredWarning, stacklevel=stacklevel)

    @property
    def noise_aware(self) -> bool:
        """Whether the bundle publishes what a noise-aware interval needs (a marginal-based generator's
        measurements and the schema)."""
        return bool(self.measurements and "generator" in self.measurements and self.schema is not None)

    def bootstrap(self, *, replicates: int | None = None, seed: int = 0):
        """The noise-aware bootstrap of this bundle (:class:`dpiw.analysis.noise_aware.NoiseBootstrap`), made on
        first use and kept (and cached on disk between processes)."""
        from dpiw.analysis import noise_aware

        key = (replicates or noise_aware.REPLICATES, seed)
        if key not in self._bootstrap:
            fitted = [r for r in self.manifest.get("records", []) if r.get("stage") == "fit_weights"]
            reuse = bool(fitted and fitted[0].get("details", {}).get("reused"))
            # the release's tau for marginal-matching weights (None: its weights were 1), which every noise
            # replicate refits at; a record without one: the replicates search as the release did
            details = fitted[0].get("details", {}) if fitted else {}
            tau = details["tau"] if "tau" in details else "search"
            # each replicate draws as many rows as the bundle holds (at most REPLICATE_ROWS)
            rows = min(noise_aware.REPLICATE_ROWS, len(self.data))
            self._bootstrap[key] = noise_aware.NoiseBootstrap(self.schema, self.measurements, reuse=reuse,
                                                              replicates=key[0], rows=rows, seed=seed, tau=tau)
        return self._bootstrap[key]

    def _estimate(self, values, where, interval: str) -> Estimate:
        """The weighted mean of ``values(data) -> array`` over the subgroup ``where``, with its interval."""
        from dpiw.analysis import noise_aware

        if interval not in ("auto", "noise", "sampling"):
            raise DpiwError(f"interval must be 'auto', 'noise' or 'sampling', got {interval!r}")
        is_mask = _is_mask(where)
        if interval == "noise" and not self.noise_aware:
            raise DpiwError("interval='noise' needs a bundle that publishes its generator's measurements "
                            "(measurements.json: generators mst, aim) and its schema")
        if interval == "noise" and is_mask:
            raise DpiwError("interval='noise': give where as {column: label} or a function of the rows (a boolean "
                            "mask cannot be applied to the bootstrap's rows)")
        mask = self._subgroup(where)
        if not mask.any():
            self._none_in(where)
        h = np.asarray(values(self.data), float)
        mask = mask & ~np.isnan(h)  # a `missing: indicator` column's empty rows: the mean of the rows with a value
        if not mask.any():
            raise DpiwError("where: every synthetic row of this subgroup is empty in this column")
        est = weighted_mean(h[mask], self.weights[mask])
        if interval == "auto" and is_mask and self.noise_aware:  # narrower than the same subgroup as a function
            warnings.warn("where: a boolean mask gives the interval of the synthetic rows' sampling alone, without "
                          "the DP noise (a mask of these rows cannot be applied to the bootstrap's rows); for the "
                          "noise-aware interval give the subgroup as {column: label} or a function of the rows, "
                          "e.g. where=lambda d: d.sex == 'Male'", UserWarning, stacklevel=3)
        if interval == "sampling" or (interval == "auto" and (is_mask or not self.noise_aware)):
            return est
        n_private = float(self.measurements["generator"]["total"])
        parts = noise_aware.sampling_variances(h, self.weights, mask, n_private)
        def statistic(data, w):
            v = np.asarray(values(data), float)
            return v, self._replicate_subgroup(data, where) & ~np.isnan(v)

        boot = self.bootstrap()
        parts["noise"], _ = noise_aware.noise_variance(boot, statistic)
        bias = noise_aware.weights_bias(boot, statistic)
        return Estimate(est.value, noise_aware.total_se(parts), est.ess, parts, NOISE_AWARE, bias=bias,
                        biases={"weights": bias})

    def _replicate_subgroup(self, data: pd.DataFrame, where) -> np.ndarray:
        """The subgroup ``where`` of a replicate's rows (:func:`~dpiw.analysis.noise_aware.subgroup`); within one
        quantile's inversion (:meth:`_inverted`, which asks for the shares at tens of values over the same subgroup
        of every replicate) remembered for that replicate and that ``where`` (the same objects, held so their ids
        stay theirs), and never across calls: a ``where`` the user changes between two is asked again."""
        from dpiw.analysis import noise_aware

        if not self._masks.get("on"):
            return noise_aware.subgroup(data, where)
        key = (id(data), id(where))
        held = self._masks.get(key)
        if held is not None and held[0] is data and held[1] is where:
            return held[2]
        mask = np.array(noise_aware.subgroup(data, where), dtype=bool)  # a copy: never the user's own array
        mask.flags.writeable = False  # shared by the inversion's tests
        self._masks[key] = (data, where, mask)
        return mask

    def _middle(self, column: str):
        """A numeric column's value in each of its bins where no released row says it: the bin's middle."""
        spec = self._spec(column)
        if spec is None or not spec.is_numeric or self._bins(column) is None:
            return None
        ranges = self.bins(column)
        return lambda k: (ranges[k][0] + ranges[k][1]) / 2 if k < len(ranges) else np.nan

    def _labels(self, where) -> dict | None:
        """A subgroup of categories (a dict of labels on categorical columns): per column, whether each of its
        categories is in it; None for any other subgroup."""
        if not isinstance(where, dict):
            return None
        out = {}
        for column, value in where.items():
            col = self.data[column]
            if not isinstance(col.dtype, pd.CategoricalDtype):
                return None
            values = value if isinstance(value, list | tuple | set) else [value]
            out[column] = np.isin(np.asarray(col.cat.categories, dtype=object), np.asarray(values, dtype=object))
        return out

    def _against_marginal(self, call: str, column: str, where, values, est: Estimate,
                          fallback=None) -> Estimate:
        """A noise-aware estimate over a subgroup (or all rows: the column's one-way marginal), checked against the
        same estimate read off the published noisy marginal that holds ``column`` and the subgroup's columns
        (:func:`dpiw.analysis.measured.direct`): where
        the two lie more than :data:`DISAGREE_Z` standard errors of their difference apart
        (:meth:`_difference_variance`), the interval reaches over the marginal's reading (:attr:`Estimate.measured`,
        with how many standard errors apart) and :class:`MeasurementWarning` says so. ``values(data)``: the
        estimated quantity per row; ``fallback(bin)``: its value in a bin of ``column`` that no released row
        holds."""
        if est.covers != NOISE_AWARE or _is_mask(where) or self.scaled is None:
            return est
        from dpiw.analysis import measured
        from dpiw.analysis.noise_aware import subgroup

        where_columns, labels = self._where_columns(where), self._labels(where)
        read = measured.direct(self.schema, self.measurements, self._row_cells(), column, where_columns,
                               np.asarray(values(self.data), float), self.weights, subgroup(self.data, where),
                               fallback, labels)
        if read is None:
            self._thin(call, where, where_columns, labels) or self._weak(call, column, where, where_columns, labels)
            self._unchecked(call, column, where, where_columns)
            return est
        est = est if where is None else self._floor(call, column, read, est)  # all rows: far rows' (:meth:`_far`)
        parts = est.parts or {}
        joint = self._difference_variance(read, column, where, where_columns, labels, values, fallback)
        spread = (read.se ** 2 + parts.get("noise", 0.0)) if joint is None else joint
        apart = abs(est.value - read.value) / np.sqrt(spread + parts.get("synthetic_rows", 0.0))
        if not apart > DISAGREE_Z:
            return est
        se = float(np.sqrt(read.se ** 2 + parts.get("private_rows", 0.0)))
        whose, why = (("the weights'", "the weights stop fitting where the residual over all their marginals "
                       "together reaches the noise's size, which can leave a relation of a few cells")
                      if read.part == "weights" else
                      ("the generator's", "the generator's model fits all its marginals at once, each cell at or "
                       "above zero"))
        lo, hi = read.value - 1.96 * se, read.value + 1.96 * se
        digits = interval_digits(lo, hi)
        warnings.warn(
            f"{call}: {whose} noisy marginal of {', '.join(map(repr, read.columns))} reads it as "
            f"{fixed(read.value, digits)} (95% interval {fixed(lo, digits)} to {fixed(hi, digits)}), "
            f"{apart:.1f} standard errors from the released rows' {fixed(est.value, digits)}: the rows fall short of "
            f"what that marginal measured ({why}), and the interval reaches over its reading", MeasurementWarning,
            stacklevel=3)
        return replace(est, measured=(read.value, se, float(apart)))

    def _unchecked(self, call: str, column: str, where, where_columns: list[str]) -> None:
        """Warn (:class:`UnmeasuredWarning`) where a subgroup's estimate needs a pair that only the weights' marginals
        measured (the generator's model of it, moved as far as the weights' fit goes) and no published marginal can
        read the estimate to check the rows against (the subgroup too thin for that marginal's noise, or cut inside
        its cells): a trial's mean age of those in poor health, 38.9 (36.6 to 40.6) in 3 releases of 3 against
        41.8, held by the weights' 32-cell marginal at 2.4 noise sds, unwarned."""
        if where is None or self.measured_pairs is None:
            return
        of = self._indicator_of
        base, generator = of.get(column, column), self.generator_pairs or set()
        only = [c for c in dict.fromkeys(where_columns) if of.get(c, c) != base
                and frozenset((of.get(c, c), base)) in self.measured_pairs
                and frozenset((of.get(c, c), base)) not in generator]
        if only:
            wanted = {of.get(c, c) for c in (column, *where_columns)}
            held = any(wanted <= cols for cols in self._cliques(self.measurements))
            why = ("too few of its rows over the noise of the marginal that holds its columns, or a subgroup cut "
                   "inside that marginal's cells" if held else
                   f"no marginal holds {column!r} with all of the subgroup's columns")
            warnings.warn(f"{call}: only the weights' noisy marginals measured {column!r} together with "
                          f"{' or '.join(map(repr, only))}, and none reads this subgroup's estimate to check the rows "
                          f"against ({why}): the estimate is the generator's model of that relation, moved only as "
                          "far as the weights' fit goes, and its interval does not cover that", UnmeasuredWarning,
                          stacklevel=4)

    def _quantity(self, column: str, label=None):
        """What ``b.mean(column)`` (``label`` None) or ``b.rate(column, label)`` averages, as a function of the rows,
        and its value in a bin of the column that no released row holds (:func:`dpiw.analysis.measured.direct`'s
        fallback): the column itself and the bin's middle; whether the row holds the label (its code, compared in
        numpy: an empty value's code, -1, is not it) and 1 in the label's own bin."""
        if label is None:
            return (lambda data: data[column].to_numpy(float)), self._middle(column)
        code = list(self.data[column].cat.categories).index(label)
        return (lambda data: (data[column].cat.codes.to_numpy() == code).astype(float)), (lambda k: float(k == code))

    def _row_cells(self) -> dict:
        """The released rows' cells of each published part (:func:`dpiw.analysis.measured.cells_of`), made once."""
        from dpiw.analysis import measured

        if "rows" not in self._cells:
            self._cells["rows"] = measured.cells_of(self.schema, self.measurements, self.scaled)
        return self._cells["rows"]

    def _apart_bound(self, column: str, label, where) -> float:
        """At most how many standard errors :meth:`_against_marginal` can find ``b.mean(column, where)`` (``label``
        None) or ``b.rate(column, label, where)`` from its published marginal's reading: the difference over the
        synthetic rows' part of the check's spread alone (the rest of it, the noise's, only adds), 0 where no
        marginal reads it, infinite where the label is none of the column's (the estimate's own error then
        speaks). No replicate is touched: a fit's checks (:mod:`dpiw.analysis.fit`) skip a subgroup this cannot
        bring past their family-wise threshold."""
        from dpiw.analysis import measured, noise_aware

        if self.scaled is None or not self.noise_aware or _is_mask(where):
            return 0.0
        if label is not None and label not in list(self.data[column].cat.categories):
            return np.inf
        values, fallback = self._quantity(column, label)
        h = values(self.data)
        inside = noise_aware.subgroup(self.data, where)
        read = measured.direct(self.schema, self.measurements, self._row_cells(), column,
                               self._where_columns(where), h, self.weights, inside, fallback, self._labels(where))
        mask = inside & ~np.isnan(h)
        if read is None or not mask.any() or not self.weights[mask].sum() > 0:
            return 0.0
        n_private = float(self.measurements["generator"]["total"])
        synthetic = noise_aware.sampling_variances(h, self.weights, mask, n_private)["synthetic_rows"]
        value = noise_aware.weighted_parts(h[mask], self.weights[mask])[0]
        return abs(value - read.value) / np.sqrt(synthetic) if synthetic > 0 else np.inf

    def _weak(self, call: str, column: str, where, where_columns: list[str], labels) -> None:
        """Warn (:class:`MeasurementWarning`), where no published marginal gave a reading of the estimate
        (:func:`~dpiw.analysis.measured.direct`), if the least noisy one that holds ``column`` with the subgroup's
        columns measured the subgroup's rows, summed over the column's cells, under
        :data:`~dpiw.analysis.measured.MIN_SIGNAL` noise sds of that sum (:data:`WEAK_WARNS`): how the column lies
        within the subgroup was measured under its noise, so the released rows show what the model fitted to noisy
        counts makes of it from the rest of the table (a trial's mean schooling of those in poor health, 12.42
        (10.85 to 13.94) against 10.16: the (educ, health) marginal read those 231 rows at -107 in all, its noise
        sd 53 a cell), which no interval here covers."""
        if not WEAK_WARNS or where is None:
            return
        from dpiw.analysis import measured
        from dpiw.analysis.noise_aware import subgroup

        size = measured.subgroup_size(self.schema, self.measurements, self._row_cells(), where_columns,
                                      subgroup(self.data, where), labels, with_column=column)
        if size is None or not size[0] < measured.MIN_SIGNAL * size[1]:
            return
        count, sd, part, columns = size
        warnings.warn(f"{call}: {WHOSE[part]} noisy marginal of {', '.join(map(repr, columns))}, the best that holds "
                      f"{column!r} with the subgroup, measured its rows at {count:.0f} in all (noise sd {sd:.0f} for "
                      f"that sum, under {measured.MIN_SIGNAL:g} sds): how {column!r} lies within this subgroup was "
                      "measured under its noise, so the released rows show what a model fitted to noisy counts makes "
                      "of it from the rest of the table, which the interval does not cover", MeasurementWarning,
                      stacklevel=4)

    def _thin(self, call: str, where, where_columns: list[str], labels) -> bool:
        """Warn (:class:`MeasurementWarning`) where the published marginal that holds the subgroup's columns measured
        it within :data:`~dpiw.analysis.measured.FLOOR_SDS` noise sds of no row: its released rows may all be the
        noise's (a trial's computers with 12 MB of memory, none in the table: 12-22 released rows a release, and a
        mean price of 1,500 (995 to 2,005), unwarned)."""
        from dpiw.analysis import measured
        from dpiw.analysis.noise_aware import subgroup

        if where is None:
            return False
        size = measured.subgroup_size(self.schema, self.measurements, self._row_cells(), where_columns,
                                      subgroup(self.data, where), labels)
        if size is None or not size[0] < measured.FLOOR_SDS * size[1]:
            return False
        count, sd, part, columns = size
        warnings.warn(f"{call}: {WHOSE[part]} noisy marginal of {', '.join(map(repr, columns))} measured this "
                      f"subgroup at {count:.0f} rows (noise sd {sd:.0f}), within {measured.FLOOR_SDS:g} noise sds of "
                      "none: the table may hold no such row, and its released rows may all be the noise's (a model "
                      "fitted to noisy counts, each cell at or above zero, gives every such cell some rows); neither "
                      "the estimate nor its interval can tell", MeasurementWarning, stacklevel=4)
        return True

    def _floor(self, call: str, column: str, read, est: Estimate) -> Estimate:
        """Where the subgroup's released rows lie in bins of ``column`` that the marginal read off
        (:func:`dpiw.analysis.measured.direct`) measured within :data:`~dpiw.analysis.measured.FLOOR_SDS` noise sds of
        nothing within the subgroup, they may be the noise's: the generator fits its noisy counts with every cell
        at or above zero, so a cell that holds nothing gets some rows (a trial's hourly weather, the mean
        temperature in July: 8.5% of the released July rows below 70 degrees, in bins measured at -41 to 47 with
        a noise sd of 39, where the table has none below 62 and 7% above; 77.4, its interval 75.8 to 79.7, against
        80.6).
        The interval reaches the estimate without them, as it does for far rows (:meth:`_far`), and a
        :class:`MeasurementWarning` says so where that moves it by more than :data:`FAR_MOVES` of its half
        width."""
        from dpiw.analysis.measured import FLOOR_SDS

        if read.floored is None or est.covers != NOISE_AWARE:
            return est
        d = est.value - read.floored
        est = replace(est, reach=(est.reach[0] + max(d, 0.0), est.reach[1] + max(-d, 0.0)))
        if abs(d) > FAR_MOVES * 1.96 * est.se:
            cells = "bins" if self.schema.column(column).is_numeric else "categories"  # a rate's column: labels
            warnings.warn(
                f"{call}: {read.floored_out:.1%} of these rows lie in {cells} of {column!r} where "
                f"{WHOSE[read.part]} noisy marginal "
                f"of {', '.join(map(repr, read.columns))} measured this subgroup within "
                f"{FLOOR_SDS:g} noise sds of nothing: they may be the noise's (a model fitted to noisy "
                "counts, each cell at or above zero, gives every such cell some rows), and without them "
                f"{'that share' if ', through share(' in call else 'the estimate'} is {read.floored:.4g}, which the "
                "interval reaches", MeasurementWarning, stacklevel=4)
        return est

    def _difference_variance(self, read, column: str, where, where_columns: list[str], labels, values,
                             fallback) -> float | None:
        """The variance of (the released rows' estimate - the marginal's reading) over the noise bootstrap's
        replicates: each replicate's rows and weights against the same marginal of that replicate's own re-noised
        measurements (:meth:`dpiw.analysis.noise_aware.NoiseBootstrap.measured`), which its rows were fitted to.
        The two share the measurements' noise, so their difference varies less than the sum of their variances
        (the check's test before; it fired on few of the gaps it was built for). None where fewer than
        :data:`MIN_JOINT` replicates give a reading."""
        from dpiw.analysis import measured
        from dpiw.analysis.noise_aware import rescaled, subgroup, weighted_parts

        boot = self.bootstrap()
        if "replicates" not in self._cells:
            self._cells["replicates"] = [(rep, m, measured.cells_of(self.schema, m, rescaled(rep.data, self.schema)))
                                         for rep, m in zip(boot.made(), boot.measured(), strict=True)]
        diffs, names = [], self.schema.names
        for rep, m, cells in self._cells["replicates"]:
            if read.part not in cells:
                return None
            # the marginal the release was read off, not the one of least error in this replicate
            part = {**m[read.part], "measurements": [x for x in m[read.part]["measurements"]
                                                     if tuple(names[j] for j in x["clique"]) == read.columns]}
            h = np.asarray(values(rep.data), float)
            inside = subgroup(rep.data, where)
            mask = inside & ~np.isnan(h)
            if not mask.any() or not rep.weights[mask].sum() > 0:
                continue
            got = measured.direct(self.schema, {read.part: part}, {read.part: cells[read.part]}, column,
                                  where_columns, h, rep.weights, inside, fallback, labels)
            if got is not None:
                diffs.append(weighted_parts(h[mask], rep.weights[mask])[0] - got.value)
        return float(np.var(diffs, ddof=1)) if len(diffs) >= MIN_JOINT else None

    def _subgroup(self, where) -> np.ndarray:
        """The rows in the subgroup ``where`` (None, a mapping, a function of the rows or a boolean mask)."""
        from dpiw.analysis import noise_aware

        return self._mask(where) if _is_mask(where) else noise_aware.subgroup(self.data, where)

    def _mask(self, where) -> np.ndarray:
        mask = np.asarray(where, dtype=bool)
        if mask.shape != (len(self.data),):
            raise DpiwError(f"where: a boolean mask of the {len(self.data)} rows, got shape {mask.shape}")
        return mask

    def mean(self, column: str, where=None, *, interval: str = "auto") -> Estimate:
        """The weighted mean of a numeric column, in its units, over a subgroup or all rows.

        Parameters
        ----------
        column : str
            A numeric column.
        where : None, dict, callable or boolean mask
            The subgroup: ``{"smoker": "yes"}``, a function of the decoded rows (``lambda d: d.age > 60``), or a
            boolean mask of the rows (then the interval comes from the synthetic rows alone).
        interval : {"auto", "noise", "sampling"}
            ``noise``: noise-aware (:mod:`dpiw.analysis.noise_aware`: the private rows' sampling, the mechanisms' noise,
            the synthetic rows' sampling); ``sampling``: from the synthetic rows alone (Kish's ESS);
            ``auto`` (default): noise-aware where the bundle allows it.
        """
        self._numeric(f"mean({column!r})", column)
        self._subgroup_checks(f"mean({column!r}, where={_said(where)})", column, where)
        values, fallback = self._quantity(column)
        est = self._estimate(values, where, interval)
        est = self._against_marginal(f"mean({column!r}, where={_said(where)})", column, where, values, est,
                                     fallback)
        spec = self._spec(column)
        if spec is None or not spec.is_numeric:
            return est
        if est.covers == NOISE_AWARE:
            est = replace(est, **self._bin_bias(column, spec, where, est))
        said = f"mean({column!r}" + ("" if where is None else f", where={_said(where)}") + ")"
        est = self._far(said, column, where, lambda v: v, est)
        self._tail(said, column, spec, where)
        self._void(said, column)
        return replace(est, limits=(spec.lower, spec.upper))

    def _far(self, call: str, column: str, where, of, est: Estimate, stacklevel: int = 3,
             warn: bool = True) -> Estimate:
        """Where released rows of ``column`` lie far past a long stretch its fine histogram measured empty, with
        its tree's measurement there within its noise of nothing (:func:`dpiw.analysis.bin_bias.far_rows`, which
        `dpiw release` and the datasheet name), they may be the noise's: the estimate over the subgroup's other
        rows is then the one to reach, so a noise-aware interval reaches it (a trial's count of hospital visits:
        0.7% of its rows at 144-200, none above 51 in the table, its mean 8 times the truth), and a
        :class:`TailWarning` says so where that moves the interval by more than :data:`FAR_MOVES` of its half
        width. ``of``: what the estimate averages, from the column's values (the values themselves for a mean);
        ``warn``: False for a quantile's share (the quantile warns with its own figure)."""
        found = self._far_rows(column, where)
        if found is None:
            return est
        x, mask, rest, _ = found
        w = self.weights
        d = float(np.average(of(x[mask]), weights=w[mask]) - np.average(of(x[rest]), weights=w[rest]))
        noise = est.covers == NOISE_AWARE
        if noise:
            est = replace(est, reach=(est.reach[0] + max(d, 0.0), est.reach[1] + max(-d, 0.0)))
        if warn and abs(d) > FAR_MOVES * 1.96 * est.se:
            self._far_warning(call, column, found, f"{est.value - d:.4g}", noise, stacklevel)
        return est

    def _far_rows(self, column: str, where) -> tuple | None:
        """The column's values, the subgroup's rows with a value, those of them not far out (:meth:`_far`) and
        the far ranges; None where the subgroup has no far row or nothing else."""
        if "far" not in self._cells:
            from dpiw.analysis import bin_bias

            self._cells["far"] = [] if self.schema is None else bin_bias.far_rows(self.schema, self.measurements)
        ranges = [(lo, hi) for name, _, lo, hi in self._cells["far"] if name == column]
        if not ranges:
            return None
        x = self.data[column].to_numpy(float)
        mask = self._subgroup(where) & ~np.isnan(x)
        far = np.zeros(x.size, bool)
        for lo, hi in ranges:
            far |= (x >= lo) & (x <= hi)
        rest = mask & ~far
        return (x, mask, rest, ranges) if (mask & far).any() and rest.any() else None

    def _far_warning(self, call: str, column: str, found: tuple, without: str, reached: bool, stacklevel: int):
        """The :class:`TailWarning` of :meth:`_far`: ``without`` is the estimate without the far rows."""
        _, mask, rest, ranges = found
        share = float(self.weights[mask & ~rest].sum() / self.weights[mask].sum())
        warnings.warn(
            f"{call}: {share:.2%} of these rows lie at {', '.join(bin_text(lo, hi) for lo, hi in ranges)}, past a "
            f"long stretch {column!r}'s fine histogram measured empty, where its tree's measurement is within 2 "
            f"noise sds of nothing: they may be the noise's, or a few of the table's far rows put where the noise "
            f"left them (the measurement cannot tell), and without them the estimate is "
            f"{without}, " + ("which the interval reaches" if reached else "which this interval does not show")
            + f"; a release whose schema bounds {column!r} tighter (if the codebook does) leaves them out",
            TailWarning, stacklevel=stacklevel + 1)

    def _tail(self, call: str, column: str, spec, where) -> None:
        """Warn (:class:`TailWarning`) when the top :data:`TAIL_ROWS` of the subgroup's released rows carry at
        least :data:`TAIL_SHARE` of its sum above the column's lower bound."""

        x = self.data[column].to_numpy(float) - spec.lower
        mask = self._subgroup(where) & ~np.isnan(x)
        x, w = x[mask], self.weights[mask]
        order = np.argsort(-x, kind="stable")
        x, w = x[order], w[order]
        total = float(x @ w)
        if total <= 0:
            return
        # the top TAIL_ROWS of the weight: whole rows, and the part of the row that crosses the line (a row that
        # alone weighs more than that counts with the part of its weight inside it)
        inside = np.clip(TAIL_ROWS * w.sum() - (np.cumsum(w) - w), 0.0, w)
        share = float(x @ inside) / total
        if share >= TAIL_SHARE:
            sub = "" if where is None else f", where={_said(where)}"
            warnings.warn(
                f"{call}: the top {TAIL_ROWS:.0%} of these rows carry {share:.0%} of the mean above the lower bound: "
                "it rests on the column's far tail, a few rows the release draws from few, noisy fine cells (the "
                "ones its tree measured below its noise are emptied, their rows moved), and the interval does not "
                f"cover that; the median (b.quantile({column!r}{sub})) or a share above a value (b.share({column!r}, "
                f"'>', value{sub})) rest on the column's body", TailWarning, stacklevel=3)

    def _void(self, call: str, column: str) -> None:
        """Warn (:class:`TailWarning`) where released rows of ``column`` lie in bins its fine histogram measured
        empty (:meth:`dpiw.sdgp.binning.NumericBins.void`): the generator's marginals' noise put them there, and a
        release moves them since 2026-11-28, so only an older bundle has them (its bootstrap's replicates move
        theirs, so its interval does not cover them either)."""
        nb = self._bins(column)
        void = np.zeros(0, bool) if nb is None or self.scaled is None else nb.void()
        if not void.any():
            return
        has = ~np.isnan(self.data[column].to_numpy(float))  # an empty row's value is not released
        inside = void[nb.cells(self.scaled[column].to_numpy(float))] & has
        if not inside.any():
            return
        share = float(self.weights[inside].sum() / self.weights[has].sum())
        ranges = [bin_text(*r) for r, v in zip(self.bins(column), void, strict=True) if v]
        warnings.warn(f"{call}: {share:.1%} of the released rows lie in bins of {column!r} its fine histogram "
                      f"measured empty ({', '.join(ranges)}): the noise of the generator's marginals put them there "
                      "(a bundle made before 2026-11-28; a release now moves them to the measured bins), and the "
                      "estimate and its interval do not cover that", TailWarning, stacklevel=3)

    def _bin_bias(self, column: str, spec, where, est: Estimate, of=None) -> dict:
        """A noise-aware mean's bias with the bins' part added (:mod:`dpiw.analysis.bin_bias`): how far the values
        drawn inside each bin from the column's own histogram put a subgroup's mean off. With ``of`` (a function
        of the column's values in its units, e.g. whether each lies above a threshold), the mean of ``of`` of
        them."""
        from dpiw.analysis import bin_bias, noise_aware

        nb = self._bins(column)
        if nb is None or bin_bias.depends_on(where, self.data, column, nb, spec):
            return {}
        if where is None:  # all rows: the tilt is flat, the part 0
            return {"biases": {**(est.biases or {"weights": est.bias}), "bins": 0.0}}
        x = self.data[column].to_numpy(float)
        has = ~np.isnan(x)
        mask = noise_aware.subgroup(self.data, where)[has]
        if of is not None:
            width = lambda u: of(np.rint(spec.from_unit(u)) if spec.integer else spec.from_unit(u))  # noqa: E731
        else:
            width = spec.from_unit if spec.scale == "log" else spec.upper - spec.lower
        part = bin_bias.within_bin_bias(nb, spec.to_unit(x[has]), self.weights[has], mask, width)
        biases = {**(est.biases or {"weights": est.bias}), "bins": part}
        return {"bias": float(sum(biases.values())), "biases": biases}

    def _spec(self, column: str):
        """The column's public schema entry, or None (a bundle without a schema)."""
        return self.schema.column(column) if self.schema is not None and column in self.schema.names else None

    def _bins(self, column: str):
        """The column's released bins (:class:`dpiw.sdgp.binning.NumericBins`), or None where the bundle publishes
        no generator measurements."""
        from dpiw.analysis import bin_bias

        binning = bin_bias.binning_of(self.schema, self.measurements)
        return None if binning is None else binning.numeric.get(column)

    def _numeric(self, call: str, column: str):
        """The column, refused unless numeric."""
        col = self._column(column)
        if isinstance(col.dtype, pd.CategoricalDtype) or not pd.api.types.is_numeric_dtype(col):
            raise DpiwError(f"{call}: column {column!r} is categorical; the share of one of its labels is "
                            f"rate({column!r}, label)")
        return col

    def share(self, column: str, op: str, value: float, where=None, *, interval: str = "auto") -> Estimate:
        """The weighted share of rows whose numeric ``column`` is ``op`` ``value``, over a subgroup or all rows:
        ``b.share("spend", ">", 100)`` (``where`` and ``interval`` as for :meth:`mean`; rows without a value, of a
        `missing: indicator` column, are left out as for :meth:`mean`).

        Parameters
        ----------
        column : str
            A numeric column.
        op : {"<", "<=", ">", ">="}
            The comparison, as written.
        value : float
            The threshold, in the column's units.
        """
        self._numeric(f"share({column!r}, {op!r}, {value!r})", column)
        if op not in COMPARISONS:
            raise DpiwError(f"share: op must be one of {list(COMPARISONS)}, got {op!r}")
        if isinstance(value, bool | np.bool_) or not isinstance(value, int | float | np.number) or not np.isfinite(
                value):
            raise DpiwError(f"share: value must be a finite number in the units of {column!r}, got {value!r}")
        spec = self._spec(column)
        if spec is not None and spec.is_numeric and not spec.lower <= value <= spec.upper:
            raise DpiwError(f"share: {value!r} lies outside {column!r}'s public bounds [{spec.lower:g}, "
                            f"{spec.upper:g}]: every released value lies inside them, so the share is 0 or 1 by "
                            "construction, not an estimate; give a value inside the bounds")
        self._subgroup_checks(f"share({column!r}, {op!r}, {value!r}, where={_said(where)})", column, where)
        self._void(f"share({column!r}, {op!r}, {value!r})", column)
        est = self._share(column, op, float(value), where, interval)[0]
        return self._against_marginal(f"share({column!r}, {op!r}, {value!r}, where={_said(where)})", column, where,
                                      *self._share_quantity(column, op, value, est))

    def _share_quantity(self, column: str, op: str, value: float, est: Estimate) -> tuple:
        """What a share averages (whether each row's value is ``op`` ``value``; NaN where it has none), ``est`` and
        the share's value in a bin no released row holds (its middle's), as :meth:`_against_marginal` takes them."""
        compare, middle = COMPARISONS[op], self._middle(column)

        def values(data):
            x = data[column].to_numpy(float)
            return np.where(np.isnan(x), np.nan, compare(x, value))

        return values, est, None if middle is None else (lambda k: float(compare(middle(k), value)))

    def _share(self, column: str, op: str, t: float, where, interval: str, quantile=None
               ) -> tuple[Estimate, tuple[float, float] | None]:
        """:meth:`share` of a checked call (``quantile``: (q, estimate) when it is a quantile's share), and the
        range of the pile's fine cell the threshold splits (:meth:`_pile`), or None. A noise-aware interval also
        reaches over the rows the pruning of the column's fine histogram moved across the threshold
        (:func:`bin_bias.pruning_reach`)."""
        compare = COMPARISONS[op]

        def values(data):
            x = data[column].to_numpy(float)
            return np.where(np.isnan(x), np.nan, compare(x, t))

        est = self._estimate(values, where, interval)  # a weighted mean of 0s and 1s: inside [0, 1], not 1 + 4e-16
        est = replace(est, value=min(max(est.value, 0.0), 1.0), limits=(0.0, 1.0))
        spec, nb = self._spec(column), self._bins(column)
        if spec is None or not spec.is_numeric or nb is None:
            return est, None
        from dpiw.analysis import bin_bias

        rows = self._column_rows(column, where)
        # the rows far out that may be the noise's (a quantile warns of them itself)
        far = dict(call=f"share({column!r}, {op!r}, {t:g}, where={_said(where)})", column=column, where=where,
                   of=lambda v: compare(v, t).astype(float), stacklevel=4, warn=quantile is None)
        if est.covers != NOISE_AWARE:  # the synthetic rows' sampling only, as it says: a pile, far rows warn; no reach
            return self._pile(column, spec, nb, op, t, rows, self._far(est=est, **far), quantile, reach=False)
        est = replace(est, **self._bin_bias(column, spec, where, est, of=lambda x: compare(x, t).astype(float)))
        est, cell = self._pile(column, spec, nb, op, t, rows, est, quantile)
        # and the rows the pruning of the column's fine histogram moved across the threshold; where the interval
        # would still have no width (every replicate prunes the bin alike), the noise of the measured cells across
        # the threshold (bench/README.md: added to every share it widened 1,000-row intervals past twice their
        # calibrated width)
        down, up = bin_bias.pruning_reach(nb, spec, t, compare, *rows)
        est = replace(est, reach=(est.reach[0] + down, est.reach[1] + up)) if down or up else est
        est = self._far(est=est, **far)
        unseen = 0.0 if est.se > 0 or any(est.reach) else bin_bias.pruning_variance(nb, spec, t, compare, *rows)
        if unseen > 0:
            from dpiw.analysis.noise_aware import total_se

            parts = {**(est.parts or {}), "pruned_side": unseen}
            est = replace(est, parts=parts, se=total_se(parts))
        return est, cell

    def _column_rows(self, column: str, where) -> tuple:
        """The column's released rows with a value, their weights, the subgroup among them and its measured fine
        cells (:func:`bin_bias.leaf_estimates`): what the pile and pruning tests read."""
        from dpiw.analysis import bin_bias

        x = self.data[column].to_numpy(float)
        has = ~np.isnan(x)
        return (x[has], self.weights[has], self._subgroup(where)[has], bin_bias.leaf_estimates(self.measurements,
                                                                                              column))

    def _pile(self, column: str, spec, nb, op: str, t: float, rows: tuple, est: Estimate, quantile=None,
              reach: bool = True) -> tuple[Estimate, tuple[float, float] | None]:
        """A share whose threshold falls inside a fine cell where rows pile up (:func:`bin_bias.cell_reach`):
        a warning says how to keep them and, with ``reach`` (a noise-aware interval), the interval reaches over
        that cell's rows on either side. ``rows``: the column's values, weights, subgroup and measured cells, as
        :meth:`_share` reads them."""
        from dpiw.analysis import bin_bias

        on, off, cell = bin_bias.cell_reach(nb, spec, t, COMPARISONS[op], *rows)
        if cell is None and quantile is not None:  # the estimate is a piled cell's last whole number (2 of 1-2): the
            on, off, cell = bin_bias.cell_reach(nb, spec, t, COMPARISONS["<"], *rows)  # quantile may be below it
        if cell is None:
            return est, None
        fix = bin_bias.pile_fix(spec, nb.grid.cells, *cell)
        fix = f"; if many rows hold one value there, {fix}" if fix else ""
        heavy = bin_bias.heavy_only(nb, spec, t, rows[3])
        piled = bin_bias.pile_words(heavy)
        reach = reach and (bin_bias.HEAVY_REACHES or not heavy)
        if not reach and quantile is not None:
            then = f"the table's quantile may lie anywhere in it, which this interval does not show{fix}"
        elif not reach:
            then = f"the estimate can be {on:.3f} too high or {off:.3f} too low, which this interval does not show{fix}"
        elif quantile is None:
            then = f"the interval reaches {on:.3f} lower and {off:.3f} higher{fix}"
        else:
            then = f"the interval reaches over them{fix}"
        said = ((f"share({column!r}, {op!r}, {t:g}): {t:g} falls inside",) if quantile is None else
                (f"quantile({column!r}, {quantile[0]!r}): the estimate {bin_bias.value_text(t)} lies inside",)
                ) + (then,)
        lo, hi = (bin_bias.value_text(v) for v in cell)
        warnings.warn(f"{said[0]} the fine cell {lo} to {hi}, which holds {on + off:.0%} of these rows, {piled}: "
                      "where they lie inside it was not measured (they are drawn evenly across it, and rows that "
                      f"heap on one value there, a whole number say, are not), so {said[1]}", CellWarning,
                      stacklevel=4)
        return (replace(est, reach=(on, off)) if reach else est), cell if reach or not heavy else None

    def quantile(self, column: str, q: float = 0.5, where=None, *, interval: str = "auto") -> Quantile:
        """The weighted ``q``-quantile of a numeric column (the median by default), over a subgroup or all rows,
        with Woodruff's interval (:class:`dpiw.analysis.estimates.Quantile`): the interval of
        ``share(column, "<=", estimate)`` carried back to the column's units, so it covers what that share's
        interval covers (noise-aware where the bundle allows it). ``where`` and ``interval`` as for :meth:`mean`.
        For a skewed column the median is the estimate to trust: a mean rests on a tail that few rows hold. Where
        the pruning of the column's fine histogram moved rows across the estimate, the interval also holds
        Woodruff's interval through the estimate's bin as the tree measured it (:meth:`_through_measured`)."""
        col = self._numeric(f"quantile({column!r})", column)
        if isinstance(q, bool | np.bool_) or not isinstance(q, int | float | np.number) or not 0 < q < 1:
            raise DpiwError(f"quantile: q must be a probability strictly between 0 and 1 (0.5: the median), "
                            f"got {q!r}")
        self._subgroup_checks(f"quantile({column!r}, {q!r}, where={_said(where)})", column, where)

        mask = self._subgroup(where)
        if not mask.any():
            self._none_in(where)
        x = col.to_numpy(float)
        mask = mask & ~np.isnan(x)
        if not mask.any():
            raise DpiwError("where: every synthetic row of this subgroup is empty in this column")
        value = weighted_quantile(x[mask], self.weights[mask], float(q))
        # where the estimate splits a pile, the table's quantile may be anywhere in its cell
        # at the rows' largest value every row is at or below it, and that share's spread says nothing of where the
        # table's distribution function crosses q below it (a trial's 99th percentile of a 0-12 score: "12 (95%
        # interval 12 to 12)" against 10), so the share of rows below it carries the interval there
        op = "<" if value >= x[mask].max() and (x[mask] < value).any() else "<="
        share, cell = self._share(column, op, value, where, interval, quantile=(q, value))
        if share.covers != NOISE_AWARE:
            cell = None  # the sampling interval warns of the pile and reaches over nothing
        # the share checked against a published marginal as b.share checks it (a trial's 90th percentile of age among
        # the self-employed came back 56 (53 to 120), unwarned, where b.share at 56 warned of rows the marginal
        # measured within its noise of nothing), so that Woodruff's interval carries what the share's holds
        share = self._against_marginal(
            f"quantile({column!r}, {q!r}, where={_said(where)}), through share({column!r}, {op!r}, {value:.6g})",
            column, where, *self._share_quantity(column, op, value, share))
        spec = self._spec(column)
        limits = (spec.lower, spec.upper) if spec is not None and spec.is_numeric else (
            float(np.nanmin(x)), float(np.nanmax(x)))
        est = Quantile(value, float(q), share, limits, x[mask], self.weights[mask], cell)
        if cell is None and share.covers == NOISE_AWARE:
            est = self._end_in_pile(column, q, where, est)
        if share.covers == NOISE_AWARE:
            est = self._through_measured(column, where, op, est)
            est = self._inverted(column, q, where, interval, est)
        found = self._far_rows(column, where) if share.covers == NOISE_AWARE else None
        if found is None:
            return est
        # the quantile of the rows that are not far out, which the interval also holds (it warns where that widens it)
        also = weighted_quantile(x[found[2]], self.weights[found[2]], float(q))
        lo, hi = est.ci()
        if not lo <= also <= hi:
            self._far_warning(f"quantile({column!r}, {q!r}, where={_said(where)})", column, found, f"{also:.4g}", True,
                              2)
        return replace(est, also=also)

    def _inverted(self, column: str, q: float, where, interval: str, est: Quantile) -> Quantile:
        """The shares a noise-aware quantile's interval is inverted from (:attr:`Quantile.tests`): the share of rows
        at or below a released value t (as the quantile's own share is computed, with Woodruff's floor on its
        standard error; not checked against a published marginal, as the estimate's own share is, which Woodruff's
        interval carries), at the values a bisection visits among the subgroup's distinct released values in the
        window of probabilities q +- :data:`INVERT_WINDOW` half-widths of the estimate's share interval, for each
        end of the set of values whose share interval at :data:`INVERT_LEVEL` holds q. The bisection takes each
        end of the shares' intervals to rise with t, which their reach over piles and pruned rows need not do
        exactly (:data:`INVERT`; off by default: bench/README.md). Woodruff's method carries
        the error of the released distribution function at the estimate to every value near it; where that
        function is lumpy (a trial's 90th percentile of medical costs, 2,744 (2,299 to 2,902) against 3,004: 2% of
        the released rows in one cell that holds 0.8% of the table's, none from 3,021 to 3,408), the error at
        the table's quantile is another, and only the share measured there says whether it can lie there."""
        if not INVERT:
            return est
        x = est._values
        lo, hi = est.floored(est.share).ci(INVERT_LEVEL)
        half = max((hi - lo) / 2, math.sqrt(q * (1 - q) / est.share.ess))
        window = (est.at(q - INVERT_WINDOW * half), est.at(q + INVERT_WINDOW * half))
        values = np.unique(x[(x >= window[0]) & (x <= window[1])])
        if values.size == 0:
            return est
        tests: dict[int, Estimate] = {}
        self._masks.update(on=True)  # the replicates' subgroup masks, for this inversion only

        def test(i: int) -> Estimate:
            if i not in tests:
                t = float(values[i])
                with warnings.catch_warnings():  # the quantile's own share warned; these are its neighbours
                    warnings.simplefilter("ignore")
                    share = self._share(column, "<=", t, where, interval, quantile=(q, t))[0]
                tests[i] = est.floored(share)
            return tests[i]

        try:
            for side in (1, 0):  # the first value whose interval's upper end reaches q, the first whose lower end
                a, b = 0, values.size  # passes it (taken to rise with t); it lies in [a, b], b: none in the window
                while a < b:
                    m = (a + b) // 2
                    if (test(m).ci(INVERT_LEVEL)[side] >= q) if side else (test(m).ci(INVERT_LEVEL)[side] > q):
                        b = m
                    else:
                        a = m + 1
                for i in (a - 1, a):  # the boundary's both sides, whatever the bisection visited
                    if 0 <= i < values.size:
                        test(i)
        finally:
            self._masks.clear()
        return replace(est, tests=tuple((float(values[i]), tests[i]) for i in sorted(tests)), window=window,
                       tested_at=INVERT_LEVEL)

    def _through_measured(self, column: str, where, op: str, est: Quantile) -> Quantile:
        """Where the pruning of the column's fine histogram moved rows across the estimate (the share's
        :func:`~dpiw.analysis.bin_bias.pruning_reach`), the interval also holds Woodruff's interval carried back
        through the estimate's bin as the tree measured it (:func:`~dpiw.analysis.bin_bias.measured_shape`): a
        trial's 10th percentile of a log wage came back 1.142 (1.134 to 1.146) against 1.072, every released row of
        its bin (0.94 to 1.25) in one fine cell the pruning had given the rest of the bin's rows to, so the released
        distribution function jumped 10% within 0.01 and any share the interval allowed fell inside the jump."""
        spec, nb = self._spec(column), self._bins(column)
        if spec is None or not spec.is_numeric or nb is None:
            return est
        from dpiw.analysis import bin_bias

        x, w, mask, leaves = self._column_rows(column, where)
        if leaves is None or bin_bias.depends_on(where, self.data, column, nb, spec) or not any(
                bin_bias.pruning_reach(nb, spec, est.value, COMPARISONS[op], x, w, mask, leaves)):
            return est  # a subgroup of the column's own values (x >= 12): its rows cannot be spread over the bin
        return replace(est, pruned=bin_bias.measured_shape(nb, spec, est.value, x[mask], w[mask], leaves))

    def _end_in_pile(self, column: str, q: float, where, est: Quantile) -> Quantile:
        """Where an end of a quantile's interval (not its estimate: :meth:`_pile`) lies inside a fine cell where
        rows pile (:func:`bin_bias.pile_at`; the lower end first, one cell at most), the table's quantile may lie
        anywhere in that cell: the interval reaches over it, and a :class:`CellWarning` says so (a trial's median
        hard disk, 384 (343 to 422) against 340, where 12% of the table holds 340 in the cell 329 to 343)."""
        spec, nb = self._spec(column), self._bins(column)
        if spec is None or not spec.is_numeric or nb is None:
            return est
        from dpiw.analysis import bin_bias

        rows = self._column_rows(column, where)
        leaf = nb.grid.leaf(spec.to_unit(np.array([est.value])))[0]
        for end, side in zip(est.ci(), ("lower", "upper"), strict=True):
            share, cell = bin_bias.pile_at(nb, spec, end, *rows)
            if cell is None:
                continue
            heavy = bin_bias.heavy_only(nb, spec, end, rows[3])
            reaches = bin_bias.HEAVY_REACHES or not heavy
            if not reaches and nb.grid.leaf(spec.to_unit(np.array([end])))[0] == leaf:
                continue  # the estimate's own cell, no pile: the estimate's warning said it
            lo, hi = (bin_bias.value_text(v) for v in cell)
            then = ("the interval reaches over the cell" if reaches else
                    "the table's quantile may lie anywhere in it, which this interval does not show")
            warnings.warn(f"quantile({column!r}, {q!r}): the {side} end of its interval, {bin_bias.value_text(end)}, "
                          f"lies inside the fine cell {lo} to {hi}, which holds {share:.0%} of these rows, "
                          f"{bin_bias.pile_words(heavy)}: where they lie inside it was not measured (they are drawn "
                          f"evenly across it), so {then}", CellWarning, stacklevel=3)
            if reaches:
                return replace(est, cell=cell)
        return est

    def rate(self, column: str, label, where=None, *, interval: str = "auto") -> Estimate:
        """The weighted share of rows whose ``column`` is ``label`` (a category's label), over a subgroup or all
        rows (``where`` and ``interval`` as for :meth:`mean`)."""
        col = self._column(column)
        if not isinstance(col.dtype, pd.CategoricalDtype):
            raise DpiwError(f"rate: {column!r} is numeric; a rate is the share of one label of a categorical "
                            f"column (its mean: b.mean({column!r}); its share above a value: "
                            f"b.share({column!r}, '>', value))")
        from dpiw.analysis.noise_aware import check_label

        check_label(column, label, list(col.cat.categories), "rate: ")
        self._subgroup_checks(f"rate({column!r}, {label!r}, where={_said(where)})", column, where)
        values, fallback = self._quantity(column, label)
        est = self._estimate(values, where, interval)
        est = self._against_marginal(f"rate({column!r}, {label!r}, where={_said(where)})", column, where, values,
                                     est, fallback)
        return replace(est, limits=(0.0, 1.0))

    def design(self, features: list[str], data: pd.DataFrame | None = None, *,
               reference: dict | None = None) -> pd.DataFrame:
        """The features as a numeric design matrix: numeric columns in their units, a categorical column with K
        categories as K - 1 indicator columns ``name=label`` (the first category is the reference, or the one
        ``reference`` names for the column); of ``data`` (decoded rows like :attr:`data`, e.g. a bootstrap
        replicate's) or of the bundle's rows."""
        data = self.data if data is None else data
        blocks = []
        for name in features:
            self._column(name)
            if name not in data:
                raise DpiwError(f"design: the rows have no column {name!r}")
            col = data[name]
            spec = self._spec(name)
            if spec is not None and not spec.is_numeric and not isinstance(col.dtype, pd.CategoricalDtype):
                col = _as_category(col, spec)  # rows of the analyst's own (a CSV read back): the schema's labels
            if isinstance(col.dtype, pd.CategoricalDtype):
                left = (reference or {}).get(name, col.cat.categories[0])
                blocks.append(pd.DataFrame({f"{name}={c}": (col == c).to_numpy(float)
                                            for c in col.cat.categories if c != left}, index=data.index))
            else:
                blocks.append(col.astype(float).to_frame())
        return pd.concat(blocks, axis=1)

    def fit(self, estimator, features: list[str], target: str, *, interval: str = "auto"):
        """Fit a scikit-learn style estimator on the synthetic rows with ``sample_weight`` = the weights, and give
        a linear model's coefficients with intervals (:mod:`dpiw.analysis.fit`).

        Parameters
        ----------
        estimator : object
            Anything with ``fit(X, y, sample_weight=...)`` (LogisticRegression, LinearRegression, ...); it is
            cloned, not changed.
        features : list of str
            The columns used as inputs (:meth:`design`: categorical ones as indicator columns).
        target : str
            The column to predict (a categorical one as its labels).
        interval : {"auto", "noise", "sampling"}
            As for :meth:`mean`: noise-aware where the bundle allows it (the same bootstrap replicates).

        Returns
        -------
        dpiw.analysis.fit.Fit
            The fitted estimator (``predict``, ``coef_``... pass through to it), and for a linear model
            ``table``: each coefficient's value, standard error and 95% interval; ``print`` shows them. Where the
            rows fall short of a published marginal on the target within a feature's subgroups, or on two
            features' relation to each other, a ``MeasurementWarning`` says so, ``table.measured_gap`` marks
            those features' coefficients and every interval reaches over the fit on the rows moved to the
            marginal's readings (``table.measured_reach``). ``table.measured`` (where the bundle publishes its
            marginals) is False for the coefficients of a feature no marginal measured with the target, and for
            the intercept when any is: those are the generator's model of the relation, which no interval covers.
        """
        from dpiw.analysis.fit import fit_with_intervals

        if interval not in ("auto", "noise", "sampling"):
            raise DpiwError(f"interval must be 'auto', 'noise' or 'sampling', got {interval!r}")
        if interval == "noise" and not self.noise_aware:
            raise DpiwError("interval='noise' needs a bundle that publishes its generator's measurements "
                            "(measurements.json: generators mst, aim) and its schema")
        self._column(target)
        if isinstance(features, str):
            raise DpiwError(f"fit: features must be a list of column names, e.g. [{features!r}]")
        if not len(features) or len(set(features)) != len(features):
            raise DpiwError(f"fit: features must name at least one column, each once; got {list(features)}")
        for f in features:
            self._column(f)
        if target in features:
            raise DpiwError(f"fit: the target {target!r} is among the features; leave it out of them")
        try:  # scikit-learn's tags (an estimator of another library, or without tags: no check)
            from sklearn.base import is_classifier, is_regressor

            kind = "classifier" if is_classifier(estimator) else "regressor" if is_regressor(estimator) else None
        except Exception:  # noqa: BLE001 - ImportError, or AttributeError for an estimator without __sklearn_tags__
            kind = None
        if self.schema is None or target not in self.schema.names:  # the scaled view: categories are codes
            kind = None
        categorical = kind is not None and not self.schema.column(target).is_numeric
        if kind == "classifier" and not categorical:
            raise DpiwError(f"fit: {type(estimator).__name__} is a classifier and {target!r} is numeric (one class "
                            "per value); predict a categorical column with it, or a numeric one with a regressor "
                            "(LinearRegression)")
        if kind == "regressor" and categorical:
            raise DpiwError(f"fit: {type(estimator).__name__} is a regressor and {target!r} is categorical; use a "
                            "classifier (LogisticRegression)")
        self._unmeasured(f"fit(..., {target!r})", target, features, among=True)
        return fit_with_intervals(self, estimator, features, target, interval=interval)


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
    measurements = (json.loads((folder / "measurements.json").read_text())
                    if (folder / "measurements.json").is_file() else None)
    bundle = Bundle(data, _check_weights(weights), json.loads(files["manifest.json"].read_text()), scaled, schema,
                    measurements)
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
