# The benchmark suite's commands. `make help` lists them.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PY ?= python3
VENV ?= .venv
PYTHON := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
SHARED_DATA ?= $(abspath ../shared/data)
FASHION_MNIST := /usr/share/datasets/fashion-mnist
RUN := $(PYTHON) -m suite.run

.PHONY: help install data fashion-mnist test test-slow bench perf clean

help: ## List the commands
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  \033[1m%-14s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	# torch and torchvision first, pinned: this pair lies on the machine's disk (no large download)
	$(VENV)/bin/pip install -q torch==2.14.1 torchvision==0.29.1
	$(VENV)/bin/pip install -q -e '.[test]'
	touch $@

install: $(STAMP) ## Create .venv with torch 2.14.1, torchvision 0.29.1 and the project

fashion-mnist: ## Install Fashion-MNIST from Debian (dataset-fashion-mnist), if missing
	@if [ ! -d $(FASHION_MNIST) ]; then \
	  echo "installing dataset-fashion-mnist (Debian package)"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dataset-fashion-mnist >/dev/null) \
	    || echo "warning: could not install dataset-fashion-mnist; the Fashion-MNIST dataset will be missing"; \
	fi

data: install fashion-mnist ## Prepare data/ from ../shared/data (links) and Fashion-MNIST
	$(PYTHON) -m suite.datadir --source $(SHARED_DATA)

test: data ## Run the tests (fast set; a few minutes)
	$(PYTHON) -m pytest -m "not slow" -q

test-slow: data ## Run the slower checks (marker 'slow')
	$(PYTHON) -m pytest -m slow -q

bench: data ## The quick benchmark: every task at trainer=quick, Transformer against LSTM; prints a summary table
	$(RUN) -m hydra.sweep.dir=runs/bench-quick logger=wandb trainer=quick \
	  task=sentiment,long_range model=transformer,lstm
	$(PYTHON) -m suite.report runs/bench-quick --name quick

perf: install ## Our encoder against torch.nn.TransformerEncoder: training-step and inference time, as ratios
	$(PYTHON) -m suite.perf

clean: ## Remove run outputs (outputs/, multirun/, runs/); keeps results/ and .venv
	rm -rf outputs multirun runs
