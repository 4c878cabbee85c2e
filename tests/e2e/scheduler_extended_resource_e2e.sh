#!/usr/bin/env bash
# Extended resources backed by DRA (KEP-5004): a container asking for `example.com/gpu: 1` is
# served through a DeviceClass with extendedResourceName on a node without a device plugin (the
# scheduler creates the special claim and records it in the Pod status), while a node whose
# device plugin advertises example.com/gpu keeps serving it the old way.
# Usage: scheduler_extended_resource_e2e.sh DRAPLANE SOURCE_DIR
set -euo pipefail
DRAPLANE=$1
SOURCE=$2
# shellcheck source=tests/e2e/scheduler_lib.sh
source "$(dirname "$0")/scheduler_lib.sh"

step "control plane: a DRA node and a legacy device-plugin node"
start_control_plane
node dra-node '{"migration":"dra"}'
node legacy-node '{"migration":"legacy"}' '"example.com/gpu":"1"'
k apply -f "$SOURCE/examples/deviceclasses.yaml" >/dev/null || fail "device classes"
k apply -f - >/dev/null <<EOF || fail "slice"
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: dra-node-gpu.nvidia.com}
spec:
  driver: gpu.nvidia.com
  nodeName: dra-node
  pool: {name: dra-node, generation: 1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    attributes:
      type: {string: gpu}
      productName: {string: "NVIDIA L4"}
EOF

gpu_pod() {  # NAME MIGRATION
  k apply -f - >/dev/null <<EOF || fail "pod $1"
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  nodeSelector: {migration: $2}
  containers:
  - name: cuda
    image: registry.example.com/cuda:12
    resources:
      limits: {example.com/gpu: "1"}
      requests: {example.com/gpu: "1"}
EOF
}

step "one pod per node kind"
gpu_pod via-dra dra
gpu_pod via-plugin legacy
wait_until 60 "via-dra bound" pod_bound via-dra
wait_until 60 "via-plugin bound" pod_bound via-plugin
expect_eq "$(pod_node via-dra)" dra-node
expect_eq "$(pod_node via-plugin)" legacy-node
wait_until 60 "extended resource claim status" \
  bash -c "[ -n \"\$(kubectl --kubeconfig $admin_kubeconfig get pod via-dra -o jsonpath='{.status.extendedResourceClaimStatus.resourceClaimName}')\" ]"
claim=$(k get pod via-dra -o jsonpath='{.status.extendedResourceClaimStatus.resourceClaimName}')
expect_contains "$claim" "via-dra-extended-resources-"
mapping=$(k get pod via-dra -o jsonpath='{.status.extendedResourceClaimStatus.requestMappings[0].requestName}')
expect_eq "$mapping" container-0-request-0 "request mapping"
device=$(k get resourceclaim "$claim" -o jsonpath='{.status.allocation.devices.results[0].device}')
expect_eq "$device" gpu-0 "device of the special claim"
owner=$(k get resourceclaim "$claim" -o jsonpath='{.metadata.ownerReferences[0].name}')
expect_eq "$owner" via-dra "owner of the special claim"
plugin_claim=$(k get pod via-plugin -o jsonpath='{.status.extendedResourceClaimStatus}')
expect_eq "$plugin_claim" "" "the device-plugin pod has no special claim"

step "the capacity of each path is respected"
gpu_pod second-dra dra
gpu_pod second-plugin legacy
wait_until 60 "second-dra pending" has_pending_message second-dra
wait_until 60 "second-plugin pending" has_pending_message second-plugin
expect_contains "$(pod_pending_message second-plugin)" "Insufficient example.com/gpu"
expect_contains "$(pod_pending_message second-dra)" "already allocated"

step "deleting the DRA pod frees its device and deletes its claim"
k delete pod via-dra --wait=true >/dev/null
wait_until 60 "special claim deleted" bash -c "! kubectl --kubeconfig $admin_kubeconfig get resourceclaim $claim"
wait_until 60 "second-dra bound" pod_bound second-dra
echo "PASS"
