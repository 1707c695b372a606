# Two entry points: `make demo` (the main job on the embedded default) and `make test`.
# Both create .venv if it is missing and install what they need.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
TORCH ?= torch==2.13.0
STAMP := $(VENV)/.installed-dev

.PHONY: demo demo-quick test test-slow lint system-deps clean

$(PY):
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(PY)
	$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install -q "$(TORCH)"
	$(PY) -m pip install -q -e ".[dev]"
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/rlvr demo

demo-quick: $(STAMP)
	$(VENV)/bin/rlvr demo --quick

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/ruff format --check src tests bench
	$(VENV)/bin/mypy

test: $(STAMP)
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/ruff format --check src tests bench
	$(VENV)/bin/mypy
	$(PY) -m pytest

test-slow: $(STAMP)
	$(PY) -m pytest -m slow || [ $$? -eq 5 ]

# Debian packages some features use: bubblewrap (reward sandbox), chromium (browser tests).
system-deps:
	command -v bwrap >/dev/null && command -v chromium >/dev/null || \
	  (apt-get update -qq && apt-get install -y -qq bubblewrap chromium)

clean:
	rm -rf $(VENV) runs .pytest_cache .ruff_cache .mypy_cache
