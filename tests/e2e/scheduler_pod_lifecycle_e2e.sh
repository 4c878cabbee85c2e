#!/usr/bin/env bash
# How Pods holding devices end in `draplane serve`, the ways users end them:
# - `kubectl delete --cascade=foreground` of a Pod with a generated claim: the claim (a blocking
#   dependent) waits for the Pod to stop, the Pod's foregroundDeletion finalizer for the claim;
#   the kubelet player writes the stopped Pod Failed, the claim is released and goes, then the
#   Pod (they held each other for good before);
# - the Pod garbage collector (controllers/podgc): a node removed from the cluster (`kubectl
#   delete node`, as a scale-down does) leaves a running Pod with a device; once the node has been
#   gone for the quarantine (40 s) the Pod is written Failed and force-deleted, and its generated
#   claim goes with it, freeing the device. Terminated Pods over --terminated-pod-gc-threshold go
#   oldest first. The deletions are counted in /metrics.
# Usage: scheduler_pod_lifecycle_e2e.sh DRAPLANE SOURCE_DIR
set -euo pipefail
DRAPLANE=$1
# shellcheck source=tests/e2e/scheduler_lib.sh
source "$(dirname "$0")/scheduler_lib.sh"

step "a --terminated-pod-gc-threshold that is not a number is refused"
if timeout 60 "$DRAPLANE" serve --listen 127.0.0.1:0 --data-dir "$sched_work/refused" \
  --terminated-pod-gc-threshold many >/dev/null 2>"$sched_work/refused.err"; then
  fail "serve accepted --terminated-pod-gc-threshold many"
fi
expect_contains "$(cat "$sched_work/refused.err")" "--terminated-pod-gc-threshold"

step "control plane (embedded scheduler and controllers, at most one terminated Pod kept)"
serve_extra=(--terminated-pod-gc-threshold 1)
start_control_plane embedded
for n in 1 2; do
  node "gpu-$n"
  uid=$(k get node "gpu-$n" -o jsonpath='{.metadata.uid}')
  # Owned by its Node, as a kubelet plugin publishes it: the slice goes with the node.
  k apply -f - >/dev/null <<EOF || fail "slice"
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  name: gpu-$n-gpu.example.com
  ownerReferences: [{apiVersion: v1, kind: Node, name: gpu-$n, uid: "$uid"}]
spec:
  driver: gpu.example.com
  nodeName: gpu-$n
  pool: {name: gpu-$n, generation: 1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
EOF
done
k apply -f - >/dev/null <<EOF || fail "class and template"
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec:
  selectors:
  - cel: {expression: 'device.driver == "gpu.example.com"'}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one-device, namespace: default}
spec:
  spec:
    devices:
      requests:
      - name: dev
        exactly: {deviceClassName: gpu.example.com}
EOF

step "a trainer and a notebook run with a GPU each"
template_pod default trainer >/dev/null || fail "trainer"
template_pod default notebook >/dev/null || fail "notebook"
pod_running() { [ "$(k get pod "$1" -o jsonpath='{.status.phase}')" = Running ]; }
pod_gone() { ! k get pod "$1" >/dev/null 2>&1; }
wait_until 120 "the trainer to run" pod_running trainer
wait_until 120 "the notebook to run" pod_running notebook

step "the notebook is deleted in the foreground: its claim first, then the Pod"
notebook_claim=$(k get pod notebook -o jsonpath='{.status.resourceClaimStatuses[0].resourceClaimName}')
[ -n "$notebook_claim" ] || fail "the notebook has no generated claim"
k delete pod notebook --cascade=foreground --wait=false >/dev/null || fail "delete notebook"
wait_until 60 "the foreground deletion of the notebook to finish" pod_gone notebook
claim_gone() { ! k get resourceclaim "$1" >/dev/null 2>&1; }
wait_until 60 "the notebook's claim to be deleted" claim_gone "$notebook_claim"

node_of_trainer=$(pod_node trainer)
claim=$(k get pod trainer -o jsonpath='{.status.resourceClaimStatuses[0].resourceClaimName}')
[ -n "$claim" ] || fail "the trainer has no generated claim"
other_node=gpu-1
[ "$node_of_trainer" != gpu-1 ] || other_node=gpu-2

step "two finished Pods on $other_node, the older one over the threshold"
for name in done-1 done-2; do
  k apply -f - >/dev/null <<EOF || fail "$name"
apiVersion: v1
kind: Pod
metadata: {name: $name, namespace: default}
spec:
  nodeName: $other_node
  containers: [{name: c, image: registry.example.com/job:1}]
EOF
  k patch pod "$name" --subresource=status --type=merge \
    -p '{"status":{"phase":"Succeeded"}}' >/dev/null || fail "finish $name"
  # Creation timestamps have one-second resolution: the second Pod must be younger.
  [ "$name" = done-2 ] || sleep 1.1
done

step "$node_of_trainer is removed from the cluster while the trainer runs"
k delete node "$node_of_trainer" >/dev/null || fail "delete node"
slice_gone() { ! k get resourceslice "$node_of_trainer-gpu.example.com" >/dev/null 2>&1; }
wait_until 60 "the node's slice to go with it" slice_gone
# Within the quarantine the trainer is still there, Running (no kubelet will say otherwise).
expect_eq "$(k get pod trainer -o jsonpath='{.status.phase}')" Running "the trainer's phase"

wait_until 60 "the older finished Pod to be collected" pod_gone done-1
k get pod done-2 >/dev/null 2>&1 || fail "done-2 (within the threshold) was deleted"
wait_until 150 "the orphaned trainer to be collected" pod_gone trainer
wait_until 60 "the trainer's claim to be deleted" claim_gone "$claim"

step "the collections are counted"
metrics=$(k get --raw /metrics)
expect_contains "$metrics" \
  'pod_gc_collector_force_delete_pods_total{namespace="default",reason="orphaned"} 1'
expect_contains "$metrics" \
  'pod_gc_collector_force_delete_pods_total{namespace="default",reason="terminated"} 1'

echo PASS
