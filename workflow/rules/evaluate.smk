# One evaluate job per cell; then the tables, figures and report over the whole grid.
rule evaluate:
    input:
        postprocessed=upstream("postprocess_weights"),
        fitted=upstream("fit_weights"),  # logreg's log ratios, where a run is compared with them
        synthesized=upstream("synthesize"),
        test=per_seed(G.evaluation_rows(value)),
        schema=G.SCHEMA,
    output:
        done=done("evaluate"),
    params:
        stage="evaluate",
        config=CONFIG_FILE,
    resources:
        runtime=cell_minutes(per_seed=3),
    group:
        "cell"
    log:
        cell_log("evaluate"),
    conda:
        "../envs/dpiw.yaml"
    shell:
        CELL_SHELL


rule aggregate:
    input:
        evaluated=all_done("evaluate"),
        ledgers=all_done("privacy_ledger"),
    output:
        csv=report(out(G.TABLE_CSV), caption="../report/tables.rst", category="Tables"),
        md=out(G.TABLE_MD),
        runs=report(out(G.TABLE_RUNS), caption="../report/tables.rst", category="Tables"),
        summary=out(G.SUMMARY),
        plots=[out(path) for path, _ in G.TASK_PLOTS.values()],
        summary_html=report(out(G.SUMMARY_HTML), caption="../report/summary.rst", category="Summary"),
        manifests_html=report(out(G.MANIFESTS_HTML), caption="../report/manifests.rst", category="Privacy"),
    params:
        plots=" ".join(f"--out-plot {task} {out(path)}" for task, (path, _) in G.TASK_PLOTS.items()),
    log:
        f"{LOGS}/aggregate.log",
    conda:
        "../envs/dpiw.yaml"
    shell:
        "python -m dpiw.stages.aggregate --evaluated {input.evaluated} --ledgers {input.ledgers}"
        " --out-csv {output.csv} --out-md {output.md} --out-runs {output.runs} --out-summary {output.summary}"
        " --out-summary-html {output.summary_html} --out-manifests-html {output.manifests_html}"
        " {params.plots}"
        " > {log} 2>&1"


rule figures:
    input:
        runs=out(G.TABLE_RUNS),
        toy=[done_of("postprocess_weights", c) for c in dict.fromkeys(
            CELL_OF[(r.dataset, r.eps, r.sdgp)] for r in G.figure1_runs(config))],
    output:
        fig1=report(out(G.FIG1), caption="../report/fig1.rst", category="Figures"),
        fig2=report(out(G.FIG2), caption="../report/fig2.rst", category="Figures"),
    params:
        args=cli(G.figures_args(config, OUT)),
    log:
        f"{LOGS}/figures.log",
    conda:
        "../envs/dpiw.yaml"
    shell:
        "python -m dpiw.stages.figures --runs {input.runs} {params.args}"
        " --out-fig1 {output.fig1} --out-fig2 {output.fig2} > {log} 2>&1"


rule report:
    """The run's report.html, the answer first (dpiw.stages.report: summary, figures, manifests), and
    Snakemake's own report as its provenance page (rule graph, code, config), made by a nested
    `snakemake --report` as the last job (the profile option `report-after-run` breaks `snakemake -n`). The
    nested call reads this run's effective config (params.yaml plus any --config/--configfile overrides) and
    takes no lock."""
    input:
        table=out(G.TABLE_CSV),
        runs=out(G.TABLE_RUNS),
        summary=out(G.SUMMARY_HTML),
        manifests=out(G.MANIFESTS_HTML),
        fig1=out(G.FIG1),
        fig2=out(G.FIG2),
        # the checkout's caption files (a stable path: workflow.source_path names a new cache file each run)
        captions=[str(Path(workflow.basedir) / "workflow/report" / f) for f in ("fig1.rst", "fig2.rst")],
    output:
        report=out(G.REPORT),
        provenance=out(G.PROVENANCE),
    params:
        config=CONFIG_FILE,
        snakefile=workflow.main_snakefile,
        title=f"dpiw: {OUT.removeprefix('results/')}",
        link=G.PROVENANCE,
    log:
        f"{LOGS}/report.log",
    conda:
        "../envs/dpiw.yaml"
    shell:
        "(snakemake --snakefile {params.snakefile:q} --configfile {params.config:q} --nolock"
        " --report {output.provenance:q}"
        " && python -m dpiw.stages.report --title {params.title:q} --summary-html {input.summary:q}"
        " --manifests-html {input.manifests:q} --figure {input.fig1:q} {input.captions[0]:q}"
        " --figure {input.fig2:q} {input.captions[1]:q} --provenance {params.link:q} --out {output.report:q})"
        " > {log} 2>&1"
