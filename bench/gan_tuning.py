"""GAN defaults (sdgp.gan), chosen on data that dpiw never evaluates: the toy data and wine (scikit-learn's
load_wine, in no grid that dpiw evaluates or compares with the paper). Searching hyper-parameters on a
private dataset spends its privacy; these two cost the evaluation datasets nothing.

One factor at a time from the defaults in params.yaml: each variant runs the real workflow in a temporary copy
(`snakemake aggregate --cores 2`), dpgan and dpcgan, epsilon 1, weights none, post none, 5 seeds. Prints per
variant the MLP ROC-AUC on wine's test split (one-vs-rest, 3 classes) and the WST on both datasets (mean +- SE
over the seeds), the seeds whose synthetic wine is worse than chance for the MLP (AUC < 0.5, or no AUC at all
because every synthetic row has one class), and the share of
synthetic rows in the largest class (collapse onto one class: 1.0; the real data: 0.40). Writes
bench/gan_tuning.png.

    python bench/gan_tuning.py [--seeds 5] [--variants baseline steps_300 ...]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from _workdir import ROOT, copy_repo, run_grid

#: one factor at a time; {} is params.yaml's sdgp.gan
VARIANTS = {
    "baseline": {},
    "steps_30": {"steps": 30, "keep_last": 3},
    "steps_300": {"steps": 300},
    "lr_0.0005": {"lr": 0.0005},
    "hidden_16": {"hidden": 16},
    "n_critic_1": {"n_critic": 1},
    "weight_clip_0.01": {"weight_clip": 0.01},
    "batch_64": {"batch_size": 64},
    "label_0.2": {"label_epsilon_fraction": 0.2},
}
SDGPS = ("dpgan", "dpcgan")
DATASETS = ("toy", "wine")


def config(name: str, overrides: dict, seeds: list[int]) -> dict:
    return {"out": f"results/gan_tuning/{name}",
            "grid": {"datasets": list(DATASETS), "epsilons": [1], "seeds": seeds, "sdgps": list(SDGPS),
                     "weights": ["none"], "posts": ["none"], "exclude": []},
            "sdgp": {"gan": overrides}}


def largest_class_share(out: Path, runs: pd.DataFrame) -> list[float]:
    """Share of the synthetic wine rows in their most frequent class, per run (1.0: one class only)."""
    shares = []
    for r in runs.itertuples():
        synth = out / "runs" / r.dataset / f"eps={r.eps:g}" / f"seed={r.seed}" / r.sdgp / "synth_full.parquet"
        shares.append(float(pd.read_parquet(synth)["cultivar"].value_counts(normalize=True).max()))
    return shares


def ms(v) -> str:
    v = pd.Series(v).dropna()
    return f"{v.mean():.3f} ± {v.std(ddof=1) / np.sqrt(len(v)):.3f}" if len(v) > 1 else "–"


def summarise(results: dict[str, pd.DataFrame]) -> tuple[list[str], pd.DataFrame]:
    rows, lines = [], ["| variant | SDGP | wine MLP AUC ↑ | seeds AUC < 0.5 or none | wine largest class | "
                       "wine WST ↓ | toy WST ↓ |", "|---|---|---|---|---|---|---|"]
    for name, runs in results.items():
        for sdgp in SDGPS:
            w = runs[(runs.dataset == "wine") & (runs.sdgp == sdgp)]
            t = runs[(runs.dataset == "toy") & (runs.sdgp == sdgp)]
            bad = int(((w.mlp_auc < 0.5) | w.mlp_auc.isna()).sum())  # NaN: one class only, nothing to learn
            lines.append(f"| {name} | {sdgp} | {ms(w.mlp_auc)} | {bad}/{len(w)} | "
                         f"{ms(w.largest_class)} | {ms(w.wst)} | {ms(t.wst)} |")
            rows.append({"variant": name, "sdgp": sdgp, "auc": w.mlp_auc.mean(),
                         "auc_se": w.mlp_auc.std(ddof=1) / np.sqrt(len(w)), "wst": w.wst.mean(),
                         "toy_wst": t.wst.mean()})
    return lines, pd.DataFrame(rows)


def plot(summary: pd.DataFrame, path: Path, seeds: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), constrained_layout=True)
    variants = list(dict.fromkeys(summary.variant))
    x = np.arange(len(variants))
    for k, sdgp in enumerate(SDGPS):
        s = summary[summary.sdgp == sdgp].set_index("variant").loc[variants]
        axes[0].errorbar(x + (k - 0.5) * 0.2, s.auc, yerr=s.auc_se, fmt="o", capsize=3, label=sdgp)
        axes[1].plot(x + (k - 0.5) * 0.2, s.wst, "o", label=sdgp)
    axes[0].axhline(0.5, color="grey", lw=0.8, ls="--")
    axes[0].set_ylabel("wine: MLP ROC-AUC on the test split (mean ± SE)")
    axes[1].set_ylabel("wine: WST (lower is better)")
    for ax in axes:
        ax.set_xticks(x, variants, rotation=35, ha="right")
        ax.legend(frameon=False)
    fig.suptitle(f"GAN defaults on data dpiw never evaluates (wine, ε = 1, {seeds} seeds, no weights)")
    fig.savefig(path, dpi=120)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    p.add_argument("--png", default=str(ROOT / "bench/gan_tuning.png"), help="where the plot goes")
    args = p.parse_args()
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        wd = copy_repo(Path(tmp))
        for name in args.variants:
            t = time.perf_counter()
            cfg = config(name, VARIANTS[name], list(range(args.seeds)))
            runs = pd.read_csv(run_grid(wd, f"gan_tuning_{name}", cfg))
            runs = runs[(runs.weights == "none") & (runs.post == "none")].copy()
            wine = runs.dataset == "wine"
            runs["largest_class"] = np.nan
            runs.loc[wine, "largest_class"] = largest_class_share(wd / cfg["out"], runs[wine])
            results[name] = runs
            print(f"{name}: {time.perf_counter() - t:.0f} s", flush=True)
    lines, summary = summarise(results)
    print("\n".join(lines))
    plot(summary, Path(args.png), args.seeds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
