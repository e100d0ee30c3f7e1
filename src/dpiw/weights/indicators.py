"""The indicator matrix A of marginal matching (dpiw.weights.marginal_match): one row per measured cell, one
column per group of synthetic rows, a 1 where the group falls in the cell (one per marginal in every column). A
fit spends most of its time in the products A v (the weighted synthetic mass in every measured cell) and A^T l
(a dual point's log weight per group), a few hundred of each.

A is kept as each group's cell in each marginal, a group's cells side by side (16 bits a cell where every marginal
has at most 65,536), and its products are compiled loops (numba) on a few threads (started and joined in each
product) that add in the order scipy's sparse products add: the same numbers to the last bit, so a fit's weights
do not depend on the machine. At 1e6 groups and 95 marginals: 0.07 s against 0.29 for A v and 0.03 against 0.12
for A^T l on 2 cores, in 0.2 GB instead of 2.3 GB of CSR copies; at the noise-aware bootstrap's 18,406 groups
and 89 marginals 1.5 and 0.75 ms (bench/indicator_products.py). Without numba (the analysts' install: it is in
the ``pipeline`` extra) the products are scipy's.
"""

from __future__ import annotations

import os

import numpy as np

from dpiw import DpiwError

try:
    from dpiw.compiled import njit
except ModuleNotFoundError as exc:  # no numba (a broken one is an error): scipy's sparse products
    if exc.name != "numba":
        raise
    njit = None

#: :func:`_mass`'s blocks of groups and of marginals (bench/indicator_products.py)
GROUP_BLOCK, MARGINAL_BLOCK = 4096, 16
#: at most this many threads share a product; none below WORK cells of A (a thread costs more than it saves)
MAX_THREADS, WORK = 4, 1 << 21


def _mass(cells, offsets, v, out, k0, k1):
    """out[offsets[k] + cells[g, k]] += v[g] for the marginals k0 <= k < k1 (their cells are their own range of
    ``out``: two threads never write the same cell), each cell's terms in the order of g. A block of groups (in
    cache) at a time, and in it a group's marginals of one block of marginals one after the other: consecutive
    adds go to different cells, so none waits on the one before (as a small marginal's would, a marginal at a
    time), and a block's cells of ``out`` stay in the fastest cache."""
    n = cells.shape[0]
    for lo in range(0, n, GROUP_BLOCK):
        hi = min(n, lo + GROUP_BLOCK)
        for kb in range(k0, k1, MARGINAL_BLOCK):
            ke = min(k1, kb + MARGINAL_BLOCK)
            for g in range(lo, hi):
                x = v[g]
                for k in range(kb, ke):
                    out[offsets[k] + cells[g, k]] += x


def _spread(cells, offsets, lam, out, g0, g1):
    """out[g] = the sum over the marginals k, in their order, of lam[offsets[k] + cells[g, k]], for g0 <= g < g1."""
    m = cells.shape[1]
    for g in range(g0, g1):
        acc = 0.0
        for k in range(m):
            acc += lam[offsets[k] + cells[g, k]]
        out[g] = acc


if njit is not None:
    _mass, _spread = njit(nogil=True)(_mass), njit(nogil=True)(_spread)

def _in_threads(kernel, parts, *args) -> None:
    """``kernel(*args, *part)`` for every part, the first in this thread and each other in a thread of its own,
    started and joined here: no thread outlives a product (a process with live threads is not forked,
    dpiw.privacy.identity._fork_context, and a pool's threads would not survive a fork)."""
    import threading

    errors = []

    def run(part):
        try:
            kernel(*args, *part)
        except BaseException as exc:  # raised in the caller's thread below
            errors.append(exc)

    others = [threading.Thread(target=run, args=(p,), name="dpiw-indicators") for p in parts[1:]]
    for t in others:
        t.start()
    run(parts[0])
    for t in others:
        t.join()
    if errors:
        raise errors[0]


def threads() -> int:
    """The process's cores, at most :data:`MAX_THREADS`."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(cores, MAX_THREADS))


class Indicators:
    """A from ``index`` (for each marginal, each group's cell in it, numbered from 0) and ``sizes`` (each
    marginal's cells; A's rows are the marginals' cells one marginal after the other): :meth:`dot` is A v,
    :meth:`tdot` is A^T l.

    >>> a = Indicators([np.array([0, 1, 1]), np.array([0, 0, 1])], [2, 2])
    >>> a.dot(np.array([1.0, 2.0, 4.0])).tolist(), a.tdot(np.array([1.0, 10.0, 100.0, 1000.0])).tolist()
    ([1.0, 6.0, 3.0, 4.0], [101.0, 110.0, 1010.0])
    """

    def __init__(self, index, sizes, *, compiled: bool | None = None, n_threads: int | None = None):
        self.sizes = [int(s) for s in sizes]
        self.n_cells, self.groups = sum(self.sizes), int(len(index[0]))
        self.offsets = np.cumsum([0] + self.sizes[:-1]).astype(np.int64)
        self.compiled = njit is not None if compiled is None else compiled
        work = len(self.sizes) * self.groups
        self.n_threads = 1 if work < WORK else (n_threads or threads())
        for k, (idx, size) in enumerate(zip(index, self.sizes, strict=True)):  # the loops do not check bounds
            if len(idx) != self.groups or (len(idx) and not (0 <= idx.min() and idx.max() < size)):
                raise DpiwError(f"marginal matching: marginal {k}'s cells are not those of a table of {size} cells "
                                "(a measurement that does not fit the schema's bins?)")
        if self.compiled:
            dtype = np.uint16 if max(self.sizes) <= 1 << 16 else np.int64 if self.n_cells >= 2**31 else np.int32
            self.cells = np.empty((self.groups, len(self.sizes)), dtype=dtype)  # a group's cells side by side
            for k, idx in enumerate(index):
                self.cells[:, k] = idx
        else:
            from scipy import sparse

            rows = np.concatenate([o + np.asarray(idx) for o, idx in zip(self.offsets, index, strict=True)])
            cols = np.tile(np.arange(self.groups), len(self.sizes))
            self.a = sparse.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(self.n_cells, self.groups))
            self.a_t = self.a.T.tocsr()

    def dot(self, v: np.ndarray) -> np.ndarray:
        """A v: the mass of ``v`` (one value per group) in every measured cell."""
        if not self.compiled:
            return self.a @ v
        out = np.zeros(self.n_cells)
        m = len(self.sizes)
        t = min(self.n_threads, m)
        cuts = [round(i * m / t) for i in range(t + 1)]
        _in_threads(_mass, list(zip(cuts[:-1], cuts[1:], strict=True)), self.cells, self.offsets,
                    np.ascontiguousarray(v, dtype=float), out)
        return out

    def tdot(self, lam: np.ndarray) -> np.ndarray:
        """A^T l: each group's sum of ``lam`` over its measured cells."""
        if not self.compiled:
            return self.a_t @ lam
        out = np.empty(self.groups)
        n, t = self.groups, self.n_threads
        cuts = [round(i * n / t) for i in range(t + 1)]
        _in_threads(_spread, list(zip(cuts[:-1], cuts[1:], strict=True)), self.cells, self.offsets,
                    np.ascontiguousarray(lam, dtype=float), out)
        return out
