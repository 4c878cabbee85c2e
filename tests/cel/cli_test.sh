#!/usr/bin/env bash
# End-to-end checks of `draplane cel eval`, `draplane cel select` and the CEL part of
# `draplane lint`: exact output and exit codes.
# Usage: cli_test.sh DRAPLANE (run from the repository root)
set -uo pipefail
draplane=$1
failures=0

# expect NAME WANT_RC WANT_STDOUT -- ARGS...
expect() {
  local name=$1 want_rc=$2 want_out=$3
  shift 4
  local out rc
  out=$("$draplane" "$@" 2>/dev/null)
  rc=$?
  if [ "$rc" != "$want_rc" ] || [ "$out" != "$want_out" ]; then
    echo "FAIL $name: exit $rc (want $want_rc)"
    diff <(printf '%s\n' "$want_out") <(printf '%s\n' "$out")
    failures=$((failures + 1))
  else
    echo "ok   $name"
  fi
}

expect eval-arith 0 '[3, 6]' -- cel eval '[1, 2].map(x, x * y)' --var 'y=3'
expect eval-error 1 'error: division by zero' -- cel eval '1 / 0'
expect eval-quantity 0 'quantity("1536Mi")' -- cel eval 'quantity("1.5Gi")'
expect eval-device 0 'true' -- cel eval \
  'device.attributes["gpu.example.com"].model == "H100" && device.capacity["gpu.example.com"].memory.isGreaterThan(quantity("40Gi"))' \
  --device-json '{"driver":"gpu.example.com","name":"gpu-0","attributes":{"model":{"string":"H100"}},"capacity":{"memory":{"value":"80Gi"}}}'
expect eval-device-value 0 '{"gpu.example.com": {"v": semver("1.2.3")}}' -- cel eval \
  'device.attributes' --device-json '{"driver":"gpu.example.com","name":"d","attributes":{"v":{"version":"1.2.3"}}}'
expect eval-missing-key 1 'error: no such key: foo. consider using CEL optional chaining (.? followed by orValue()) or guarding the check with has() for optional fields' -- cel eval 'device.attributes["d"].foo' \
  --device-json '{"name":"d"}'
expect eval-usage 2 '' -- cel eval 'x' --var 'novalue'

expect select-mig 0 'gpu.nvidia.com/gpu-node-2/gpu-0  no
gpu.nvidia.com/gpu-node-2/gpu-0-mig-1g-5gb-0  match
gpu.nvidia.com/gpu-node-2/gpu-0-mig-1g-5gb-1  match
gpu.nvidia.com/gpu-node-2/gpu-0-mig-2g-10gb-0  no' -- cel select --slices examples/resourceslices-a100-mig.yaml \
  'device.attributes["gpu.nvidia.com"].?profile.orValue("") == "1g.5gb"'
expect select-error 1 'gpu.nvidia.com/gpu-node-1/gpu-0  error: no such key: nope. consider using CEL optional chaining (.? followed by orValue()) or guarding the check with has() for optional fields
gpu.nvidia.com/gpu-node-1/gpu-1  error: no such key: nope. consider using CEL optional chaining (.? followed by orValue()) or guarding the check with has() for optional fields' -- \
  cel select --slices examples/resourceslice-h100.yaml 'device.attributes["gpu.nvidia.com"].nope'
expect select-compile-error 1 'error: must evaluate to bool or the unknown type, not int' -- \
  cel select --slices examples/resourceslice-h100.yaml '1'

# List attributes read as the release says (KEP-5491), whatever DRAListTypeAttributes says.
lists=tests/cel/cli/list-attributes.yaml
expect select-lists-136 0 'dra.example.com/node-1/device-1  match
dra.example.com/node-1/device-2  match' -- \
  cel select --slices "$lists" 'device.attributes["dra.example.com"].numa.includes(1)'
expect select-lists-137-first-element 0 'dra.example.com/node-1/device-1  no
dra.example.com/node-1/device-2  match' -- \
  cel select --kubernetes-version 1.37 --slices "$lists" \
  'device.attributes["dra.example.com"].numa.includes(1)'
expect select-lists-137-as-list 0 'dra.example.com/node-1/device-1  match
dra.example.com/node-1/device-2  match' -- \
  cel select --kubernetes-version 1.37 --slices "$lists" \
  'device.attributes["dra.example.com"].numa.asList().includes(1)'
expect select-lists-135 1 'dra.example.com/node-1/device-1  error: attribute numa: unsupported attribute value
dra.example.com/node-1/device-2  error: attribute numa: unsupported attribute value' -- \
  cel select --kubernetes-version 1.35 --slices "$lists" 'true'
expect select-bad-version 2 '' -- cel select --kubernetes-version 1.40 --slices "$lists" 'true'
numa='{"driver":"d","name":"x","attributes":{"numa":{"ints":[3,4]}}}'
expect eval-list-136 0 '[3, 4]' -- cel eval 'device.attributes["d"].numa' --device-json "$numa"
expect eval-list-137 0 '3' -- cel eval 'device.attributes["d"].numa' --device-json "$numa" \
  --kubernetes-version 1.37
expect eval-as-list-137 0 '[3, 4]' -- cel eval 'device.attributes["d"].numa.asList()' \
  --device-json "$numa" --kubernetes-version 1.37

expect lint-selectors 1 'tests/cel/cli/selectors.yaml:1: DeviceClass/gpu: spec.selectors[2].cel.expression: Forbidden: too complex, exceeds cost limit
tests/cel/cli/selectors.yaml:1: DeviceClass/gpu: spec.selectors[3].cel.expression: Invalid value: "device.drivr == \"x\"": compilation failed: ERROR: <input>:1:7: undefined field '"'"'drivr'"'"'
 | device.drivr == "x"
 | ......^' -- lint tests/cel/cli/selectors.yaml

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
