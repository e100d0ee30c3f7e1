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

.PHONY: install run test lint clean

install: $(VENV)/.installed

$(VENV)/.installed: requirements.lock pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade "pip>=24"
	$(PY) -m pip install -q -r requirements.lock
	$(PY) -m pip install -q --no-deps -e .
	touch $@

# the default config (params.yaml -> results/default/); CONFIG=configs/paper.yaml for another
run: install
	snakemake --cores $(CORES) $(if $(CONFIG),--configfile $(CONFIG))

# The suite, then the SLURM test as a separate step (it starts a single-node cluster when root and apt
# are there: tests/cluster/start_slurm.sh; skipped with the reason otherwise).
test: install
	python -m pytest -q -m "not cluster"
	python -m pytest -q -rs -m cluster tests/cluster

lint: install
	ruff check src tests workflow bench
	snakemake --lint

clean:
	rm -rf results logs benchmarks .snakemake
