# One job per cell and stage: every weight method of the cell, then every (method, post chain) run.
rule fit_weights:
    input:
        synthesized=upstream("synthesize"),
        real=out(G.TRAIN),
        public=out(G.PUBLIC),
        schema=G.SCHEMA,
    output:
        done=done("fit_weights"),
    params:
        stage="fit_weights",
        config=CONFIG_FILE,
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
    group:
        "cell"
    log:
        cell_log("postprocess_weights"),
    conda:
        "../envs/dpiw.yaml"
    shell:
        CELL_SHELL
