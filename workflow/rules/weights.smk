rule fit_weights:
    input:
        real=TRAIN,
        synth=synth_for,
        public=PUBLIC,
        schema=SCHEMA,
        models=models_for,
    output:
        log_ratios=LOG_RATIOS,
        public_log_ratios=PUBLIC_LOG_RATIOS,
        privacy=WEIGHTS_PRIVACY,
    params:
        args=lambda wc: cli(
            G.fit_weights_args(config, value, dataset=wc.dataset, sdgp=wc.sdgp, weights=wc.weights,
                               eps=wc.eps, seed=wc.seed)
        ),
        models=lambda wc, input: cli(["--models", input.models]) if input.models else "",
    group:
        "run"
    log:
        "logs/fit_weights/{dataset}_eps={eps}_seed={seed}_{sdgp}_{weights}.log",
    conda:
        "../envs/dpiw.yaml"
    shell:
        "python -m dpiw.stages.fit_weights --real {input.real} --synth {input.synth} --public {input.public}"
        " --schema {input.schema} {params.args} {params.models} --out {output.log_ratios}"
        " --public-out {output.public_log_ratios} --privacy-out {output.privacy} > {log} 2>&1"


rule postprocess_weights:
    input:
        log_ratios=LOG_RATIOS,
        public_log_ratios=public_scores_for,
    output:
        log_weights=LOG_WEIGHTS,
        privacy=POST_PRIVACY,
    wildcard_constraints:
        post=NO_RESAMPLE_POST_RE,
    params:
        args=lambda wc: cli(G.postprocess_args(config, value, run=run_of(wc))),
        public=lambda wc, input: cli(["--public-log-ratios", input.public_log_ratios])
        if input.public_log_ratios else "",
    group:
        "run"
    log:
        "logs/postprocess_weights/{dataset}_eps={eps}_seed={seed}_{sdgp}_{weights}_{post}.log",
    conda:
        "../envs/dpiw.yaml"
    shell:
        "python -m dpiw.stages.postprocess_weights --log-ratios {input.log_ratios} {params.public} {params.args}"
        " --out {output.log_weights} --privacy-out {output.privacy} > {log} 2>&1"


rule postprocess_weights_resample:
    input:
        log_ratios=LOG_RATIOS,
        public_log_ratios=public_scores_for,
        synth=synth_for,
    output:
        log_weights=LOG_WEIGHTS,
        resampled=RESAMPLED,
        privacy=POST_PRIVACY,
    wildcard_constraints:
        post=RESAMPLE_POST_RE,
    params:
        args=lambda wc: cli(G.postprocess_args(config, value, run=run_of(wc))),
        public=lambda wc, input: cli(["--public-log-ratios", input.public_log_ratios])
        if input.public_log_ratios else "",
    group:
        "run"
    log:
        "logs/postprocess_weights/{dataset}_eps={eps}_seed={seed}_{sdgp}_{weights}_{post}.log",
    conda:
        "../envs/dpiw.yaml"
    shell:
        "python -m dpiw.stages.postprocess_weights --log-ratios {input.log_ratios} {params.public} {params.args}"
        " --synth {input.synth} --resampled-out {output.resampled}"
        " --out {output.log_weights} --privacy-out {output.privacy} > {log} 2>&1"
