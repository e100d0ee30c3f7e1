"""The analyst's side: importance-weighted estimates from a release bundle (:mod:`.bundle`), their standard
errors (:mod:`.estimates`), noise-aware intervals (:mod:`.noise_aware`) and exports (:mod:`.export`).

A bundle (``.../release/``) holds ``synthetic.parquet`` (the synthetic rows: numeric columns scaled to [0, 1] by the
schema's public bounds, value = lower + v (upper - lower), or lower + exp(v log(1 + upper - lower)) - 1 for a column
with ``scale: log``; categorical columns as category codes), ``weights.parquet`` (one weight per row, column
``weight``), ``manifest.json`` (the privacy spend and the weights' diagnostics) and ``schema.json`` (the public
bounds and categories), with which :func:`load_bundle` gives the rows back in their units and labels. Everything
here is post-processing of the release: it costs no privacy.

    from dpiw.analysis import load_bundle
    b = load_bundle("releases/clinic/eps=1-.../run/runs/clinic/eps=1/seed=0/mst/none/none/release")
    b.mean("age").value, b.mean("age").ci()                    # the IW mean in years and its 95% interval
    b.rate("outcome", "ill", where=b.data.smoker == "yes")     # a subgroup's weighted share of a label
    b.quantile("bmi"), b.share("bmi", ">", 30)                 # the median (Woodruff's interval), a share above
    b.fit(LogisticRegression(), ["age", "region"], "outcome")  # any estimator with sample_weight

The standard error of a self-normalised weighted mean is the weighted standard deviation over the square
root of Kish's effective sample size (sum w)^2 / sum w^2. When the bundle's Pareto k-hat is above its
threshold or the ESS is below ``MIN_ESS_FRACTION`` of the rows, :func:`load_bundle` warns: the weights then
rest on a few rows and the intervals are not to be trusted.
"""

from dpiw.analysis.bundle import (
    Bundle,
    CellWarning,
    MeasurementWarning,
    TailWarning,
    UnmeasuredWarning,
    WithinBinWarning,
    load_bundle,
)
from dpiw.analysis.estimates import (
    MIN_ESS_FRACTION,
    NOISE_AWARE,
    SAMPLING_ONLY,
    Estimate,
    Quantile,
    UnreliableWeightsWarning,
    kish_ess,
    weighted_mean,
    weighted_quantile,
)

__all__ = ["Bundle", "CellWarning", "Estimate", "MIN_ESS_FRACTION", "MeasurementWarning", "NOISE_AWARE", "Quantile",
           "SAMPLING_ONLY", "TailWarning", "UnmeasuredWarning", "UnreliableWeightsWarning", "WithinBinWarning",
           "kish_ess", "load_bundle", "weighted_mean", "weighted_quantile"]
