"""Stage `postprocess_weights`: none, self-normalisation or tempering of the log ratios.

Post-processing of DP outputs: spends nothing (recorded with that basis).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpiw.io import read_log_weights, write_parquet
from dpiw.postprocess import POSTS, apply
from dpiw.privacy import no_spend
from dpiw.stages._cli import Parser, run


def parse_args(argv):
    p = Parser(prog="dpiw.stages.postprocess_weights", description=__doc__)
    p.add_argument("--log-ratios", required=True)
    p.add_argument("--post", choices=POSTS, required=True)
    p.add_argument("--alpha", type=float, default=1.0, help="tempering exponent in [0, 1]")
    p.add_argument("--out", required=True)
    p.add_argument("--privacy-out", required=True)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    lr = read_log_weights(args.log_ratios, "log_ratio")
    log_w = apply(args.post, lr, alpha=args.alpha)
    write_parquet(pd.DataFrame({"row": np.arange(lr.size), "log_weight": log_w}), args.out)
    no_spend("postprocess_weights", basis="post-processing of DP weights", post=args.post,
             alpha=args.alpha if args.post == "temper" else None).write(args.privacy_out)
    print(f"postprocess_weights: {args.post} on {lr.size} weights")


if __name__ == "__main__":
    run(main)
