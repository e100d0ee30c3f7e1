"""What the Private-PGM SDGPs (MST, AIM) share: the `mbi` package behind JAX's compilation cache, the public
discretisation of the scaled columns into cells, and sampling rows from an estimated model.

JAX runs on the CPU in float64. Its compiled programs are kept in :data:`JAX_CACHE` between processes, so a
grid of fits pays compilation once per machine (the workflow runs its jobs with a fixed PYTHONHASHSEED, which
keeps the cache's keys stable).
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

from dpiw.data.schema import Schema

#: where the compiled JAX programs are kept between processes (relative to the working directory: the
#: repository's root in the workflow); DPIW_JAX_CACHE names another folder, or "off"
JAX_CACHE = ".cache/jax"


def mbi_module(cache: str | None = None):
    """The `mbi` package, with JAX configured first (CPU, float64, the persistent compilation cache in
    DPIW_JAX_CACHE, else ``cache``, else :data:`JAX_CACHE`)."""
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax

    jax.config.update("jax_enable_x64", True)
    cache = os.environ.get("DPIW_JAX_CACHE", cache or JAX_CACHE)
    if cache == "off":
        jax.config.update("jax_enable_compilation_cache", False)
    else:  # compile once per machine, not once per fit: the fit itself takes a few hundredths of a second
        jax.config.update("jax_enable_compilation_cache", True)
        jax.config.update("jax_compilation_cache_dir", os.path.abspath(cache))
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import mbi
    return mbi


#: drop JAX's in-memory compiled programs when the process holds more memory maps than this share of the
#: kernel's limit (vm.max_map_count)
MAP_SHARE = 0.25


def memory_maps() -> tuple[int, int] | None:
    """(memory maps this process holds, the kernel's limit), or None where /proc does not say (not Linux)."""
    try:
        with open("/proc/self/maps", "rb") as f:
            held = f.read().count(b"\n")
        with open("/proc/sys/vm/max_map_count") as f:
            return held, int(f.read())
    except (OSError, ValueError):
        return None


def relieve_maps(share: float = MAP_SHARE) -> bool:
    """Drop JAX's in-memory compiled programs when this process holds more than ``share`` of the kernel's memory
    maps; the persistent cache still holds them, so a later fit loads them instead of compiling. Every compiled
    program keeps memory maps: a process that estimates many Private-PGM models (AIM's rounds, a cell job's seeds,
    the noise-aware bootstrap) otherwise reaches vm.max_map_count (65,530 by default; an AIM fit on a 31-column
    table holds about 10,000) and dies with "LLVM compilation error: Cannot allocate memory". True when dropped."""
    import sys

    jax, maps = sys.modules.get("jax"), memory_maps()
    if jax is None or maps is None or maps[0] <= share * maps[1]:
        return False
    jax.clear_caches()
    import gc

    gc.collect()
    return True


def estimate(mbi, cards: list[int], measurements, *, total: float, iters: int, warm_start=None):
    """Private-PGM's mirror descent from (clique, noisy counts, std) triples with the known total, after
    :func:`relieve_maps`: every Private-PGM estimate in dpiw goes through here."""
    relieve_maps()
    return mbi.estimation.MirrorDescent().estimate(domain(mbi, cards), linear_measurements(mbi, measurements),
                                                   known_total=float(total), iters=iters, warm_start=warm_start)


#: a model whose junction tree holds at most this many cells is estimated in numpy (dpiw.sdgp.mirror_descent,
#: nothing compiled), a larger one by mbi (an XLA program per set of cliques, faster per step): numpy's steps
#: cost as much as mbi's compilation and steps of a 500-step estimate at about 260,000 cells (bench/aim_rounds.py)
NUMPY_CELLS = 200_000


def numpy_cells(iters: int) -> float:
    """The :data:`NUMPY_CELLS` of an estimate of ``iters`` steps (numpy's cost grows with the steps, mbi's is
    mostly its compilation): 200,000 cells at AIM's 500 steps a round, 100,000 at MST's 1,000."""
    return NUMPY_CELLS * 500 / max(int(iters), 1)


def model_size_mb(cards: list[int], cliques) -> float:
    """The size in MB of the junction tree of a model over ``cliques`` (its maximal cliques' cells x 8 bytes)."""
    from mbi import junction_tree

    mbi = mbi_module()
    return junction_tree.hypothetical_model_size(domain(mbi, cards), [tuple(map(str, cl)) for cl in
                                                                       dict.fromkeys(cliques)])


def estimate_model(mbi, cards: list[int], measurements, *, total: float, iters: int, warm=None,
                   max_numpy_cells: float = NUMPY_CELLS):
    """Private-PGM's estimate in numpy (:mod:`dpiw.sdgp.mirror_descent`, a :class:`~dpiw.sdgp.mirror_descent.Model`)
    while its junction tree holds at most ``max_numpy_cells`` cells, else by mbi (:func:`estimate`, an mbi model):
    the same steps, without compiling a program for every new set of cliques. ``warm``: an earlier model of
    either kind."""
    from dpiw.sdgp import mirror_descent as md

    cliques = md.potential_cliques(measurements)
    if model_size_mb(cards, cliques) * 2**20 / 8 <= max_numpy_cells:
        prior = None if warm is None else md.as_numpy(warm)
        return md.estimate(mbi, cards, measurements, total=total, iters=iters, warm=prior)
    prior = None if warm is None else md.as_mbi(mbi, warm)
    return estimate(mbi, cards, measurements, total=total, iters=iters, warm_start=prior)


def domain(mbi, cards: list[int]):
    """The model's domain: column j of the schema is attribute ``str(j)`` with ``cards[j]`` cells."""
    return mbi.Domain([str(j) for j in range(len(cards))], cards)


def linear_measurements(mbi, measurements) -> list:
    """(clique, noisy counts, std) triples as mbi's measurements (counts row-major over the clique's columns)."""
    return [mbi.LinearMeasurement(np.asarray(y, float), tuple(map(str, cl)), stddev=float(sd))
            for cl, y, sd in measurements]


def sample_rows(model, schema: Schema, bins, n: int, rng: np.random.Generator) -> pd.DataFrame:
    """``n`` scaled rows from a Private-PGM model (mbi's randomised rounding; a numpy model's by
    :mod:`dpiw.sdgp.pgm_sampling`, the same draws without compiling): a numeric cell maps back to a value inside its
    bin (``bins``: equal-width bins with uniform values, or a :class:`dpiw.sdgp.binning.Binning`, whose values
    follow its fine histogram), a category to its code."""
    from dpiw.sdgp import mirror_descent as md
    from dpiw.sdgp import pgm_sampling
    from dpiw.sdgp.binning import as_binning

    # mbi draws from numpy's global generator: seed it from ours, and put the global state back
    state = np.random.get_state()  # noqa: NPY002 - mbi samples from the legacy global generator
    np.random.seed(int(rng.integers(2**32)))  # noqa: NPY002
    try:
        if isinstance(model, md.Model):
            codes = pgm_sampling.synthetic_data(mbi_module(), model, n)
        else:
            synth = model.synthetic_data(rows=n)
            codes = {j: synth.data[str(j)] for j in range(len(schema.columns))}
    finally:
        np.random.set_state(state)  # noqa: NPY002
    cells = {c.name: np.asarray(codes[j], dtype=np.int64) for j, c in enumerate(schema.columns)}
    return as_binning(schema, bins).rows(cells, rng)
