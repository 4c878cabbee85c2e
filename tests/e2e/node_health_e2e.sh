#!/usr/bin/env bash
# End to end: node health (the node lifecycle and taint eviction controllers) with the real
# `draplane serve` (embedded scheduler and controllers, short grace periods), two standalone node
# agents with one GPU each and the real kubectl:
#   1. every new Pod gets the default not-ready / unreachable tolerations (admission);
#   2. the agent of a node with a running Pod is killed: the node turns Unknown with the
#      NodeNotReady Event, is tainted node.kubernetes.io/unreachable NoSchedule and NoExecute, the
#      Pod is marked NotReady and, its toleration over, evicted (TaintManagerEviction,
#      DisruptionTarget) and removed; its claim is released;
#   3. a new Pod does not go to the dead node although its GPU is free: it stays Pending and
#      `draplane explain pod` names the taint;
#   4. the agent comes back: the taints go and the waiting Pod runs there;
#   5. the controllers' metrics count the eviction.
# Waits have deadlines as guards against hangs; nothing asserts on how long anything took.
#
# Usage: node_health_e2e.sh DRAPLANE_BINARY SOURCE_DIR
set -euo pipefail
DRAPLANE=$1
SRC=$2
source "$SRC/tests/e2e/agent_lib.sh"

profile="$e2e_work/cluster.yaml"
cat >"$profile" <<'EOF2'
apiVersion: draplane.dev/v1alpha1
kind: ClusterProfile
metadata:
  name: node-health-e2e
nodePools:
- name: health
  count: 2
  devices:
    gpus:
    - count: 1
      productName: NVIDIA H100 80GB HBM3
      architecture: Hopper
      cudaComputeCapability: "9.0"
      driverVersion: 550.90.07
      memory: 80Gi
EOF2
start_server --embedded --node-monitor-period 500ms --node-monitor-grace-period 6s \
  --default-not-ready-toleration-seconds 3 --default-unreachable-toleration-seconds 3
start_agent health-0 "$profile"
start_agent health-1 "$profile"
wait_ready health-0 health-1
wait_until 120 "2 GPU slices" bash -c "[ \$(kubectl --kubeconfig $admin_kubeconfig get resourceslices -o name | wc -l) -eq 2 ]"
k apply -f "$SRC/examples/deviceclasses.yaml" >/dev/null
tenant_with_one_gpu_template e2e

phase() { k get pod -n e2e "$1" -o jsonpath='{.status.phase}'; }
node_of() { k get pod -n e2e "$1" -o jsonpath='{.spec.nodeName}'; }
ready_of() { k get node "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}'; }
taints_of() { k get node "$1" -o jsonpath='{range .spec.taints[*]}{.key}:{.effect} {end}'; }
events() {
  k get events -n "$1" --field-selector "involvedObject.name=$2,reason=$3" \
    -o jsonpath='{range .items[*]}{.message}{"\n"}{end}'
}

step "every new Pod tolerates not-ready and unreachable for the configured seconds"
pod_with_gpu e2e first one-gpu "terminationGracePeriodSeconds: 1"
tolerations=$(k get pod -n e2e first -o jsonpath='{range .spec.tolerations[*]}{.key}={.tolerationSeconds} {end}')
expect_contains "$tolerations" "node.kubernetes.io/not-ready=3" "tolerations"
expect_contains "$tolerations" "node.kubernetes.io/unreachable=3" "tolerations"
wait_until 120 "the first Pod runs" bash -c "[ \"\$(kubectl --kubeconfig $admin_kubeconfig get pod -n e2e first -o jsonpath='{.status.phase}')\" = Running ]"
dead=$(node_of first)
case "$dead" in health-0) alive=health-1 ;; *) alive=health-0 ;; esac
claim=$(claim_of e2e first)

step "the agent of $dead dies: Unknown, tainted, the Pod NotReady, then evicted"
kill -KILL "${bg_pids[agent-$dead]}"
wait "${bg_pids[agent-$dead]}" 2>/dev/null || true
unset "bg_pids[agent-$dead]"
wait_until 120 "$dead Unknown" bash -c "[ \"\$(kubectl --kubeconfig $admin_kubeconfig get node $dead -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}')\" = Unknown ]"
reason=$(k get node "$dead" -o jsonpath='{.status.conditions[?(@.type=="Ready")].reason}')
expect_eq "$reason" NodeStatusUnknown "Ready reason of $dead"
expect_eq "$(ready_of "$alive")" True "Ready of $alive"
has_taints() {
  local t
  t=$(taints_of "$dead")
  grep -qF "node.kubernetes.io/unreachable:NoExecute" <<<"$t" &&
    grep -qF "node.kubernetes.io/unreachable:NoSchedule" <<<"$t"
}
wait_until 60 "$dead tainted unreachable NoSchedule and NoExecute" has_taints
expect_contains "$(k describe node "$dead")" "node.kubernetes.io/unreachable:NoExecute" \
  "kubectl describe node"
node_events() {
  k get events -A --field-selector "involvedObject.name=$dead,reason=NodeNotReady" -o name | grep -q .
}
wait_until 60 "the NodeNotReady Event of $dead" node_events
evicted() { ! k get pod -n e2e first >/dev/null 2>&1; }
wait_until 120 "the first Pod evicted and removed" evicted
expect_contains "$(events e2e first TaintManagerEviction)" "Marking for deletion Pod e2e/first" \
  "TaintManagerEviction Event"
expect_contains "$(events e2e first NodeNotReady)" "Node is not ready" "NodeNotReady Event of the Pod"
claim_gone() { ! k get resourceclaim -n e2e "$claim" >/dev/null 2>&1; }
wait_until 60 "the evicted Pod's claim released" claim_gone

step "a new Pod does not go to the dead node although its GPU is free"
pod_with_gpu e2e second one-gpu
pod_with_gpu e2e third one-gpu
wait_until 120 "one of the new Pods runs on $alive" bash -c \
  "kubectl --kubeconfig $admin_kubeconfig get pods -n e2e -o jsonpath='{range .items[*]}{.spec.nodeName}{\"\\n\"}{end}' | grep -qx $alive"
waiting=second
[ "$(node_of second)" = "$alive" ] && waiting=third
names_taint() {
  "$DRAPLANE" explain pod "e2e/$waiting" --kubeconfig "$admin_kubeconfig" |
    grep -qF "node.kubernetes.io/unreachable"
}
wait_until 60 "explain pod names the unreachable taint" names_taint
expect_eq "$(phase "$waiting")" Pending "phase of $waiting"
expect_eq "$(node_of "$waiting")" "" "node of $waiting"

step "the agent of $dead comes back: the taints go and the waiting Pod runs there"
start_agent "$dead" "$profile"
wait_until 120 "$dead Ready" bash -c "[ \"\$(kubectl --kubeconfig $admin_kubeconfig get node $dead -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}')\" = True ]"
untainted() { ! taints_of "$dead" | grep -qF node.kubernetes.io/; }
wait_until 60 "$dead untainted" untainted
runs_there() { [ "$(node_of "$waiting")" = "$dead" ] && [ "$(phase "$waiting")" = Running ]; }
wait_until 120 "$waiting runs on $dead" runs_there

step "the controllers' metrics count it"
metrics=$(k get --raw /metrics)
expect_contains "$metrics" "taint_eviction_controller_pod_deletions_total 1" "/metrics"
expect_contains "$metrics" 'node_collector_evictions_total{zone=""} 1' "/metrics"
expect_contains "$metrics" 'node_collector_zone_size{zone=""} 2' "/metrics"
echo "PASS"
