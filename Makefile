# The two commands of the README: `make demo` (the main job) and `make test` (the whole suite).
# Both create or update .venv first (scripts/bootstrap.sh, idempotent).
VENV ?= .venv

.PHONY: setup demo test

setup:
	@VENV=$(VENV) bash scripts/bootstrap.sh

demo: setup
	$(VENV)/bin/kgplus demo

test: setup
	$(VENV)/bin/python -m pytest $(PYTEST_ARGS)
