rule fit_weights:
    input:
        real=TRAIN,
        synth=synth_for,
        schema=SCHEMA,
        models=models_for,
    output:
        log_ratios=LOG_RATIOS,
        privacy=WEIGHTS_PRIVACY,
    params:
        args=lambda wc: cli(
            G.fit_weights_args(config, value, dataset=wc.dataset, sdgp=wc.sdgp, weights=wc.weights,
                               eps=wc.eps, seed=wc.seed)
        ),
        models=lambda wc, input: cli(["--models", input.models]) if input.models else "",
    log:
        "logs/fit_weights/{dataset}_eps={eps}_seed={seed}_{sdgp}_{weights}.log",
    conda:
        "../envs/dpiw.yaml"
    shell:
        "python -m dpiw.stages.fit_weights --real {input.real} --synth {input.synth} --schema {input.schema}"
        " {params.args} {params.models} --out {output.log_ratios} --privacy-out {output.privacy} > {log} 2>&1"


rule postprocess_weights:
    input:
        log_ratios=LOG_RATIOS,
    output:
        log_weights=LOG_WEIGHTS,
        privacy=POST_PRIVACY,
    params:
        args=lambda wc: cli(G.postprocess_args(config, value, post=wc.post)),
    log:
        "logs/postprocess_weights/{dataset}_eps={eps}_seed={seed}_{sdgp}_{weights}_{post}.log",
    conda:
        "../envs/dpiw.yaml"
    shell:
        "python -m dpiw.stages.postprocess_weights --log-ratios {input.log_ratios} {params.args}"
        " --out {output.log_weights} --privacy-out {output.privacy} > {log} 2>&1"
