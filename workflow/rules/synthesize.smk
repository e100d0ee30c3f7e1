# One job per cell (dataset, eps, SDGP): the SDGP fitted on every seed's split, for each budget share the
# cell's runs need.
rule synthesize:
    input:
        train=per_seed(G.TRAIN),
        schema=G.SCHEMA,
    output:
        done=done("synthesize"),
    params:
        stage="synthesize",
        config=CONFIG_FILE,
    resources:
        runtime=cell_minutes(per_seed=3, per_gan_seed=10),  # SLURM: the GAN fits are the long jobs
    log:
        cell_log("synthesize"),
    conda:
        "../envs/dpiw.yaml"
    shell:
        CELL_SHELL
