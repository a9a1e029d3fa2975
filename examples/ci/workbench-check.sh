#!/usr/bin/env bash
# Knowledge CI for a repository of fragment files: build a throwaway workspace from the files and run
# `workbench check` against the committed baseline. .pre-commit-config.yaml and knowledge-ci.yml call it;
# copy it to ci/workbench-check.sh in your repository.
#
#   ci/workbench-check.sh --staged            pre-commit: when the staged changes touch the knowledge files
#   ci/workbench-check.sh --changed BASE      CI: when the commits BASE..HEAD touch them (no BASE: always)
#   ci/workbench-check.sh                     always
#
# "Touch" counts every change git records: files added, edited, deleted, and renamed (a rename is its
# old path deleted and its new path added, so moving a fragment file out of fragments/ counts).
#
# Who imports the files and reads the report: $KB_PRINCIPAL, else $WORKBENCH_PRINCIPAL, else
# `default_principal:` of workbench.yaml. Use one that may write every fragment and sees every org
# (a service principal for CI), so that the report names every query and fragment; a principal of
# fewer orgs sees only its own, and the rest is counted, never named (the verdict is the same).
#
# Paths (defaults: the layout of sample_corpus/): KB_CONFIG=workbench.yaml, KB_GOLDEN=golden.yaml,
# KB_FRAGMENTS=fragments; the baseline is the golden file's name with .baseline.json.
# Exit status: workbench check's (0 passed, 1 a regression, 2 a user error), 0 when nothing relevant changed.
set -euo pipefail

config=${KB_CONFIG:-workbench.yaml}
golden=${KB_GOLDEN:-golden.yaml}
fragments=${KB_FRAGMENTS:-fragments}
fragments=${fragments%/}
baseline="${golden%.*}.baseline.json"

touches() {  # reads NUL-separated paths; true when one is a knowledge file
    local path
    while IFS= read -r -d '' path; do
        case "$path" in
            "$config" | "$golden" | "$baseline" | "$fragments"/*) return 0 ;;
        esac
    done
    return 1
}

case "${1:-}" in
    --staged)
        if git diff --cached --quiet; then
            : # nothing staged (pre-commit run --all-files, or by hand): check
        elif ! git diff --cached --name-only --no-renames -z | touches; then
            echo "workbench check: no knowledge file changed (${fragments}/, ${config}, ${golden}, ${baseline})"
            exit 0
        fi ;;
    --changed)
        base=${2:-}
        if [ -n "$base" ] && [ "${base//0/}" != "" ] && git cat-file -e "${base}^{commit}" 2>/dev/null \
                && ! git diff --name-only --no-renames -z "$base" "${3:-HEAD}" | touches; then
            echo "workbench check: no knowledge file changed since ${base}"
            exit 0
        fi ;;
    "") ;;
    *) echo "usage: $0 [--staged | --changed BASE [HEAD]]" >&2; exit 2 ;;
esac

as=()
if [ -n "${KB_PRINCIPAL:-}" ]; then
    as=(--as "$KB_PRINCIPAL")
fi
ws=$(mktemp -d)
trap 'rm -rf "$ws"' EXIT
workbench --workspace "$ws" init --config "$config" >/dev/null
workbench --workspace "$ws" ingest "$fragments" ${as[@]+"${as[@]}"}
workbench --workspace "$ws" check --golden "$golden" --baseline "$baseline" ${as[@]+"${as[@]}"}
