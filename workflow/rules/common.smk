# Validation, wildcard constraints and input functions; no rules.
import shlex
import sys
from pathlib import Path

from dpiw import DpiwError
from dpiw import grid as G
from dpiw.config import load_yaml, validate_params
from dpiw.grid import (EVAL_PRIVACY, FIG1, FIG2, LOG_RATIOS, LOG_WEIGHTS, MANIFEST, METRICS, MODELS, POST_PRIVACY,
                       RELEASE,
                       PUBLIC, PUBLIC_LOG_RATIOS, REPORT, RESAMPLED, SCALE_PRIVACY, SCHEMA, SYNTH, SYNTH_PRIVACY, TABLE_CSV,
                       TABLE_MD, TABLE_RUNS, TABLE_SUMMARY, TEST, TRAIN, WEIGHTS_PRIVACY)
from dpiw.sdgp import GAN_SDGPS, REGISTRY

# errors name the file the user edited: params.yaml, or the --configfile laid over it
PARAMS_NAME = " over ".join([*map(str, workflow.overwrite_configfiles or []), "params.yaml"])
try:
    validate_params(config, load_yaml(workflow.source_path("../schemas/params.schema.yaml")),
                    schema_dir="data/schemas", params_name=PARAMS_NAME)
except DpiwError as exc:
    sys.exit(f"error: {exc}")


wildcard_constraints:
    dataset=r"[a-z][a-z0-9_]*",
    eps=r"[0-9][0-9.e+-]*",
    seed=r"\d+",
    sdgp=r"[a-z][a-z0-9_]*",
    share=r"full|split",
    weights=r"[a-z][a-z0-9_]*",
    post=r"[a-z][a-z0-9_]*(\+[a-z][a-z0-9_]*)*",


GAN_SDGP_RE = "|".join(GAN_SDGPS)
RESAMPLE_POST_RE = r"([a-z][a-z0-9_]*\+)*resample"
NO_RESAMPLE_POST_RE = r"(?![a-z0-9_+]*resample(?:/|$))[a-z][a-z0-9_]*(\+[a-z][a-z0-9_]*)*"
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
LOGREG_CELLS = G.logreg_cells(config)


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


def public_scores_for(wc):
    """The weight classifier's scores at the public rows, for post chains that calibrate."""
    if not G.calibrates(wc.post):
        return []
    return G.fmt(PUBLIC_LOG_RATIOS, **run_of(wc).keys())


def effective_config():
    """This run's config as a file, for the nested `snakemake --report` (rule report)."""
    import yaml

    path = Path(".snakemake/dpiw_effective_config.yaml")
    path.parent.mkdir(exist_ok=True)
    text = yaml.safe_dump(config, sort_keys=True)
    if not path.is_file() or path.read_text() != text:
        path.write_text(text)
    return str(path)


def reference_for(wc):
    """The cell's non-private logreg log ratios, where evaluate compares the run's weights with them."""
    run = run_of(wc)
    if not G.compares_to_logreg(run, LOGREG_CELLS):
        return []
    return G.fmt(LOG_RATIOS, **{**run.keys(), "weights": "logreg"})


RELEASE_MODE = config["mode"] == "release"


def run_targets():
    """What `all` asks for: every run's manifest and release, the resampled rows where made, and (benchmark
    mode: there is a test split) its metrics, the tables, figures and report."""
    out = [] if RELEASE_MODE else [TABLE_CSV, TABLE_MD, TABLE_SUMMARY, FIG1, FIG2, REPORT]
    for r in RUNS:
        out += [G.fmt(MANIFEST, **r.keys()), G.fmt(RELEASE, **r.keys())]
        if not RELEASE_MODE:
            out.append(G.fmt(METRICS, **r.keys()))
        if G.resamples(r.post):
            out.append(G.fmt(RESAMPLED, **r.keys()))
    return out


def data_inputs(wc):
    """The files a dataset is read from (its rows, its public rows): editing one reruns scale and all after."""
    from dpiw.data import load_schema
    from dpiw.data.datasets import data_files

    return data_files(load_schema(G.fmt(SCHEMA, dataset=wc.dataset)))


def run_records(wc):
    keys = run_of(wc).keys()
    return [G.fmt(p, **keys) for p in (SCALE_PRIVACY, SYNTH_PRIVACY, WEIGHTS_PRIVACY, POST_PRIVACY)]
