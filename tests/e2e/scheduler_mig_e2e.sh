#!/usr/bin/env bash
# Partitionable devices: the MIG pair claim from examples/ (a 1g.5gb and a 2g.10gb partition on
# the same physical GPU, matchAttribute on parentUUID) on the A100 of
# examples/resourceslices-a100-mig.yaml, whose partitions share one counter set. A second pair
# cannot fit (only one 2g.10gb partition exists) and says so.
# Usage: scheduler_mig_e2e.sh DRAPLANE SOURCE_DIR
set -euo pipefail
DRAPLANE=$1
SOURCE=$2
# shellcheck source=tests/e2e/scheduler_lib.sh
source "$(dirname "$0")/scheduler_lib.sh"

mig_pod() {  # NAME CLAIM
  k apply -f - >/dev/null <<EOF || fail "pod $1"
apiVersion: v1
kind: Pod
metadata: {name: $1, namespace: team-vision}
spec:
  resourceClaims: [{name: mig, resourceClaimName: $2}]
  containers:
  - name: infer
    image: registry.example.com/vision:2
    resources: {claims: [{name: mig}]}
EOF
}

step "control plane"
start_control_plane
node gpu-node-2 '{"gpu":"a100"}'
k create namespace team-vision >/dev/null
k apply -f "$SOURCE/examples/deviceclasses.yaml" >/dev/null || fail "classes"
k apply -f "$SOURCE/examples/resourceslices-a100-mig.yaml" >/dev/null || fail "slices"
k apply -f "$SOURCE/examples/claim-mig-pair.yaml" >/dev/null || fail "claim"

step "the pair lands on one GPU"
mig_pod vision-1 mig-pair
wait_until 60 "vision-1 bound" pod_bound -n team-vision vision-1
expect_eq "$(pod_node -n team-vision vision-1)" gpu-node-2
results=$(k -n team-vision get resourceclaim mig-pair -o jsonpath='{range .status.allocation.devices.results[*]}{.request}={.device} {end}')
expect_contains "$results" "small=gpu-0-mig-1g-5gb-0"
expect_contains "$results" "medium=gpu-0-mig-2g-10gb-0"

step "a second pair does not fit and the reason names the request"
k get -n team-vision resourceclaim mig-pair -o json |
  sed -e 's/"name": "mig-pair"/"name": "mig-pair-2"/' |
  k create -f - >/dev/null 2>&1 || true
k -n team-vision get resourceclaim mig-pair-2 >/dev/null 2>&1 ||
  sed -e 's/name: mig-pair$/name: mig-pair-2/' "$SOURCE/examples/claim-mig-pair.yaml" | k apply -f - >/dev/null
mig_pod vision-2 mig-pair-2
wait_until 60 "vision-2 pending" has_pending_message -n team-vision vision-2
message=$(pod_pending_message -n team-vision vision-2)
expect_contains "$message" "0/1 nodes are available"
expect_contains "$message" "request medium"
echo "PASS"
