"""The neighbouring relation of every mechanism (``privacy.neighbours``), and the row count N_D under it.

``replace_one`` (bounded DP, the default)
    Neighbouring datasets have the same size and differ in one row. N_D is public: every mechanism may
    read it (its budget split, N_G = rows_factor N_D, normalisers and sensitivities).
``add_remove``
    Neighbouring datasets differ by one row added or removed (unbounded DP; opacus's and MST's native
    relation). N_D itself is private. A stage that needs it first releases a noisy count
    N~ = round(N_D + Laplace(1 / eps_c)) (sensitivity 1) with a share ``count_epsilon_fraction`` of its
    own epsilon, and every later step reads N~, never N_D: N_G = rows_factor N~, the normalisers of the
    objectives and scores, DP-SGD's sampling rate, Private-PGM's total and the prior odds log(N_G / N~).
    Where a sensitivity grows with N_D (PrivBayes's count-weighted mutual information) the mechanism uses
    the upper bound N~ + log(1 / (2 delta')) / eps_c, which is above the smaller N_D of any neighbouring
    pair except with probability delta'; that delta' is part of the record's delta
    (:meth:`RowCount.upper_bound`).

How the sensitivities change (one table per histogram; R bounds ||x~||_2, lambda the L2 penalty, D the
objective's public divisor):

=======================================  =================  ================
quantity                                 replace_one        add_remove
=======================================  =================  ================
a histogram's counts, L1 / L2            2 / sqrt(2)        1 / 1
L2 logistic regression's minimiser, L2   2R / (D lambda)    R / (D lambda)
a sum of values in [0, 1] over the rows  1                  1
DP-SGD                                   opacus's curve     opacus's curve
                                         + conversion       as it is
=======================================  =================  ================

Without a noisy count (replace_one) a :class:`RowCount` is the exact N_D and spends nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpiw import DpiwError

#: privacy.neighbours, the default first
NEIGHBOURS = ("replace_one", "add_remove")
DEFAULT = NEIGHBOURS[0]
#: in words, for records and manifests
DESCRIPTION = {"replace_one": "replace-one (bounded DP: same size, one row changed; N_D public)",
               "add_remove": "add/remove-one (unbounded DP: one row added or removed; N_D private)"}


def check(neighbours: str) -> str:
    if neighbours not in NEIGHBOURS:
        raise DpiwError(f"privacy.neighbours must be one of {NEIGHBOURS}, got {neighbours!r}")
    return neighbours


def count_l1(neighbours: str) -> float:
    """L1 (and L1 = L2 squared) sensitivity of one histogram's counts: a replaced row moves one count down
    and one up; an added row moves one count up."""
    return 2.0 if check(neighbours) == "replace_one" else 1.0


def count_l2(neighbours: str) -> float:
    """L2 sensitivity of one histogram's counts: sqrt(2) (replace-one) or 1 (add/remove)."""
    return math.sqrt(count_l1(neighbours))


def changed_terms(neighbours: str) -> int:
    """How many terms of a sum over the rows one neighbouring change touches: 2 (one out, one in) or 1."""
    return 2 if check(neighbours) == "replace_one" else 1


def binary_entropy_bits(t: float) -> float:
    if t <= 0 or t >= 1:
        return 0.0
    return -t * math.log2(t) - (1 - t) * math.log2(1 - t)


def count_mi_sensitivity_add_remove(n: int) -> float:
    """Add/remove sensitivity (bits) of n I(X; Pi), the empirical mutual information times the row count,
    between datasets of n and n + 1 rows.

    With t = 1 / (n + 1) the larger empirical law is the mixture (1 - t) P + t (point mass), and so are its
    margins. Entropy is concave and a two-way mixture adds at most h(t) bits (h the binary entropy):
    (1 - t) H(P) <= H(P') <= (1 - t) H(P) + h(t). Writing I = H_X + H_Pi - H_XPi gives
    I' - I = -t I + a + b - c with a, b, c in [0, h(t)], so (n + 1) I' - n I = (n + 1)(a + b - c) lies in
    [-(n + 1) h(t), 2 (n + 1) h(t)], and (n + 1) h(1 / (n + 1)) = log2(n + 1) + n log2(1 + 1/n). It grows with
    n (slowly), so the value at an upper bound of N_D holds for every smaller N_D.

    >>> round(count_mi_sensitivity_add_remove(455), 3)
    20.548
    """
    if n < 1:
        raise DpiwError("the mutual information's add/remove sensitivity needs at least 1 row")
    return 2.0 * (n + 1) * binary_entropy_bits(1.0 / (n + 1))


@dataclass(frozen=True)
class RowCount:
    """The row count a stage's mechanisms may use in place of N_D.

    ``n``: the exact N_D (replace_one) or the released noisy count N~ (add_remove); ``epsilon`` and ``scale``:
    what the count spent and its Laplace scale (0 under replace_one).
    """

    neighbours: str
    n: int
    epsilon: float = 0.0
    scale: float = 0.0

    @classmethod
    def exact(cls, n: int) -> RowCount:
        """Replace-one: N_D is public."""
        return cls(DEFAULT, int(n))

    @property
    def noisy(self) -> bool:
        return self.neighbours == "add_remove"

    def upper_bound(self, delta: float) -> int:
        """A public upper bound on the smaller N_D of a neighbouring pair, wrong with probability at most
        ``delta`` (add/remove). Under replace-one both datasets have N_D rows: the exact N_D.

        For the pair (N, N + 1) the bound N~ + t fails when the Laplace draw of N's count is below -t
        (probability exp(-t / b) / 2 = delta for t = b log(1 / (2 delta))) or that of N + 1's is below -t - 1
        (less likely).
        """
        if not self.noisy:
            return self.n
        if not 0 < delta < 0.5:
            raise DpiwError(f"a bound on the private row count needs 0 < delta < 1/2, got {delta}")
        return int(math.ceil(self.n + self.scale * math.log(1.0 / (2.0 * delta))))

    def events(self) -> tuple[dict, ...]:
        """The count's RDP event (dpiw.privacy.accounting)."""
        if not self.noisy:
            return ()
        return ({"kind": "laplace", "epsilon": self.epsilon, "about": "noisy row count (add/remove)"},)

    def describe(self) -> dict:
        if not self.noisy:
            return {"neighbours": self.neighbours, "n": "N_D (public under replace-one)"}
        return {"neighbours": self.neighbours, "noisy_n": self.n, "epsilon": self.epsilon,
                "mechanism": f"Laplace count, scale {self.scale:.6g}, rounded and clipped at 1"}


def row_count(n_private: int, *, neighbours: str, epsilon: float, rng: np.random.Generator) -> RowCount:
    """The exact N_D (replace_one; ``epsilon`` unused) or a noisy count with ``epsilon`` (add_remove)."""
    if check(neighbours) == "replace_one":
        return RowCount.exact(n_private)
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise DpiwError(f"the noisy row count needs a positive epsilon, got {epsilon}; set "
                        "privacy.count_epsilon_fraction in (0, 1)")
    scale = 1.0 / epsilon
    noisy = max(1, int(round(n_private + rng.laplace(0.0, scale))))  # rounding, clipping: post-processing
    return RowCount("add_remove", noisy, float(epsilon), scale)
