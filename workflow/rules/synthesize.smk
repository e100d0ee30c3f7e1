rule synthesize:
    input:
        train=TRAIN,
        schema=SCHEMA,
    output:
        synth=SYNTH,
        privacy=SYNTH_PRIVACY,
    wildcard_constraints:
        sdgp=NON_GAN_SDGP_RE,
    params:
        args=lambda wc: cli(
            G.synthesize_args(config, value, sdgp=wc.sdgp, eps=wc.eps, seed=wc.seed, share=wc.share)
        ),
    log:
        "logs/synthesize/{dataset}_eps={eps}_seed={seed}_{sdgp}_{share}.log",
    conda:
        "../envs/dpiw.yaml"
    shell:
        "python -m dpiw.stages.synthesize --train {input.train} --schema {input.schema} {params.args}"
        " --out {output.synth} --privacy-out {output.privacy} > {log} 2>&1"


rule synthesize_gan:
    input:
        train=TRAIN,
        schema=SCHEMA,
    output:
        synth=SYNTH,
        privacy=SYNTH_PRIVACY,
        models=MODELS,
    wildcard_constraints:
        sdgp=GAN_SDGP_RE,
    params:
        args=lambda wc: cli(
            G.synthesize_args(config, value, sdgp=wc.sdgp, eps=wc.eps, seed=wc.seed, share=wc.share)
        ),
    resources:
        runtime=30,
    log:
        "logs/synthesize/{dataset}_eps={eps}_seed={seed}_{sdgp}_{share}.log",
    conda:
        "../envs/dpiw.yaml"
    shell:
        "python -m dpiw.stages.synthesize --train {input.train} --schema {input.schema} {params.args}"
        " --out {output.synth} --privacy-out {output.privacy} --models-out {output.models} > {log} 2>&1"
