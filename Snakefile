# dpiw: scale -> synthesize -> fit_weights -> postprocess_weights -> evaluate, privacy_ledger, aggregate.
# Wiring only; the grid, its cells, the paths and the stage arguments live in dpiw.planning.grid.
configfile: "params.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/scale.smk"
include: "workflow/rules/synthesize.smk"
include: "workflow/rules/weights.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/privacy.smk"


# the report rule runs a nested `snakemake --report` on the submitting host, not on a cluster node
localrules:
    report,


rule all:
    input:
        run_targets(),
