"""numba, set up once for dpiw's compiled kernels (dpiw.privacy.rowhash, dpiw.weights.indicators): compiled code
kept in dpiw's user cache folder (or NUMBA_CACHE_DIR), not beside the sources."""

from __future__ import annotations

import os

import numba

if not numba.config.CACHE_DIR:  # not set by the user (NUMBA_CACHE_DIR): dpiw's user cache folder, not the source's
    import platformdirs

    numba.config.CACHE_DIR = os.path.join(platformdirs.user_cache_dir("dpiw"), "numba")


def njit(**options):
    """numba's ``njit`` with its compiled code kept on disk, or compiled in every process where no cache folder
    can be written (numba refuses ``cache=True`` then)."""
    def wrap(f):
        try:
            return numba.njit(cache=True, **options)(f)
        except RuntimeError:
            return numba.njit(**options)(f)
    return wrap
