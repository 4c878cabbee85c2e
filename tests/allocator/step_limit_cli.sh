#!/usr/bin/env bash
# `draplane allocate --step-limit`: a search that needs more steps than allowed stops with an error
# (exit 1) naming the limit; with enough steps, or none set, the same claim gets its answer.
# Usage: step_limit_cli.sh DRAPLANE
set -euo pipefail
draplane=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Sixteen devices over four numa values: five distinct values cannot be found, and the search only
# learns that by trying.
{
  cat <<'YAML'
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu}
spec:
  selectors: [{cel: {expression: 'device.driver == "gpu.example.com"'}}]
---
apiVersion: v1
kind: Node
metadata: {name: node-1}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: node-1-gpus}
spec:
  driver: gpu.example.com
  pool: {name: node-1, generation: 1, resourceSliceCount: 1}
  nodeName: node-1
  devices:
YAML
  for d in $(seq 0 15); do
    echo "  - {name: gpu-$d, attributes: {numa: {int: $((d % 4))}}}"
  done
} > "$work/cluster.yaml"
claim() {
  cat <<YAML
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: spread, namespace: default}
spec:
  devices:
    requests:
    - {name: gpus, exactly: {deviceClassName: gpu, allocationMode: ExactCount, count: $1}}
    constraints: [{distinctAttribute: gpu.example.com/numa}]
YAML
}
claim 5 > "$work/five.yaml"
claim 4 > "$work/four.yaml"

fail() { echo "FAIL: $*" >&2; exit 1; }
run() {  # run EXPECTED_EXIT ARGS...: prints the output
  local expected=$1 status=0
  shift
  "$draplane" allocate --cluster "$work/cluster.yaml" --node node-1 "$@" > "$work/out" 2>&1 ||
    status=$?
  [ "$status" = "$expected" ] || { cat "$work/out" >&2; fail "exit $status, want $expected: $*"; }
  cat "$work/out"
}

out=$(run 1 --claim "$work/five.yaml" --step-limit 3)
grep -qF "node node-1: error: allocation search stopped after 3 steps (the allocation step limit)" \
  <<< "$out" || fail "no step-limit error: $out"
out=$(run 1 --claim "$work/five.yaml")
grep -qx "node node-1: unsatisfiable" <<< "$out" || fail "default limit: $out"
out=$(run 1 --claim "$work/five.yaml" --step-limit 0)
grep -qx "node node-1: unsatisfiable" <<< "$out" || fail "no limit: $out"
out=$(run 0 --claim "$work/four.yaml" --step-limit 1000)
grep -qx "node node-1: allocated" <<< "$out" || fail "four distinct: $out"
out=$(run 2 --claim "$work/four.yaml" --step-limit -1)
grep -q "step-limit" <<< "$out" || fail "negative limit not rejected: $out"
echo "PASS"
