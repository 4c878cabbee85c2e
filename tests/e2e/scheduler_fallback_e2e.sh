#!/usr/bin/env bash
# Prioritized fallback end to end: the H100-else-A100 template from examples/ on a cluster with
# two single-H100 nodes, two nodes with a pair of A100s and a CPU node. The first Pods get H100s,
# later ones fall back to A100 pairs, the next one stays Pending with an explanation naming both
# alternatives; deleting a Pod frees its device and the Pending Pod schedules. No device is ever
# held by two claims.
# Usage: scheduler_fallback_e2e.sh DRAPLANE SOURCE_DIR
set -euo pipefail
DRAPLANE=$1
SOURCE=$2
# shellcheck source=tests/e2e/scheduler_lib.sh
source "$(dirname "$0")/scheduler_lib.sh"

gpu_slice() {  # NODE PRODUCT COUNT MEMORY
  local devices="" i
  for i in $(seq 0 $(($3 - 1))); do
    devices+="
  - name: gpu-$i
    attributes:
      type: {string: gpu}
      productName: {string: \"$2\"}
      uuid: {string: GPU-$1-$i}
    capacity:
      memory: {value: $4}"
  done
  k apply -f - >/dev/null <<EOF || fail "slice for $1"
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: $1-gpu.nvidia.com}
spec:
  driver: gpu.nvidia.com
  nodeName: $1
  pool: {name: $1, generation: 1, resourceSliceCount: 1}
  devices:$devices
EOF
}

llm_pod() {  # NAME
  k apply -f - >/dev/null <<EOF || fail "pod $1"
apiVersion: v1
kind: Pod
metadata: {name: $1, namespace: team-llm}
spec:
  resourceClaims:
  - {name: gpus, resourceClaimTemplateName: h100-else-a100}
  containers:
  - name: server
    image: registry.example.com/llm/server:1.4.2
    resources: {claims: [{name: gpus}]}
EOF
}

# The subrequest each pod's claim got ("gpus/h100" or "gpus/a100-pair").
chosen() {
  local claim
  claim=$(k -n team-llm get pod "$1" -o jsonpath='{.status.resourceClaimStatuses[0].resourceClaimName}')
  k -n team-llm get resourceclaim "$claim" -o jsonpath='{.status.allocation.devices.results[*].request}'
}

step "control plane (draplane serve on its defaults: scheduler and controllers embedded)"
start_control_plane embedded
node gpu-h100-1 '{"pool":"h100"}'
node gpu-h100-2 '{"pool":"h100"}'
node gpu-a100-1 '{"pool":"a100"}'
node gpu-a100-2 '{"pool":"a100"}'
node cpu-1 '{"pool":"cpu"}'
gpu_slice gpu-h100-1 "NVIDIA H100 80GB HBM3" 1 80Gi
gpu_slice gpu-h100-2 "NVIDIA H100 80GB HBM3" 1 80Gi
gpu_slice gpu-a100-1 "NVIDIA A100-SXM4-40GB" 2 40Gi
gpu_slice gpu-a100-2 "NVIDIA A100-SXM4-40GB" 2 40Gi
k create namespace team-llm >/dev/null
k apply -f "$SOURCE/examples/deviceclasses.yaml" >/dev/null || fail "device classes"
k apply -f "$SOURCE/examples/claimtemplate-h100-else-a100.yaml" >/dev/null || fail "template"

step "four pods: two H100s, then two A100 pairs"
for i in 1 2 3 4; do llm_pod "llm-$i"; done
for i in 1 2 3 4; do wait_until 120 "llm-$i bound" pod_bound -n team-llm "llm-$i"; done
h100=0
pairs=0
for i in 1 2 3 4; do
  case "$(chosen "llm-$i")" in
    gpus/h100) h100=$((h100 + 1)); expect_contains "$(pod_node -n team-llm "llm-$i")" gpu-h100 ;;
    "gpus/a100-pair gpus/a100-pair") pairs=$((pairs + 1)); expect_contains "$(pod_node -n team-llm "llm-$i")" gpu-a100 ;;
    *) fail "llm-$i got $(chosen "llm-$i")" ;;
  esac
done
expect_eq "$h100" 2 "pods on an H100"
expect_eq "$pairs" 2 "pods on an A100 pair"

step "a fifth pod stays Pending and says why"
llm_pod llm-5
wait_until 60 "llm-5 pending message" has_pending_message -n team-llm llm-5
message=$(pod_pending_message -n team-llm llm-5)
expect_contains "$message" "0/5 nodes are available: "
expect_contains "$message" "subrequest h100"
expect_contains "$message" "subrequest a100-pair"
expect_contains "$message" "1 node: no devices offered to the node"
events=$(k -n team-llm get events -o jsonpath='{range .items[*]}{.involvedObject.name} {.reason}{"\n"}{end}')
expect_contains "$events" "llm-5 FailedScheduling" "events"
explain=$("$DRAPLANE" explain pod team-llm/llm-5 --kubeconfig "$admin_kubeconfig")
expect_contains "$explain" "Pod team-llm/llm-5: Pending"
expect_contains "$explain" "gpu-h100-1: DynamicResources"
expect_contains "$explain" "already-allocated"

step "deleting an H100 pod lets the pending pod schedule on the H100"
for i in 1 2 3 4; do
  if [ "$(chosen "llm-$i")" = gpus/h100 ]; then victim=llm-$i; break; fi
done
freed=$(pod_node -n team-llm "$victim")
k -n team-llm delete pod "$victim" --wait=false >/dev/null
wait_until 120 "llm-5 bound" pod_bound -n team-llm llm-5
expect_eq "$(pod_node -n team-llm llm-5)" "$freed" "node of llm-5"
expect_eq "$(chosen llm-5)" gpus/h100 "subrequest of llm-5"

step "no device is allocated twice"
devices=$(k get resourceclaims -A -o jsonpath='{range .items[*]}{range .status.allocation.devices.results[*]}{.pool}/{.device}{"\n"}{end}{end}')
dups=$(sort <<<"$devices" | uniq -d)
[ -z "$dups" ] || fail "devices allocated twice: $dups"
echo "PASS"
