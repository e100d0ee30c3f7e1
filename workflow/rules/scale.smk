rule scale:
    input:
        schema=G.SCHEMA,
        data=data_inputs,
    output:
        train=out(G.TRAIN),
        test=out(G.TEST),
        public=out(G.PUBLIC),
        privacy=out(G.SCALE_PRIVACY),
    params:
        args=lambda wc: cli(G.scale_args(config, value, dataset=wc.dataset, seed=wc.seed)),
    log:
        f"{LOGS}/scale/{{dataset}}_seed={{seed}}.log",
    conda:
        "../envs/dpiw.yaml"
    shell:
        "python -m dpiw.stages.scale --schema {input.schema} {params.args} --train-out {output.train}"
        " --test-out {output.test} --public-out {output.public} --privacy-out {output.privacy} > {log} 2>&1"
