# Validation, the grid's cells, output paths and input functions; no rules.
import shlex
import sys
from pathlib import Path

from dpiw import DpiwError
from dpiw.planning import grid as G
from dpiw.planning.config import load_yaml, validate_params

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
    digest=r"[0-9a-f]{12}",


# every output of this config goes under OUT (results/<config>): one config never overwrites another's
OUT = G.out_dir(config, workflow.overwrite_configfiles)
LOGS = f"logs/{OUT.removeprefix('results/')}"
CELLS = G.cells(config)
CELL_OF = {(c.dataset, c.eps, c.sdgp): c for c in CELLS}
LOGREG_CELLS = G.logreg_cells(config)
RELEASE_MODE = config["mode"] == "release"


def out(template):
    """A path template under this config's output folder."""
    return G.under(OUT, template)


value = G.lookup_in(config)  # params.yaml value at a dotted key


def cli(args):
    return " ".join(shlex.quote(str(a)) for a in args)


def done(stage):
    """The cell job's output (its record, dpiw.stages.cell), named by the digest of its runs."""
    return G.fmt(out(G.CELL_DONE), dataset="{dataset}", eps="{eps}", sdgp="{sdgp}", stage=stage, digest="{digest}")


_TASKS = {}


def cell_tasks(stage, cell):
    if (stage, cell) not in _TASKS:
        _TASKS[stage, cell] = G.cell_tasks(config, value, OUT, stage, cell, CELLS[cell], LOGREG_CELLS)
    return _TASKS[stage, cell]


def done_of(stage, cell):
    """One cell's record file of ``stage`` under the current config."""
    return G.fmt(out(G.CELL_DONE), **cell.keys(), stage=stage, digest=G.cell_digest(cell_tasks(stage, cell)))


def upstream(stage):
    """Input function: this cell's record of an earlier stage."""
    return lambda wc: done_of(stage, cell_of(wc))


def per_seed(template):
    """Input function: ``template`` (a scale output) for every seed of this cell."""
    return lambda wc: [G.fmt(out(template), dataset=wc.dataset, seed=s) for s in G.cell_seeds(CELLS[cell_of(wc)])]


def cell_minutes(per_seed, per_gan_seed=None):
    """A cell job's time limit in minutes (SLURM): 10 plus so many per seed of the cell."""
    def minutes(wc):
        gan = per_gan_seed is not None and G.has_models(wc.sdgp)
        return 10 + (per_gan_seed if gan else per_seed) * len(G.cell_seeds(CELLS[cell_of(wc)]))
    return minutes


def all_done(stage):
    return [done_of(stage, c) for c in CELLS]


def cell_of(wc):
    return CELL_OF[(wc.dataset, wc.eps, wc.sdgp)]


def effective_config():
    """This run's config (params.yaml with any --configfile/--config laid over it) as a file in its output
    folder: the cell jobs and the nested `snakemake --report` read it. Written only when it changed."""
    import yaml

    path = Path(OUT) / "config.yaml"
    dumped = yaml.safe_dump({**config, "out": OUT}, sort_keys=True)
    text = f"# written by the workflow: the config this folder's results come from\n{dumped}"
    if not path.is_file() or path.read_text() != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return str(path)


CONFIG_FILE = effective_config()


def run_targets():
    """What `all` asks for: every cell's ledger (manifests and release bundles) and, in benchmark mode
    (there is a test split), the evaluation, tables, figures and report."""
    if RELEASE_MODE:
        return all_done("privacy_ledger")
    return [*all_done("privacy_ledger"), *all_done("evaluate"), out(G.TABLE_CSV), out(G.TABLE_MD),
            out(G.SUMMARY), out(G.FIG1), out(G.FIG2), out(G.REPORT)]


def data_inputs(wc):
    """The files a dataset is read from (its rows, its public rows): editing one reruns scale and all after."""
    from dpiw.data import load_schema
    from dpiw.data.datasets import data_files

    return data_files(load_schema(G.fmt(G.SCHEMA, dataset=wc.dataset)))


def cell_log(stage):
    """A cell job's log (named, like its record, by the digest of the cell's runs)."""
    return f"{LOGS}/{stage}/{{dataset}}_eps={{eps}}_{{sdgp}}.{{digest}}.log"


# PYTHONHASHSEED=0: MST's compiled JAX programs are cached under .cache/jax (dpiw.sdgp.mst), and their keys
# depend on Python's string hashing; a fixed seed lets every job find what the first one compiled
CELL_SHELL = ("PYTHONHASHSEED=0 python -m dpiw.stages.cell --stage {params.stage} --config {params.config:q}"
              " --cell {wildcards.dataset}/eps={wildcards.eps}/{wildcards.sdgp}"
              " --done {output.done} > {log} 2>&1")
