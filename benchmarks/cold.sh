#!/usr/bin/env bash
# Time the cold CLI: `workbench search "customer charged twice on retry" --as marco.bianchi` as a
# fresh process, RUNS times (default 10), after one untimed first run (a first process may build
# derived data the later ones load); print min, median and max wall seconds, the median CPU seconds
# and the largest peak RSS. A benchmark, not a test: it asserts nothing (issue 13's targets: a
# median of 1.0 s on the sample workspace, 1.5 s at 10k fragments).
#
# Usage: benchmarks/cold.sh [RUNS] [--workspace DIR] [-- ARGS...]
#   --workspace DIR  time on DIR (default: the demo workspace, built fresh in a temporary folder as
#                    `make workspace` builds it, and removed afterwards)
#   -- ARGS          workbench arguments: options are added to the default search
#                    (`-- --json`); a command replaces it (`-- list --as marco.bianchi`)
# Environment: WORKBENCH (the executable; default .venv/bin/workbench of this checkout, else
# `workbench` on PATH); WORKBENCH_EMBEDDER and the rest pass through to every run.
# Timing: /usr/bin/time when present (wall %e, peak RSS %M), else (or with COLD_SH_TIMER=python)
# Python's clock and wait4.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
QUERY="customer charged twice on retry"
usage() { echo "usage: benchmarks/cold.sh [RUNS] [--workspace DIR] [-- WORKBENCH ARGS...]" >&2; exit 2; }

runs=10 workspace="" extra=()
if [[ $# -gt 0 && $1 != -* ]]; then
  [[ $1 =~ ^[1-9][0-9]*$ ]] || { echo "cold.sh: RUNS must be a positive whole number, not '$1'" >&2; usage; }
  runs=$1; shift
fi
while [[ $# -gt 0 ]]; do
  case $1 in
    --workspace) [[ $# -ge 2 ]] || usage; workspace=$2; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "cold.sh: unexpected argument '$1'" >&2; usage ;;
  esac
done

if [[ -n ${WORKBENCH:-} ]]; then wb=$WORKBENCH
elif [[ -x $ROOT/.venv/bin/workbench ]]; then wb=$ROOT/.venv/bin/workbench
else wb=$(command -v workbench) || { echo "cold.sh: no workbench executable (set WORKBENCH)" >&2; exit 2; }
fi
python=$(dirname "$wb")/python
[[ -x $python ]] || python=$(command -v python3)
export HF_HUB_OFFLINE="${HF_HUB_OFFLINE:-1}" TRANSFORMERS_OFFLINE="${TRANSFORMERS_OFFLINE:-1}"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/workbench-cold.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
if [[ -z $workspace ]]; then
  workspace=$tmp/ws
  echo "cold.sh: building the demo workspace in $workspace" >&2
  "$wb" --workspace "$workspace" init --config "$ROOT/sample_corpus/workbench.yaml" --force >/dev/null
  "$wb" --workspace "$workspace" ingest "$ROOT/sample_corpus/fragments" --as kb.sync >/dev/null
  "$wb" --workspace "$workspace" index >/dev/null
fi
[[ -d $workspace ]] || { echo "cold.sh: no workspace folder $workspace" >&2; exit 2; }

if [[ ${#extra[@]} -gt 0 && ${extra[0]} != -* ]]; then
  cmd=("$wb" --workspace "$workspace" "${extra[@]}")
else
  cmd=("$wb" search "$QUERY" --as marco.bianchi --workspace "$workspace" "${extra[@]}")
fi

# One run of cmd: prints "WALL_S RSS_KB CPU_S"; stdout goes nowhere, stderr to $tmp/stderr.
timed() {
  if [[ -x /usr/bin/time && ${COLD_SH_TIMER:-} != python ]]; then
    /usr/bin/time -f '%e %M %U %S' -o "$tmp/usage" "${cmd[@]}" >/dev/null 2>"$tmp/stderr" || return 1
    tail -n 1 "$tmp/usage" | awk '{ printf "%s %s %.2f\n", $1, $2, $3 + $4 }'
  else
    "$python" -I -S -c '
import os, sys, time
start = time.perf_counter()
pid = os.posix_spawnp(sys.argv[1], sys.argv[1:], os.environ,
                      file_actions=[(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0)])
_, status, ru = os.wait4(pid, 0)
wall = time.perf_counter() - start
if os.waitstatus_to_exitcode(status):
    sys.exit(1)
print(f"{wall:.3f} {ru.ru_maxrss} {ru.ru_utime + ru.ru_stime:.2f}")' "${cmd[@]}" 2>"$tmp/stderr" || return 1
  fi
}

shown=""
for arg in "${cmd[@]}"; do [[ $arg == *[[:space:]]* ]] && shown+="\"$arg\" " || shown+="$arg "; done
echo "cold.sh: ${shown% }" >&2
if ! first=$(timed); then
  echo "cold.sh: the command failed: $(tail -n 1 "$tmp/stderr")" >&2; exit 1
fi
echo "first run (not counted): ${first%% *} s" >&2
: >"$tmp/runs"
for ((i = 1; i <= runs; i++)); do
  if ! line=$(timed); then
    echo "cold.sh: run $i failed: $(tail -n 1 "$tmp/stderr")" >&2; exit 1
  fi
  read -r wall rss cpu <<<"$line"
  echo "run $i/$runs: $wall s wall, $cpu s CPU, $((rss / 1024)) MB peak" >&2
  echo "$line" >>"$tmp/runs"
done

median() { sort -n | awk '{ v[NR] = $1 } END { printf "%.3f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo "cold: ${shown% }"
echo "runs: $runs"
printf 'wall s: min %.3f  median %s  max %.3f\n' "$(cut -d' ' -f1 "$tmp/runs" | sort -n | head -n 1)" \
  "$(cut -d' ' -f1 "$tmp/runs" | median)" "$(cut -d' ' -f1 "$tmp/runs" | sort -n | tail -n 1)"
printf 'cpu s: median %s\n' "$(cut -d' ' -f3 "$tmp/runs" | median)"
printf 'max RSS: %.1f MB\n' "$(cut -d' ' -f2 "$tmp/runs" | sort -n | tail -n 1 | awk '{ print $1 / 1024 }')"
