"""Stage `figures`: the paper's Figure 1 (toy data: the weights of each method and the weighted density
of the synthetic rows, one cell of the grid) and Figure 2 (box plots of the importance-weighted
Bayesian posterior's predictive ROC-AUC, or MSE, per weight method and SDGP), as PNG."""

from __future__ import annotations

import pandas as pd

from dpiw import DpiwError
from dpiw.evaluate.figures import figure_bayes_boxplots, figure_toy_weights
from dpiw.io import read_log_weights, read_parquet
from dpiw.stages._cli import Parser, run


def parse_args(argv):
    p = Parser(prog="dpiw figures", description=__doc__)
    p.add_argument("--runs", required=True, help="results/<config>/tables/runs.csv (one row per run)")
    p.add_argument("--toy-panel", nargs=3, action="append", default=[], metavar=("METHOD", "SYNTH", "LOG_WEIGHTS"),
                   help="one Figure 1 panel; repeat per weight method")
    p.add_argument("--toy-title", default="toy data", help="Figure 1's title")
    p.add_argument("--out-fig1", required=True, help="Figure 1 (PNG): the toy weights and weighted densities")
    p.add_argument("--out-fig2", required=True,
                   help="Figure 2 (PNG): the weighted posterior's predictive metric over seeds")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    runs = pd.read_csv(args.runs)
    panels = []
    for method, synth_path, lw_path in args.toy_panel:
        synth = read_parquet(synth_path, columns=["x1", "x2"])
        log_w = read_log_weights(lw_path, "log_weight")
        if log_w.size != len(synth):
            raise DpiwError(f"{lw_path}: {log_w.size} weights for {len(synth)} rows of {synth_path}")
        panels.append((method, synth.to_numpy(float), log_w))
    if panels:
        figure_toy_weights(panels, args.toy_title, args.out_fig1)
    else:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        from dpiw.evaluate.figures import _save

        fig, ax = plt.subplots(figsize=(5, 1.5))
        ax.text(0.5, 0.5, "Figure 1 needs the toy dataset in grid.datasets", ha="center", va="center")
        ax.axis("off")
        _save(fig, args.out_fig1)
    figure_bayes_boxplots(runs, args.out_fig2)
    print(f"figures: {args.out_fig1} ({len(panels)} panels), {args.out_fig2}")


if __name__ == "__main__":
    run(main)
