# Two commands do all setup: `make run` (dashboard) and `make test` (whole CPU suite).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
GPU_PYTHON ?= python3   # on the GPU box: the interpreter that holds CUDA torch + triton (no venv)
PORT ?= 8501

.PHONY: run test test-gpu native chromium clean

$(VENV)/.installed: requirements.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -r requirements.txt
	$(PY) -m pip install -q --disable-pip-version-check --no-deps -e .
	touch $@

$(VENV)/.test-installed: $(VENV)/.installed requirements-test.txt
	$(PY) -m pip install -q --disable-pip-version-check -r requirements-test.txt
	touch $@

chromium:
	@command -v chromium >/dev/null 2>&1 || { echo "installing Debian chromium (browser tests, PNG/SVG export)"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
	  || { echo "could not install chromium: run as root or install it yourself"; exit 1; }; }

run: $(VENV)/.installed
	$(VENV)/bin/blockscope dashboard --server.port $(PORT)

test: $(VENV)/.test-installed chromium
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m pytest -q -m "not gpu"

# On a GPU box: the native replay of `auto`'s repeated calls (kernels/native.py; ~15 s once, cached per torch).
native:
	$(GPU_PYTHON) -m profiling native --build

# On the GPU machine (no venv, no streamlit): the same kernels at full sizes plus timing/trace checks.
test-gpu:
	$(GPU_PYTHON) -m pytest -q -m gpu -p no:cacheprovider tests

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
