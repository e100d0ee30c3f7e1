rule evaluate:
    input:
        synth=synth_for,
        log_weights=LOG_WEIGHTS,
        test=TEST,
        schema=SCHEMA,
    output:
        metrics=METRICS,
        privacy=EVAL_PRIVACY,
    params:
        args=lambda wc: cli(G.evaluate_args(config, value, run=run_of(wc))),
    log:
        "logs/evaluate/{dataset}_eps={eps}_seed={seed}_{sdgp}_{weights}_{post}.log",
    conda:
        "../envs/dpiw.yaml"
    shell:
        "python -m dpiw.stages.evaluate --synth {input.synth} --log-weights {input.log_weights}"
        " --test {input.test} --schema {input.schema} {params.args}"
        " --out {output.metrics} --privacy-out {output.privacy} > {log} 2>&1"


rule aggregate:
    input:
        metrics=[G.fmt(METRICS, **r.keys()) for r in RUNS],
        manifests=[G.fmt(MANIFEST, **r.keys()) for r in RUNS],
    output:
        csv=TABLE_CSV,
        md=TABLE_MD,
    log:
        "logs/aggregate/aggregate.log",
    conda:
        "../envs/dpiw.yaml"
    shell:
        "python -m dpiw.stages.aggregate --metrics {input.metrics} --manifests {input.manifests}"
        " --out-csv {output.csv} --out-md {output.md} > {log} 2>&1"
