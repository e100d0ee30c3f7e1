# One job per cell and stage: every weight method of the cell, then every (method, post chain) run.
rule fit_weights:
    input:
        synthesized=upstream("synthesize"),
        real=per_seed(G.TRAIN),
        public=per_seed(G.PUBLIC),
        schema=G.SCHEMA,
    output:
        done=done("fit_weights"),
    params:
        stage="fit_weights",
        config=CONFIG_FILE,
    resources:
        runtime=cell_minutes(per_seed=3),
    group:
        "cell"
    log:
        cell_log("fit_weights"),
    conda:
        "../envs/dpiw.yaml"
    shell:
        CELL_SHELL


rule postprocess_weights:
    input:
        fitted=upstream("fit_weights"),
        synthesized=upstream("synthesize"),
    output:
        done=done("postprocess_weights"),
    params:
        stage="postprocess_weights",
        config=CONFIG_FILE,
    resources:
        runtime=cell_minutes(per_seed=3),
    group:
        "cell"
    log:
        cell_log("postprocess_weights"),
    conda:
        "../envs/dpiw.yaml"
    shell:
        CELL_SHELL
