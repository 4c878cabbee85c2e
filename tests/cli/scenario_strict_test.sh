#!/usr/bin/env bash
# `draplane scenario run` refuses what its format and the manifests' kinds do not have: a
# misspelled `allocatedDevices` or claim field would otherwise make a scenario pass for the wrong
# reason.
# Usage: scenario_strict_test.sh DRAPLANE SCENARIO (a scenario that passes as written)
set -euo pipefail
draplane=$1
scenario=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

expect_refused() {  # expect_refused FILE MESSAGE
  local status=0
  "$draplane" scenario run "$1" > "$work/out" 2>&1 || status=$?
  [ "$status" = 1 ] || { cat "$work/out" >&2; fail "$1: exit $status, want 1"; }
  grep -qF "$2" "$work/out" || { cat "$work/out" >&2; fail "$1: no '$2'"; }
}

"$draplane" scenario run "$scenario" > "$work/out" 2>&1 || { cat "$work/out"; fail "as written"; }

sed 's/^compare: exact$/allocatedDevice: []\ncompare: exact/' "$scenario" > "$work/top.yaml"
expect_refused "$work/top.yaml" 'unknown field "allocatedDevice"'

sed 's/^          deviceClassName: gpu$/          deviceClassName: gpu\n          cuont: 2/' \
  "$scenario" > "$work/claim.yaml"
expect_refused "$work/claim.yaml" \
  'claims[0]: unknown field "spec.devices.requests[0].exactly.cuont"'

sed 's/^  outcome: success$/  outcome: success\n  reslts: []/' "$scenario" > "$work/expect.yaml"
expect_refused "$work/expect.yaml" 'unknown field "expect.reslts"'
echo PASS
