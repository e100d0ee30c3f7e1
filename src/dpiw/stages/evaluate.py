"""Stage `evaluate`: WST, beta-MSE and Kish ESS of the weighted synthetic rows against the held-out
real test split. The metrics are the curator's benchmark, not part of the release."""

from __future__ import annotations

import math

import numpy as np

from dpiw import DpiwError
from dpiw.data import load_schema
from dpiw.data.encode import encode
from dpiw.evaluate import beta_mse, kish_ess, weighted_wasserstein
from dpiw.io import read_log_weights, read_parquet, write_json
from dpiw.privacy import no_spend
from dpiw.stages._cli import Parser, run


def parse_args(argv):
    p = Parser(prog="dpiw.stages.evaluate", description=__doc__)
    p.add_argument("--synth", required=True)
    p.add_argument("--log-weights", required=True)
    p.add_argument("--test", required=True)
    p.add_argument("--schema", required=True)
    for key in ("dataset", "eps", "sdgp", "weights", "post"):
        p.add_argument(f"--{key}", required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--privacy-out", required=True)
    return p.parse_args(argv)


def evaluate(synth, log_w, test, schema) -> dict:
    w = np.exp(log_w - np.max(log_w))  # rescaling is harmless: every metric normalises the weights
    X_s, X_t = encode(synth, schema), encode(test, schema)
    feats = [c.name for c in schema.features]
    out = {"n_synth": len(synth), "n_test": len(test), "ess_kish": kish_ess(w),
           "ess_fraction": kish_ess(w) / len(w), "wst": weighted_wasserstein(X_s, w, X_t)}
    try:
        out["beta_mse"] = beta_mse(synth[feats].to_numpy(float), synth[schema.target].to_numpy(), w,
                                   test[feats].to_numpy(float), test[schema.target].to_numpy(),
                                   task=schema.task, n_classes=schema.n_classes)
        out["beta_mse_note"] = ""
    except DpiwError as exc:  # e.g. the weighted synthetic data miss a class: the metric does not exist
        out["beta_mse"] = math.nan
        out["beta_mse_note"] = str(exc)
    return out


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    schema = load_schema(args.schema)
    synth = read_parquet(args.synth, columns=schema.names)
    test = read_parquet(args.test, columns=schema.names)
    log_w = read_log_weights(args.log_weights, "log_weight")
    if log_w.size != len(synth):
        raise DpiwError(f"{args.log_weights}: {log_w.size} weights for {len(synth)} synthetic rows")
    metrics = evaluate(synth, log_w, test, schema)
    metrics.update(run={"dataset": args.dataset, "eps": args.eps, "seed": args.seed, "sdgp": args.sdgp,
                        "weights": args.weights, "post": args.post})
    write_json(metrics, args.out)
    no_spend("evaluate", reads_private=("test",), basis="evaluation against the held-out real test split; "
             "the metrics are for benchmarking and are not part of the release").write(args.privacy_out)
    print("evaluate: " + ", ".join(f"{k}={v:.4g}" for k, v in metrics.items() if isinstance(v, float)))


if __name__ == "__main__":
    run(main)
