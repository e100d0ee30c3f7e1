# Validation, wildcard constraints and input functions; no rules.
import shlex
import sys

from dpiw import DpiwError
from dpiw import grid as G
from dpiw.config import load_yaml, validate_params
from dpiw.grid import (EVAL_PRIVACY, LOG_RATIOS, LOG_WEIGHTS, MANIFEST, METRICS, MODELS, POST_PRIVACY,
                       SCALE_PRIVACY, SCHEMA, SYNTH, SYNTH_PRIVACY, TABLE_CSV, TABLE_MD, TEST, TRAIN,
                       WEIGHTS_PRIVACY)
from dpiw.sdgp import GAN_SDGPS, REGISTRY

try:
    validate_params(config, load_yaml(workflow.source_path("../schemas/params.schema.yaml")),
                    schema_dir="data/schemas")
except DpiwError as exc:
    sys.exit(f"error: {exc}")


wildcard_constraints:
    dataset=r"[a-z][a-z0-9_]*",
    eps=r"[0-9][0-9.e+-]*",
    seed=r"\d+",
    sdgp=r"[a-z][a-z0-9_]*",
    share=r"full|split",
    weights=r"[a-z][a-z0-9_]*",
    post=r"[a-z][a-z0-9_]*",


GAN_SDGP_RE = "|".join(GAN_SDGPS)
NON_GAN_SDGP_RE = "|".join(s for s in REGISTRY if s not in GAN_SDGPS)


def value(key):
    """params.yaml value at a dotted key."""
    node = config
    for part in key.split("."):
        node = node[part]
    return node


def cli(args):
    return " ".join(shlex.quote(str(a)) for a in args)


RUNS = list(G.runs(config))


def run_of(wc):
    return G.Run(wc.dataset, wc.eps, int(wc.seed), wc.sdgp, wc.weights, wc.post)


def synth_for(wc):
    return G.fmt(SYNTH, dataset=wc.dataset, eps=wc.eps, seed=wc.seed, sdgp=wc.sdgp,
                 share=G.budget_share(wc.weights))


def models_for(wc):
    """The GAN's model file for the weight methods that reuse its discriminators, else nothing."""
    if not G.needs_models(wc.weights):
        return []
    return G.fmt(MODELS, dataset=wc.dataset, eps=wc.eps, seed=wc.seed, sdgp=wc.sdgp,
                 share=G.budget_share(wc.weights))


def run_records(wc):
    keys = run_of(wc).keys()
    return [G.fmt(p, **keys) for p in (SCALE_PRIVACY, SYNTH_PRIVACY, WEIGHTS_PRIVACY, POST_PRIVACY)]
