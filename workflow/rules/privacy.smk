# One job per cell: each run's manifest (composed spend, verdict) and release bundle.
rule privacy_ledger:
    input:
        scaled=per_seed(G.SCALE_PRIVACY),
        synthesized=upstream("synthesize"),
        fitted=upstream("fit_weights"),
        postprocessed=upstream("postprocess_weights"),
    output:
        done=done("privacy_ledger"),
    params:
        stage="privacy_ledger",
        config=CONFIG_FILE,
    resources:
        runtime=cell_minutes(per_seed=3),
    group:
        "cell"
    log:
        cell_log("privacy_ledger"),
    conda:
        "../envs/dpiw.yaml"
    shell:
        CELL_SHELL
