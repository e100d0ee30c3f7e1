"""Stage `postprocess_weights`: a chain of post-processing steps on the log ratios (paper Supplement
A.2): none, normalise, temper, truncate, psis, calibrate, resample, joined by '+'.

Every step reads only DP outputs (calibrate: also the public slice's scores), so the stage spends
nothing; its record carries the Pareto k-hat release verdict of the run's raw weights, which the
manifest and the tables repeat.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from dpiw import DpiwError
from dpiw.io import read_log_weights, read_parquet, write_parquet
from dpiw.postprocess import apply_step, parse_post, truncation_tau
from dpiw.postprocess.psis import diagnose
from dpiw.postprocess.resample import SCHEMES, resample_counts
from dpiw.privacy.spend import no_spend
from dpiw.stages._cli import Parser, add_noise_args, identity, noise_from, run


def tau_arg(text: str) -> str | float:
    if text == "sqrt_n":
        return text
    try:
        return float(text)
    except ValueError:
        raise DpiwError(f"post.truncate.tau must be 'sqrt_n' or a number >= 1, got {text!r}") from None


def parse_args(argv):
    p = Parser(prog="dpiw postprocess_weights", description=__doc__)
    p.add_argument("--log-ratios", required=True)
    p.add_argument("--post", required=True, help="a step or a '+' chain of steps")
    p.add_argument("--alpha", type=float, default=1.0, help="temper: exponent in [0, 1]")
    p.add_argument("--tau", type=tau_arg, default="sqrt_n", help="truncate: cap tau * mean(w)")
    p.add_argument("--public-log-ratios", help="calibrate: the weight classifier's scores at the public rows")
    p.add_argument("--resample-scheme", choices=SCHEMES, default="systematic",
                   help="post.resample.scheme: how N rows are drawn by weight")
    p.add_argument("--synth", help="resample: the synthetic rows to resample")
    p.add_argument("--resampled-out", help="resample: where to write the resampled rows")
    p.add_argument("--seed", type=int, default=0, help="resample: run seed")
    p.add_argument("--run", default="", help="resample: the run's id, part of its random stream")
    p.add_argument("--out", required=True)
    p.add_argument("--privacy-out", required=True)
    add_noise_args(p)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    noise = noise_from(args)
    steps = parse_post(args.post)
    lr = read_log_weights(args.log_ratios, "log_ratio")
    if "calibrate" in steps and not args.public_log_ratios:
        raise DpiwError("post 'calibrate' needs --public-log-ratios (the classifier's scores at the public rows)")
    if "resample" in steps and not (args.synth and args.resampled_out):
        raise DpiwError("post 'resample' needs --synth and --resampled-out")
    gate = diagnose(lr)
    details: dict = {"post": args.post, "steps": list(steps), "release_gate": gate.to_dict()}
    log_w, resampled = lr, None
    for step in steps:
        if step == "calibrate":
            from dpiw.postprocess.calibration import calibrate_log_ratios

            public = read_log_weights(args.public_log_ratios, "log_ratio")
            log_w, bmap = calibrate_log_ratios(log_w, public)
            details["calibration"] = {"map": bmap.to_dict(), "n_public": int(public.size),
                                      "n_synth": int(np.isfinite(lr).sum()),
                                      "data": "public slice of the DGP (scale.public_fraction), excluded from D"}
        elif step == "resample":
            who = identity(args, inputs=("log_ratios", "public_log_ratios", "synth"),
                           outputs=("out", "privacy_out", "resampled_out"))
            counts = resample_counts(args.resample_scheme, log_w, lr.size, noise.rng("resample", who))
            with np.errstate(divide="ignore"):
                log_w = np.log(counts.astype(float))
            synth = read_parquet(args.synth)
            if len(synth) != lr.size:
                raise DpiwError(f"{args.synth}: {len(synth)} rows for {lr.size} weights")
            resampled = synth.iloc[np.repeat(np.arange(len(synth)), counts)].reset_index(drop=True)
            details["resample"] = {"scheme": args.resample_scheme, "n": int(counts.sum()),
                                   "distinct_rows": int((counts > 0).sum())}
        else:
            log_w = apply_step(step, log_w, alpha=args.alpha, tau=args.tau)
            if step == "temper":
                details["alpha"] = args.alpha
            if step == "truncate":
                details["tau"] = truncation_tau(args.tau, lr.size)
    details["pareto_k_released"] = diagnose(log_w).k
    if resampled is not None:
        write_parquet(resampled, args.resampled_out)
    write_parquet(pd.DataFrame({"row": np.arange(lr.size), "log_weight": log_w}), args.out)
    reads = ("public slice",) if "calibrate" in steps else ()
    record = no_spend("postprocess_weights", basis="post-processing of DP weights"
                      + (" and of the classifier's scores at rows declared public" if reads else ""),
                      public_inputs=list(reads), **details)
    # a record of the noise only where some was drawn (resampling): a chain without it gets no noise flags, and
    # its record would read as benchmark-mode public seeds inside a release
    replace(record, seeding=noise.record() if noise.streams else {}).write(args.privacy_out)
    print(f"postprocess_weights: {args.post} on {lr.size} weights; {gate.note}")


if __name__ == "__main__":
    run(main)
