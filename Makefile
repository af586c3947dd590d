# The two commands of the README: `make demo` (the main job) and `make test` (the whole suite).
# Both create or update .venv first (scripts/bootstrap.sh, idempotent).
VENV ?= .venv

.PHONY: setup demo test

setup:
	@VENV=$(VENV) bash scripts/bootstrap.sh

demo: setup
	$(VENV)/bin/kgplus demo

test: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet  # the docs site: no broken link or reference
	$(VENV)/bin/python -m pytest --nbmake --nbmake-timeout=1200 -n 2 --dist worksteal --durations=30 $(PYTEST_ARGS)
