#!/usr/bin/env bash
# `draplane allocate` reads its manifests as kubectl writes them: a `kubectl get -o json` List
# (streamed item by item, `kind: List` after the items as kubectl sorts keys), a directory of
# manifests, standard input; a broken or invalid item or truncated JSON is an error (exit 2)
# naming the file and the item, and so is a --node the cluster does not have.
# Usage: manifest_inputs_cli.sh DRAPLANE
set -euo pipefail
draplane=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

slice() {  # slice NODE
  cat <<JSON
{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "$1-gpus"},
 "spec": {"driver": "gpu.example.com", "nodeName": "$1",
          "pool": {"name": "$1", "generation": 1, "resourceSliceCount": 1},
          "devices": [{"name": "gpu-0"}, {"name": "gpu-1"}]}}
JSON
}
class='{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
 "spec": {"selectors": [{"cel": {"expression": "device.driver == \"gpu.example.com\""}}]}}'
{
  echo '{"apiVersion": "v1", "items": ['
  echo "$class,"
  slice node-1
  echo ','
  slice node-2
  echo '], "kind": "List", "metadata": {"resourceVersion": ""}}'
} > "$work/cluster.json"
cat > "$work/claim.yaml" <<'YAML'
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: two, namespace: default}
spec:
  devices:
    requests:
    - {name: gpus, exactly: {deviceClassName: gpu, allocationMode: ExactCount, count: 2}}
YAML

fail() { echo "FAIL: $*" >&2; exit 1; }
run() {  # run EXPECTED_EXIT ARGS...: prints the output
  local expected=$1 status=0
  shift
  "$draplane" allocate "$@" > "$work/out" 2>&1 < "${stdin:-/dev/null}" || status=$?
  [ "$status" = "$expected" ] || { cat "$work/out" >&2; fail "exit $status, want $expected: $*"; }
  cat "$work/out"
}

out=$(run 0 --cluster "$work/cluster.json" --claim "$work/claim.yaml" --all-nodes)
grep -qx "node node-1: allocated" <<< "$out" || fail "JSON List: $out"
grep -qx "node node-2: allocated" <<< "$out" || fail "JSON List, second node: $out"

mkdir "$work/dir"
cp "$work/cluster.json" "$work/dir/a.json"
out=$(stdin="$work/claim.yaml" run 0 --cluster "$work/dir" --claim - --node node-2)
grep -qx "node node-2: allocated" <<< "$out" || fail "directory and stdin: $out"

# The second item is not an object the model knows how to read: the error names file and item.
sed 's/"generation": 1/"generation": "one"/' "$work/cluster.json" > "$work/bad.json"
out=$(run 2 --cluster "$work/bad.json" --claim "$work/claim.yaml" --node node-1)
grep -qF "$work/bad.json:" <<< "$out" || fail "bad item, no file: $out"
grep -qF "items[1]" <<< "$out" || fail "bad item, no position: $out"

# Objects are validated as the API server validates them on create: a claim no server would
# store is named with its field and reason, never answered "unsatisfiable"; so is a dumped slice
# listing a device twice.
sed 's/count: 2}/count: -2}/' "$work/claim.yaml" > "$work/negative.yaml"
out=$(run 2 --cluster "$work/cluster.json" --claim "$work/negative.yaml" --node node-1)
grep -qF "$work/negative.yaml:1: ResourceClaim/two: spec.devices.requests[0].exactly.count: Invalid value: -2: must be greater than zero" \
  <<< "$out" || fail "invalid claim: $out"
sed 's/{"name": "gpu-1"}/{"name": "gpu-0"}/' "$work/cluster.json" > "$work/twice.json"
out=$(run 2 --cluster "$work/twice.json" --claim "$work/claim.yaml" --node node-1)
grep -qF 'items[1]: ResourceSlice/node-1-gpus: spec.devices[1]: Duplicate value: "gpu-0"' \
  <<< "$out" || fail "invalid slice: $out"

head -c 300 "$work/cluster.json" > "$work/cut.json"
out=$(run 2 --cluster "$work/cut.json" --claim "$work/claim.yaml" --node node-1)
grep -qF "$work/cut.json:" <<< "$out" || fail "truncated JSON, no file: $out"
# A --node the dump does not know (a typo, where Nodes are in the dump) is named as such, not
# explained as a node without devices.
mkdir "$work/with-node"
cp "$work/cluster.json" "$work/with-node/cluster.json"
echo '{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"}}' > "$work/with-node/node.json"
out=$(run 2 --cluster "$work/with-node" --claim "$work/claim.yaml" --node node-9)
grep -qF 'node "node-9" is not in the cluster' <<< "$out" || fail "unknown --node: $out"
out=$(run 0 --cluster "$work/with-node" --claim "$work/claim.yaml" --node node-2)
grep -qx "node node-2: allocated" <<< "$out" || fail "node known from its slice: $out"

# A DeviceTaintRule in the dump taints the devices it selects, as the scheduler sees them, even
# listed after the slices (the directory's files are read in name order): node-1's gpu-0 is
# NoSchedule, so node-1 has one device left; effect None (a dry run) hides nothing.
mkdir "$work/tainted"
cp "$work/cluster.json" "$work/tainted/a-cluster.json"
cat > "$work/tainted/b-rule.yaml" <<'YAML'
apiVersion: resource.k8s.io/v1
kind: DeviceTaintRule
metadata: {name: drain-node-1-gpu-0}
spec:
  deviceSelector: {driver: gpu.example.com, pool: node-1, device: gpu-0}
  taint: {key: example.com/firmware, effect: NoSchedule}
YAML
out=$(run 0 --cluster "$work/tainted" --claim "$work/claim.yaml" --all-nodes --explain \
  --kubernetes-version 1.37)
grep -qx "node node-1: unsatisfiable" <<< "$out" || fail "tainted device allocated: $out"
grep -q "gpu-0.*taint" <<< "$out" || fail "taint not named: $out"
grep -qx "node node-2: allocated" <<< "$out" || fail "untainted node: $out"
sed -i 's/effect: NoSchedule/effect: None/' "$work/tainted/b-rule.yaml"
out=$(run 0 --cluster "$work/tainted" --claim "$work/claim.yaml" --node node-1 \
  --kubernetes-version 1.37)
grep -qx "node node-1: allocated" <<< "$out" || fail "effect None hid a device: $out"
echo "PASS"
