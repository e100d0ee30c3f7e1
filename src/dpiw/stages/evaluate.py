"""Stage `evaluate`: the paper's metrics of the weighted synthetic rows against the held-out real test
split: WST, beta-MSE, MLP ROC-AUC (or MSE), the importance-weighted Bayesian posterior's predictive
ROC-AUC (or MSE; not on the datasets of evaluation.skip_bayes), pMSE, the effective sample sizes (Kish;
Eq. 16 of Supplement B.5.1), the Pareto k-hat and, where the cell has non-private LogReg weights on the same
rows, the MSE of the log weights against them. The metrics are the curator's benchmark, not part of the release.

Common random numbers: every random draw of a metric (the MLP's initial parameters and batches, the HMC
chain of the Bayesian metric) comes from a stream keyed by the run's seed, dataset and evaluation split
alone, never by the SDGP, epsilon, weight method or post chain. Two weightings of the same rows are
therefore evaluated under the same draws, and their paired difference measures the weights alone."""

from __future__ import annotations

import math

import numpy as np

from dpiw import DpiwError
from dpiw.data import load_schema
from dpiw.data.encode import encode, encode_features
from dpiw.evaluate import beta_mse, kish_ess, synthetic_ess, weighted_wasserstein
from dpiw.evaluate.bayes import bayes_metric
from dpiw.evaluate.utility import log_weight_mse, mlp_metric, pmse
from dpiw.io import read_log_weights, read_parquet, write_json
from dpiw.postprocess.psis import diagnose
from dpiw.privacy.seeding import rng_for
from dpiw.privacy.spend import no_spend
from dpiw.stages._cli import Parser, run


def parse_args(argv):
    p = Parser(prog="dpiw evaluate", description=__doc__)
    p.add_argument("--synth", required=True)
    p.add_argument("--log-weights", required=True)
    p.add_argument("--test", required=True, help="the real rows to compare with (the held-out test split, or the "
                   "public slice: --against)")
    p.add_argument("--against", choices=["test", "public"], default="test",
                   help="which rows --test holds (evaluation.against), for the records")
    p.add_argument("--schema", required=True)
    p.add_argument("--bayes", choices=["run", "skip"], default="run",
                   help="skip: no Bayesian metric (its HMC chain) for this run (evaluation.skip_bayes)")
    p.add_argument("--reference-log-ratios", help="the cell's non-private logreg log ratios (same synthetic rows)")
    for key in ("dataset", "eps", "sdgp", "weights", "post"):
        p.add_argument(f"--{key}", required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--privacy-out", required=True)
    return p.parse_args(argv)


#: the metrics that draw random numbers, each from its own stream (so one metric's draws never shift another's)
RANDOM_METRICS = ("mlp", "bayes")


def metric_rngs(seed: int, dataset: str, against: str) -> dict[str, np.random.Generator]:
    """One generator per random metric, keyed by the split alone (the run's seed and dataset, and which real
    rows are compared with): common random numbers for every SDGP, epsilon, weight method and post chain.

    >>> a, b = metric_rngs(3, "iris", "test"), metric_rngs(3, "iris", "test")
    >>> float(a["mlp"].uniform()) == float(b["mlp"].uniform())
    True
    """
    return {purpose: rng_for(seed, "evaluate", dataset, against, purpose) for purpose in RANDOM_METRICS}


#: what a run that skips the Bayesian metric records in its place
BAYES_SKIPPED = "not computed: the dataset is in evaluation.skip_bayes"


def evaluate(synth, log_w, test, schema, *, rngs: dict[str, np.random.Generator] | None = None,
             reference=None, bayes: bool = True) -> dict:
    rngs = metric_rngs(0, schema.name, "test") if rngs is None else rngs
    w = np.exp(log_w - np.max(log_w))  # rescaling is harmless: every metric normalises the weights
    X_s, X_t = encode(synth, schema), encode(test, schema)
    gate = diagnose(log_w)
    out = {"n_synth": len(synth), "n_test": len(test), "ess_kish": kish_ess(w),
           "ess_fraction": kish_ess(w) / len(w), "pareto_k": gate.k if gate.k is not None else math.nan,
           "wst": weighted_wasserstein(X_s, w, X_t)}
    Xs, ys = encode_features(synth, schema), synth[schema.target].to_numpy()
    Xt, yt = encode_features(test, schema), test[schema.target].to_numpy()
    out.update(pmse(X_t, X_s, w))
    task = dict(task=schema.task, n_classes=schema.n_classes)
    keep = w > 0
    try:
        if schema.task == "classification" and np.unique(ys[keep]).size < schema.n_classes:
            raise DpiwError(f"the weighted synthetic data hold only classes {np.unique(ys[keep]).tolist()} "
                            f"of {schema.n_classes}")
        out.update(mlp_metric(Xs[keep], ys[keep], w[keep], Xt, yt, rng=rngs["mlp"], **task))
        if bayes:
            out.update(bayes_metric(Xs[keep], ys[keep], w[keep], Xt, yt, rng=rngs["bayes"], **task))
        else:
            out["bayes_auc" if schema.task == "classification" else "bayes_mse"] = math.nan
            out["bayes_note"] = BAYES_SKIPPED
        out["downstream_note"] = ""
    except DpiwError as exc:
        for key in (("mlp_auc", "bayes_auc") if schema.task == "classification" else ("mlp_mse", "bayes_mse")):
            out[key] = math.nan
        out["downstream_note"] = str(exc)
    if reference is not None:
        out["logreg_log_weight_mse"] = log_weight_mse(log_w, reference)
    try:
        out["beta_mse"] = beta_mse(Xs, ys, w, Xt, yt, task=schema.task, n_classes=schema.n_classes)
        out["ess_synthetic"] = synthetic_ess(Xs, ys, w, task=schema.task, n_classes=schema.n_classes)
        out["ess_synthetic_fraction"] = out["ess_synthetic"] / len(w)
        out["beta_mse_note"] = ""
    except DpiwError as exc:  # e.g. the weighted synthetic data miss a class: the metric does not exist
        out["beta_mse"] = out["ess_synthetic"] = out["ess_synthetic_fraction"] = math.nan
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
    reference = None
    if args.reference_log_ratios:
        reference = read_log_weights(args.reference_log_ratios, "log_ratio")
        if reference.size != log_w.size:
            raise DpiwError(f"{args.reference_log_ratios}: {reference.size} reference weights for {log_w.size} rows")
    rngs = metric_rngs(args.seed, args.dataset, args.against)
    metrics = evaluate(synth, log_w, test, schema, rngs=rngs, reference=reference, bayes=args.bayes == "run")
    metrics.update(run={"dataset": args.dataset, "eps": args.eps, "seed": args.seed, "sdgp": args.sdgp,
                        "weights": args.weights, "post": args.post}, against=args.against)
    write_json(metrics, args.out)
    no_spend("evaluate", reads_private=(args.against,), basis=f"evaluation against the held-out real {args.against} "
             "rows; the metrics are for benchmarking and are not part of the release").write(args.privacy_out)
    print("evaluate: " + ", ".join(f"{k}={v:.4g}" for k, v in metrics.items() if isinstance(v, float)))


if __name__ == "__main__":
    run(main)
