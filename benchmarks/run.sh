#!/usr/bin/env bash
# Run the latency benchmark at 1k, 10k and 100k fragments and keep the JSON results.
# Usage: benchmarks/run.sh [SIZES...]   (default: 1000 10000 100000)
# A benchmark, not a test: it prints numbers, it asserts nothing. Takes ~25 minutes at 100k.
set -euo pipefail
cd "$(dirname "$0")/.."
make install >/dev/null
mkdir -p benchmarks/results
for n in "${@:-1000 10000 100000}"; do
  for size in $n; do
    echo "== $size fragments" >&2
    .venv/bin/workbench bench --fragments "$size" --queries 100 --json > "benchmarks/results/bench-$((size / 1000))k.json"
  done
done
.venv/bin/python benchmarks/table.py benchmarks/results/bench-*.json
