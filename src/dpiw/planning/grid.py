"""The run grid, its cells, the artifact paths and each stage's command-line arguments.

Shared by the workflow (workflow/rules/common.smk) and the cell jobs (dpiw.stages.cell), which build a
cell's runs with the same function. Values from the config are read through a ``lookup(key)`` callback
(:func:`lookup_in`).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from dpiw import registry
from dpiw.postprocess import parse_post
from dpiw.privacy.spend import (
    GAN_WEIGHT_METHODS,
    LOGISTIC_WEIGHT_METHODS,
    MLP_WEIGHT_METHODS,
    WEIGHT_METHODS_WITH_OWN_BUDGET,
    budget_share,
)
from dpiw.sdgp import GAN_SDGPS

STAGES = ("scale", "synthesize", "fit_weights", "postprocess_weights", "evaluate", "privacy_ledger",
          "aggregate")
#: the stages that run once per cell (dataset, eps, SDGP: every seed), every run of the cell in one process
CELL_STAGES = ("synthesize", "fit_weights", "postprocess_weights", "evaluate", "privacy_ledger")

# Paths below are relative to a config's output folder (results/<config>, see out_dir). `private/` holds
# what must never leave the machine (DVC: push false): the private splits, the GANs' networks, and the
# cells' job records (they hold SHA-256 digests of the private splits).
SCALE_DIR = "private/{dataset}/seed={seed}"
TRAIN = SCALE_DIR + "/train.parquet"
TEST = SCALE_DIR + "/test.parquet"
PUBLIC = SCALE_DIR + "/public.parquet"  # the slice declared public (scale.public_fraction; may be empty)
SCALE_PRIVACY = "runs/{dataset}/seed={seed}/privacy/scale.json"
#: one SDGP fit: a dataset's split (seed), a budget and a generator
FIT_ID = "{dataset}/eps={eps}/seed={seed}/{sdgp}"
FIT = "runs/" + FIT_ID
PRIVATE_FIT = "private/" + FIT_ID
#: a cell: one dataset, budget and SDGP over every seed of the grid (a cell of the paper's tables); the
#: workflow runs one job per cell and stage
CELL_ID = "{dataset}/eps={eps}/{sdgp}"
#: a cell stage's record of its runs (Snakemake's output of the cell job), written last, after every run;
#: {digest} is that of the stage's runs as the config defines them (cell_digest): an edited value names
#: another file, so the job runs again, and an older result checked out by DVC is recognised as current
CELL_DONE = "private/" + CELL_ID + "/{stage}.{digest}.done.json"
SYNTH = FIT + "/synth_{share}.parquet"
SYNTH_PRIVACY = FIT + "/privacy/synthesize_{share}.json"
MODELS = PRIVATE_FIT + "/models_{share}.npz"  # GAN SDGPs only: the kept generators and discriminators
#: zCDP SDGPs only (MST): their noisy measurements, which marginal_match may match too (weights.marginal_match)
MEASUREMENTS = PRIVATE_FIT + "/measurements_{share}.json"
WEIGHTS_DIR = FIT + "/{weights}"
LOG_RATIOS = WEIGHTS_DIR + "/log_ratios.parquet"
PUBLIC_LOG_RATIOS = WEIGHTS_DIR + "/public_log_ratios.parquet"  # the classifier's scores at the public rows
WEIGHTS_PRIVACY = WEIGHTS_DIR + "/privacy/fit_weights.json"
#: marginal_match only: its noisy measurements (published in the bundle for noise-aware intervals)
WEIGHTS_MEASUREMENTS = WEIGHTS_DIR + "/measurements.json"
RUN_ID = FIT_ID + "/{weights}/{post}"  # a run's name in manifests and random streams (no output folder)
RUN_DIR = "runs/" + RUN_ID
LOG_WEIGHTS = RUN_DIR + "/log_weights.parquet"
RESAMPLED = RUN_DIR + "/resampled.parquet"  # posts ending in `resample` only
POST_PRIVACY = RUN_DIR + "/privacy/postprocess_weights.json"
METRICS = RUN_DIR + "/metrics.json"
EVAL_PRIVACY = RUN_DIR + "/privacy/evaluate.json"
MANIFEST = RUN_DIR + "/manifest.json"
RELEASE = RUN_DIR + "/release"  # what a curator may publish (dpiw.privacy.release)
TABLE_CSV = "tables/metrics.csv"
TABLE_MD = "tables/metrics.md"
TABLE_RUNS = "tables/runs.csv"          # one row per run, every metric
#: one file per task for `dvc plots` (each always written, with its header, so no field is ever missing)
TASK_PLOTS = {"classification": ("tables/plot_classification.csv", "mlp_auc"),
              "regression": ("tables/plot_regression.csv", "mlp_mse")}
SUMMARY_HTML = "tables/summary.html"    # the summary table, for the report
MANIFESTS_HTML = "tables/manifests.html"  # every run's manifest, for the report
SUMMARY = "summary.json"                # a few means per weight method, for `dvc metrics show`
FIG1 = "figures/fig1_toy_weights.png"
FIG2 = "figures/fig2_bayes.png"
REPORT = "report.html"
PROVENANCE = "provenance.html"  # Snakemake's own report (rule graph, code, config), linked from the end of REPORT
#: outside the output folder, shared by every config
SCHEMA = "data/schemas/{dataset}.yaml"
#: the output folder of the default config (params.yaml alone)
DEFAULT_OUT = "results/default"


def out_dir(config: dict, configfiles=()) -> str:
    """A config's output folder: ``out:`` if set, else results/<name of the last --configfile>, else
    results/default. One config never writes into another's folder.

    >>> out_dir({}, ["configs/paper.yaml"]), out_dir({}), out_dir({"out": "results/mine"})
    ('results/paper', 'results/default', 'results/mine')
    """
    from pathlib import Path

    if config.get("out"):
        return str(config["out"]).rstrip("/")
    files = [str(f) for f in configfiles or ()]
    return f"results/{Path(files[-1]).stem}" if files else DEFAULT_OUT


def under(out: str, template: str) -> str:
    """A template inside the output folder ``out``."""
    return f"{out}/{template}"


Lookup = Callable[[str], object]


def eps_str(eps: float) -> str:
    """Canonical text of an epsilon in paths and flags, exact (the shortest text that reads back as the
    same float, so the budget is never rounded): 1 -> '1', 0.5 -> '0.5'.

    >>> eps_str(6), eps_str(0.25), eps_str(9.64), eps_str(1.23456789)
    ('6', '0.25', '9.64', '1.23456789')
    """
    x = float(eps)
    return str(int(x)) if x.is_integer() and abs(x) < 1e15 else repr(x)


@dataclass(frozen=True)
class Run:
    dataset: str
    eps: str
    seed: int
    sdgp: str
    weights: str
    post: str

    @property
    def share(self) -> str:
        return budget_share(self.weights)

    def keys(self) -> dict:
        return {"dataset": self.dataset, "eps": self.eps, "seed": self.seed, "sdgp": self.sdgp,
                "weights": self.weights, "post": self.post, "share": self.share}


def valid(dataset: str, sdgp: str, weights: str, post: str = "none") -> bool:
    """`true` weights exist only for the toy data with the data-free uniform SDGP; discriminator-based
    weights only for the GAN SDGPs; `calibrate` only for weights from a classifier that scores any row."""
    method = registry.weight_method(weights)
    if "calibrate" in parse_post(post) and not method.scores_any_row:
        return False
    if method.applies_to == "toy_uniform":
        return dataset == "toy" and sdgp == "uniform"
    return method.applies_to != "gan" or registry.sdgp(sdgp).gan


def has_models(sdgp: str) -> bool:
    return sdgp in GAN_SDGPS


def needs_models(weights: str) -> bool:
    return weights in GAN_WEIGHT_METHODS


def has_measurements(sdgp: str) -> bool:
    return registry.sdgp(sdgp).zcdp


def reuses_measurements(lookup: Lookup, sdgp: str, weights: str) -> bool:
    """marginal_match after a zCDP SDGP, with weights.marginal_match.reuse_sdgp on."""
    return (registry.weight_method(weights).family == "marginal" and has_measurements(sdgp)
            and bool(lookup("weights.marginal_match.reuse_sdgp")))


def measures_weights(weights: str) -> bool:
    """A weight method whose noisy measurements go into the bundle (marginal_match)."""
    return registry.weight_method(weights).family == "marginal"


def bundle_measurements(r) -> list[str]:
    """The noisy measurements a run's bundle publishes (templates): its zCDP SDGP's and its marginal weights'."""
    return ([MEASUREMENTS] if has_measurements(r.sdgp) else []) + (
        [WEIGHTS_MEASUREMENTS] if measures_weights(r.weights) else [])


def calibrates(post: str) -> bool:
    return "calibrate" in parse_post(post)


def resamples(post: str) -> bool:
    return parse_post(post)[-1] == "resample"


def post_tag(post: str) -> str:
    """The post chain in names that allow no '+' (DVC stage names, log files).

    >>> post_tag("calibrate+psis")
    'calibrate__psis'
    """
    return post.replace("+", "__")


def excluded(config: dict, **keys) -> bool:
    """True if a ``grid.exclude`` entry matches: every key it names has the run's value (or, for a list,
    one of its values).

    >>> cfg = {"grid": {"exclude": [{"sdgp": ["gan", "cgan"], "post": "temper"}]}}
    >>> excluded(cfg, sdgp="cgan", post="temper"), excluded(cfg, sdgp="cgan", post="none")
    (True, False)
    """
    def norm(k, v):
        return eps_str(v) if k == "eps" else str(v)

    for rule in config["grid"].get("exclude", []):
        if all(norm(k, keys[k]) in {norm(k, x) for x in (v if isinstance(v, list) else [v])}
               for k, v in rule.items()):
            return True
    return False


def runs(config: dict) -> Iterator[Run]:
    g = config["grid"]
    for d, e, s, sd, w, p in itertools.product(g["datasets"], g["epsilons"], g["seeds"], g["sdgps"],
                                                g["weights"], g["posts"]):
        if valid(d, sd, w, p) and not excluded(config, dataset=d, eps=e, seed=s, sdgp=sd, weights=w, post=p):
            yield Run(d, eps_str(e), int(s), sd, w, p)


def lookup_in(config: dict) -> Lookup:
    """The value at a dotted key of ``config``: lookup_in(cfg)("weights.beta.lambda")."""
    def lookup(key: str):
        node = config
        for part in key.split("."):
            node = node[part]
        return node
    return lookup


def fmt(template: str, **keys) -> str:
    return template.format(**keys)


# --- per-stage arguments (without the input/output paths) -----------------------------------

def noise_args(lookup: Lookup) -> list[str]:
    """How a stage that draws random numbers seeds them (dpiw.privacy.seeding)."""
    return ["--mode", str(lookup("mode")), "--release-noise", str(lookup("privacy.release_noise")),
            *optional("--release-round", release_only(lookup, "privacy.release_round"))]


def neighbours_args(lookup: Lookup) -> list[str]:
    """privacy.neighbours for the stages that read N_D; nothing at the default (replace_one), so that the
    default's flags, and the noise streams they key, stay as they were."""
    if lookup("privacy.neighbours") == "replace_one":
        return []
    return ["--neighbours", str(lookup("privacy.neighbours")),
            "--count-epsilon-fraction", str(lookup("privacy.count_epsilon_fraction"))]


def engine_args(lookup: Lookup) -> list[str]:
    """engine for the stages that count the private rows (dpiw.sdgp.engines); nothing at the default (local),
    so that the stages' commands stay as they were."""
    try:
        engine = str(lookup("engine"))
    except (KeyError, AttributeError):  # a project's params.yaml from before the key: local
        engine = "local"
    return [] if engine == "local" else ["--engine", engine]


def _budget_args(lookup: Lookup) -> list[str]:
    return ["--delta", str(lookup("privacy.delta")),
            "--weights-epsilon-fraction", str(lookup("privacy.weights_epsilon_fraction")),
            "--weights-delta-fraction", str(lookup("privacy.weights_delta_fraction"))]


def scale_args(config: dict, lookup: Lookup, *, dataset: str, seed) -> list[str]:
    args = ["--dataset", dataset, "--seed", str(seed), "--test-fraction", str(lookup("scale.test_fraction")),
            "--public-fraction", str(lookup("scale.public_fraction")), "--bounds", str(lookup("scale.bounds")),
            "--out-of-bounds", str(lookup("scale.out_of_bounds")),
            "--max-clip-fraction", str(lookup("scale.max_clip_fraction")), "--mode", str(lookup("mode"))]
    for key in ("n_rows", "data_seed"):
        if key in config["datasets"].get(dataset, {}):
            args += [f"--{key.replace('_', '-')}", str(lookup(f"datasets.{dataset}.{key}"))]
    return args


def synthesize_args(config: dict, lookup: Lookup, *, sdgp: str, eps, seed, share: str) -> list[str]:
    args = ["--sdgp", sdgp, "--epsilon", str(eps), "--seed", str(seed), "--share", share,
            "--rows-factor", str(lookup("sdgp.rows_factor")), "--max-rows", str(lookup("sdgp.max_rows")),
            *noise_args(lookup), *neighbours_args(lookup), *engine_args(lookup)]
    if sdgp in GAN_SDGPS:
        args += ["--accounting", str(lookup("privacy.accounting"))]
    args += _budget_args(lookup) if share == "split" else ["--delta", str(lookup("privacy.delta"))]
    if sdgp == "marginals":
        args += ["--bins", str(lookup("sdgp.marginals.bins")),
                 "--structure", str(lookup("sdgp.marginals.structure"))]
    for name, keys in SDGP_KEYS.items():
        if sdgp == name:
            for key in keys:
                try:
                    value = lookup(f"sdgp.{name}.{key}")
                except KeyError:  # a key added since the project's params.yaml was copied: the behaviour before it
                    if f"{name}.{key}" not in SDGP_KEY_DEFAULTS:
                        raise
                    value = SDGP_KEY_DEFAULTS[f"{name}.{key}"]
                args += [f"--{name}-{key.replace('_', '-')}", str(value)]
    if sdgp in GAN_SDGPS:
        for key in GAN_KEYS:
            args += [f"--gan-{key.replace('_', '-')}", str(lookup(f"sdgp.gan.{key}"))]
    return args


#: weights.mlp keys, each passed to the fit_weights stage as --mlp-<key>
MLP_KEYS = ("hidden", "epochs", "batch_size", "lr", "max_grad_norm", "accountant", "weight_decay")
#: weights.marginal_match keys, each passed to the fit_weights stage as --marginal-match-<key>
MARGINAL_MATCH_KEYS = ("bins", "degree", "max_marginals", "max_cells")
#: sdgp.privbayes keys, each passed to the synthesize stage as --privbayes-<key>
PRIVBAYES_KEYS = ("bins", "degree", "structure_epsilon_fraction", "max_cells", "root")
#: sdgp.mst keys, each passed to the synthesize stage as --mst-<key>
MST_KEYS = ("bins", "iters", "max_cells", "fine_cells", "fine_fraction", "max_bins", "tree")
#: sdgp.aim keys, each passed to the synthesize stage as --aim-<key>
AIM_KEYS = ("bins", "iters", "rounds", "max_model_size", "max_cells", "target_triples", "fine_cells",
            "fine_fraction")
#: sdgp.<name>.<key>s a project's params.yaml, copied before they were added, may lack, and the value they then take
#: (the behaviour before them)
SDGP_KEY_DEFAULTS = {"mst.tree": "chosen"}
#: the SDGPs whose sdgp.<name> keys are passed as --<name>-<key> (integers but those in synthesize's SDGP_KEY_TYPES)
SDGP_KEYS = {"privbayes": PRIVBAYES_KEYS, "mst": MST_KEYS, "aim": AIM_KEYS}
#: sdgp.gan keys, each passed to the synthesize stage as --gan-<key>
GAN_KEYS = ("hidden", "noise_dim", "steps", "batch_size", "lr", "n_critic", "weight_clip", "max_grad_norm",
            "keep_last", "snapshot_every", "accountant", "label_epsilon_fraction", "condition_bins", "gumbel_tau")


def fit_weights_args(config: dict, lookup: Lookup, *, dataset: str, sdgp: str, weights: str, eps, seed
                     ) -> list[str]:
    args = ["--method", weights, "--dataset", dataset, "--sdgp", sdgp, "--epsilon", str(eps),
            "--seed", str(seed), *noise_args(lookup), "--accounting", str(lookup("privacy.accounting")),
            *neighbours_args(lookup), *engine_args(lookup)]
    if weights in WEIGHT_METHODS_WITH_OWN_BUDGET:
        args += _budget_args(lookup)
    if weights == "pgb":
        args += ["--pgb-rounds", str(lookup("weights.pgb.rounds")), "--pgb-eta", str(lookup("weights.pgb.eta"))]
    if weights == "drs":
        args += ["--drs-percentile", str(lookup("weights.drs.percentile"))]
    if weights == "logreg":  # not DP: its own regularisation, not its private twins' lambda
        args += ["--logreg-c", str(lookup("weights.logreg.C"))]
    elif weights in LOGISTIC_WEIGHT_METHODS:
        args += ["--lambda", str(lookup("weights.beta.lambda")),
                 "--rho-target", str(lookup("weights.beta.rho_target")),
                 "--sensitivity-n", str(lookup("weights.beta.sensitivity_n"))]
    if weights in MLP_WEIGHT_METHODS:
        for key in MLP_KEYS:
            args += [f"--mlp-{key.replace('_', '-')}", str(lookup(f"weights.mlp.{key}"))]
    if registry.weight_method(weights).family == "marginal":
        for key in MARGINAL_MATCH_KEYS:
            args += [f"--marginal-match-{key.replace('_', '-')}", str(lookup(f"weights.marginal_match.{key}"))]
    if registry.weight_method(weights).family == "output":
        args += ["--output-scale-target", str(lookup("weights.output.scale_target"))]
    return args


def postprocess_args(config: dict, lookup: Lookup, *, run: Run) -> list[str]:
    steps = parse_post(run.post)
    args = ["--post", run.post]
    if "temper" in steps:
        args += ["--alpha", str(lookup("post.temper.alpha"))]
    if "truncate" in steps:
        args += ["--tau", str(lookup("post.truncate.tau"))]
    if "resample" in steps:
        args += ["--resample-scheme", str(lookup("post.resample.scheme")), "--seed", str(run.seed),
                 "--run", fmt(RUN_ID, **run.keys()), *noise_args(lookup)]
    return args


def evaluate_args(config: dict, lookup: Lookup, *, run: Run) -> list[str]:
    return ["--dataset", run.dataset, "--eps", run.eps, "--seed", str(run.seed), "--sdgp", run.sdgp,
            "--weights", run.weights, "--post", run.post, "--against", str(lookup("evaluation.against")),
            "--bayes", "skip" if run.dataset in skip_bayes(lookup) else "run"]


def skip_bayes(lookup: Lookup) -> list[str]:
    """evaluation.skip_bayes (absent from a project's params.yaml copied before the key existed: none)."""
    try:
        return list(lookup("evaluation.skip_bayes") or ())
    except KeyError:
        return []


#: the real rows the metrics compare with (evaluation.against)
EVALUATION_ROWS = {"test": TEST, "public": PUBLIC}


def evaluation_rows(lookup: Lookup) -> str:
    """The path template of the rows the evaluate stage compares with."""
    return EVALUATION_ROWS[lookup("evaluation.against")]


def ledger_args(config: dict, lookup: Lookup, *, run: Run) -> list[str]:
    return ["--epsilon", run.eps, "--delta", str(lookup("privacy.delta")),
            "--allow-non-dp", str(lookup("privacy.allow_non_dp_baselines")).lower(),
            "--schema", fmt(SCHEMA, dataset=run.dataset), *optional("--ledger", lookup("privacy.ledger")),
            *optional("--new-population", lookup("privacy.new_population")),
            *optional("--dataset-epsilon", lookup("privacy.dataset_epsilon")),
            *optional("--dataset-delta", lookup("privacy.dataset_delta")), *engine_args(lookup),
            *optional("--measured-table", measured_table(lookup)),
            *optional("--reservation", release_only(lookup, "privacy.reservation"))]


def measured_table(lookup: Lookup) -> str | None:
    """privacy.measured_table: set only by `dpiw release` (absent from a project's params.yaml)."""
    return release_only(lookup, "privacy.measured_table")


def release_only(lookup: Lookup, key: str):
    """A config value that only `dpiw release` sets (absent from a project's params.yaml: None)."""
    try:
        return lookup(key)
    except KeyError:
        return None


def optional(flag: str, value) -> list[str]:
    """``[flag, value]``, or nothing when the config leaves the value null."""
    return [] if value is None else [flag, str(value)]


def figure1_runs(config: dict) -> list[Run]:
    """The runs of Figure 1: toy data, the smallest epsilon and seed, post none, the `uniform` SDGP (the
    paper's toy setting) or else the first SDGP with toy runs; one panel per weight method."""
    toy = [r for r in runs(config) if r.dataset == "toy" and r.post == "none"]
    if not toy:
        return []
    eps = min({r.eps for r in toy}, key=float)
    seed = min(r.seed for r in toy)
    sdgps = [s for s in config["grid"]["sdgps"] if any(r.sdgp == s for r in toy)]
    sdgp = "uniform" if "uniform" in sdgps else sdgps[0]
    return [r for r in toy if r.eps == eps and r.seed == seed and r.sdgp == sdgp]


def figures_args(config: dict, out: str) -> list[str]:
    """The Figure 1 panels as stage arguments (paths only; the runs come from the grid)."""
    args: list[str] = []
    fig1 = figure1_runs(config)
    for r in fig1:
        args += ["--toy-panel", r.weights, fmt(under(out, SYNTH), **r.keys()),
                 fmt(under(out, LOG_WEIGHTS), **r.keys())]
    if fig1:
        r = fig1[0]
        args += ["--toy-title", f"toy data, {r.sdgp} SDGP, eps = {r.eps}, seed {r.seed}, post none"]
    return args


def logreg_cells(config: dict) -> set[tuple]:
    """Cells (dataset, eps, seed, sdgp) that have non-private `logreg` weights in the grid."""
    return {(r.dataset, r.eps, r.seed, r.sdgp) for r in runs(config) if r.weights == "logreg"}


def compares_to_logreg(run: Run, cells: set[tuple]) -> bool:
    """Whether evaluate compares the run's log weights with the cell's logreg weights: same synthetic
    rows (the split share) and logreg in the grid."""
    return (run.share == "split" and run.weights != "logreg"
            and (run.dataset, run.eps, run.seed, run.sdgp) in cells)


# --- cells: one job per (dataset, eps, SDGP) and stage, every run of the cell (all seeds) in one process -

@dataclass(frozen=True)
class Cell:
    dataset: str
    eps: str
    sdgp: str

    def keys(self) -> dict:
        return {"dataset": self.dataset, "eps": self.eps, "sdgp": self.sdgp}


def parse_cell(text: str) -> Cell:
    """The cell of a path-like id: 'toy/eps=1/marginals'."""
    parts = text.strip("/").split("/")
    if len(parts) != 3 or not parts[1].startswith("eps="):
        raise ValueError(f"not a cell id (dataset/eps=E/sdgp): {text!r}")
    return Cell(parts[0], parts[1].removeprefix("eps="), parts[2])


def cells(config: dict) -> dict[Cell, list[Run]]:
    """The grid's runs by cell, in grid order (seed by seed)."""
    out: dict[Cell, list[Run]] = {}
    for r in runs(config):
        out.setdefault(Cell(r.dataset, r.eps, r.sdgp), []).append(r)
    for cell_runs in out.values():
        cell_runs.sort(key=lambda r: r.seed)  # stable: grid order within a seed
    return out


def cell_seeds(cell_runs: list[Run]) -> list[int]:
    """The seeds a cell's runs use, in order."""
    return list(dict.fromkeys(r.seed for r in cell_runs))


def plan(config: dict, stage: str, cell: Cell, out: str | None = None) -> list[dict]:
    """One cell's invocations of ``stage`` under ``config``, its outputs under ``out`` (default: the
    config's own folder, out_dir). KeyError if the cell is not in the grid. The workflow calls
    cell_tasks with what it has already computed once for every cell."""
    grid_cells = cells(config)
    return cell_tasks(config, lookup_in(config), out or out_dir(config), stage, cell, grid_cells[cell],
                      logreg_cells(config))


@functools.cache
def code_digest() -> str:
    """SHA-256 of dpiw's own source (every .py file of the package): part of every cell record's name and
    every run's key, so that edited code recomputes what it may change."""
    import hashlib
    from pathlib import Path

    root, h = Path(__file__).parents[1], hashlib.sha256()  # the whole dpiw package
    for path in sorted(root.rglob("*.py")):
        h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def cell_digest(tasks: list[dict]) -> str:
    """A short digest of a cell job's runs (flags and paths) and of the code that runs them."""
    import hashlib
    import json

    return hashlib.sha256(json.dumps([code_digest(), tasks], sort_keys=True).encode()).hexdigest()[:12]


def _task(name: str, argv: list, inputs: list[str], outputs: list[str]) -> dict:
    """One stage invocation inside a cell job (dpiw.stages.cell): its flags, and the files it reads and
    writes (the cell job reruns it only when the flags or the bytes of an input changed)."""
    return {"name": name, "argv": [str(a) for a in argv], "inputs": inputs, "outputs": outputs}


def cell_tasks(config: dict, lookup: Lookup, out: str, stage: str, cell: Cell, cell_runs: list[Run],
               logreg: set[tuple] | None = None) -> list[dict]:
    """The stage invocations of one cell job (seed by seed), with every path under the output folder ``out``.
    A task's name (seed=S/...) is unique within the cell."""
    tasks = []
    for seed in cell_seeds(cell_runs):
        seed_runs = [r for r in cell_runs if r.seed == seed]
        tasks += [{**t, "name": f"seed={seed}/{t['name']}"}
                  for t in _seed_tasks(config, lookup, out, stage, cell, seed, seed_runs, logreg)]
    return tasks


def _seed_tasks(config: dict, lookup: Lookup, out: str, stage: str, cell: Cell, seed: int, cell_runs: list[Run],
                logreg: set[tuple] | None) -> list[dict]:
    def path(template, **keys):
        return fmt(under(out, template), **{**cell.keys(), "seed": seed, **keys})

    train, public, schema = path(TRAIN), path(PUBLIC), fmt(SCHEMA, dataset=cell.dataset)
    test = path(evaluation_rows(lookup))
    tasks = []
    if stage == "synthesize":
        for share in sorted({r.share for r in cell_runs}):
            outs = {"--out": path(SYNTH, share=share), "--privacy-out": path(SYNTH_PRIVACY, share=share)}
            if has_models(cell.sdgp):
                outs["--models-out"] = path(MODELS, share=share)
            if has_measurements(cell.sdgp):
                outs["--measurements-out"] = path(MEASUREMENTS, share=share)
            argv = ["--train", train, "--schema", schema,
                    *synthesize_args(config, lookup, sdgp=cell.sdgp, eps=cell.eps, seed=seed, share=share),
                    *[x for kv in outs.items() for x in kv]]
            tasks.append(_task(share, argv, [train, schema], list(outs.values())))
        return tasks
    if stage == "fit_weights":
        for weights in dict.fromkeys(r.weights for r in cell_runs):
            r = next(r for r in cell_runs if r.weights == weights)
            synth = path(SYNTH, share=r.share)
            ins = [train, synth, public, schema]
            argv = ["--real", train, "--synth", synth, "--public", public, "--schema", schema,
                    *fit_weights_args(config, lookup, dataset=cell.dataset, sdgp=cell.sdgp, weights=weights,
                                      eps=cell.eps, seed=seed)]
            if needs_models(weights):
                ins.append(path(MODELS, share=r.share))
                argv += ["--models", ins[-1]]
            if reuses_measurements(lookup, cell.sdgp, weights):
                ins.append(path(MEASUREMENTS, share=r.share))
                argv += ["--measurements", ins[-1]]
            outs = [path(LOG_RATIOS, weights=weights), path(PUBLIC_LOG_RATIOS, weights=weights),
                    path(WEIGHTS_PRIVACY, weights=weights)]
            argv += ["--out", outs[0], "--public-out", outs[1], "--privacy-out", outs[2]]
            if measures_weights(weights):
                outs.append(path(WEIGHTS_MEASUREMENTS, weights=weights))
                argv += ["--measurements-out", outs[-1]]
            tasks.append(_task(weights, argv, ins, outs))
        return tasks
    for r in cell_runs:
        k = r.keys()
        name = f"{r.weights}/{r.post}"
        if stage == "postprocess_weights":
            ins = [path(LOG_RATIOS, **k)]
            argv = ["--log-ratios", ins[0]]
            if calibrates(r.post):
                ins.append(path(PUBLIC_LOG_RATIOS, **k))
                argv += ["--public-log-ratios", ins[-1]]
            argv += postprocess_args(config, lookup, run=r)
            outs = [path(LOG_WEIGHTS, **k), path(POST_PRIVACY, **k)]
            if resamples(r.post):
                ins.append(path(SYNTH, **k))
                outs.append(path(RESAMPLED, **k))
                argv += ["--synth", ins[-1], "--resampled-out", outs[-1]]
            argv += ["--out", outs[0], "--privacy-out", outs[1]]
        elif stage == "evaluate":
            ins = [path(SYNTH, **k), path(LOG_WEIGHTS, **k), test, schema]
            argv = ["--synth", ins[0], "--log-weights", ins[1], "--test", test, "--schema", schema]
            if logreg is not None and compares_to_logreg(r, logreg):
                ins.append(path(LOG_RATIOS, **{**k, "weights": "logreg"}))
                argv += ["--reference-log-ratios", ins[-1]]
            outs = [path(METRICS, **k), path(EVAL_PRIVACY, **k)]
            argv += [*evaluate_args(config, lookup, run=r), "--out", outs[0], "--privacy-out", outs[1]]
        elif stage == "privacy_ledger":
            records = [path(SCALE_PRIVACY, **k), path(SYNTH_PRIVACY, **k), path(WEIGHTS_PRIVACY, **k),
                       path(POST_PRIVACY, **k)]
            measured = [path(m, **k) for m in bundle_measurements(r)]
            ins = [*records, schema, *measured, path(SYNTH, **k), path(LOG_WEIGHTS, **k)]
            outs = [path(MANIFEST, **k), path(RELEASE, **k)]
            argv = ["--records", *records, *ledger_args(config, lookup, run=r), "--run", fmt(RUN_ID, **k),
                    "--out", outs[0], "--synth", ins[-2], "--log-weights", ins[-1], "--release-out", outs[1],
                    *(["--measurements", *measured] if measured else [])]
        else:
            raise ValueError(f"not a cell stage: {stage}")
        tasks.append(_task(name, argv, ins, outs))
    return tasks
