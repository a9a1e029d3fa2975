# Two commands: `make demo` and `make test`. Everything else is set up from nothing.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DEMO   := .workbench
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: demo test test-fast install workspace clean

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
	touch $(STAMP)

workspace: $(STAMP)
	$(BIN)/workbench --workspace $(DEMO) init --config sample_corpus/workbench.yaml --force
	$(BIN)/workbench --workspace $(DEMO) ingest sample_corpus/fragments

demo: workspace
	@echo
	@echo '$$ workbench list --kind anti-pattern --as marco.bianchi'
	@$(BIN)/workbench --workspace $(DEMO) list --kind anti-pattern --as marco.bianchi
	@echo
	@echo '$$ workbench show nw-adr-0007-idempotency-keys --as marco.bianchi'
	@$(BIN)/workbench --workspace $(DEMO) show nw-adr-0007-idempotency-keys --as marco.bianchi || true

test: $(STAMP)
	$(BIN)/python -m pytest -q

test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -m "not slow"

clean:
	rm -rf $(VENV) $(DEMO) .pytest_cache
