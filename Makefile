# The two quickstart commands (README): `make demo` and `make test`. Both create .venv when it is missing.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
EXTRAS ?= dev,mcp,http,postgres,browser,e5
STAMP  := $(VENV)/.installed
BASE   := $(VENV)/.installed-core

.PHONY: demo test bench clean screenshots

# `make demo` needs the core only (~1/3 of the full venv); `make test` adds every extra the suite exercises
$(BASE): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check --upgrade pip
	@# this project's own distribution was called "palimpsest" before ADR 0023: its stale entry points would load packs twice
	$(PY) -m pip uninstall -q -y palimpsest 2>/dev/null || true
	$(PY) -m pip install -q --disable-pip-version-check -e .
	touch $(BASE)

$(STAMP): $(BASE)
	$(PY) -m pip install -q --disable-pip-version-check -e '.[$(EXTRAS)]'
	touch $(STAMP)

demo: $(BASE)
	$(PY) demo/run_demo.py

test: $(STAMP)
	$(PY) -m pytest
	$(VENV)/bin/lint-imports

# the README's screenshots of the web view (docs/img/*.png), made by the browser tests from the demo data
screenshots: $(STAMP)
	PALIMPSEST_SCREENSHOTS=docs/img $(PY) -m pytest -q tests/browser

bench: $(STAMP)
	$(PY) bench/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache
