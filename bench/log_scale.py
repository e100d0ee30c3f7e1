"""A skewed column on wide public bounds, released on a linear and on a log scale (`scale: log`).

Simulated tables only: medical spending, 0 for 25% of the rows and lognormal for the rest (median about $55,
a long tail), on public bounds of 0 to 100,000 with `spikes: [0]`, higher for children than for adults, beside
a category and a target. MST with params.yaml's fine histograms at epsilon 1 (delta N^-1.5) is fitted on each
table twice, linear and log, on the same noise streams. On the linear scale the 256 fine cells are $391 wide, so
two thirds of the rows share the first cell after the zeros and are drawn evenly across it. Printed: the error of
the synthetic mean relative to the table's (bias, sd, root mean square, median of the absolute error), of the
mean among children, and the error of the share of rows above $100 and of the median (absolute).

``--threshold T`` sets the fine trees' pruning threshold (dpiw.sdgp.binning.THRESHOLD, in noise stds) for the
run: an experiment, not a setting.

    python bench/log_scale.py [--tables 12] [--rows 5000 20000] [--threshold 1]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from dpiw.data.schema import parse_schema
from dpiw.scale import decode_frame, scale_frame
from dpiw.sdgp.mst import MST

ROOT = Path(__file__).resolve().parents[1]
COLUMNS = [{"name": "spend", "type": "numeric", "lower": 0, "upper": 100000, "spikes": [0]},
           {"name": "child", "type": "categorical", "categories": ["no", "yes"]},
           {"name": "g", "type": "categorical", "categories": ["a", "b", "c"]},
           {"name": "y", "type": "categorical", "categories": ["no", "yes"]}]
SCALES = ("linear", "log")


def schema(scale: str):
    return parse_schema({"name": "spending", "task": "classification", "target": "y",
                         "columns": [{**COLUMNS[0], "scale": scale}, *COLUMNS[1:]]})


def table(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(300 + seed)
    child = rng.uniform(size=n) < 0.3
    spends = rng.uniform(size=n) < 0.75
    spend = np.where(spends, np.clip(rng.lognormal(np.where(child, 3.5, 4.2), 1.5, n), 0.01, 100000), 0.0)
    y = rng.uniform(size=n) < np.where(spend > 200, 0.5, 0.2)
    g = rng.integers(0, 3, n)
    return pd.DataFrame({"spend": spend, "child": np.where(child, "yes", "no"), "g": np.array(["a", "b", "c"])[g],
                         "y": np.where(y, "yes", "no")})


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tables", type=int, default=12)
    p.add_argument("--rows", type=int, nargs="+", default=[5000, 20000])
    p.add_argument("--threshold", type=float, default=None)
    args = p.parse_args()
    if args.threshold is not None:
        from dpiw.sdgp import binning

        binning.THRESHOLD = args.threshold
    mst = yaml.safe_load((ROOT / "params.yaml").read_text())["sdgp"]["mst"]
    print("| rows | scale | mean: bias | sd | rmse | median of abs error | mean among children: bias | median of abs "
          "error | share above $100: bias | median: bias (truth) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for n in args.rows:
        out = {s: {"mean": [], "child": [], "above": [], "median": []} for s in SCALES}
        truth_median = []
        for seed in range(args.tables):
            raw = table(n, seed)
            x, kid = raw.spend.to_numpy(), raw.child.to_numpy() == "yes"
            truth_median.append(np.median(x))
            for scale in SCALES:
                s = schema(scale)
                scaled = scale_frame(raw, s, {"spend": (0.0, 100000.0)})
                gen = MST(**mst).fit(scaled, s, epsilon=1.0, delta=n**-1.5, rng=np.random.default_rng(1000 + seed))
                d = decode_frame(gen.sample(n, rng=np.random.default_rng(2000 + seed)), s)
                v, k = d.spend.to_numpy(), (d.child == "yes").to_numpy()
                out[scale]["mean"].append(v.mean() / x.mean() - 1)
                out[scale]["child"].append(v[k].mean() / x[kid].mean() - 1)
                out[scale]["above"].append((v > 100).mean() - (x > 100).mean())
                out[scale]["median"].append(np.median(v) - np.median(x))
        for scale, e in out.items():
            m, c = np.array(e["mean"]), np.array(e["child"])
            print(f"| {n:,} | {scale} | {m.mean():+.1%} | {m.std(ddof=1):.1%} | {np.sqrt((m**2).mean()):.1%} | "
                  f"{np.median(np.abs(m)):.1%} | {c.mean():+.1%} | {np.median(np.abs(c)):.1%} | "
                  f"{np.mean(e['above']):+.3f} | "
                  f"{np.mean(e['median']):+.1f} ({np.mean(truth_median):.1f}) |", flush=True)


if __name__ == "__main__":
    main()
