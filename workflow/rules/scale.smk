rule scale:
    input:
        schema=SCHEMA,
        data=data_inputs,
    output:
        train=TRAIN,
        test=TEST,
        public=PUBLIC,
        privacy=SCALE_PRIVACY,
    params:
        args=lambda wc: cli(G.scale_args(config, value, dataset=wc.dataset, seed=wc.seed)),
    log:
        "logs/scale/{dataset}_seed={seed}.log",
    conda:
        "../envs/dpiw.yaml"
    shell:
        "python -m dpiw.stages.scale --schema {input.schema} {params.args}"
        " --train-out {output.train} --test-out {output.test} --public-out {output.public} --privacy-out {output.privacy} > {log} 2>&1"
