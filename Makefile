# The README's first two commands are `make run` and `make test`; both set up .venv from scratch.
VENV ?= .venv
PY := $(VENV)/bin/python
export PATH := $(abspath $(VENV))/bin:$(PATH)
# The CPU wheel of torch==2.13.0 lies in /opt/wheels on the project's machines; without it pip would
# fetch a multi-GB CUDA build.
ifneq ($(wildcard /opt/wheels),)
export PIP_FIND_LINKS ?= /opt/wheels
endif
CORES ?= all

.PHONY: help install run results usefulness test docs lint clean

help:  ## list the targets
	@grep -E '^[a-z]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | expand -t 12

install: $(VENV)/.installed  ## build .venv from requirements.lock (torch CPU wheel)

$(VENV)/.installed: requirements.lock pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade "pip>=24"
	$(PY) -m pip install -q -r requirements.lock
	$(PY) -m pip install -q --no-deps -e .
	touch $@

# the default config (params.yaml -> results/default/); CONFIG=configs/paper.yaml for another
run: install  ## the default config (or CONFIG=configs/X.yaml) -> results/<config>/
	snakemake --cores $(CORES) $(if $(CONFIG),--configfile $(CONFIG))

# The paper grid (configs/paper.yaml -> results/paper/), then docs/results.md generated from its runs table
results: install  ## configs/paper.yaml and its NOT-DP ablation, then docs/results.md from their runs
	snakemake --cores $(CORES) --configfile configs/paper.yaml
	snakemake --cores $(CORES) --configfile configs/paper_accounting.yaml
	python -m dpiw.stages.paper_compare --runs results/paper/tables/runs.csv \
		--ablation-runs results/paper_accounting/tables/runs.csv \
		--paper data/paper/ghalebikesabi2022_tables.csv --out docs/results.md

# The usefulness study (configs/usefulness.yaml) -> docs/usefulness.md and its plot; a rerun keeps the releases
# it still needs (results/usefulness/units.pkl): `make usefulness FRESH=--fresh` after a change to a method
usefulness: install  ## the usefulness study on real tables -> docs/usefulness.md (about 80 minutes on 2 cores)
	python -m dpiw.studies.usefulness --config configs/usefulness.yaml --out docs/usefulness.md \
		--figure docs/usefulness.png $(FRESH)

# The suite and the SLURM test (it starts a single-node cluster when root and apt are there:
# tests/cluster/start_slurm.sh; skipped with the reason otherwise), in two worker processes (pytest-xdist): a test
# module stays on one worker, so its fixtures are built once; the modules start in tests/conftest.py's order (the
# SLURM test first, whose waits overlap the other worker's work; then the slow ones), not xdist's by test count.
TEST_WORKERS ?= 2
test: install  ## the test suite and the SLURM test (what CI runs)
	python -m pytest -q -rs -n $(TEST_WORKERS) --dist loadscope --no-loadscope-reorder

docs: install  ## docs/configuration.md, and the docs' figures from the default run (runs it: minutes)
	python -m dpiw.planning.config_docs > docs/configuration.md
	snakemake --cores $(CORES)
	python -m dpiw.studies.docs_figures --results results/default --config params.yaml

lint: install  ## ruff and snakemake --lint
	ruff check src tests workflow bench
	snakemake --lint

clean:  ## remove results, logs and Snakemake's state
	rm -rf results logs benchmarks .snakemake
