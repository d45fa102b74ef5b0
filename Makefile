# FairSolve. `make run` starts the whole service; `make test` runs the whole suite.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test install bench migrate lint clean

$(STAMP): requirements.txt requirements-dev.txt pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(PY) -m app.launcher

migrate: $(STAMP)
	$(PY) -m alembic upgrade head

test: $(STAMP)
	$(PY) -m pytest

lint: $(STAMP)
	$(PY) -m ruff check .

bench: $(STAMP)
	$(PY) -m bench.papers.adult_plada

clean:
	rm -rf .fairsolve .pytest_cache
