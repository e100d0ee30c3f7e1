rule evaluate:
    input:
        synth=synth_for,
        log_weights=LOG_WEIGHTS,
        test=TEST,
        schema=SCHEMA,
        reference=reference_for,
    output:
        metrics=METRICS,
        privacy=EVAL_PRIVACY,
    params:
        args=lambda wc: cli(G.evaluate_args(config, value, run=run_of(wc))),
        reference=lambda wc, input: cli(["--reference-log-ratios", input.reference]) if input.reference else "",
    group:
        "run"
    log:
        "logs/evaluate/{dataset}_eps={eps}_seed={seed}_{sdgp}_{weights}_{post}.log",
    conda:
        "../envs/dpiw.yaml"
    shell:
        "python -m dpiw.stages.evaluate --synth {input.synth} --log-weights {input.log_weights}"
        " --test {input.test} --schema {input.schema} {params.reference} {params.args}"
        " --out {output.metrics} --privacy-out {output.privacy} > {log} 2>&1"


rule aggregate:
    input:
        metrics=[G.fmt(METRICS, **r.keys()) for r in RUNS],
        manifests=[G.fmt(MANIFEST, **r.keys()) for r in RUNS],
    output:
        csv=report(TABLE_CSV, caption="../report/tables.rst", category="Tables"),
        md=TABLE_MD,
        runs=report(TABLE_RUNS, caption="../report/tables.rst", category="Tables"),
        summary=TABLE_SUMMARY,
    log:
        "logs/aggregate/aggregate.log",
    conda:
        "../envs/dpiw.yaml"
    shell:
        "python -m dpiw.stages.aggregate --metrics {input.metrics} --manifests {input.manifests}"
        " --out-csv {output.csv} --out-md {output.md} --out-runs {output.runs} --out-summary {output.summary}"
        " > {log} 2>&1"


rule figures:
    input:
        runs=TABLE_RUNS,
        toy=[p for r in G.figure1_runs(config) for p in (G.fmt(SYNTH, **r.keys()), G.fmt(LOG_WEIGHTS, **r.keys()))],
    output:
        fig1=report(FIG1, caption="../report/fig1.rst", category="Figures"),
        fig2=report(FIG2, caption="../report/fig2.rst", category="Figures"),
    params:
        args=cli(G.figures_args(config)),
    log:
        "logs/figures/figures.log",
    conda:
        "../envs/dpiw.yaml"
    shell:
        "python -m dpiw.stages.figures --runs {input.runs} {params.args}"
        " --out-fig1 {output.fig1} --out-fig2 {output.fig2} > {log} 2>&1"


rule report:
    """`snakemake --report` as the last job, so that a plain `snakemake --cores 8` ends with the HTML report
    (the profile option `report-after-run` breaks `snakemake -n`). The nested call reads this run's
    effective config (params.yaml plus any --config/--configfile overrides) and takes no lock."""
    input:
        TABLE_CSV,
        TABLE_RUNS,
        FIG1,
        FIG2,
    output:
        REPORT,
    params:
        config=lambda wc: effective_config(),
        snakefile=workflow.main_snakefile,
    log:
        "logs/report/report.log",
    conda:
        "../envs/dpiw.yaml"
    shell:
        "snakemake --snakefile {params.snakefile:q} --configfile {params.config:q} --nolock"
        " --report {output:q} > {log} 2>&1"
