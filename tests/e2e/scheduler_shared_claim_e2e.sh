#!/usr/bin/env bash
# A ResourceClaim shared by three Pods: one allocation, three reservations, every Pod on the
# node of the device; releasing it needs all three Pods gone.
# Usage: scheduler_shared_claim_e2e.sh DRAPLANE SOURCE_DIR
set -euo pipefail
DRAPLANE=$1
# shellcheck source=tests/e2e/scheduler_lib.sh
source "$(dirname "$0")/scheduler_lib.sh"

step "control plane (draplane serve on its defaults: scheduler and controllers embedded)"
start_control_plane embedded
for n in 1 2 3; do
  node "nic-node-$n"
  k apply -f - >/dev/null <<EOF || fail "slice"
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: nic-node-$n-nic.example.com}
spec:
  driver: nic.example.com
  nodeName: nic-node-$n
  pool: {name: nic-node-$n, generation: 1, resourceSliceCount: 1}
  devices:
  - name: nic-0
    attributes:
      model: {string: cx7}
EOF
done
k apply -f - >/dev/null <<EOF || fail "class and claim"
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: nic.example.com}
spec:
  selectors:
  - cel: {expression: 'device.driver == "nic.example.com"'}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: training-net, namespace: default}
spec:
  devices:
    requests:
    - name: nic
      exactly: {deviceClassName: nic.example.com}
EOF

step "three pods share the claim"
for i in 1 2 3; do
  k apply -f - >/dev/null <<EOF || fail "pod"
apiVersion: v1
kind: Pod
metadata: {name: worker-$i}
spec:
  resourceClaims: [{name: net, resourceClaimName: training-net}]
  containers:
  - name: c
    image: registry.example.com/train:1
    resources: {claims: [{name: net}]}
EOF
done
for i in 1 2 3; do wait_until 60 "worker-$i bound" pod_bound worker-$i; done
node1=$(pod_node worker-1)
expect_eq "$(pod_node worker-2)" "$node1" "node of worker-2"
expect_eq "$(pod_node worker-3)" "$node1" "node of worker-3"
reserved=$(k get resourceclaim training-net -o jsonpath='{.status.reservedFor[*].name}')
for i in 1 2 3; do expect_contains "$reserved" "worker-$i" "reservedFor"; done
devices=$(k get resourceclaim training-net -o jsonpath='{.status.allocation.devices.results[*].pool}')
expect_eq "$devices" "$node1" "pool of the shared NIC"

step "the claim stays allocated until the last pod is gone"
k delete pod worker-1 worker-2 --wait=true >/dev/null
wait_until 60 "two reservations released" \
  bash -c "[ \"\$(kubectl --kubeconfig $admin_kubeconfig get resourceclaim training-net -o jsonpath='{.status.reservedFor[*].name}')\" = worker-3 ]"
allocated=$(k get resourceclaim training-net -o jsonpath='{.status.allocation.devices.results[*].device}')
expect_eq "$allocated" nic-0 "allocation while worker-3 runs"
k delete pod worker-3 --wait=true >/dev/null
wait_until 60 "claim deallocated" \
  bash -c "[ -z \"\$(kubectl --kubeconfig $admin_kubeconfig get resourceclaim training-net -o jsonpath='{.status.allocation}')\" ]"
finalizers=$(k get resourceclaim training-net -o jsonpath='{.metadata.finalizers[*]}')
expect_eq "$finalizers" "" "finalizers after deallocation"
echo "PASS"
