# The two commands of the README: `make demo` (the main job) and `make test` (the whole suite).
# Both create or update .venv first (scripts/bootstrap.sh, idempotent).
VENV ?= .venv
# mypy's cache lives with the machine's other caches (like pip's wheels), so a fresh clone's check takes seconds, not
# a minute; mypy re-checks any file whose content changed
MYPY_CACHE_DIR ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/llama-index-kgplus/mypy
# uv installs no bytecode (pip compiles every package at install): Python writes each module's bytecode the first
# time a process imports it, also where the machine sets PYTHONDONTWRITEBYTECODE, so that the many processes the
# suite starts (kernels, examples, CLI runs, workers) do not each compile their imports again
export PYTHONDONTWRITEBYTECODE :=

.PHONY: setup demo test

setup:
	@VENV=$(VENV) bash scripts/bootstrap.sh

demo: setup
	$(VENV)/bin/kgplus demo

test: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	MYPY_CACHE_DIR="$(MYPY_CACHE_DIR)" $(VENV)/bin/mypy
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet  # the docs site: no broken link or reference
	$(VENV)/bin/python -m pytest --nbmake --nbmake-timeout=1200 -n 2 --dist worksteal --durations=30 $(PYTEST_ARGS)
