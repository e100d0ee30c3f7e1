rule privacy_ledger:
    input:
        records=run_records,
        synth=synth_for,
        log_weights=LOG_WEIGHTS,
    output:
        manifest=MANIFEST,
        release=directory(RELEASE),
    params:
        args=lambda wc: cli(G.ledger_args(config, value, run=run_of(wc))),
        run_id=lambda wc: G.fmt(G.RUN_DIR, **run_of(wc).keys()),
    group:
        "run"
    log:
        "logs/privacy_ledger/{dataset}_eps={eps}_seed={seed}_{sdgp}_{weights}_{post}.log",
    conda:
        "../envs/dpiw.yaml"
    shell:
        "python -m dpiw.stages.privacy_ledger --records {input.records} {params.args}"
        " --run {params.run_id} --out {output.manifest} --synth {input.synth} --log-weights {input.log_weights}"
        " --release-out {output.release} > {log} 2>&1"
