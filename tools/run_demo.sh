#!/usr/bin/env bash
# `make run`: what draplane does on its embedded defaults. For now that is the manifest tooling:
# `draplane lint` validates the DRA objects of examples/ the way the Kubernetes API server would,
# shows what a rejected manifest looks like, and `draplane convert` reads manifests through the
# object model and writes them back losslessly.
#
# Usage: run_demo.sh DRAPLANE_BINARY [PATH...]
#   With PATHs, lint and convert those instead of examples/.
set -euo pipefail
cd "$(dirname "$0")/.."
draplane=$1
shift
paths=("$@")
[[ ${#paths[@]} -eq 0 ]] && paths=(examples/)

section() { printf '\n== %s\n' "$*"; }

section "draplane lint ${paths[*]}"
echo "Every DeviceClass, ResourceSlice, ResourceClaim, ResourceClaimTemplate and DeviceTaintRule"
echo "is decoded and validated with the API server's rules; no output and exit 0 mean all valid."
"$draplane" lint "${paths[@]}"

if [[ $# -eq 0 ]]; then
  section "draplane lint on manifests with mistakes (from tests/lint/invalid/)"
  echo "One line per problem: FILE:DOC: KIND/NAME: FIELD.PATH: REASON, exit code 1."
  set +e
  "$draplane" lint tests/lint/invalid/claim-count-with-all.yaml \
    tests/lint/invalid/template-constraint-unknown-request.yaml \
    tests/lint/invalid/capacity-range-default-off-step.yaml \
    tests/lint/invalid/taint-rule-effect-evict.yaml \
    tests/lint/invalid/update-slice-node-changed.yaml \
    --old tests/lint/invalid/update-slice-node-changed.old.yaml
  code=$?
  set -e
  echo "(exit code $code)"
  [[ $code -eq 1 ]] || { echo "unexpected exit code" >&2; exit 1; }

  section "draplane convert -o json examples/claimtemplate-h100-else-a100.yaml"
  echo "The prioritized fallback template, read as YAML and written back as JSON:"
  "$draplane" convert -o json examples/claimtemplate-h100-else-a100.yaml
fi

section "draplane convert -o yaml ${paths[*]} (first 40 lines of the List)"
# Captured first: cutting a pipe short would kill convert with SIGPIPE under pipefail.
converted=$("$draplane" convert -o yaml "${paths[@]}")
head -n 40 <<<"$converted"
echo "... ($(wc -l <<<"$converted") lines in all)"
