#!/usr/bin/env bash
# End to end: fidelity and node safety (issue 19) with the real `draplane serve` (its embedded
# scheduler and claim controllers), standalone node agents of tests/agent/node-safety-cluster.yaml
# and the real kubectl:
#   1. binding conditions (KEP-5007): a fabric-attached GPU whose attach succeeds after 2 s — the
#      Pod waits, nominated to the node, and binds only after the condition is True; one whose
#      attach fails — the Pod goes elsewhere and the FailedScheduling Event names the device and
#      the condition; one that never answers, under a second scheduler with --binding-timeout 5s
#      — the binding times out;
#   2. health at bind time: a device tainted while the binding waits is not bound;
#   3. failing-node isolation: a node whose prepares fail three times is isolated (taint in
#      `kubectl describe node`, reason in `draplane explain pod`, the scheduler's metric) and
#      lifted again once a prepare succeeds (the fault is removed from the profile);
#   4. kubernetes/kubernetes#141471: a force-deleted Pod's device is not prepared for the next
#      claim until the node has unprepared it;
#   5. KEP-4680: the Pod's containerStatuses[].allocatedResourcesStatus reports its device's
#      health, and a health fault turns it Unhealthy.
# Waits have deadlines as guards against hangs; nothing asserts on how long anything took.
#
# Usage: node_safety_e2e.sh DRAPLANE_BINARY SOURCE_DIR
set -euo pipefail
DRAPLANE=$1
SRC=$2
source "$SRC/tests/e2e/agent_lib.sh"

profile="$e2e_work/cluster.yaml"
cp "$SRC/tests/agent/node-safety-cluster.yaml" "$profile"
start_server --embedded
nodes=(fabric-ok-0 fabric-bad-0 spare-0 fabric-mute-0 fabric-slow-0 flaky-0 reuse-0)
for node in "${nodes[@]}"; do
  start_agent "$node" "$profile" --isolation-backoff 10m
done
# The second scheduler: only Pods naming it, bindings wait at most 5 s.
start_bg timeout-scheduler "$DRAPLANE" scheduler --kubeconfig "$admin_kubeconfig" \
  --leader-elect=false --scheduler-name fabric-timeout --binding-timeout 5s

wait_ready "${nodes[@]}"
wait_until 120 "7 GPU slices" bash -c "[ \$(kubectl --kubeconfig $admin_kubeconfig get resourceslices -o name | wc -l) -eq 7 ]"

k apply -f "$SRC/examples/deviceclasses.yaml" >/dev/null
tenant_with_one_gpu_template e2e

# pod NAME POOL [SCHEDULER]: a Pod with one GPU from the template, pinned to a pool.
pod() {
  pod_with_gpu e2e "$1" one-gpu "nodeSelector: {e2e.draplane.dev/pool: $2}" \
    "schedulerName: ${3:-default-scheduler}"
}
node_of() { k get pod -n e2e "$1" -o jsonpath='{.spec.nodeName}'; }
# events POD REASON: the messages of the pod's Events with that reason.
events() {
  k get events -n e2e --field-selector "involvedObject.name=$1,reason=$2" \
    -o jsonpath='{range .items[*]}{.message}{"\n"}{end}'
}
has_event() { events "$1" "$2" | grep -qF -- "$3"; }
reserved_for() {
  k get resourceclaim -n e2e "$(claim_of e2e "$1")" -o jsonpath='{.status.reservedFor[0].name}' |
    grep -qx "$1"
}

step "binding conditions: the Pod waits for the fabric attach and binds after it"
pod attach-ok fabric-ok
wait_until 120 "attach-ok reserved and waiting" reserved_for attach-ok
wait_until 60 "BindingConditionsPending event" has_event attach-ok BindingConditionsPending \
  "waiting for binding conditions"
nominated=$(k get pod -n e2e attach-ok -o jsonpath='{.status.nominatedNodeName}')
expect_eq "$nominated" "fabric-ok-0" "nominated node of the waiting pod"
k wait --for=condition=Ready pod/attach-ok -n e2e --timeout=120s >/dev/null
claim=$(claim_of e2e attach-ok)
attached=$(k get resourceclaim -n e2e "$claim" -o json | py 'import json,sys
c=json.load(sys.stdin)
for d in c["status"]["devices"]:
  for x in d.get("conditions",[]):
    if x["type"]=="gpu.nvidia.com/fabric-attached": print(x["status"], x["lastTransitionTime"])')
expect_contains "$attached" "True " "the fabric-attached condition"
scheduled=$(k get pod -n e2e attach-ok -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].lastTransitionTime}')
py 'import sys,datetime
f=lambda s: datetime.datetime.strptime(s,"%Y-%m-%dT%H:%M:%SZ").timestamp()
sys.exit(0 if f(sys.argv[2]) >= f(sys.argv[1]) else 1)' "${attached#True }" "$scheduled" ||
  fail "attach-ok was bound ($scheduled) before its device was attached (${attached#True })"
expect_eq "$(node_of attach-ok)" "fabric-ok-0" "node of attach-ok"

step "KEP-4680: the Pod's status reports the health of its device"
resource_health() {
  k get pod -n e2e "$1" -o json | py 'import json,sys
p=json.load(sys.stdin)
for c in p["status"].get("containerStatuses",[]):
  for s in c.get("allocatedResourcesStatus",[]):
    for r in s.get("resources",[]): print(c["name"], s["name"], r["resourceID"], r["health"])'
}
health=$(resource_health attach-ok)
expect_eq "$health" "main claim:gpu gpu.nvidia.com/fabric-ok-0/gpu-0 Healthy" \
  "allocatedResourcesStatus of attach-ok"

step "binding conditions: a failed attach sends the Pod elsewhere, and the Event names the device"
k cordon spare-0 >/dev/null
pod attach-bad failover
wait_until 120 "FailedScheduling naming the device" has_event attach-bad FailedScheduling \
  "device gpu.nvidia.com/fabric-bad-0/gpu-0: binding failure condition gpu.nvidia.com/fabric-attach-failed is True"
message=$(events attach-bad FailedScheduling)
expect_contains "$message" "fabric port 7 is busy" "FailedScheduling event"
[ -z "$(node_of attach-bad)" ] || fail "attach-bad was bound to $(node_of attach-bad)"
k uncordon spare-0 >/dev/null
k wait --for=condition=Ready pod/attach-bad -n e2e --timeout=120s >/dev/null
expect_eq "$(node_of attach-bad)" "spare-0" "node of attach-bad after the failed attach"

step "binding conditions: a device that never answers times out after --binding-timeout 5s"
pod attach-mute fabric-mute fabric-timeout
wait_until 120 "attach-mute reserved and waiting" reserved_for attach-mute
wait_until 120 "the binding times out" has_event attach-mute FailedScheduling \
  "binding timed out after 5s: claim e2e/$(claim_of e2e attach-mute): device gpu.nvidia.com/fabric-mute-0/gpu-0: binding condition gpu.nvidia.com/fabric-attached is not reported"
[ -z "$(node_of attach-mute)" ] || fail "attach-mute was bound"
k delete pod -n e2e attach-mute --wait=false >/dev/null

step "health at bind time: a device tainted while its binding waits is not bound"
pod slow fabric-slow
wait_until 120 "slow reserved and waiting" reserved_for slow
first=$(device_of e2e slow)
py 'import sys,yaml
p=yaml.safe_load(open(sys.argv[1]))
node,device=sys.argv[2].split("/")
pool=[x for x in p["nodePools"] if x["name"]=="fabric-slow"][0]
pool.setdefault("faults",[]).append({"device":device,"effect":"NoSchedule","message":"XID 48"})
open(sys.argv[1]+".new","w").write(yaml.safe_dump(p))' "$profile" "$first"
mv "$profile.new" "$profile"
wait_until 120 "the binding fails on the taint" has_event slow FailedScheduling \
  "device gpu.nvidia.com/$first has the taint gpu.nvidia.com/unhealthy:NoSchedule"
wait_until 120 "slow waits for the other device" bash -c \
  "[ \"\$(kubectl --kubeconfig $admin_kubeconfig get resourceclaim -n e2e \$(kubectl --kubeconfig $admin_kubeconfig get pod -n e2e slow -o jsonpath='{.status.resourceClaimStatuses[0].resourceClaimName}') -o jsonpath='{.status.reservedFor[0].name}/{.status.allocation.devices.results[0].device}')\" = slow/gpu-1 ]"
[ "$first" = fabric-slow-0/gpu-0 ] || fail "the first allocation was $first, not fabric-slow-0/gpu-0"
[ -z "$(node_of slow)" ] || fail "slow was bound"
k delete pod -n e2e slow --wait=false >/dev/null

step "failing-node isolation: three failed prepares isolate the node; a success lifts it"
# flaky-0's gpu-0 fails to prepare until the fault is removed from the profile below.
pod flaky-1 flaky
wait_until 120 "flaky-0 isolated" bash -c \
  "kubectl --kubeconfig $admin_kubeconfig get node flaky-0 -o jsonpath='{.spec.taints[*].key}' | grep -q draplane.dev/device-prepare-failures"
described=$(k describe node flaky-0)
expect_contains "$described" "draplane.dev/device-prepare-failures:NoSchedule" "kubectl describe node"
expect_contains "$described" "DevicePrepareFailures" "kubectl describe node"
expect_contains "$described" "draplane.dev/device-prepare-failures-until" "kubectl describe node"
# While the node is isolated, a new Pod does not go there, and explain pod says why.
pod flaky-2 flaky
wait_until 60 "flaky-2 rejected by the isolation" has_event flaky-2 FailedScheduling \
  "node isolated after repeated device prepare failures until"
explained=$("$DRAPLANE" explain pod e2e/flaky-2 --kubeconfig "$admin_kubeconfig")
expect_contains "$explained" "node isolated after repeated device prepare failures until" \
  "draplane explain pod"
metrics=$(k get --raw /metrics)
expect_contains "$metrics" "draplane_scheduler_isolated_nodes 1" "scheduler metrics"
[ -z "$(node_of flaky-2)" ] || fail "flaky-2 was bound to the isolated node"
# The GPU recovers: the agent's next retry of flaky-1 (the probe) succeeds and lifts the
# isolation, and flaky-2 gets the other GPU.
py 'import sys,yaml
p=yaml.safe_load(open(sys.argv[1]))
pool=[x for x in p["nodePools"] if x["name"]=="flaky"][0]
pool["faults"]=[]
open(sys.argv[1]+".new","w").write(yaml.safe_dump(p))' "$profile"
mv "$profile.new" "$profile"
k wait --for=condition=Ready pod/flaky-1 -n e2e --timeout=120s >/dev/null
wait_until 60 "isolation lifted" bash -c \
  "! kubectl --kubeconfig $admin_kubeconfig get node flaky-0 -o jsonpath='{.spec.taints[*].key}' | grep -q draplane.dev/device-prepare-failures"
condition=$(k get node flaky-0 -o jsonpath='{.status.conditions[?(@.type=="DevicePrepareFailures")].status}/{.status.conditions[?(@.type=="DevicePrepareFailures")].reason}')
expect_eq "$condition" "False/PrepareSucceeded" "DevicePrepareFailures condition after the success"
k wait --for=condition=Ready pod/flaky-2 -n e2e --timeout=120s >/dev/null
expect_eq "$(node_of flaky-2)" "flaky-0" "node of flaky-2 after the isolation"
wait_until 60 "isolated-nodes metric back to 0" bash -c \
  "kubectl --kubeconfig $admin_kubeconfig get --raw /metrics | grep -qx 'draplane_scheduler_isolated_nodes 0'"

step "kubernetes#141471: a force-deleted Pod's device is not prepared again until unprepared"
pod old reuse
k wait --for=condition=Ready pod/old -n e2e --timeout=120s >/dev/null
old_uid=$(k get resourceclaim -n e2e "$(claim_of e2e old)" -o jsonpath='{.metadata.uid}')
# The node's agent is down while the Pod is force-deleted and its device given to a new claim.
kill "${bg_pids[agent-reuse-0]}"
wait "${bg_pids[agent-reuse-0]}" 2>/dev/null || true
unset 'bg_pids[agent-reuse-0]'
k delete pod -n e2e old --grace-period=0 --force >/dev/null 2>&1
pod new reuse
wait_until 120 "new bound to reuse-0" bash -c "[ \"\$(kubectl --kubeconfig $admin_kubeconfig get pod -n e2e new -o jsonpath='{.spec.nodeName}')\" = reuse-0 ]"
new_uid=$(k get resourceclaim -n e2e "$(claim_of e2e new)" -o jsonpath='{.metadata.uid}')
[ "$new_uid" != "$old_uid" ] || fail "the new Pod reuses the old claim"
held=$(py 'import json,sys; print(json.load(open(sys.argv[1]))["prepared"])' "$e2e_work/agents/reuse-0/profile-devices.json")
expect_eq "$held" "{'gpu.nvidia.com/gpu-0': ['$old_uid']}" "devices held while the agent is down"
# Back up: the old claim's unprepare fails twice, and meanwhile the new claim waits, saying why.
start_agent reuse-0 "$profile"
wait_until 120 "DeviceStillPrepared event" has_event new DeviceStillPrepared \
  "device gpu.nvidia.com/reuse-0/gpu-0 is still prepared for claim e2e/"
k wait --for=condition=Ready pod/new -n e2e --timeout=120s >/dev/null
held=$(py 'import json,sys; print(json.load(open(sys.argv[1]))["prepared"])' "$e2e_work/agents/reuse-0/profile-devices.json")
expect_eq "$held" "{'gpu.nvidia.com/gpu-0': ['$new_uid']}" "devices held after the old claim's unprepare"
unprepared=$(grep -c "unprepared claim e2e/" "$e2e_work/agent-reuse-0.log" || true)
[ "$unprepared" -ge 1 ] || fail "the agent never unprepared the old claim"

step "KEP-4680: a health fault turns the Pod's device Unhealthy"
py 'import sys,yaml
p=yaml.safe_load(open(sys.argv[1]))
pool=[x for x in p["nodePools"] if x["name"]=="fabric-ok"][0]
pool.setdefault("faults",[]).append({"device":"gpu-0","effect":"NoSchedule","message":"XID 79"})
open(sys.argv[1]+".new","w").write(yaml.safe_dump(p))' "$profile"
mv "$profile.new" "$profile"
wait_until 120 "the device reported Unhealthy" bash -c \
  "kubectl --kubeconfig $admin_kubeconfig get pod -n e2e attach-ok -o jsonpath='{.status.containerStatuses[0].allocatedResourcesStatus[0].resources[0].health}' | grep -qx Unhealthy"
described=$(k describe pod -n e2e attach-ok)
expect_contains "$described" "gpu.nvidia.com/fabric-ok-0/gpu-0" "kubectl describe pod"
expect_contains "$described" "Unhealthy" "kubectl describe pod"
echo "PASS"
