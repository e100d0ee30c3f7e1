"""The workflow's planning: a config laid over params.yaml and checked (config), its documentation
(config_docs), and the grid of runs and cell jobs Snakemake is given (grid)."""
