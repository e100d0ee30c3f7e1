"""Composition of a run's mechanisms in Renyi DP (RDP), beside the basic (sum) composition.

Every DP privacy record lists its elementary mechanisms as *RDP events* (``PrivacySpend.rdp``):

``{"kind": "laplace", "epsilon": e, "count": m}``
    m Laplace mechanisms, each with noise scale b = sensitivity / e (pure e-DP). Exact RDP curve
    (Mironov 2017, Prop. 6, lambda = 1/e): 1/(a-1) log(a/(2a-1) e^{(a-1)e} + (a-1)/(2a-1) e^{-a e}).
``{"kind": "gaussian", "noise_multiplier": z, "count": m}``
    m Gaussian mechanisms with std z * (L2 sensitivity): a / (2 z^2).
``{"kind": "pure", "epsilon": e, "count": m}``
    m mechanisms known only to be e-DP (the exponential mechanism): min(e, a e^2 / 2) - e-DP implies
    (e^2/2)-zCDP (Bun and Steinke 2016, Prop. 1.4) and D_a <= D_inf <= e.
``{"kind": "zcdp", "rho": r, "count": m}``
    m rho-zCDP mechanisms (MST's Gaussian marginals and bounded-range exponential mechanisms): a * r.
``{"kind": "rdp_curve", "orders": [...], "rdp": [...]}``
    a curve computed where the mechanism ran (DP-SGD: :func:`poisson_gaussian_replace_one`).
``{"kind": "failure", "probability": p}``
    no curve: an event of probability at most p under which the other events' curves may not hold (a
    public bound of the private row count that is wrong; dpiw.privacy.neighbours). It adds p to delta.

The events of one run all hold for one neighbouring relation (the records' ``neighbours``; the ledger
refuses a mix). The ledger adds the curves order by order (RDP composes additively) and converts to
an epsilon at the run's delta less the failures' probabilities, with the conversion of Balle et al.
2020 (Prop. 12 of arXiv:2004.00010), the one Google's dp-accounting and opacus use. This module imports
numpy only; the DP-SGD curve needs opacus and is computed by the stage that trains (it has opacus loaded
anyway).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence

import numpy as np

from dpiw import DpiwError

#: Orders of a curve computed where its mechanism ran (DP-SGD's): dense near 1, geometric up to 256 (as opacus /
#: dp-accounting).
ORDERS: tuple[float, ...] = tuple([1 + x / 10.0 for x in range(1, 100)] + list(range(11, 64))
                                  + [round(64 * 2 ** (k / 4)) for k in range(9)])
#: Orders of the composed curve: ORDERS, then geometric up to 16,384. A small epsilon's best order is large (about
#: 2 log(1/delta) / epsilon: 1,600 at epsilon 0.02 and delta 1e-7), and up to 256 alone no rho > 0 converts to an
#: epsilon under about log(1/delta) / 255. The closed-form curves (Laplace, Gaussian, pure, zCDP) are evaluated on
#: all of them; a computed curve is known on ORDERS only and counts as unbounded at the larger orders.
ALL_ORDERS: tuple[float, ...] = ORDERS + tuple(round(256 * 2 ** (k / 4)) for k in range(1, 25))


def laplace_rdp(epsilon: float, orders: Sequence[float] = ALL_ORDERS) -> np.ndarray:
    """RDP of one Laplace mechanism with sensitivity / scale = epsilon (Mironov 2017, Prop. 6).

    >>> float(laplace_rdp(1.0, [2.0])[0]) == math.log(2 / 3 * math.e + 1 / 3 * math.exp(-2))
    True
    """
    a = np.asarray(orders, dtype=float)
    e = float(epsilon)
    if e == 0:
        return np.zeros_like(a)
    # log-sum-exp form: stable for large a * e
    t1 = np.log(a / (2 * a - 1)) + (a - 1) * e
    t2 = np.log((a - 1) / (2 * a - 1)) - a * e
    return np.logaddexp(t1, t2) / (a - 1)


def gaussian_rdp(noise_multiplier: float, orders: Sequence[float] = ALL_ORDERS) -> np.ndarray:
    """RDP of one Gaussian mechanism, std = noise_multiplier * L2 sensitivity: a / (2 z^2)."""
    z = float(noise_multiplier)
    if not z > 0:
        raise DpiwError(f"gaussian RDP event needs noise_multiplier > 0, got {z}")
    return np.asarray(orders, dtype=float) / (2.0 * z * z)


def pure_rdp(epsilon: float, orders: Sequence[float] = ALL_ORDERS) -> np.ndarray:
    """RDP of an epsilon-DP mechanism known only by its epsilon: min(epsilon, a epsilon^2 / 2)."""
    a = np.asarray(orders, dtype=float)
    e = float(epsilon)
    return np.minimum(e, a * e * e / 2.0)


def poisson_gaussian_replace_one(sample_rate: float, noise_multiplier: float, steps: int,
                                 orders: Sequence[float] = ORDERS) -> list[float]:
    """RDP curve of DP-SGD (Poisson-subsampled Gaussian, ``steps`` steps) for REPLACE-one neighbours.

    opacus's curve (Mironov, Talwar and Zhang 2019) is for add/remove-one; a replacement is a removal
    and an addition, and the weak triangle inequality of Renyi divergence (Mironov 2017, Prop. 11 with
    p = q = 2) gives D_a(P||R) <= (a - 1/2)/(a - 1) D_2a(P||Q) + D_{2a-1}(Q||R). opacus's curve bounds
    both directions (Mironov et al. 2019, Thm. 5), so eps_rep(a) <= (a - 1/2)/(a - 1) eps(2a) + eps(2a - 1).
    """
    return list(_poisson_gaussian_replace_one(float(sample_rate), float(noise_multiplier), int(steps),
                                              tuple(float(o) for o in orders)))


def poisson_gaussian_add_remove(sample_rate: float, noise_multiplier: float, steps: int,
                                orders: Sequence[float] = ORDERS) -> list[float]:
    """opacus's RDP curve of DP-SGD for ADD/REMOVE-one neighbours (Mironov, Talwar and Zhang 2019)."""
    from opacus.accountants.analysis.rdp import compute_rdp

    return [float(v) for v in compute_rdp(q=float(sample_rate), noise_multiplier=float(noise_multiplier),
                                          steps=int(steps), orders=[float(o) for o in orders])]


@functools.lru_cache(maxsize=256)
def _poisson_gaussian_replace_one(sample_rate: float, noise_multiplier: float, steps: int,
                                  orders: tuple[float, ...]) -> tuple[float, ...]:
    """Memoised per process: the seeds of a cell share q, sigma and the steps, and the series costs seconds."""
    from opacus.accountants.analysis.rdp import compute_rdp

    a = np.asarray(orders, dtype=float)

    def curve(at):  # opacus's series is exact at fractional orders too (tests/privacy: numerical integral)
        return np.asarray(compute_rdp(q=sample_rate, noise_multiplier=noise_multiplier, steps=steps,
                                      orders=[float(o) for o in at]))

    twice, twice_less_one = curve(2 * a), curve(2 * a - 1)
    return tuple(float(v) for v in (a - 0.5) / (a - 1) * twice + twice_less_one)


def curve_event(curve: Sequence[float], orders: Sequence[float] = ORDERS, **about) -> dict:
    return {"kind": "rdp_curve", "orders": [float(o) for o in orders], "rdp": [float(v) for v in curve], **about}


def event_rdp(event: dict, orders: Sequence[float] = ALL_ORDERS) -> np.ndarray:
    """The RDP curve of one event on ``orders``."""
    kind = event.get("kind")
    count = int(event.get("count", 1))
    if count < 0:
        raise DpiwError(f"RDP event {event}: count must be >= 0")
    if kind == "laplace":
        return count * laplace_rdp(event["epsilon"], orders)
    if kind == "gaussian":
        return count * gaussian_rdp(event["noise_multiplier"], orders)
    if kind == "pure":
        return count * pure_rdp(event["epsilon"], orders)
    if kind == "zcdp":
        if not (event["rho"] >= 0 and math.isfinite(event["rho"])):
            raise DpiwError(f"RDP event {event}: rho must be finite and >= 0")
        return count * float(event["rho"]) * np.asarray(orders, dtype=float)
    if kind == "failure":
        if not (0 <= event["probability"] < 1):
            raise DpiwError(f"RDP event {event}: probability must be in [0, 1)")
        return np.zeros(len(orders))
    if kind == "rdp_curve":  # known on its own orders; unbounded (no claim) at any other
        own = np.asarray(event["orders"], dtype=float)
        values = np.asarray(event["rdp"], dtype=float)
        want = np.asarray(orders, dtype=float)
        out = np.full(len(want), np.inf)
        for i, a in enumerate(want):
            j = np.flatnonzero(np.isclose(own, a, rtol=1e-9, atol=0))
            if j.size:
                out[i] = values[j[0]]
        if not np.isfinite(out).any():
            raise DpiwError("an rdp_curve event was computed on other orders than dpiw.privacy.accounting.ORDERS")
        return count * out
    raise DpiwError(f"unknown RDP event kind {kind!r} (laplace, gaussian, pure, zcdp, rdp_curve, failure)")


def compose(events: Iterable[dict], orders: Sequence[float] = ALL_ORDERS) -> np.ndarray:
    """RDP curve of the sequential composition of ``events`` (sum over events, order by order)."""
    total = np.zeros(len(orders))
    for ev in events:
        total += event_rdp(ev, orders)
    return total


def rdp_to_dp(curve: Sequence[float], delta: float, orders: Sequence[float] = ALL_ORDERS) -> tuple[float, float]:
    """(epsilon, optimal order) at ``delta`` (Balle et al. 2020, Prop. 12; as dp-accounting and opacus)."""
    if not 0 < delta < 1:
        raise DpiwError(f"RDP conversion needs 0 < delta < 1, got {delta}")
    a = np.asarray(orders, dtype=float)
    r = np.asarray(curve, dtype=float)
    if np.all(r == 0):
        return 0.0, float(a[0])
    eps = r + np.log1p(-1.0 / a) - (math.log(delta) + np.log(a)) / (a - 1)
    eps = np.where(a > 1.01, eps, np.inf)
    i = int(np.argmin(eps))
    return max(0.0, float(eps[i])), float(a[i])


def composed_spend(records, delta: float) -> dict:
    """The run's epsilon at ``delta`` when its DP records' RDP events are composed; None where a DP
    record that spends something lists no events (then only basic composition holds)."""
    events, missing = [], []
    for r in records:
        if not r.dp or (r.epsilon == 0 and r.delta == 0):
            continue
        if not r.rdp:
            missing.append(r.stage)
        events.extend(r.rdp)
    if missing:
        return {"epsilon": None, "delta": delta, "accountant": "RDP",
                "note": f"no RDP events recorded by {missing}: basic composition only"}
    failures = math.fsum(float(ev["probability"]) for ev in events if ev.get("kind") == "failure")
    relations = sorted({getattr(r, "neighbours", "replace_one") for r in records})
    about = ("RDP (Laplace exact, Gaussian, pure eps as zCDP, DP-SGD curves; " + "/".join(relations)
             + " neighbours), conversion of Balle et al. 2020")
    if failures >= delta:
        return {"epsilon": None, "delta": delta, "accountant": about,
                "note": f"the failure events' probability {failures:.3g} leaves no delta for the conversion"}
    eps, order = rdp_to_dp(compose(events), delta - failures)
    return {"epsilon": eps, "delta": delta, "optimal_order": order, "n_events": len(events),
            "failure_probability": failures, "accountant": about}


def zcdp_to_dp(rho: float, delta: float) -> float:
    """epsilon at ``delta`` of rho-zCDP: its RDP curve alpha * rho converted as the ledger converts."""
    return rdp_to_dp(rho * np.asarray(ALL_ORDERS), delta)[0]


@functools.lru_cache(maxsize=256)
def zcdp_rho(epsilon: float, delta: float) -> float:
    """The largest rho (bisection, relative tolerance 1e-9) whose :func:`zcdp_to_dp` is at most ``epsilon``
    (memoised: a cell's seeds share the budget)."""
    if not (epsilon > 0 and 0 < delta < 1):
        raise DpiwError(f"a zCDP mechanism (MST, marginal_match) needs epsilon > 0 and 0 < delta < 1, got "
                        f"epsilon={epsilon}, delta={delta}; set "
                        "privacy.delta to a positive number, 'auto' or 'paper'")
    lo, hi = 0.0, epsilon
    while zcdp_to_dp(hi, delta) <= epsilon:
        lo, hi = hi, 2 * hi
    for _ in range(200):
        mid = (lo + hi) / 2
        if zcdp_to_dp(mid, delta) <= epsilon:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-9 * hi:
            break
    if lo <= 0:
        floor = rdp_to_dp(1e-300 * np.asarray(ALL_ORDERS), delta)[0]
        raise DpiwError(f"epsilon {epsilon:.4g} at delta {delta:.3g} is below what a zCDP mechanism (MST, AIM, "
                        f"marginal_match) can be accounted for here (about {floor:.2g} at least): raise the epsilon "
                        "(or its share) or the delta")
    return lo
