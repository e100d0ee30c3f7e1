"""The paper's figures as PNG (matplotlib, Agg): Figure 1 (toy data: the weights of each method and the
weighted density of the synthetic rows) and Figure 2 (box plots of the Bayesian posterior's predictive
ROC-AUC, or MSE for regression, per weight method and SDGP)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from dpiw import registry
from dpiw.evaluate.aggregate import WEIGHT_ORDER


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"figure.dpi": 110, "font.size": 8, "axes.titlesize": 9})
    return plt


def _weighted_kde(points: np.ndarray, w: np.ndarray, grid: np.ndarray, bandwidth: float) -> np.ndarray:
    """Gaussian KDE of 2-d ``points`` with weights ``w`` (normalised) at ``grid`` (m, 2)."""
    w = w / w.sum()
    keep = w > 0
    d2 = ((grid[:, None, :] - points[None, keep, :]) ** 2).sum(axis=2)
    return (np.exp(-0.5 * d2 / bandwidth**2) @ w[keep]) / (2 * math.pi * bandwidth**2)


def figure_toy_weights(panels: list[tuple[str, np.ndarray, np.ndarray]], title: str, out: str | Path,
                       per_row: int = 6) -> None:
    """Figure 1. ``panels``: (weight method, synthetic rows (n, 2) on [0,1]^2, log weights). For each method,
    a histogram of the self-normalised weights (mean 1, zero weights included and counted) with Kish's ESS,
    and under it the weighted KDE of the synthetic rows with the real rows' support (x1 + x2 < 1) outlined.
    At most ``per_row`` methods side by side; more go on further rows, so the figure fits a page."""
    plt = _plt()
    k = len(panels)
    cols = max(1, min(k, per_row))
    blocks = -(-k // cols)
    fig, axes = plt.subplots(2 * blocks, cols, figsize=(2.5 * cols, 4.9 * blocks), squeeze=False,
                             constrained_layout=True)
    g = np.linspace(0, 1, 60)
    gx, gy = np.meshgrid(g, g)
    grid = np.column_stack([gx.ravel(), gy.ravel()])

    def unit_mean(log_w):
        w = np.exp(log_w - np.max(log_w))
        return w * len(w) / w.sum()

    # one colour scale for every density panel (so that panels compare), shown once
    dens_all = [_weighted_kde(X, unit_mean(lw), grid, bandwidth=0.06).reshape(gx.shape) for _, X, lw in panels]
    levels = np.linspace(0.0, max(float(d.max()) for d in dens_all) * 1.0001, 13)
    filled = None
    for j, (method, _rows, log_w) in enumerate(panels):
        r, c = 2 * (j // cols), j % cols
        w = unit_mean(log_w)
        ess = w.sum() ** 2 / (w**2).sum()
        zeros = int(np.sum(w == 0))
        ax = axes[r, c]
        ax.hist(w, bins=30, color="tab:blue", alpha=0.8)
        ax.set_title(f"{method}\nESS/N = {ess / len(w):.2f}", fontsize=10)
        if zeros:
            ax.text(0.5, 0.95, f"{zeros} zero weights ({zeros / len(w):.0%})", transform=ax.transAxes,
                    ha="center", va="top", fontsize=8, bbox={"facecolor": "white", "alpha": 0.8, "lw": 0})
        ax.set_xlabel("weight (mean 1)", fontsize=9)
        if c == 0:
            ax.set_ylabel("synthetic rows")
        ax = axes[r + 1, c]
        filled = ax.contourf(gx, gy, dens_all[j], levels=levels, cmap="viridis")
        ax.plot([0, 1], [1, 0], color="white", lw=1.2, ls="--")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_aspect("equal")
        ax.set_xlabel("x1", fontsize=9)
        if c == 0:
            ax.set_ylabel("x2 (weighted KDE)")
    for j in range(k, blocks * cols):  # the last row's empty places
        axes[2 * (j // cols), j % cols].set_visible(False)
        axes[2 * (j // cols) + 1, j % cols].set_visible(False)
    if filled is not None:
        density_axes = [axes[2 * b + 1, c] for b in range(blocks) for c in range(cols)]
        fig.colorbar(filled, ax=density_axes, shrink=0.8, label="weighted density of the synthetic rows")
    fig.suptitle(title + "\nthe real rows lie on the triangle below the dashed line", fontsize=11)
    _save(fig, out)


def figure_bayes_boxplots(runs: pd.DataFrame, out: str | Path) -> None:
    """Figure 2. ``runs``: one row per run (dataset, eps, sdgp, weights, post, bayes_auc / bayes_mse).
    One panel per (dataset, eps), post = none; boxes over seeds, grouped by weight method, one colour
    per SDGP."""
    plt = _plt()
    df = runs[runs["post"] == "none"].copy()
    # a panel per (dataset, eps) that has a Bayesian metric: not one where it failed in every run or was skipped
    # (evaluation.skip_bayes)
    scored = np.zeros(len(df), bool)
    for m in ("bayes_auc", "bayes_mse"):
        if m in df:
            scored |= np.isfinite(df[m].to_numpy(float))
    df = df[scored]
    cells = sorted({(d, float(e)) for d, e in zip(df["dataset"], df["eps"], strict=True)})
    if not cells:
        fig, ax = plt.subplots(figsize=(4, 2))
        ax.text(0.5, 0.5, "no untempered runs (post = none) with the Bayesian metric to plot", ha="center")
        ax.axis("off")
        _save(fig, out)
        return
    fig, axes = plt.subplots(len(cells), 1, figsize=(12, 2.6 * len(cells)), squeeze=False, constrained_layout=True)
    # one colour per SDGP in every panel and every figure (its place in the registry), one legend for the
    # figure, outside the data
    sdgp_order = {name: i for i, name in enumerate(registry.sdgp_names())}
    all_sdgps = sorted(df["sdgp"].unique(), key=lambda s: sdgp_order.get(s, 99))
    colour_of = {sdgp: sdgp_colour(sdgp) for sdgp in all_sdgps}
    for ax, (dataset, eps) in zip(axes[:, 0], cells, strict=True):
        sub = df[(df["dataset"] == dataset) & (df["eps"].astype(float) == eps)]
        metric = "bayes_auc" if "bayes_auc" in sub and sub["bayes_auc"].notna().any() else "bayes_mse"
        order = {w: i for i, w in enumerate(WEIGHT_ORDER)}
        weights = sorted(sub["weights"].unique(), key=lambda w: order.get(w, 99))
        sdgps = [s for s in all_sdgps if s in set(sub["sdgp"])]
        width = 0.8 / max(1, len(sdgps))
        for si, sdgp in enumerate(sdgps):
            data, pos = [], []
            for wi, w in enumerate(weights):
                v = sub[(sub["sdgp"] == sdgp) & (sub["weights"] == w)][metric].to_numpy(float) if metric in sub else []
                v = np.asarray(v)[np.isfinite(v)]
                if v.size:
                    data.append(v)
                    pos.append(wi - 0.4 + width * (si + 0.5))
            if data:
                colour = colour_of[sdgp]
                bp = ax.boxplot(data, positions=pos, widths=width * 0.9, patch_artist=True, manage_ticks=False,
                                medianprops={"color": "black"}, showfliers=False)
                for patch in bp["boxes"]:
                    patch.set_facecolor(colour)
                    patch.set_alpha(0.5)
                for x, v in zip(pos, data, strict=True):  # the seeds themselves
                    ax.scatter(np.full(v.size, x), v, s=8, color=colour, edgecolor="black", linewidth=0.3, zorder=3)
        robust_ylim(ax, sub[metric].to_numpy(float) if metric in sub else np.array([]),
                    positions=None if metric == "bayes_auc" else "top")
        ax.set_xticks(range(len(weights)))
        ax.set_xticklabels(weights, rotation=20)
        ax.set_ylabel("posterior predictive ROC-AUC ↑" if metric == "bayes_auc" else "posterior predictive MSE ↓")
        ax.set_title(f"{dataset}, ε = {eps:g}: importance-weighted Bayesian updating (boxes over seeds)")
        ax.grid(axis="y", alpha=0.3)
        handles = [plt.Line2D([], [], color=colour_of[s], lw=6, alpha=0.7) for s in sdgps]
        labels = list(sdgps)
        if metric == "bayes_auc":  # a box below the line ranks worse than a coin
            ax.axhline(0.5, color="grey", lw=1, ls="--")
            handles.append(plt.Line2D([], [], color="grey", lw=1, ls="--"))
            labels.append("chance (AUC 0.5)")
        # each panel's own legend: only the SDGPs it shows
        ax.legend(handles, labels, title="SDGP", loc="center left", bbox_to_anchor=(1.005, 0.5), fontsize=8)
    _save(fig, out)


#: the SDGPs' colours: the same SDGP has the same colour in every figure, whatever the grid holds
SDGP_PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
                "#17becf")


def sdgp_colour(name: str) -> str:
    """An SDGP's colour: its place in dpiw.registry's list (a name outside it: grey)."""
    names = registry.sdgp_names()
    return SDGP_PALETTE[names.index(name) % len(SDGP_PALETTE)] if name in names else "#999999"


def robust_ylim(ax, values: np.ndarray, *, positions: str | None = "top", factor: float = 3.0,
                share: float = 0.03) -> list[float]:
    """Keep a few far outliers (at most ``share`` of the values, at least one) from flattening a panel: when
    the largest value passes ``factor`` times the span of the rest, the axis stops at 1.3 times that span and
    a note at the top edge says how many values lie above and the largest. Returns the values left out."""
    v = np.sort(np.asarray(values, float)[np.isfinite(values)])
    if positions is None or v.size < 4:
        return []
    keep = v[:v.size - max(1, int(share * v.size))]  # without the few largest
    lo, span = float(v[0]), max(float(keep[-1] - v[0]), 1e-12)
    if v[-1] - lo <= factor * span:
        return []
    top = lo + 1.3 * span
    ax.set_ylim(lo - 0.05 * span, top)
    above = v[v > top].tolist()
    ax.annotate(f"{len(above)} value(s) above, up to {above[-1]:.3g} ▲", xy=(0.995, 0.98), xycoords="axes fraction",
                ha="right", va="top", fontsize=8, bbox={"facecolor": "white", "alpha": 0.8, "lw": 0})
    return above


def _save(fig, out) -> None:
    from dpiw.io import _atomic

    out = Path(out)
    _atomic(out, lambda tmp: fig.savefig(tmp, format="png"))
    import matplotlib.pyplot as plt

    plt.close(fig)
