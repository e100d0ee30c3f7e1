"""Noise-aware intervals: the DP noise of a release carried into an analyst's interval, from what the bundle
publishes (post-processing: no privacy cost).

A release's estimate moves for three reasons besides the generator's own bias:

- **sampling of D**: the private rows are a sample of a population (variance var(h) / N_D, in a subgroup of
  share p: var(h | S) / (N_D p));
- **the mechanisms' noise**: the generator's model was fitted to Gaussian-noised marginals, and marginal
  matching's weights to noised marginals of their own;
- **sampling of the synthetic rows** from the model (var(h | S) / ESS of the released rows).

The first and last have closed forms. The middle one is found by a parametric bootstrap: each replicate adds
fresh Gaussian noise of the published std to every published measurement (``y_b = y + e_b``: the spread of
a fit on y_b about the fit on y stands in for that of the fit on y about the noiseless one), refits
Private-PGM from them, draws rows from the refitted model, refits the marginal-matching weights from their own
re-noised measurements (and the generator's, when they were matched too), and recomputes the estimate. All
replicates draw their rows with the same random numbers, so their spread is the noise's, not the sampling's.

With fine histograms (:mod:`dpiw.sdgp.binning`), their published levels are re-noised as well: each replicate's
bins get their counts and the values inside them from its own fine histograms (the cut points stay the
release's).

Marginal-matching weights stop short of D: they fit the measured marginals only to within their noise (the
discrepancy principle), on the generator's side, so an estimate the generator gets wrong is only partly
corrected and the replicates above, which re-aim at the same measurements, do not see it. A second, smaller
bootstrap measures it (:meth:`NoiseBootstrap.bias_set`): in the world the release describes (the released
model's rows with the release's weights), the weights refitted to that world's marginals with fresh noise fall
back towards the generator by about as much as the release fell short of D (``Estimate.bias``); the interval
reaches the estimate corrected by it. On bench/interval_coverage.py's clinic population at 20,000 rows it took the
coverage of the mean bmi among the ill from 86% to 100% (its interval 0.83 of the calibrated width).

A numeric mean within a subgroup has one more bias the replicates share: inside a bin, values are drawn from
the column's own histogram whatever the row's other columns, so a subgroup whose share grows with the column sits
too low in every bin. :mod:`dpiw.analysis.bin_bias` estimates it from the released rows, and the interval reaches
the estimate corrected for it too (``Estimate.biases``). On bench/interval_coverage.py's skewed population at 200,000
rows it took the mean kappa among the deaths from 84% to 90% of releases covered (1.07 times the calibrated width).

Not covered: the generator's bias (what its model cannot express: a spanning tree's missing interactions;
without fine histograms, equal-width bins with uniform values inside each; with them, the rows of a tail cut
by the threshold), the exponential mechanisms' choices (the tree or the rounds' picks are kept fixed), and the
weights' do-no-harm decision beyond what each replicate decides again. bench/interval_coverage.py measures what the
interval covers.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpiw import DpiwError

#: the bootstrap's replicates and the synthetic rows each one draws (at most)
REPLICATES = 30
REPLICATE_ROWS = 20_000
#: the weights' second bootstrap (:meth:`NoiseBootstrap.bias_set`): refits of the weights on the released model's rows
BIAS_REPLICATES = 10
#: the threads that refit the bootstrap's weights (:class:`Chains`; fixed: which refit starts which is part of the
#: replicates, so a machine's cores do not change them)
CHAINS = 2
#: the version of the cached replicates' format and of the bootstrap that made them (a change makes new ones)
CACHE_FORMAT = 10


@dataclass
class Replicate:
    data: pd.DataFrame  # decoded rows drawn from a refitted model
    weights: np.ndarray
    kind: str = "noise"  # "noise"; "bias_base" and "bias": the weights' bootstrap on the released model's rows


class NoiseBootstrap:
    """The replicates of one bundle, made once (seconds: one Private-PGM refit each) and kept.

    Parameters
    ----------
    schema : dpiw.data.schema.Schema
        The bundle's public schema.
    measurements : dict
        The bundle's measurements.json: ``generator`` (a zCDP SDGP's noisy marginals, their std, the bins,
        Private-PGM's iterations and the row total) and, for marginal-matching weights, ``weights``.
    reuse : bool
        Whether the weights matched the generator's measurements too (the fit_weights record says).
    tau : float, None or "search"
        The release's tau for marginal-matching weights (its fit_weights record): each noise replicate refits its
        weights at it (None: the release's weights were 1, and so are the replicates'); "search" (a record
        without one): the discrepancy principle, as the release chose it.
    replicates, rows, seed : int
        The bootstrap's size, the rows each replicate draws, the analyst's seed.
    """

    def __init__(self, schema, measurements: dict, *, reuse: bool, replicates: int = REPLICATES,
                 rows: int = REPLICATE_ROWS, seed: int = 0, cache: bool = True, progress=None,
                 tau: float | None | str = "search"):
        if "generator" not in measurements:
            raise DpiwError("the bundle publishes no generator measurements: noise-aware intervals need a "
                            "marginal-based generator (mst, aim)")
        self.schema, self.m, self.reuse, self.tau = schema, measurements, reuse, tau
        self.replicates, self.rows, self.seed = int(replicates), int(rows), seed
        self.cache, self.progress = cache, progress
        self._made: list[Replicate] | None = None

    def cache_path(self):
        """Where the replicates are kept between processes: the user's cache folder (``DPIW_CACHE`` names
        another, "off" none), under a digest of everything they depend on (the bundle's schema and measurements,
        the bootstrap's settings and this format's version); None when off."""
        import hashlib
        import json

        folder = user_cache() if self.cache else None
        if folder is None:
            return None
        key = json.dumps({"format": CACHE_FORMAT, "schema": self.schema.public_dict(), "measurements": self.m,
                          "reuse": self.reuse, "replicates": self.replicates, "rows": self.rows, "seed": self.seed,
                          "tau": self.tau},
                         sort_keys=True, default=str)
        return folder / "noise_aware" / (hashlib.sha256(key.encode()).hexdigest()[:32] + ".parquet")

    def _load(self, path) -> list[Replicate] | None:
        if path is None or not path.is_file():
            return None
        try:
            frame = pd.read_parquet(path)
        except Exception:  # a damaged cache file is rebuilt, never trusted
            return None
        if "_kind" not in frame:
            return None
        try:
            os.utime(path)  # used now: the last to go when the cache is trimmed (trim_cache)
        except OSError:
            pass
        for c in self.schema.columns:  # the category codes back to the labels (_save)
            if not c.is_numeric and c.name in frame:
                frame[c.name] = pd.Categorical.from_codes(frame[c.name].to_numpy(np.int64), categories=c.labels)
        return [Replicate(g.drop(columns=["_replicate", "_weight", "_kind"]).reset_index(drop=True),
                          g["_weight"].to_numpy(float), str(g["_kind"].iloc[0]))
                for _, g in frame.groupby("_replicate", sort=True)]

    def _save(self, path, made: list[Replicate]) -> None:
        if path is None:
            return
        import os
        import tempfile

        frame = pd.concat([rep.data.assign(_replicate=k, _weight=rep.weights, _kind=rep.kind)
                           for k, rep in enumerate(made)], ignore_index=True)
        # categories as their codes: parquet gives whole-number labels (town 1-5) back as plain integers, which a
        # fit's design then reads as one number, and cannot write numbers beside `missing: category`'s "missing"
        for c in self.schema.columns:
            if not c.is_numeric and c.name in frame:
                frame[c.name] = pd.Categorical(frame[c.name], categories=c.labels).codes.astype(np.int64)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
            os.close(fd)
            frame.to_parquet(tmp, index=False)
            os.replace(tmp, path)  # atomic: a concurrent reader sees the whole file or none
            trim_cache(path.parent, keep=path)
        except OSError:  # a read-only home: the replicates stay in this process only
            pass

    def _triples(self, part: dict) -> list:
        return [(tuple(x["clique"]), np.asarray(x["counts"], float), float(x["std"])) for x in part["measurements"]]

    def _all(self) -> list[Replicate]:
        if self._made is not None:
            return self._made
        path = self.cache_path()
        self._made = self._load(path)
        if self._made is None:
            self._made = self._build(self.progress or (lambda done, total: _progress(done, total, path)))
            self._save(path, self._made)
        return self._made

    def made(self) -> list[Replicate]:
        """The noise replicates: rows of a refitted model, weights refitted to re-noised measurements."""
        return [r for r in self._all() if r.kind == "noise"]

    def bias_set(self) -> tuple[Replicate | None, list[Replicate]]:
        """The weights' bootstrap (None and [] without marginal-matching weights). Marginal matching fits its
        weights within the noise of its measurements (the discrepancy principle), so it stops short of D's
        marginals, on the generator's side: an estimate the generator gets wrong is corrected only in part. To
        see how far short, the base replicate is the released model's rows with the release's weights (the
        world the release describes), and each bias replicate refits the weights on those same rows to that
        world's own marginals with fresh noise of the published std: how far the refits fall back towards the
        generator estimates how far the release fell short of D."""
        reps = self._all()
        base = next((r for r in reps if r.kind == "bias_base"), None)
        return base, [r for r in reps if r.kind == "bias"]

    def _build(self, progress) -> list[Replicate]:
        from threadpoolctl import threadpool_limits

        from dpiw.scale import decode_frame
        from dpiw.sdgp.pgm import estimate, mbi_module, sample_rows
        from dpiw.weights.marginal_match import MarginalMatch

        gen = self.m["generator"]
        # JAX's compiled programs beside the replicates (the user's cache folder), never in the working directory
        folder = user_cache()
        mbi, rng = mbi_module(str(folder / "jax") if folder else "off"), np.random.default_rng(self.seed)
        cards, total, iters, bins = list(gen["cards"]), float(gen["total"]), int(gen["iters"]), int(gen["bins"])
        released = self._triples(gen)
        fine = FineReplicas(self.schema, gen["fine"], total) if gen.get("fine") else None
        base = estimate(mbi, cards, released, total=total, iters=iters)
        draws, matched = int(rng.integers(2**32)), "weights" in self.m
        data, weights = [None] * self.replicates, [None] * self.replicates
        # one BLAS thread throughout: the weights' fits run on the chains' threads beside the refits here
        with threadpool_limits(limits=1, user_api="blas"), Chains() as chains:
            for k, (noised, binning, own) in enumerate(self._noise(rng, released, fine, bins)):
                progress(k, self.replicates)
                model = estimate(mbi, cards, noised, total=total, iters=iters, warm_start=base)
                # every replicate draws its rows with the same random numbers (common random numbers): the rows
                # of two replicates differ where their models do, so the spread is the noise's, not the sampling's
                rows = sample_rows(model, self.schema, binning, self.rows, np.random.default_rng(draws))
                data[k] = decode_frame(rows, self.schema)
                if not matched or self.tau is None:  # no weights, or the release's were 1
                    weights[k] = np.ones(len(rows))
                    continue
                mm = MarginalMatch.from_published(self.m["weights"], self.schema)
                mm.measurements_ = own
                # at the release's tau: a replicate's measurements carry the release's noise and their own, so its
                # discrepancy principle found no tau within them and took the smallest (on Ecdat's HI, 30 of 30
                # replicates at 0.01 where the release took 0.1, log weights spanning 28)
                chains.reweight(k, mm, rows, tuple(noised) if self.reuse else (), weights,
                                tau=None if self.tau == "search" else float(self.tau))
            # the weights' bootstrap starts here while the chains finish the noise replicates' refits
            bias = self._bias_replicates(base, released, bins if fine is None else fine.binning, draws, rng,
                                         chains) if matched else []
            out = [Replicate(d, w) for d, w in zip(data, chains.wait(weights), strict=True)] + bias
        progress(self.replicates, self.replicates)
        return out

    def _noise(self, rng, released: list, fine, bins):
        """Each noise replicate's re-noised measurements, in the order :meth:`_build` draws them from ``rng``: the
        generator's (``(clique, counts, std)``, the published order), the bins (the fine histograms re-noised, or
        ``bins``) and the weights' own (``(clique, counts)``; None without marginal-matching weights)."""
        from dpiw.weights.marginal_match import MarginalMatch

        published = MarginalMatch.from_published(self.m["weights"], self.schema) if "weights" in self.m else None
        for _ in range(self.replicates):
            noised = [(cl, y + rng.normal(0.0, sd, size=y.size), sd) for cl, y, sd in released]
            binning = bins
            if fine is not None:  # the fine histograms re-noised too: the bins' counts and the values inside
                binning, one_way = fine.replicate(rng)
                noised = fine.substitute(noised, one_way)
            own = None if published is None else [(cl, y + rng.normal(0.0, published.sigma_, size=y.size))
                                                  for cl, y in published.measurements_]
            yield noised, binning, own

    def measured(self) -> list[dict]:
        """Each noise replicate's measurements as the bundle publishes its own (``measurements.json``'s parts with
        every noisy count replaced by the replicate's): the same random numbers as :meth:`_build` drew them
        from (replayed, no model refitted), so replicate k's rows were fitted to replicate k's measurements."""
        gen = self.m["generator"]
        rng = np.random.default_rng(self.seed)
        total = float(gen["total"])
        fine = FineReplicas(self.schema, gen["fine"], total) if gen.get("fine") else None
        rng.integers(2**32)  # the rows' draws (_build)
        out = []
        for noised, _, own in self._noise(rng, self._triples(gen), fine, int(gen["bins"])):
            m = {**self.m, "generator": _recounted(gen, [y for _, y, _ in noised], [cl for cl, _, _ in noised])}
            if own is not None:
                m["weights"] = _recounted(self.m["weights"], [y for _, y in own], [cl for cl, _ in own])
            out.append(m)
        return out

    def _bias_replicates(self, base, released: list, binning, draws: int, rng, chains) -> list[Replicate]:
        """:meth:`bias_set`'s replicates: the released model's rows (the same random numbers as the noise
        replicates'), weighted as the release was, then :data:`BIAS_REPLICATES` refits of the weights to those
        weighted rows' own marginals plus fresh noise."""
        from dpiw.scale import decode_frame
        from dpiw.sdgp.marginals import discretise
        from dpiw.sdgp.pgm import sample_rows
        from dpiw.weights.marginal_match import MarginalMatch

        rows = sample_rows(base, self.schema, binning, self.rows, np.random.default_rng(draws))
        mm = MarginalMatch.from_published(self.m["weights"], self.schema)
        mm.reweight(rows, extra=tuple(released) if self.reuse else ())
        w0 = np.exp(mm.log_ratio_ - mm.log_ratio_.max())
        cells, cards = discretise(rows, self.schema, mm.discretisation)
        mass = w0 * (mm.rows_.n / w0.sum())

        def world(cl) -> np.ndarray:  # the weighted rows' counts of a clique's cells, in D's units
            idx = np.ravel_multi_index(tuple(cells[:, j] for j in cl), tuple(cards[j] for j in cl))
            return np.bincount(idx, weights=mass, minlength=math.prod(cards[j] for j in cl))

        own = [(cl, world(cl)) for cl, _ in mm.measurements_]
        extra = [(cl, world(cl), sd) for cl, _, sd in released] if self.reuse else []
        chains.restart()  # these refits start afresh: their problem is not the noise replicates'
        weights = [None] * BIAS_REPLICATES
        for k in range(BIAS_REPLICATES):
            rep = MarginalMatch.from_published(self.m["weights"], self.schema)
            rep.measurements_ = [(cl, y + rng.normal(0.0, rep.sigma_, size=y.size)) for cl, y in own]
            noised = tuple((cl, y + rng.normal(0.0, sd, size=y.size), sd) for cl, y, sd in extra)
            chains.reweight(k, rep, rows, noised, weights)
        data = decode_frame(rows, self.schema)
        return [Replicate(data, w0, "bias_base")] + [Replicate(data, w, "bias") for w in chains.wait(weights)]


def _recounted(part: dict, counts: list, cliques: list) -> dict:
    """A published part of measurements.json with each measurement's counts replaced (in its order)."""
    if [tuple(m["clique"]) for m in part["measurements"]] != [tuple(cl) for cl in cliques]:
        raise DpiwError("the bootstrap's measurements are not in the bundle's order")
    return {**part, "measurements": [{**m, "counts": y} for m, y in zip(part["measurements"], counts, strict=True)]}


class Chains:
    """The bootstrap's weight refits on :data:`CHAINS` threads beside the Private-PGM refits of the main thread
    (their sparse products and NumPy's loops release the GIL): refit k runs on chain k mod CHAINS after that
    chain's previous refit, whose dual points and tau start it (a like problem: the same optimum and pick in
    fewer steps). Which refit warm-starts which is fixed, so the replicates are the same on any machine; a
    chain's error is raised by :meth:`wait`."""

    def __init__(self, chains: int | None = None):
        from concurrent.futures import ThreadPoolExecutor

        self.n = int(chains or CHAINS)
        self.pools = [ThreadPoolExecutor(1, thread_name_prefix=f"dpiw-weights-{c}") for c in range(self.n)]
        self.futures: list = []
        self.restart()

    def restart(self) -> None:
        """The next refits start cold (call between sets of refits, after :meth:`wait`)."""
        self.warm = [{"warm": None, "start_tau": None} for _ in range(self.n)]

    def reweight(self, k: int, mm, rows: pd.DataFrame, extra: tuple, into: list, tau: float | None = None) -> None:
        """Queue ``mm.reweight(rows, extra, tau=tau)`` on chain k mod n; its weights go to ``into[k]``."""
        state = self.warm[k % self.n]

        def job():
            mm.reweight(rows, extra=extra, tau=tau, **state)
            state["warm"], state["start_tau"] = getattr(mm, "duals_", None), getattr(mm, "tau_", None)
            into[k] = np.exp(mm.log_ratio_ - mm.log_ratio_.max())

        self.futures.append(self.pools[k % self.n].submit(job))

    def wait(self, into: list) -> list:
        """``into`` once every queued refit has ended (the first error raised)."""
        futures, self.futures = self.futures, []
        for f in futures:
            f.result()
        return into

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for pool in self.pools:
            pool.shutdown(wait=True, cancel_futures=exc[0] is not None)
        return False


#: the noise-aware replicates kept on disk, at most (``DPIW_CACHE_MB`` sets another size in MB): about 10 MB a
#: bundle of 6,000 rows, so some hundred bundles; the least recently used go first
CACHE_MAX_MB = 1024


def trim_cache(folder, *, keep=None) -> list:
    """Remove the least recently used replicate files of ``folder`` (by their times: a read touches its file)
    until the rest fit in ``DPIW_CACHE_MB`` (default :data:`CACHE_MAX_MB`); never ``keep``. Returns what went."""
    limit = float(os.environ.get("DPIW_CACHE_MB", CACHE_MAX_MB)) * 1e6
    files = []
    for f in folder.glob("*.parquet"):
        try:
            st = f.stat()
        except OSError:  # removed by another process meanwhile
            continue
        files.append((st.st_mtime, st.st_size, f))
    files.sort(key=lambda t: t[0], reverse=True)
    total, gone = 0, []
    for _, size, f in files:
        total += size
        if total > limit and f != keep:
            try:
                f.unlink()
                gone.append(f)
            except OSError:
                pass
    return gone


def user_cache():
    """dpiw's folder in the user's cache (``DPIW_CACHE`` names another; None when it is "off")."""
    import os
    from pathlib import Path

    folder = os.environ.get("DPIW_CACHE")
    if folder == "off":
        return None
    if not folder:
        try:
            import platformdirs

            folder = platformdirs.user_cache_dir("dpiw")
        except ImportError:  # pragma: no cover - platformdirs comes with the pipeline's dependencies
            folder = str(Path.home() / ".cache" / "dpiw")
    return Path(folder)


#: off a terminal (a notebook, a log), the bootstrap's progress says every this many replicates (a trial's notebook
#: saw "0/30", then nothing for 9 s, then "30/30")
PROGRESS_EVERY = 10


def _progress(done: int, total: int, cache) -> None:
    """The bootstrap's progress on standard error: a line that updates on a terminal, a line every
    :data:`PROGRESS_EVERY` replicates otherwise."""
    import sys

    tty = sys.stderr.isatty()
    if done % PROGRESS_EVERY == 0 or done == total or tty:
        end = "\n" if done == total else ("\r" if tty else "\n")
        kept = f"kept in {cache.parent} for later processes" if cache is not None else "kept in this process"
        print(f"dpiw: noise-aware bootstrap of this bundle, replicate {done}/{total} ({kept})", end=end,
              file=sys.stderr, flush=True)


class FineReplicas:
    """A zCDP generator's published fine histograms (:mod:`dpiw.sdgp.binning`), measured again: each replicate
    takes the released fine histogram as the truth, measures its tree with fresh Gaussian noise of the published
    std and post-processes it as the release did, on the release's bins (kept fixed, as the tree or the rounds'
    picks are). Not ``y + e`` on the noisy levels as for the other measurements: the pruning is not linear, and
    noise added to noise fills the empty tail that the release emptied (on a lognormal column the spread of the
    mean came out twice the one measured over releases)."""

    def __init__(self, schema, published: dict, total: float):
        from dpiw.sdgp.binning import Binning

        self.schema, self.total = schema, total
        self.binning = Binning.from_dict(schema, published["binning"])
        self.std = {k: float(v) for k, v in published["std"].items()}
        self.column = {c.name: j for j, c in enumerate(schema.columns)}

    def replicate(self, rng: np.random.Generator):
        """A new fine histogram per numeric column (same cut points) and each numeric column's bin counts."""
        from dpiw.sdgp.binning import Binning, NumericBins, shape, tree_levels

        numeric, one_way = {}, {}
        for name, nb in self.binning.numeric.items():
            sd = self.std[name]
            true = tree_levels(nb.fine * self.total)
            noisy = [np.array([self.total])] + [lv + rng.normal(0.0, sd, size=lv.size) for lv in true[1:]]
            fine, leaves = shape(nb.grid, noisy, self.total, sd)
            numeric[name] = NumericBins(nb.grid, nb.cuts, fine)
            one_way[name] = nb.coarse(leaves)
        return Binning(self.schema, numeric), one_way

    def substitute(self, measured: list, one_way: dict) -> list:
        """The measurements with each numeric column's first one-way measurement (the fine histogram's sums over
        its bins) replaced by the replicate's."""
        first = {(self.column[name],): counts for name, counts in one_way.items()}
        out = []
        for cl, y, sd in measured:
            if cl in first:
                y = first.pop(cl)
            out.append((cl, y, sd))
        return out


def check_label(column: str, label, categories: list, said: str = "") -> None:
    """Refuse a ``label`` that is not one of ``column``'s ``categories``: a flag (True == 1 in Python, but a flag
    is not the category 1, nor "yes"), or a number written as text or text as a number (the schema's ``[1, 2]``
    are numbers, and "1" is not one of them), said as such."""
    flag = isinstance(label, bool | np.bool_)
    if not flag and label in categories:
        return
    twin = (next((c for c in categories if not isinstance(c, bool | np.bool_) and isinstance(c, int | float | np.number)
                 and c == int(label)), None) if flag else
            next((c for c in categories if str(c) == str(label)), None))  # a flag's twin: the number it stands for
    kind = "a number" if isinstance(twin, int | float | np.number) else "text"
    hint = "" if twin is None else f" (the category is {twin!r}, {kind}: write {twin!r}, as the schema lists it)"
    raise DpiwError(f"{said}{label!r} is not a category of {column!r}; its categories are {categories}{hint}")


def subgroup(data: pd.DataFrame, where) -> np.ndarray:
    """The rows of a subgroup: ``where`` None (all), a mapping {column: label or list of labels}, or a function
    of the decoded rows returning a boolean mask."""
    if where is None:
        return np.ones(len(data), dtype=bool)
    if callable(where):
        try:
            mask = where(data)
        except (AttributeError, KeyError, NameError) as exc:  # a misspelt column, read as d.name or d["name"]
            raise DpiwError(f"where: the function failed ({type(exc).__name__}: {exc}); the bundle's columns are "
                            f"{list(data.columns)}") from None
        if isinstance(mask, pd.Series | pd.api.extensions.ExtensionArray):  # an empty value (Int64's <NA>) is out
            mask = pd.Series(mask).fillna(False)
        mask = np.asarray(mask, dtype=bool)
    elif isinstance(where, dict):
        mask = np.ones(len(data), dtype=bool)
        for column, value in where.items():
            if column not in data:
                raise DpiwError(f"where: no column {column!r}; the bundle has {list(data.columns)}")
            values = value if isinstance(value, list | tuple | set) else [value]
            col = data[column]
            if isinstance(col.dtype, pd.CategoricalDtype):
                for v in values:
                    check_label(column, v, list(col.cat.categories), "where: ")
            elif pd.api.types.is_integer_dtype(col):
                odd = [v for v in values if isinstance(v, bool | np.bool_) or not isinstance(v, int | float | np.number)
                       or not float(v).is_integer()]
                if odd:
                    raise DpiwError(f"where: {odd[0]!r} is not a whole number, and {column!r} holds whole numbers; "
                                    f"give one (e.g. {{{column!r}: 3}}) or a function for a range")
            else:  # a continuous column: no row holds exactly a value
                raise DpiwError(f"where: {column!r} is numeric; a mapping picks categories (or whole numbers of an "
                                f"integer column): give a function for a range, e.g. where=lambda d: d[{column!r}] > "
                                f"{values[0]!r}")
            mask &= col.isin(values).to_numpy()
    else:
        raise DpiwError("where: None, a mapping {column: label} or a function of the rows (a boolean mask cannot "
                        "be applied to the bootstrap's rows)")
    if mask.shape != (len(data),):
        raise DpiwError(f"where: the function must give one boolean per row, got shape {mask.shape}")
    return mask


def rescaled(data: pd.DataFrame, schema) -> pd.DataFrame:
    """Decoded rows back on the scale the generators model (:func:`dpiw.scale.decode_frame`'s inverse): numeric
    columns in [0, 1] by the schema's bounds (an empty value of a `missing: indicator` column at its lower bound,
    where its 0/1 column holds such rows), categories as their codes."""
    out = {}
    for c in schema.columns:
        col = data[c.name]
        if c.is_numeric:
            v = pd.to_numeric(col, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
            u = np.clip(c.to_unit(np.where(np.isfinite(v), v, c.lower)), 0.0, 1.0)
            out[c.name] = np.where(np.isfinite(v), u, 0.0)
        else:
            out[c.name] = pd.Categorical(col, categories=c.labels).codes.astype(np.int64)
    return pd.DataFrame(out)[schema.names]


def weighted_parts(h: np.ndarray, w: np.ndarray) -> tuple[float, float, float]:
    """The weighted mean of ``h``, its weighted variance and Kish's ESS of ``w``."""
    if not w.size or not w.sum() > 0:
        raise DpiwError("where: no synthetic row (or no weight) in this subgroup")
    p = w / w.sum()
    mean = float(p @ h)
    return mean, float(p @ (h - mean) ** 2), float(w.sum() ** 2 / (w * w).sum())


def noise_variance(boot: NoiseBootstrap, statistic) -> tuple[float, int]:
    """The variance of ``statistic(data, weights) -> (h, mask)``'s weighted mean over the replicates (their rows
    drawn with common random numbers, so what is left of the row sampling is small); and how many replicates
    had rows in the subgroup."""
    values = []
    for rep in boot.made():
        h, mask = statistic(rep.data, rep.weights)
        w, h = (rep.weights, h) if mask.all() else (rep.weights[mask], h[mask])
        total = w.sum()
        if total > 0:  # the weighted mean alone (weighted_parts' first), on every replicate of every estimate
            values.append(float(w @ h) / float(total))
    if len(values) < 2:
        raise DpiwError("where: the subgroup is empty in the bootstrap's rows; widen it")
    return float(np.var(values, ddof=1)), len(values)


#: the largest share of the way from the generator to D that the weights may be found to leave undone
MAX_SHORTFALL = 0.9


def weights_bias(boot: NoiseBootstrap, statistic) -> float:
    """How far the weights fall short of D for ``statistic`` (:meth:`NoiseBootstrap.bias_set`), 0 without
    marginal-matching weights.

    In the world the release describes, the generator's rows give theta_gen (unit weights), the release's weights
    theta (the base), and the refitted weights fall back to theta + shift: they leave a share
    s = -shift / (theta - theta_gen) of the way undone. Read as a constant share, the release left the same
    share of its own way to D undone, which is longer than the way in its world by 1 / (1 - s): the estimate's
    bias is shift / (1 - s) (s in [0, MAX_SHORTFALL]; 0 where the refits move away from the generator)."""
    base, reps = boot.bias_set()
    if base is None or not reps:
        return 0.0
    h, mask = statistic(base.data, base.weights)
    if not mask.any() or not base.weights[mask].sum() > 0:
        return 0.0
    theta = weighted_parts(h[mask], base.weights[mask])[0]
    theta_gen = float(np.mean(h[mask]))
    values = [weighted_parts(h[mask], r.weights[mask])[0] for r in reps if r.weights[mask].sum() > 0]
    if not values:
        return 0.0
    return float(shortfall(np.mean(values) - theta, theta - theta_gen))


def shortfall(shift, way):
    """:func:`weights_bias` from the refits' mean ``shift`` and the release's ``way`` (theta - theta_gen) in its
    world: shift / (1 - s), s = -shift / way in [0, MAX_SHORTFALL] (0 where way is 0); elementwise on arrays.

    >>> float(shortfall(-0.2, 1.0)), float(shortfall(0.1, 1.0)), float(shortfall(0.1, 0.0))
    (-0.25, 0.1, 0.1)
    """
    shift, way = np.asarray(shift, float), np.asarray(way, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(way != 0, np.clip(-shift / np.where(way != 0, way, 1.0), 0.0, MAX_SHORTFALL), 0.0)
    return shift / (1.0 - share)


def sampling_variances(h: np.ndarray, w: np.ndarray, mask: np.ndarray, n_private: float) -> dict[str, float]:
    """The closed-form parts: the released rows' own sampling and the private rows' (the population the
    estimate speaks of), for the subgroup ``mask``."""
    _, var, ess = weighted_parts(h[mask], w[mask])
    share = float(w[mask].sum() / w.sum())
    return {"synthetic_rows": var / ess, "private_rows": var / max(n_private * share, 1.0)}


def total_se(parts: dict[str, float]) -> float:
    return math.sqrt(sum(parts.values()))
