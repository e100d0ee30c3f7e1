"""Stage `aggregate`: tables over seeds (CSV, long form, and Markdown like the paper's Tables 1-3), led by
a one-page summary (dpiw.evaluate.summary_table): each DP weight method against its matched control and
against None on the whole epsilon, under the rules of dpiw.evaluate.compare."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from dpiw import DpiwError
from dpiw.evaluate import report_pages, summary_table
from dpiw.evaluate.aggregate import long_table, markdown, summary
from dpiw.io import _atomic, read_json, write_json
from dpiw.planning.grid import TASK_PLOTS
from dpiw.stages._cli import Parser, run
from dpiw.stages.cell import outputs


def parse_args(argv):
    p = Parser(prog="dpiw aggregate", description=__doc__)
    p.add_argument("--metrics", nargs="+", default=[],
                   help="metrics JSON files of single runs (instead of --evaluated)")
    p.add_argument("--manifests", nargs="+", default=[], help="one per metrics file, same order")
    p.add_argument("--evaluated", nargs="+", default=[],
                   help="cell records of the evaluate stage (dpiw.stages.cell): their runs' metrics")
    p.add_argument("--ledgers", nargs="+", default=[],
                   help="cell records of the privacy_ledger stage, same cells: their runs' manifests")
    p.add_argument("--out-csv", required=True,
                   help="the long table of every (run keys, metric): mean and SE over seeds (CSV)")
    p.add_argument("--out-md", required=True, help="the Markdown tables, one per dataset, epsilon and post chain")
    p.add_argument("--out-runs", required=True, help="CSV: one row per run with every metric (figures read it)")
    p.add_argument("--out-summary", required=True,
                   help="JSON for `dvc metrics`: mean of each ranked metric per dataset/eps/sdgp/weights/post")
    p.add_argument("--out-plot", nargs=2, action="append", default=[], metavar=("TASK", "CSV"),
                   help="for `dvc plots`: the runs of one task (classification: mlp_auc, regression: mlp_mse)")
    p.add_argument("--out-summary-html", help="the summary table as an HTML page (for the report)")
    p.add_argument("--out-manifests-html", help="every run's manifest in one HTML page (for the report)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    args.metrics += outputs(args.evaluated)
    args.manifests += outputs(args.ledgers)
    if not args.metrics:
        raise DpiwError("no runs to aggregate: give --metrics/--manifests or --evaluated/--ledgers")
    if len(args.metrics) != len(args.manifests):
        raise DpiwError(f"{len(args.metrics)} metrics files but {len(args.manifests)} manifests")
    rows, manifests = [], []
    for mpath, fpath in zip(args.metrics, args.manifests, strict=True):
        m, f = read_json(mpath), read_json(fpath)
        manifests.append(f)
        run_keys = m["run"]
        if Path(fpath).parent != Path(mpath).parent:
            raise DpiwError(f"{mpath} and {fpath} belong to different runs")
        rows.append({**run_keys, "dp": f["dp"], "fit_to_release": f["release"]["pareto_k_ok"],
                     **{k: (v if v is not None else float("nan")) for k, v in m.items() if k != "run"}})
    runs = pd.DataFrame(rows).sort_values(["dataset", "eps", "sdgp", "weights", "post", "seed"], kind="stable")
    _atomic(Path(args.out_runs), lambda tmp: runs.to_csv(tmp, index=False, float_format="%.6g"))
    for task, path in args.out_plot:
        if task not in TASK_PLOTS:
            raise DpiwError(f"--out-plot: task must be one of {list(TASK_PLOTS)}, got {task!r}")
        metric = TASK_PLOTS[task][1]
        cols = ["seed", metric, "dataset", "eps", "sdgp", "weights", "post"]
        part = runs[runs[metric].notna()] if metric in runs else pd.DataFrame(columns=cols)
        part = part[cols].assign(run=part.dataset.astype(str) + "/" + part.sdgp + "/" + part.weights + "/" + part.post)
        _atomic(Path(path), lambda tmp, part=part: part.to_csv(tmp, index=False, float_format="%.6g"))
    long = long_table(rows)
    write_json(summary(long), args.out_summary)
    _atomic(Path(args.out_csv), lambda tmp: long.to_csv(tmp, index=False, float_format="%.6g"))
    text = markdown(long, summary_table.markdown(summary_table.summary_rows(runs)), runs)
    _atomic(Path(args.out_md), lambda tmp: tmp.write_text(text))
    if args.out_summary_html:
        page = report_pages.summary_html(runs)
        _atomic(Path(args.out_summary_html), lambda tmp: tmp.write_text(page))
    if args.out_manifests_html:
        page_m = report_pages.manifests_html(manifests)
        _atomic(Path(args.out_manifests_html), lambda tmp: tmp.write_text(page_m))
    print(f"aggregate: {len(rows)} runs -> {args.out_csv}, {args.out_md}")


if __name__ == "__main__":
    run(main)
