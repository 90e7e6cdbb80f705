# The two quickstart commands (README): `make demo` and `make test`. Both create .venv when it is missing.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
EXTRAS ?= dev,mcp,http,postgres,browser,e5
STAMP  := $(VENV)/.installed

.PHONY: demo test bench clean screenshots

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check --upgrade pip
	@# this project's own distribution was called "palimpsest" before ADR 0023: its stale entry points would load packs twice
	$(PY) -m pip uninstall -q -y palimpsest 2>/dev/null || true
	$(PY) -m pip install -q --disable-pip-version-check -e '.[$(EXTRAS)]'
	touch $(STAMP)

demo: $(STAMP)
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
