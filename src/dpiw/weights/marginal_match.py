"""Marginal matching: importance weights fitted so that the weighted synthetic rows reproduce DP marginals of D.

The logistic route can only fix one-way means, which a marginal-based SDGP already gets right, and its
noise swamps any interaction. This weight method measures what the generator tends to miss instead: the
marginals of D that contain the target (by default every 2-way one and the 3-way (target, a, b) ones), with
the Gaussian mechanism, and reweights the synthetic rows to match them (an information projection, as in
PMW^Pub, Liu et al. 2021, arXiv 2102.08598, and Wang et al. 2023, arXiv 2305.15538). It applies to any
SDGP's rows: every column is discretised with public cells (``bins`` equal-width bins on [0, 1] for a numeric
column, the categories of a categorical one), as MST does.

**Mechanism** (the private part, :meth:`MarginalMatch.measure`). The weight share (eps_w, delta_w) becomes the
largest zCDP rho that converts back to at most eps_w at delta_w (the conversion the ledger uses). One row
moves a marginal's count vector by at most sqrt(2) in L2 under replace-one neighbours (1 under add/remove), so
m marginals, each measured with N(0, sigma^2) noise on every count, are (m Delta^2 / (2 sigma^2))-zCDP:
sigma = sqrt(m Delta^2 / (2 rho)).

**Fit** (post-processing of the noisy counts and the synthetic rows). Group the synthetic rows by their cell
in the workload's columns (c_k rows in group k, scaled by N_D / N_G) and find one log weight u_k per group:

    minimise  sum_m ||A_m(c * e^u) - y_m||^2 / (2 sigma_m^2)  +  tau * sum_k c_k (e^u_k (u_k - 1) + 1)

(A_m sums a group's mass into its cell of marginal m; the second term is tau times KL(c e^u || c), which
keeps the weights at 1 where the measurements say nothing). It is solved in its dual, one variable per
measured cell (sigma^2/2 ||lambda||^2 + lambda^T y - tau sum_k c_k (1 - exp(-(A^T lambda)_k / tau)), strongly
convex), by L-BFGS, and u = -A^T lambda / tau. Measurements another mechanism has released already (MST's own
1- and 2-way marginals) can join the fit at no cost (``reweight(synth, extra)``), so the weights keep what the
generator got right. tau is chosen by the discrepancy
principle from released quantities only: the largest of ``taus`` whose fit has chi^2 = sum_m ||A_m(c e^u) -
y_m||^2 / sigma^2 at most the number of measured cells (the chi^2 the true counts would have), and each marginal's
at most its cells give or take its noise (:data:`PER_MARGINAL`: family-wise over the marginals). The log
ratio of a synthetic row is its group's u: e^u = p_D / p_G of its cell.

**Do no harm** (post-processing too). Before any fit, the unit weights' chi^2 is compared with what noise alone
would give if the synthetic marginals were D's (mean = the measured cells, sd = sqrt(2 cells)): unless it
exceeds that by ``SIGNAL_Z`` sds, or one marginal's exceeds the chi^2 law's quantile at family-wise
:data:`SIGNAL_LEVEL` (:data:`SIGNAL_EACH`), the measurements carry no signal the weights could use, and the weights
stay at 1 (recorded as ``signal`` in the record; the release says so). The totals' test is made on this method's own
measurements and on all of them (an SDGP's rows were fitted to its own, which then say little and would dilute
the first).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd

from dpiw import DpiwError
from dpiw._docs import FRAMES_WEIGHTS_FIT, FRAMES_WEIGHTS_REWEIGHT, shared_doc
from dpiw.data.schema import Schema
from dpiw.privacy.neighbours import RowCount, count_l2
from dpiw.privacy.spend import PrivacySpend

# do no harm: the weights stay at 1 unless the unit weights' chi^2 exceeds the measured cells by SIGNAL_Z of its
# standard deviations under "the synthetic marginals are D's" (chi^2 with one degree per cell); one margin for
# every weight method's signal check
from dpiw.weights.estimators import SIGNAL_Z

#: past this log weight the dual's e^u goes on as its tangent line (:meth:`MarginalMatch.reweight`)
EXP_CAP = 50.0
#: the tau grid of the discrepancy principle, largest (smoothest weights) first
TAUS = (1.0, 0.3, 0.1, 0.03, 0.01)
#: the largest tau tried (10 times at a time past the grid) for weights that would fail the k-hat release gate
KHAT_TAU_MAX = 100.0
#: the discrepancy principle marginal by marginal as well as in total: a fit is within the noise only if also every
#: marginal's chi^2 is at most its cells plus :func:`marginal_z` of its sds, sqrt(2 cells). The total alone let the
#: weights stop with one marginal far out and the rest inside their noise (a trial's CPSSW8: earnings by gender and
#: education at chi^2 213 on 128 cells, the total 1,434 on 1,520; the gender coefficient 12 noise sds off in 3
#: releases of 3). Adopted 2026-11-29 by a rule named before the runs (bench/README.md): on CPS1988 and Fertility no
#: family worse, six better beyond 2 SE (CPS1988's within-class numeric means, subgroups, 3-way cells, regression;
#: Fertility's subgroups and regression, 0.77 of the error); the simulated populations' coverage the same (99.6% of
#: 700 intervals at 20,000 rows). Where no tau holds every marginal, the total's rule alone picks it. False: the
#: total alone (bench arms ``--total``). For a marginal of few cells the bound is stricter than 5% (the chi^2 law's
#: tail is heavier than the normal one's); the law's own quantile (:func:`signal_limits` at 5%) was tried on
#: 2026-11-29 and lost on Fertility's subgroups and regression beyond 2 SE (bench/README.md)
PER_MARGINAL = True
#: the do-no-harm signal test fires also where one marginal's chi^2 at unit weights is past :func:`signal_limits`
#: (with :data:`PER_MARGINAL` only): the tau rule treats such a marginal as a relation the weights must follow, and
#: the totals alone can leave the weights at 1 with it there (a test's corner of one marginal: chi^2 2,131 on 2,016
#: cells, one marginal 8.4 sds of its chi^2 past its cells). On CPS1988 and Fertility no release of 180 changed
#: (bench/README.md). False: the totals alone (bench arms ``--signal-total``)
SIGNAL_EACH = True
#: the family-wise level of that test over the marginals: with the totals' (about 2.3% each) the weights of rows
#: that are the table's own are fitted in about 5% of noise draws (16 of 300 on iris)
SIGNAL_LEVEL = 0.025


def marginal_z(marginals: int) -> float:
    """How many sds of its chi^2 a marginal's may exceed its cells by (:data:`PER_MARGINAL`): one-sided 5% over the
    marginals (Bonferroni) under the normal approximation."""
    from statistics import NormalDist

    return NormalDist().inv_cdf(1 - 0.05 / max(marginals, 1))


def signal_limits(sizes, level: float | None = None) -> np.ndarray:
    """Each marginal's chi^2 past which the do-no-harm test fires (:data:`SIGNAL_EACH`; ``sizes``: every marginal's
    cells): the chi^2 law's upper ``level`` / M quantile at one degree per cell, M the marginals (Bonferroni), which
    the chi^2 of rows that are the table's own passes with probability ``level`` over all M. The law's own: cells +
    z sqrt(2 cells) has too light a tail for few cells (12 cells at z = 2.8: 1.2% past it, not 0.26%), and with it
    iris's test fired in 43 of 300 noise draws where the rows were the table's."""
    from scipy.stats import chi2

    sizes = np.asarray(sizes, float)
    return chi2.isf((SIGNAL_LEVEL if level is None else level) / max(len(sizes), 1), sizes)


def measurements_dict(gen) -> dict:
    """Noisy measurements with the public discretisation they were taken on: a zCDP SDGP's (MST's, AIM's
    ``measurements_``: (clique, counts, std)) or this method's own (``measurements_``: (clique, counts), one
    ``sigma_``). Noisy measurements are DP outputs: publishing them costs nothing more."""
    own = isinstance(gen, MarginalMatch)
    triples = [(cl, y, gen.sigma_) for cl, y in gen.measurements_] if own else gen.measurements_
    # the SDGP's file keys marginal_match's noise (an input of its identity): its fields stay as they were
    extra = ({"method": gen.method, "degree": gen.degree, "taus": list(gen.taus), "total": float(gen.rows_.n)}
             if own else {})
    fine = getattr(gen, "fine_", None)  # a zCDP SDGP's fine histograms (DP outputs) and the bins they gave
    binning = getattr(gen, "binning", None)
    extra.update({"fine": fine.published()} if fine is not None else
                 {"fine": {"binning": binning.to_dict()}} if own and binning is not None else {})
    return {"bins": gen.bins, "cards": list(gen.cards_), "columns": gen.schema_.names, **extra,
            "measurements": [{"clique": [int(j) for j in cl], "std": float(sd), "counts": np.asarray(y).tolist()}
                             for cl, y, sd in triples]}


def write_measurements(gen, path) -> None:
    """:func:`measurements_dict` as JSON, for :func:`read_measurements` and the bundle."""
    from dpiw.io import write_json

    write_json(measurements_dict(gen), path)


def read_measurements(path, schema: Schema, *, bins: int) -> tuple:
    """The measurements of :func:`write_measurements`, as ``reweight``'s ``extra``; refused unless they were
    taken on this schema's columns with the same bins."""
    from dpiw.io import read_json

    d = read_json(path)
    if d["columns"] != schema.names:
        raise DpiwError(f"{path}: measurements of columns {d['columns']}, not the schema's {schema.names}")
    if d["bins"] != bins:
        raise DpiwError(f"{path}: the SDGP measured with bins={d['bins']}, marginal_match uses bins={bins}: set "
                        "weights.marginal_match.bins equal to sdgp.mst.bins, or reuse_sdgp: false")
    return tuple((tuple(m["clique"]), np.asarray(m["counts"], float), m["std"]) for m in d["measurements"])


def read_binning(path, schema: Schema):
    """The bins a zCDP SDGP chose from its fine histograms (:mod:`dpiw.sdgp.binning`), from its measurements
    file; None when it used equal-width bins."""
    from dpiw.io import read_json
    from dpiw.sdgp.binning import Binning

    fine = read_json(path).get("fine")
    return Binning.from_dict(schema, fine["binning"]) if fine else None


def workload(schema: Schema, *, degree: int, max_marginals: int) -> list[tuple[int, ...]]:
    """The marginals measured: every (target, a) pair, then, for ``degree`` 3, the (target, a, b) triples in column
    order, at most ``max_marginals`` in all (a public choice: it depends on the schema only)."""
    names = schema.names
    t = names.index(schema.target)
    others = [j for j in range(len(names)) if j != t]
    out = [tuple(sorted((t, a))) for a in others]
    if degree >= 3:
        out += [tuple(sorted((t, a, b))) for a, b in itertools.combinations(others, 2)]
    return out[:max_marginals]


def _group_keys(cells: np.ndarray, cards: list[int]) -> np.ndarray:
    """One integer per row for its joint cell (mixed radix), or a row-wise fallback past 2^62 cells."""
    if math.prod(cards) < 2**62:
        key = np.zeros(len(cells), dtype=np.int64)
        for j, c in enumerate(cards):
            key = key * c + cells[:, j]
        return key
    _, inverse = np.unique(cells, axis=0, return_inverse=True)
    return inverse.ravel()


class MarginalMatch:
    """Weights that make the weighted synthetic marginals match Gaussian-noised marginals of D (module docstring).

    Parameters
    ----------
    bins : int
        Public equal-width bins per numeric column.
    degree : {2, 3}
        The largest marginal measured: 2 for the (target, a) pairs only, 3 to add the (target, a, b) triples.
    max_marginals : int
        At most this many marginals (the noise grows like the square root of their number).
    max_cells : int
        Refuse a marginal larger than this (memory guard): lower ``bins``.
    taus : tuple of float
        The discrepancy principle's grid for tau, largest first.
    """

    method = "marginal_match"

    def __init__(self, *, bins: int = 8, degree: int = 3, max_marginals: int = 64, max_cells: int = 100_000,
                 taus: tuple[float, ...] = TAUS):
        self.bins, self.degree, self.max_marginals, self.max_cells = bins, degree, max_marginals, max_cells
        self.taus = tuple(taus)
        #: the SDGP's bins shaped by its fine histograms (:func:`read_binning`), or None: ``bins`` equal-width bins
        self.binning = None

    def on_bins_of(self, gen) -> MarginalMatch:
        """Count on the bins a zCDP SDGP chose from its fine histograms (none: ``bins`` equal-width bins)."""
        fine = getattr(gen, "fine_", None)
        self.binning = fine.binning if fine is not None else None
        return self

    @property
    def discretisation(self):
        """What the cells are: the SDGP's :class:`dpiw.sdgp.binning.Binning`, or ``bins`` equal-width bins."""
        return self.binning if self.binning is not None else self.bins

    def _check(self, schema: Schema, cards: list[int], epsilon: float, delta: float) -> None:
        if not (isinstance(self.bins, int) and 2 <= self.bins <= 1000):
            raise DpiwError(f"weights.marginal_match.bins must be an integer in [2, 1000], got {self.bins!r}")
        if self.degree not in (2, 3):
            raise DpiwError(f"weights.marginal_match.degree must be 2 or 3, got {self.degree!r}")
        if not (isinstance(self.max_marginals, int) and self.max_marginals >= 1):
            raise DpiwError(f"weights.marginal_match.max_marginals must be an integer >= 1, got {self.max_marginals!r}")
        if len(cards) < 2:
            raise DpiwError(f"marginal_match on '{schema.name}' needs at least 2 columns")
        if not (epsilon > 0 and math.isfinite(epsilon) and 0 < delta < 1):
            raise DpiwError(f"marginal_match needs a weight budget epsilon > 0 and 0 < delta < 1, got epsilon="
                            f"{epsilon}, delta={delta}; set privacy.delta to a positive number, 'auto' or 'paper'")

    def measure(self, real: pd.DataFrame, schema: Schema, *, epsilon: float, delta: float, rng: np.random.Generator,
                rows: RowCount | None = None) -> MarginalMatch:
        """The private part: the noisy marginals ``measurements_`` [(clique, noisy counts)], ``sigma_`` and the
        record ``privacy_``."""
        from dpiw.sdgp.counting import InProcessCounter

        return self.measure_counts(InProcessCounter.of(real, schema, self.discretisation), schema, epsilon=epsilon,
                                   delta=delta, rng=rng, rows=rows)

    def measure_counts(self, counter, schema: Schema, *, epsilon: float, delta: float, rng: np.random.Generator,
                       rows: RowCount | None = None) -> MarginalMatch:
        """:meth:`measure` from a counter (dpiw.sdgp.counting): the workload's counts in one pass over the rows."""
        from dpiw.privacy.accounting import zcdp_rho, zcdp_to_dp

        cards = list(counter.cards)
        self._check(schema, cards, epsilon, delta)
        self.cliques_ = workload(schema, degree=self.degree, max_marginals=self.max_marginals)
        for cl in self.cliques_:
            size = math.prod(cards[j] for j in cl)
            if size > self.max_cells:
                raise DpiwError(f"marginal_match on '{schema.name}': the marginal of "
                                f"{[schema.names[j] for j in cl]} has {size} cells > max_cells={self.max_cells}; "
                                "lower weights.marginal_match.bins or degree")
        rows = rows or RowCount.exact(counter.total)
        self.rows_, self.cards_, self.schema_ = rows, cards, schema
        delta_l2 = count_l2(rows.neighbours)
        m = len(self.cliques_)
        rho = zcdp_rho(epsilon, delta)
        self.sigma_ = math.sqrt(m * delta_l2**2 / (2 * rho))
        table = counter.counts(self.cliques_)
        self.measurements_ = []
        for cl in self.cliques_:
            x = table[cl]
            self.measurements_.append((cl, x + rng.normal(0.0, self.sigma_, size=x.size)))
        names = schema.names
        self.privacy_ = PrivacySpend(
            stage="fit_weights", mechanism="marginal matching: Gaussian marginals of D, weights fitted to them",
            epsilon=float(zcdp_to_dp(rho, delta)), delta=float(delta), sensitivity={"marginal_l2": delta_l2},
            noise={"distribution": "gaussian", "std": self.sigma_, "marginals": m,
                   "cells": int(sum(y.size for _, y in self.measurements_))},
            accountant="zCDP (Gaussian: m Delta^2 / (2 sigma^2)), converted to (eps, delta) through its RDP curve",
            reads_private=("train",), neighbours=rows.neighbours,
            details={"method": self.method, "bins": self.bins, "degree": self.degree, "rho": rho,
                     "workload": [[names[j] for j in cl] for cl in self.cliques_]},
            rdp=({"kind": "zcdp", "rho": m * delta_l2**2 / (2 * self.sigma_**2), "about": "marginal measurements"},))
        return self

    @classmethod
    def from_published(cls, published: dict, schema: Schema) -> MarginalMatch:
        """The state :meth:`reweight` needs, rebuilt from the measurements a bundle publishes
        (:func:`write_measurements`): no private row, no record (post-processing of released values)."""
        from dpiw.sdgp.binning import Binning

        est = cls(bins=published["bins"], degree=published["degree"], taus=tuple(published["taus"]))
        est.schema_, est.cards_, est.privacy_ = schema, list(published["cards"]), None
        if published.get("fine"):
            est.binning = Binning.from_dict(schema, published["fine"]["binning"])
        est.measurements_ = [(tuple(m["clique"]), np.asarray(m["counts"], float)) for m in published["measurements"]]
        est.cliques_ = [cl for cl, _ in est.measurements_]
        est.sigma_ = float(published["measurements"][0]["std"])
        est.rows_ = RowCount.exact(max(1, round(float(published["total"]))))
        return est

    def _note(self, **details) -> None:
        """Add to the record's details (none when rebuilt from published measurements)."""
        if self.privacy_ is not None:
            self.privacy_.details.update(details)

    @shared_doc(FRAMES_WEIGHTS_FIT, "Measures D's marginals (:meth:`measure`), then fits one log weight per "
                "synthetic cell (:meth:`reweight`).")
    def fit_frames(self, real: pd.DataFrame, synth: pd.DataFrame, schema: Schema, *, epsilon: float, delta: float,
                   rng: np.random.Generator, rows: RowCount | None = None) -> MarginalMatch:
        self.measure(real, schema, epsilon=epsilon, delta=delta, rng=rng, rows=rows)
        return self.reweight(synth)

    @shared_doc(FRAMES_WEIGHTS_REWEIGHT, "``extra``: measurements already released by another mechanism, as "
                "(clique of column indices, noisy counts, std) - MST's, say - matched as well at no further cost. "
                "``warm``, ``start_tau``: a like problem's dual points and tau, to start from. ``tau``: fit at this "
                "tau, with no test of signal and no search (the noise-aware bootstrap's replicates take the "
                "release's: their measurements carry the release's noise and their own, so the discrepancy "
                "principle there picks the smallest tau, weights spanning e^9 to e^40); the release gate may "
                "still take larger ones.")
    def reweight(self, synth: pd.DataFrame, extra: tuple = (), warm: dict | None = None,
                 start_tau: float | None = None, tau: float | None = None) -> MarginalMatch:
        from scipy.optimize import minimize
        from threadpoolctl import threadpool_limits

        from dpiw.sdgp.marginals import discretise

        cells, cards = discretise(synth, self.schema_, self.discretisation)
        cols = self._cols = sorted({j for cl in self.cliques_ for j in cl})
        keys = _group_keys(cells[:, cols], [cards[j] for j in cols])
        _, first, inverse, counts = np.unique(keys, return_index=True, return_inverse=True, return_counts=True)
        groups = cells[first]
        c = counts * (self.rows_.n / len(synth))  # synthetic mass in D's units
        measured = [(cl, y, self.sigma_) for cl, y in self.measurements_] + [tuple(e) for e in extra]
        cols = sorted({j for cl, _, _ in measured for j in cl})
        if len(cols) > len(self._cols):  # extra measurements on columns outside the workload: regroup
            keys = _group_keys(cells[:, cols], [cards[j] for j in cols])
            _, first, inverse, counts = np.unique(keys, return_index=True, return_inverse=True, return_counts=True)
            groups = cells[first]
            c = counts * (self.rows_.n / len(synth))
        by_column = np.ascontiguousarray(groups.T)
        index = [np.ravel_multi_index(tuple(by_column[j] for j in cl), tuple(cards[j] for j in cl))
                 for cl, _, _ in measured]  # each group's cell in each marginal
        ys = [np.asarray(y, float) for _, y, _ in measured]
        y_all = np.concatenate(ys)
        s2 = np.concatenate([np.full(y.size, float(sd) ** 2) for y, (_, _, sd) in zip(ys, measured, strict=True)])
        n_cells = int(y_all.size)
        # A (measured cells x groups, one 1 per marginal in each group's column): most of a fit's time is its
        # products, compiled (dpiw.weights.indicators)
        from dpiw.weights.indicators import Indicators

        a = Indicators(index, [y.size for y in ys])
        del index

        def weights_at(lam, tau):  # u = -A^T lambda / tau: the primal solution at the dual point lambda
            return -a.tdot(lam) / tau

        def marginals(v):  # A v: the weighted synthetic mass in every measured cell
            return a.dot(v)

        def dual(lam, tau):  # minus the dual function and its gradient (strongly convex: sigma^2 I + ...)
            # e^u, continued past u = EXP_CAP by its tangent (no overflow; still convex, and the gradient, which
            # takes e^EXP_CAP there, is this function's own: with e^u merely capped the function went flat past
            # it and a start there, a like problem's dual point, stayed at weights of e^170)
            u = weights_at(lam, tau)
            v = c * np.exp(np.minimum(u, EXP_CAP))
            phi = v * (1.0 + np.maximum(u - EXP_CAP, 0.0))
            f = 0.5 * float(lam @ (s2 * lam)) + float(lam @ y_all) - tau * float(np.sum(c - phi))
            return f, s2 * lam + y_all - marginals(v)

        own = sum(y.size for _, y in self.measurements_)
        sizes = np.array([y.size for y in ys], float)
        starts = np.concatenate([[0], np.cumsum([y.size for y in ys])[:-1]]).astype(int)
        limits = sizes + marginal_z(len(ys)) * np.sqrt(2.0 * sizes)
        r0 = marginals(c) - y_all
        z0 = r0 * r0 / s2
        chi2_unit = float(z0.sum())
        tests = {"own": (float(z0[:own].sum()), own), "all": (chi2_unit, n_cells)}
        fired = [k for k, (chi2, cells) in tests.items() if chi2 > cells + SIGNAL_Z * math.sqrt(2.0 * cells)]
        each = np.add.reduceat(z0, starts)  # each marginal's chi^2 at unit weights
        one_by_one = PER_MARGINAL and SIGNAL_EACH
        beyond = np.nonzero(each > signal_limits(sizes))[0] if one_by_one else np.array([], int)
        if beyond.size:
            fired.append("a marginal")
        self.signal_ = {"chi2_unit_weights": {k: v[0] for k, v in tests.items()},
                        "measured_cells": {k: v[1] for k, v in tests.items()}, "signal": bool(fired),
                        "fired": fired, "rule": f"weights only if chi^2 at unit weights > cells + {SIGNAL_Z:g} "
                                                "sqrt(2 cells), on this method's own measurements or on all"
                                                + (", or one marginal's > the chi^2 law's upper "
                                                   f"{SIGNAL_LEVEL / len(ys):.3g} quantile at its cells' degrees"
                                                   if one_by_one else "")}
        if beyond.size:  # which, and how far past its noise (sds of its chi^2)
            n_own = len(self.measurements_)  # the generator's own marginals after these: named apart
            self.signal_["marginals_beyond"] = {
                ", ".join(self.schema_.names[j] for j in measured[i][0]) + ("" if i < n_own else " (generator's)"):
                round(float((each[i] - sizes[i]) / math.sqrt(2.0 * sizes[i])), 2) for i in beyond}
        self._note(signal=self.signal_)
        if tau is None and not self.signal_["signal"]:  # the measurements cannot tell the rows from D: no harm
            self.tau_, self.chi2_, self.n_cells_ = math.inf, chi2_unit, n_cells
            self.log_ratio_ = np.zeros(len(synth))
            self._note(tau=None, chi2=chi2_unit, measured_cells=n_cells, groups=len(c),
                       tau_rule="unit weights: no signal")
            return self
        from dpiw.postprocess.psis import diagnose

        def fit(tau, lam):
            # one BLAS thread: L-BFGS-B's small vector products gain nothing from threads, and on a busy machine
            # its threaded BLAS waits (scipy >= 1.15: 7 ms an evaluation at 2,667 cells against 0.3 ms)
            with threadpool_limits(limits=1, user_api="blas"):
                lam = minimize(dual, lam, args=(tau,), jac=True, method="L-BFGS-B",
                               options={"maxiter": 5000, "gtol": 1e-8 * max(1.0, float(np.abs(y_all).max()))}).x
            u = weights_at(lam, tau)
            r = marginals(c * np.exp(u)) - y_all
            parts = np.add.reduceat(r * r / s2, starts)  # each marginal's chi^2 (PER_MARGINAL)
            return tau, float(r @ (r / s2)), u, lam, dual(lam, tau)[0], parts

        def start(tau, default):  # a dual point of a like problem (the noise-aware bootstrap's previous replicate)
            prior = (warm or {}).get(tau)
            return prior if prior is not None and prior.shape == (n_cells,) else default

        grid = list(self.taus) if tau is None else [float(tau)]  # decreasing; the release gate puts larger in front
        fitted: dict[float, tuple] = {}

        def failed(f):  # no optimum: the dual's minimum is at most its value at zero (0), at any tau the optimum
            # fits at least as well as unit weights, and no sane weight is e^EXP_CAP (a bootstrap replicate started
            # from the dual point of one whose rows left two cells empty: weights of e^170 on one group, and its
            # share 1.0 in 15 of 30 replicates; L-BFGS-B called it converged)
            return (not f[4] <= 1e-9 * max(1.0, float(np.abs(y_all).sum())) or not f[1] <= chi2_unit * (1 + 1e-9)
                    + 1e-9 or float(np.max(f[2], initial=0.0)) > EXP_CAP)

        def get(i):  # the fit at grid[i], started from the nearest fitted tau's dual point, rescaled
            tau = grid[i]
            if tau not in fitted:
                near = min(fitted, key=lambda t: abs(math.log(t / tau)), default=None)
                lam = start(tau, np.zeros(n_cells) if near is None else fitted[near][3] * (tau / near))
                f = fit(tau, lam)
                if failed(f) and np.any(lam):  # a start the fit did not come back from: again from zero
                    f = fit(tau, np.zeros(n_cells))
                fitted[tau] = f
            return fitted[tau]

        def within(i):
            f = get(i)
            return f[1] <= n_cells and (not PER_MARGINAL or bool(np.all(f[5] <= limits)))

        # the discrepancy principle: the largest tau of the grid whose fit is within the noise (the last one if
        # none is). The fit's total chi^2 does not decrease with tau (a penalised fit's misfit grows with its
        # penalty), so on the total alone a search from ``start_tau`` (a like problem's pick: the bootstrap's
        # previous replicate) finds the same tau as the scan from the largest, in fewer fits. One marginal's chi^2
        # need not grow with tau (:data:`PER_MARGINAL`): then only the scan is sure to find the largest, and
        # ``start_tau`` gives the fits their warm starts alone
        pick = grid.index(start_tau) if start_tau in grid and not PER_MARGINAL else 0
        if pick and within(pick):
            while pick > 0 and within(pick - 1):
                pick -= 1
        else:
            while not within(pick) and pick < len(grid) - 1:
                pick += 1
        if PER_MARGINAL and not within(pick):  # no tau holds every marginal (one with rows where the synthetic rows
            # have none cannot be met at any): the total's rule alone, as before, not the smallest tau
            pick = next((i for i in range(len(grid)) if get(i)[1] <= n_cells), pick)
        # the release gate (PSIS k-hat of the per-row weights, post-processing): a fit whose weights would be
        # refused gives way to the next smoother one, then to larger taus, then to unit weights
        gate = None
        while True:
            f = get(pick)
            tau, chi2, u, lam = f[:4]
            if failed(f):  # not even from zero: no weights rather than wild ones
                u, gate, tau = np.zeros(len(c)), diagnose(np.zeros(len(inverse.ravel()))), None
                break
            with np.errstate(over="ignore"):  # weights far from 1 overflow inside the Pareto fit
                gate = diagnose(u[inverse.ravel()])
            if gate.fit_to_release:
                break
            if pick > 0:
                pick -= 1
            elif tau * 10 <= KHAT_TAU_MAX:
                grid.insert(0, tau * 10)
            else:
                u = np.zeros(len(c))
                break
        fits = [fitted[t] for t in grid if t in fitted]
        self.tau_, self.chi2_, self.n_cells_ = (math.inf if tau is None else tau), chi2, n_cells
        # warm starts for a like problem (``warm``): none from a failed fit, and nothing in the cells no row of these
        # fell in (their dual is -y / sigma^2, of no weight here; in a problem whose rows do fall there, a start at
        # log weights of y / (sigma^2 tau))
        empty = marginals(c) == 0
        self.duals_ = {f[0]: np.where(empty, 0.0, f[3]) for f in fits if not failed(f)}
        self.log_ratio_ = u[inverse.ravel()]
        self._note(tau=tau, chi2=chi2, measured_cells=n_cells, groups=len(c), pareto_k=gate.k,
                   tau_rule=f"discrepancy principle: the largest tau in {list(self.taus)} with chi^2 <= measured "
                            "cells" + (f" and each marginal's chi^2 <= its cells + {marginal_z(len(ys)):.2f} "
                                       "sqrt(2 cells)" if PER_MARGINAL else "")
                            + ", then larger taus until the weights pass the PSIS k-hat release gate (unit "
                            f"weights if none up to {KHAT_TAU_MAX:g} does)" + (
                                "; unit weights: the fit found no optimum, from its start or from zero"
                                if tau is None else ""))
        return self
