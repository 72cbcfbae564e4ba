# The two entry points of the README: `make train` (the default run) and `make test`.
# Both set everything up first: a virtual environment pinned by constraints.txt, and the Debian
# packages where they are missing: Fashion-MNIST, and tcmalloc (XLA:CPU runs ~1.7x faster under it,
# see vitjax/xla_cpu.py; `vitjax` preloads it itself, the test run is given it here).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
FASHION_MNIST := /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz
TCMALLOC = $(firstword $(wildcard /usr/lib/*-linux-gnu/libtcmalloc_minimal.so.4))
PYTEST_ARGS ?=
# Test processes (pytest-xdist). Each test file stays in one process, so the fixtures a module shares
# are built once, and files start in collection order (the longest first: tests/conftest.py). A process
# can hold several GiB (JAX, TensorFlow and torch in one), so the default is the 2 of a CI machine
# rather than one per core.
TEST_WORKERS ?= 2

.PHONY: train test setup setup-test system-packages

train: setup system-packages
	$(BIN)/vitjax train --config configs/fashion_mnist/vit.py --workdir runs/fashion_mnist_vit

test: setup-test system-packages
	LD_PRELOAD=$$(ls /usr/lib/*-linux-gnu/libtcmalloc_minimal.so.4 2>/dev/null | head -n 1) \
		$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder $(PYTEST_ARGS)

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

system-packages:
	@test -f $(FASHION_MNIST) -a -n "$(TCMALLOC)" || { $(SUDO) apt-get update -qq && \
		$(SUDO) apt-get install -y -qq dataset-fashion-mnist libtcmalloc-minimal4; }
