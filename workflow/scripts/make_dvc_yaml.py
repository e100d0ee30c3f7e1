"""Generate dvc.yaml from params.yaml's grid: the same stages, commands and paths as the Snakemake
rules (both come from dpiw.grid).

Values from params.yaml enter the commands as ``${key}``, so DVC tracks exactly the parameters each
stage uses and re-runs only what an edited value reaches. Only a change of the grid itself (the lists
under ``grid``) needs a new dvc.yaml; the first stage refuses a stale one.

The stages are split over several files so that none grows past what git should hold: the root
dvc.yaml has `validate_params` and `aggregate` (which depends on every run, so `dvc repro` there
reproduces everything), and `pipelines/<dataset>/dvc.yaml` holds one dataset's stages, each run from
the repository root (`wdir: ../..`, params from `../../params.yaml`).

    python workflow/scripts/make_dvc_yaml.py --params params.yaml --out dvc.yaml [--check]
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

import yaml

from dpiw import DpiwError
from dpiw import grid as G
from dpiw.config import load_yaml, validate_params
from dpiw.data import load_schema
from dpiw.data.datasets import data_files
from dpiw.stages.validate_params import grid_digest

ROOT = Path(__file__).resolve().parents[2]
VALID = "results/.params_valid.json"
CODE = "src/dpiw"


def dvc_lookup(key: str) -> str:
    return "${" + key + "}"


def cmd(stage: str, args: list[str]) -> str:
    return f"python -m dpiw.stages.{stage} " + " ".join(
        a if a.startswith("${") else shlex.quote(str(a)) for a in args)


def build(params: dict) -> dict:
    stages: dict[str, dict] = {}
    digest = grid_digest(params)
    stages["validate_params"] = {
        "cmd": cmd("validate_params", ["--params", "params.yaml", "--schema", "workflow/schemas/params.schema.yaml",
                                       "--datasets-dir", "data/schemas", "--grid-digest", digest, "--out", VALID]),
        "deps": ["params.yaml", "workflow/schemas/params.schema.yaml", "data/schemas", "src/dpiw/config.py"],
        "outs": [{VALID: {"cache": False}}],
    }
    runs = list(G.runs(params))
    logreg_cells = G.logreg_cells(params)
    look = dvc_lookup
    seen = set()
    for r in runs:
        k = r.keys()
        tag_cell = f"{r.dataset}-e{r.eps}-s{r.seed}-{r.sdgp}"
        schema = G.fmt(G.SCHEMA, **k)
        train, test, public = G.fmt(G.TRAIN, **k), G.fmt(G.TEST, **k), G.fmt(G.PUBLIC, **k)
        name = f"scale-{r.dataset}-s{r.seed}"
        if name not in seen:
            seen.add(name)
            data = data_files(load_schema(schema))  # relative to the working directory, as the paths
            stages[name] = {
                "cmd": cmd("scale", ["--schema", schema, *G.scale_args(params, look, dataset=r.dataset, seed=r.seed),
                                     "--train-out", train, "--test-out", test, "--public-out", public,
                                     "--privacy-out", G.fmt(G.SCALE_PRIVACY, **k)]),
                "deps": [VALID, schema, *data, CODE],
                # the private rows never leave this machine: `dvc push` skips them
                "outs": [*({p: {"push": False}} for p in (train, test, public)),
                         {G.fmt(G.SCALE_PRIVACY, **k): {"cache": False}}],
            }
        synth = G.fmt(G.SYNTH, **k)
        models = G.fmt(G.MODELS, **k)
        name = f"synthesize-{tag_cell}-{r.share}"
        if name not in seen:
            seen.add(name)
            model_args = ["--models-out", models] if G.has_models(r.sdgp) else []
            stages[name] = {
                "cmd": cmd("synthesize", ["--train", train, "--schema", schema,
                                          *G.synthesize_args(params, look, sdgp=r.sdgp, eps=r.eps, seed=r.seed,
                                                             share=r.share),
                                          "--out", synth, "--privacy-out", G.fmt(G.SYNTH_PRIVACY, **k),
                                          *model_args]),
                "deps": [train, schema, CODE],
                # the GAN's networks are never released: not pushed either
                "outs": [synth, *([{models: {"push": False}}] if model_args else []),
                         {G.fmt(G.SYNTH_PRIVACY, **k): {"cache": False}}],
            }
        lr, public_lr = G.fmt(G.LOG_RATIOS, **k), G.fmt(G.PUBLIC_LOG_RATIOS, **k)
        name = f"fit_weights-{tag_cell}-{r.weights}"
        if name not in seen:
            seen.add(name)
            model_args = ["--models", models] if G.needs_models(r.weights) else []
            stages[name] = {
                "cmd": cmd("fit_weights", ["--real", train, "--synth", synth, "--public", public, "--schema", schema,
                                           *G.fit_weights_args(params, look, dataset=r.dataset, sdgp=r.sdgp,
                                                               weights=r.weights, eps=r.eps, seed=r.seed),
                                           *model_args, "--out", lr, "--public-out", public_lr,
                                           "--privacy-out", G.fmt(G.WEIGHTS_PRIVACY, **k)]),
                "deps": [train, synth, public, *model_args[1:], schema, CODE],
                "outs": [lr, public_lr, {G.fmt(G.WEIGHTS_PRIVACY, **k): {"cache": False}}],
            }
        run_tag = f"{tag_cell}-{r.weights}-{G.post_tag(r.post)}"
        lw = G.fmt(G.LOG_WEIGHTS, **k)
        extra_in = ["--public-log-ratios", public_lr] if G.calibrates(r.post) else []
        extra_out = ["--synth", synth, "--resampled-out", G.fmt(G.RESAMPLED, **k)] if G.resamples(r.post) else []
        stages[f"postprocess_weights-{run_tag}"] = {
            "cmd": cmd("postprocess_weights", ["--log-ratios", lr, *extra_in, *G.postprocess_args(params, look, run=r),
                                               *extra_out, "--out", lw, "--privacy-out", G.fmt(G.POST_PRIVACY, **k)]),
            "deps": [lr, *extra_in[1:], *extra_out[1:2], CODE],
            "outs": [lw, *extra_out[3:], {G.fmt(G.POST_PRIVACY, **k): {"cache": False}}],
        }
        ref = (["--reference-log-ratios", G.fmt(G.LOG_RATIOS, **{**k, "weights": "logreg"})]
               if G.compares_to_logreg(r, logreg_cells) else [])
        stages[f"evaluate-{run_tag}"] = {
            "cmd": cmd("evaluate", ["--synth", synth, "--log-weights", lw, "--test", test, "--schema", schema, *ref,
                                    *G.evaluate_args(params, look, run=r), "--out", G.fmt(G.METRICS, **k),
                                    "--privacy-out", G.fmt(G.EVAL_PRIVACY, **k)]),
            "deps": [synth, lw, test, schema, *ref[1:], CODE],
            "outs": [{G.fmt(G.EVAL_PRIVACY, **k): {"cache": False}}],
            "metrics": [{G.fmt(G.METRICS, **k): {"cache": False}}],
        }
        records = [G.fmt(p, **k) for p in (G.SCALE_PRIVACY, G.SYNTH_PRIVACY, G.WEIGHTS_PRIVACY, G.POST_PRIVACY)]
        stages[f"privacy_ledger-{run_tag}"] = {
            "cmd": cmd("privacy_ledger", ["--records", *records, *G.ledger_args(params, look, run=r),
                                          "--run", G.fmt(G.RUN_DIR, **k), "--out", G.fmt(G.MANIFEST, **k),
                                          "--synth", synth, "--log-weights", lw,
                                          "--release-out", G.fmt(G.RELEASE, **k)]),
            "deps": [*records, synth, lw, CODE],
            "outs": [G.fmt(G.RELEASE, **k)],
            "metrics": [{G.fmt(G.MANIFEST, **k): {"cache": False}}],
        }
    metrics = [G.fmt(G.METRICS, **r.keys()) for r in runs]
    manifests = [G.fmt(G.MANIFEST, **r.keys()) for r in runs]
    stages["aggregate"] = {
        "cmd": cmd("aggregate", ["--metrics", *metrics, "--manifests", *manifests, "--out-csv", G.TABLE_CSV,
                                 "--out-md", G.TABLE_MD, "--out-runs", G.TABLE_RUNS, "--out-summary", G.TABLE_SUMMARY]),
        "deps": [*metrics, *manifests, CODE],
        "outs": [{G.TABLE_CSV: {"cache": False}}, {G.TABLE_MD: {"cache": False}}],
        "metrics": [{G.TABLE_SUMMARY: {"cache": False}}],
        "plots": [{G.TABLE_RUNS: {"cache": False, "x": "seed", "y": "wst", "template": "scatter"}}],
    }
    fig1 = G.figure1_runs(params)
    toy_deps = [G.fmt(p, **r.keys()) for r in fig1 for p in (G.SYNTH, G.LOG_WEIGHTS)]
    stages["figures"] = {
        "cmd": cmd("figures", ["--runs", G.TABLE_RUNS, *G.figures_args(params), "--out-fig1", G.FIG1,
                               "--out-fig2", G.FIG2]),
        "deps": [G.TABLE_RUNS, *dict.fromkeys(toy_deps), CODE],
        "plots": [{G.FIG1: {"cache": False}}, {G.FIG2: {"cache": False}}],
    }
    return {"stages": stages}


PIPELINES = "pipelines"


def split(params: dict) -> dict[str, dict]:
    """Relative path -> dvc.yaml content: the root file and one file per dataset."""
    stages = build(params)["stages"]
    files: dict[str, dict] = {"dvc.yaml": {"stages": {}}}
    datasets = list(params["grid"]["datasets"])
    for name, stage in stages.items():
        ds = next((d for d in datasets if name.split("-")[1:2] == [d]), None)
        if ds is None or name.split("-")[0] in ("validate_params", "aggregate", "figures"):
            files["dvc.yaml"]["stages"][name] = stage
            continue
        rel = f"{PIPELINES}/{ds}/dvc.yaml"
        files.setdefault(rel, {"vars": ["../../params.yaml"], "stages": {}})
        files[rel]["stages"][name] = {"wdir": "../..", **stage}
    return files


def render(params: dict) -> dict[str, str]:
    header = ("# GENERATED from params.yaml by workflow/scripts/make_dvc_yaml.py (`make dvc-yaml`); do not edit.\n"
              f"# Grid digest {grid_digest(params)}. The same stages as the Snakemake rules, one per job.\n")
    return {rel: header + yaml.safe_dump(content, sort_keys=False, width=10_000)
            for rel, content in split(params).items()}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--params", default="params.yaml")
    p.add_argument("--out", default="dvc.yaml")
    p.add_argument("--check", action="store_true", help="exit 1 if --out differs from what would be written")
    args = p.parse_args(argv)
    try:
        params = validate_params(load_yaml(args.params), load_yaml(ROOT / "workflow/schemas/params.schema.yaml"),
                                 schema_dir=Path(args.params).parent / "data/schemas", params_name=args.params)
    except DpiwError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    texts = render(params)
    root = Path(args.out).parent
    wanted = {root / (Path(args.out).name if rel == "dvc.yaml" else rel): text for rel, text in texts.items()}
    stale = [p for p in sorted((root / PIPELINES).glob("*/dvc.yaml")) if p not in wanted]
    if args.check:
        bad = [p for p, text in wanted.items() if not p.is_file() or p.read_text() != text] + stale
        if bad:
            print(f"{', '.join(map(str, bad))} out of date with {args.params}: run `make dvc-yaml`", file=sys.stderr)
            return 1
        return 0
    for p in stale:
        p.unlink()
    for p, text in wanted.items():
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    n = sum(len(yaml.safe_load(t)["stages"]) for t in texts.values())
    print(f"wrote {', '.join(str(p) for p in wanted)}: {n} stages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
