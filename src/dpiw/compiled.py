"""numba, set up once for dpiw's compiled kernels (dpiw.privacy.rowhash, dpiw.weights.indicators): compiled code
kept in dpiw's cache folder (``DPIW_CACHE``'s, else the user's; NUMBA_CACHE_DIR overrides both), not beside the
sources."""

from __future__ import annotations

import os

import numba

if not numba.config.CACHE_DIR:  # not set by the user (NUMBA_CACHE_DIR): dpiw's cache folder, not the source's
    import platformdirs

    # DPIW_CACHE names dpiw's folder (a trial that set it found numba's code under ~/.cache all the same); "off"
    # turns off the bootstrap's replicates only, not the compiled code
    _folder = os.environ.get("DPIW_CACHE")
    numba.config.CACHE_DIR = os.path.join(_folder if _folder and _folder != "off" else
                                          platformdirs.user_cache_dir("dpiw"), "numba")


def njit(**options):
    """numba's ``njit`` with its compiled code kept on disk, or compiled in every process where no cache folder
    can be written (numba refuses ``cache=True`` then)."""
    def wrap(f):
        try:
            return numba.njit(cache=True, **options)(f)
        except RuntimeError:
            return numba.njit(**options)(f)
    return wrap
