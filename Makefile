# The two entry points of the README: `make train` (the default run) and `make test`.
# Both set everything up first: a virtual environment pinned by constraints.txt, and the Debian
# Fashion-MNIST package where it is missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
FASHION_MNIST := /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz
PYTEST_ARGS ?=

.PHONY: train test setup setup-test fashion-mnist

train: setup fashion-mnist
	$(BIN)/vitjax train --config configs/fashion_mnist/vit.py --workdir runs/fashion_mnist_vit

test: setup-test fashion-mnist
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)

setup: $(VENV)/.installed-core
setup-test: $(VENV)/.installed-test

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(VENV)/.installed-core: pyproject.toml constraints.txt | $(VENV)/bin/python
	$(BIN)/pip install -q -c constraints.txt -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml constraints.txt | $(VENV)/bin/python
	$(BIN)/pip install -q -c constraints.txt -e '.[test]'
	touch $(VENV)/.installed-core $@

fashion-mnist:
	@test -f $(FASHION_MNIST) || { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq dataset-fashion-mnist; }
