# One job per cell (dataset, eps, seed, SDGP): the SDGP fitted on each budget share the cell's runs need.
rule synthesize:
    input:
        train=out(G.TRAIN),
        schema=G.SCHEMA,
    output:
        done=done("synthesize"),
    params:
        stage="synthesize",
        config=CONFIG_FILE,
    resources:
        runtime=lambda wc: 60 if G.has_models(wc.sdgp) else 10,  # minutes (SLURM): GAN fits are the long jobs
    log:
        cell_log("synthesize"),
    conda:
        "../envs/dpiw.yaml"
    shell:
        CELL_SHELL
