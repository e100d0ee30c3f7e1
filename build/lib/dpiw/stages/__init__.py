"""Thin command-line stages: flags -> read artifacts -> call the algorithm -> atomic writes.

Run as ``python -m dpiw.stages.<name> --help``. Each ``main(argv)`` can be called in-process (tests).
"""

import os as _os

# One BLAS thread per stage process: Snakemake and DVC run stages side by side (one core each), and on
# the small matrices here a multi-threaded BLAS spends more time waking threads than computing (the
# evaluate stage ran 5-15x slower with the default threads on 2 busy cores). Set before numpy loads;
# a value already in the environment wins.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    _os.environ.setdefault(_var, "1")
