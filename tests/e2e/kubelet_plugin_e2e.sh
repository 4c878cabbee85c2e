#!/usr/bin/env bash
# End to end: the agent as a kubelet plugin. The real `draplane serve` (with its scheduler and
# claim controllers), `draplane agent --kubelet-plugin` (simulated devices,
# tests/agent/kubelet-plugin-cluster.yaml) and `draplane fakekubelet` on the same node name,
# driven by the real kubectl; the fake kubelet's report (one JSON object per line) says what
# crossed the kubelet's gRPC APIs. One case per run (docs/design/kubelet-plugin.md maps each
# kubelet rule to its case):
#   pods     the agent neither registers the Node nor prepares on its own; the fake kubelet
#            registers every driver over v1.DRAPlugin; a Pod with a claim becomes Running only
#            after NodePrepareResources returned its CDI device IDs, which resolve in the CDI
#            specs; deleting it calls NodeUnprepareResources before the Pod goes, and leaves no
#            spec and no checkpoint entry behind;
#   crash    the agent is killed in the middle of NodePrepareResources; the kubelet's retries fail
#            until it is back; restarted, it prepares once: no leak, no double prepare;
#   retry    two per-claim errors (retryable, in the answer, not a failed call), a Warning Event
#            FailedPrepareDynamicResources, then the kubelet's retry succeeds;
#   health   a device fault reaches the fake kubelet over NodeWatchResources (Unhealthy, with the
#            driver's message) and the scheduler as the device taint in the node's slice;
#   v1beta1  a kubelet older than 1.34 (`fakekubelet --service v1beta1.DRAPlugin`) registers the
#            plugin over v1beta1.DRAPlugin without a health stream; prepare and unprepare work
#            the same over v1beta1;
#   restart  seamless restart: a second agent instance with its own sockets registers next to the
#            first, the first stops, and the claims it prepared are unprepared by the second;
#            the driver's slices are not wiped.
#
# Usage: kubelet_plugin_e2e.sh DRAPLANE_BINARY SOURCE_DIR CASE
set -euo pipefail
DRAPLANE=$1
SRC=$2
CASE=$3
source "$SRC/tests/e2e/agent_lib.sh"

profile="$e2e_work/cluster.yaml"
cp "$SRC/tests/agent/kubelet-plugin-cluster.yaml" "$profile"
registry="$e2e_work/kubelet/plugins_registry"
plugins="$e2e_work/kubelet/plugins"
report="$e2e_work/report.jsonl"
mkdir -p "$registry" "$plugins"

py() { python3 -c "$1" "${@:2}"; }

node_kubeconfig() {
  if [ ! -f "$e2e_work/$1.kubeconfig" ]; then
    "$DRAPLANE" kubeconfig --data-dir "$e2e_work/data" --user "system:node:$1" \
      --groups system:nodes --client-certificate >"$e2e_work/$1.kubeconfig"
  fi
}

# plugin_agent NODE NAME [agent flags...]: the agent of NODE in kubelet-plugin mode, its log in
# NAME.log.
plugin_agent() {
  local node=$1 name=$2
  shift 2
  node_kubeconfig "$node"
  start_bg "$name" "$DRAPLANE" agent --node "$node" --profile "$profile" \
    --kubeconfig "$e2e_work/$node.kubeconfig" --state-dir "$e2e_work/agents/$node" \
    --discovery-interval 500ms --kubelet-plugin --kubelet-registry-dir "$registry" \
    --kubelet-plugins-dir "$plugins" "$@"
}

# fake_kubelet NODE [fakekubelet flags...]
fake_kubelet() {
  local node=$1
  shift
  node_kubeconfig "$node"
  start_bg fakekubelet "$DRAPLANE" fakekubelet --node "$node" --profile "$profile" \
    --kubeconfig "$e2e_work/$node.kubeconfig" --registry-dir "$registry" \
    --cdi-dir "$e2e_work/agents/$node/cdi" --report "$report" --heartbeat-interval 2s \
    --registry-poll-interval 200ms --retry-base-delay 200ms --retry-max-delay 2s \
    --health-retry-interval 500ms --slice-wipe-delay 3s "$@"
}

# events EVENT [FIELD=VALUE...]: the report lines of EVENT (with those string fields), as JSON
# lines.
events() {
  [ -f "$report" ] || return 0
  py 'import json,sys
want=sys.argv[2]; match=[a.split("=",1) for a in sys.argv[3:]]
for line in open(sys.argv[1]):
  o=json.loads(line)
  if o["event"]==want and all(str(o.get(k))==v for k,v in match): print(json.dumps(o,separators=(",",":")))' \
    "$report" "$@"
}
count_events() { events "$@" | grep -c . || true; }
has_event() { [ "$(count_events "$@")" -gt 0 ]; }
seq_of() { py 'import json,sys; print(json.loads(sys.argv[1])["seq"])' "$1"; }

wait_registered() {
  local driver
  for driver in "$@"; do
    wait_until 120 "$driver registered with the fake kubelet" has_event registered "driver=$driver"
  done
}

# pod NS NAME [NODE]: a Pod with one GPU from the one-gpu template, bound to NODE if given.
pod() { pod_with_gpu "$1" "$2" one-gpu ${3:+"nodeName: $3"}; }
claim_uid() { k get resourceclaim -n "$1" "$2" -o jsonpath='{.metadata.uid}'; }
checkpoint_claims() {
  py 'import json,sys; c=json.load(open(sys.argv[1]))["claims"]; print(",".join(k+"="+v["state"] for k,v in sorted(c.items())))' \
    "$e2e_work/agents/$1/checkpoint.json"
}
held_devices() {
  py 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["prepared"], sort_keys=True))' \
    "$e2e_work/agents/$1/profile-devices.json"
}

setup_workloads() {
  k apply -f "$SRC/examples/deviceclasses.yaml" >/dev/null
  k apply -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Namespace
metadata: {name: team-a}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one-gpu, namespace: team-a}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: gpu.nvidia.com}
EOF
}

# wait_running NS NAME: until the Pod is Running and the fake kubelet reported starting it (the
# report line follows the status write).
wait_running() {
  wait_until 120 "pod $1/$2 Running" bash -c \
    "[ \"\$(kubectl --kubeconfig $admin_kubeconfig get pod -n $1 $2 -o jsonpath='{.status.phase}')\" = Running ]"
  wait_until 60 "the fake kubelet reported $1/$2 running" has_event running "pod=$1/$2"
}

start_server --embedded
setup_workloads

case "$CASE" in
pods)
  step "the agent in kubelet-plugin mode publishes slices but leaves the Node to the kubelet"
  plugin_agent kp-0 agent
  wait_until 120 "slices of kp-0" bash -c "kubectl --kubeconfig $admin_kubeconfig get resourceslices -o name | grep -q kp-0-gpu.nvidia.com"
  k get node kp-0 >/dev/null 2>&1 && fail "the agent registered the Node itself"
  for driver in gpu.nvidia.com nic.example.com; do
    [ -S "$registry/$driver-reg.sock" ] || fail "no registration socket for $driver"
    [ -S "$plugins/$driver/dra.sock" ] || fail "no DRA socket for $driver"
  done

  step "the fake kubelet registers every driver over v1.DRAPlugin"
  fake_kubelet kp-0
  wait_registered gpu.nvidia.com nic.example.com
  registered=$(events registered driver=gpu.nvidia.com)
  expect_contains "$registered" '"service":"v1.DRAPlugin"'
  expect_contains "$registered" '"healthService":"v1.DRAResourceHealth"'
  expect_contains "$registered" "\"endpoint\":\"$plugins/gpu.nvidia.com/dra.sock\""
  wait_until 120 "node kp-0 Ready" k wait --for=condition=Ready node/kp-0 --timeout=5s

  step "a Pod runs only after NodePrepareResources returned its CDI device IDs"
  pod team-a train
  wait_running team-a train
  claim=$(claim_of team-a train)
  uid=$(claim_uid team-a "$claim")
  prepare=$(events NodePrepareResources pod=team-a/train driver=gpu.nvidia.com)
  [ -n "$prepare" ] || fail "no NodePrepareResources call for team-a/train"
  running=$(events running pod=team-a/train)
  [ "$(seq_of "$(head -1 <<<"$prepare")")" -lt "$(seq_of "$running")" ] ||
    fail "the Pod was marked Running before NodePrepareResources answered"
  ids=$(py 'import json,sys; o=json.loads(sys.argv[1]); print(" ".join(i for d in o["result"][sys.argv[2]]["devices"] for i in d["cdiDeviceIDs"]))' \
    "$(tail -1 <<<"$prepare")" "$uid")
  device=$(k get resourceclaim -n team-a "$claim" -o jsonpath='{.status.allocation.devices.results[0].device}')
  expect_eq "$ids" "gpu.nvidia.com/gpu=$uid-$device" "CDI device IDs of the answer"
  expect_contains "$running" "\"main\":[\"gpu.nvidia.com/gpu=$uid-$device\"]" "container devices"
  request_names=$(py 'import json,sys; o=json.loads(sys.argv[1]); print([d["requestNames"] for d in o["result"][sys.argv[2]]["devices"]])' \
    "$(tail -1 <<<"$prepare")" "$uid")
  expect_eq "$request_names" "[['gpu']]" "request names"
  [ -f "$e2e_work/agents/kp-0/cdi/gpu.nvidia.com_gpu_$uid.json" ] || fail "no CDI spec for $uid"
  expect_eq "$(checkpoint_claims kp-0)" "$uid=PrepareCompleted" "checkpoint"
  ready=$(k get resourceclaim -n team-a "$claim" -o jsonpath='{.status.devices[0].conditions[0].type}={.status.devices[0].conditions[0].status}')
  expect_eq "$ready" "Ready=True" "claim device status"

  step "deleting the Pod unprepares its claim before the Pod goes"
  k delete pod -n team-a train --timeout=120s >/dev/null
  unprepare=$(events NodeUnprepareResources pod=team-a/train driver=gpu.nvidia.com)
  terminated=$(events terminated pod=team-a/train)
  [ -n "$unprepare" ] && [ -n "$terminated" ] || fail "no NodeUnprepareResources / termination"
  [ "$(seq_of "$(head -1 <<<"$unprepare")")" -lt "$(seq_of "$terminated")" ] ||
    fail "the Pod went before its claim was unprepared"
  expect_contains "$unprepare" "\"$uid\":{\"error\":\"\"}" "unprepare answer"
  expect_eq "$(checkpoint_claims kp-0)" "" "checkpoint after unprepare"
  expect_eq "$(ls "$e2e_work/agents/kp-0/cdi")" "" "CDI specs after unprepare"
  expect_eq "$(held_devices kp-0)" "{}" "devices the driver holds"
  wait_until 120 "claim $claim deleted" bash -c "! kubectl --kubeconfig $admin_kubeconfig get resourceclaim -n team-a $claim"
  ;;

crash)
  step "an agent killed in the middle of NodePrepareResources"
  plugin_agent crash-0 agent
  agent_pid=${bg_pids[agent]}
  fake_kubelet crash-0
  wait_registered gpu.nvidia.com
  pod team-a crashy
  code=0
  wait "$agent_pid" || code=$?
  unset 'bg_pids[agent]'
  expect_eq "$code" "137" "exit code of the crashed agent"
  expect_eq "$(checkpoint_claims crash-0 | sed 's/.*=//')" "PrepareStarted" "checkpoint after the crash"
  wait_until 120 "the kubelet saw the call fail" has_event prepareFailed pod=team-a/crashy
  k get pod -n team-a crashy -o jsonpath='{.status.phase}' | grep -qx Running &&
    fail "the Pod runs although its claim was never prepared"

  step "restarted, the agent prepares the claim once: no leak, no double prepare"
  plugin_agent crash-0 agent-restarted
  wait_running team-a crashy
  uid=$(claim_uid team-a "$(claim_of team-a crashy)")
  expect_eq "$(checkpoint_claims crash-0)" "$uid=PrepareCompleted" "checkpoint after the restart"
  expect_eq "$(ls "$e2e_work/agents/crash-0/cdi")" "gpu.nvidia.com_gpu_$uid.json" "CDI specs"
  expect_eq "$(held_devices crash-0)" "{\"gpu.nvidia.com/gpu-0\": [\"$uid\"]}" "devices held"
  has_event registered driver=gpu.nvidia.com || fail "no registration"
  [ "$(count_events registered driver=gpu.nvidia.com)" -ge 2 ] ||
    fail "the restarted plugin's new socket was not registered again"
  k delete pod -n team-a crashy --timeout=120s >/dev/null
  expect_eq "$(checkpoint_claims crash-0)" "" "checkpoint after unprepare"
  expect_eq "$(held_devices crash-0)" "{}" "devices held after unprepare"
  ;;

retry)
  step "per-claim errors come in the answer; the kubelet's retry succeeds"
  plugin_agent retry-0 agent
  fake_kubelet retry-0
  wait_registered gpu.nvidia.com
  pod team-a busy
  wait_running team-a busy
  uid=$(claim_uid team-a "$(claim_of team-a busy)")
  calls=$(events NodePrepareResources pod=team-a/busy)
  expect_eq "$(grep -c . <<<"$calls")" "3" "NodePrepareResources calls"
  errors=$(py 'import json,sys
for line in sys.argv[1].splitlines():
  o=json.loads(line); print(o.get("error","") or o["result"][sys.argv[2]]["error"] or "ok")' "$calls" "$uid")
  expect_contains "$(sed -n 1p <<<"$errors")" "retryable: claim team-a/"
  expect_contains "$(sed -n 1p <<<"$errors")" "device is busy"
  expect_contains "$(sed -n 2p <<<"$errors")" "retryable: claim team-a/"
  expect_eq "$(sed -n 3p <<<"$errors")" "ok" "third answer"
  expect_eq "$(count_events prepareFailed pod=team-a/busy)" "2" "failed Pod syncs"
  reason=$(k get events -n team-a --field-selector involvedObject.name=busy,reason=FailedPrepareDynamicResources -o jsonpath='{.items[0].type}')
  expect_eq "$reason" "Warning" "FailedPrepareDynamicResources event"
  expect_eq "$(checkpoint_claims retry-0)" "$uid=PrepareCompleted" "checkpoint"
  ;;

health)
  step "a device fault streams to the kubelet and becomes the device's taint"
  plugin_agent kp-0 agent
  fake_kubelet kp-0
  wait_registered gpu.nvidia.com
  wait_until 120 "gpu-1 healthy" has_event health driver=gpu.nvidia.com device=gpu-1 health=Healthy
  py 'import sys,yaml
p=yaml.safe_load(open(sys.argv[1]))
p["nodePools"][0].setdefault("faults",[]).append({"device":"gpu-1","effect":"NoExecute","message":"XID 79: GPU has fallen off the bus"})
open(sys.argv[1]+".new","w").write(yaml.safe_dump(p))' "$profile"
  mv "$profile.new" "$profile"
  wait_until 120 "gpu-1 unhealthy at the kubelet" has_event health driver=gpu.nvidia.com device=gpu-1 health=Unhealthy
  unhealthy=$(events health driver=gpu.nvidia.com device=gpu-1 health=Unhealthy)
  expect_contains "$unhealthy" "XID 79: GPU has fallen off the bus" "health message"
  expect_contains "$unhealthy" '"service":"v1.DRAResourceHealth"'
  has_event health driver=gpu.nvidia.com device=gpu-0 health=Unhealthy && fail "gpu-0 reported unhealthy"
  wait_until 120 "taint on gpu-1" bash -c "kubectl --kubeconfig $admin_kubeconfig get resourceslice kp-0-gpu.nvidia.com-0 -o jsonpath='{.spec.devices[1].taints[0].key}={.spec.devices[1].taints[0].effect}' | grep -qx gpu.nvidia.com/unhealthy=NoExecute"
  ;;

v1beta1)
  step "a kubelet older than 1.34 registers the plugin over v1beta1.DRAPlugin"
  plugin_agent kp-0 agent
  fake_kubelet kp-0 --service v1beta1.DRAPlugin
  wait_registered gpu.nvidia.com nic.example.com
  registered=$(events registered driver=gpu.nvidia.com)
  expect_contains "$registered" '"service":"v1beta1.DRAPlugin"'
  expect_contains "$registered" '"healthService":""'

  step "prepare and unprepare over v1beta1"
  pod team-a train
  wait_running team-a train
  claim=$(claim_of team-a train)
  uid=$(claim_uid team-a "$claim")
  device=$(k get resourceclaim -n team-a "$claim" -o jsonpath='{.status.allocation.devices.results[0].device}')
  prepare=$(events NodePrepareResources pod=team-a/train driver=gpu.nvidia.com)
  expect_contains "$prepare" '"service":"v1beta1.DRAPlugin"'
  expect_contains "$(events running pod=team-a/train)" "\"main\":[\"gpu.nvidia.com/gpu=$uid-$device\"]" \
    "container devices"
  expect_eq "$(checkpoint_claims kp-0)" "$uid=PrepareCompleted" "checkpoint"
  k delete pod -n team-a train --timeout=120s >/dev/null
  unprepare=$(events NodeUnprepareResources pod=team-a/train driver=gpu.nvidia.com)
  expect_contains "$unprepare" '"service":"v1beta1.DRAPlugin"'
  expect_contains "$unprepare" "\"$uid\":{\"error\":\"\"}" "unprepare answer"
  expect_eq "$(checkpoint_claims kp-0)" "" "checkpoint after unprepare"
  expect_eq "$(held_devices kp-0)" "{}" "devices held after unprepare"
  has_event health && fail "an older kubelet opened a health stream"
  ;;

restart)
  step "a second instance with its own sockets takes over without a gap"
  plugin_agent kp-0 agent-old --plugin-instance old
  fake_kubelet kp-0
  wait_registered gpu.nvidia.com
  [ -S "$registry/gpu.nvidia.com-old-reg.sock" ] || fail "no per-instance registration socket"
  [ -S "$plugins/gpu.nvidia.com/dra-old.sock" ] || fail "no per-instance DRA socket"
  pod team-a train
  wait_running team-a train
  uid=$(claim_uid team-a "$(claim_of team-a train)")
  expect_contains "$(events NodePrepareResources pod=team-a/train)" "dra-old.sock"
  plugin_agent kp-0 agent-new --plugin-instance new
  wait_until 120 "the new instance registered" has_event registered driver=gpu.nvidia.com \
    "endpoint=$plugins/gpu.nvidia.com/dra-new.sock"
  kill -TERM "${bg_pids[agent-old]}"
  wait "${bg_pids[agent-old]}" || fail "the old instance did not stop cleanly"
  unset 'bg_pids[agent-old]'
  wait_until 120 "the old instance deregistered" has_event deregistered driver=gpu.nvidia.com \
    "endpoint=$plugins/gpu.nvidia.com/dra-old.sock"
  [ ! -e "$registry/gpu.nvidia.com-old-reg.sock" ] || fail "the old registration socket stayed"
  [ -S "$registry/gpu.nvidia.com-new-reg.sock" ] || fail "the new registration socket went"
  k delete pod -n team-a train --timeout=120s >/dev/null
  expect_contains "$(events NodeUnprepareResources pod=team-a/train)" "dra-new.sock"
  expect_eq "$(checkpoint_claims kp-0)" "" "checkpoint after unprepare"
  expect_eq "$(held_devices kp-0)" "{}" "devices held after unprepare"
  has_event slicesWiped driver=gpu.nvidia.com && fail "the driver's slices were wiped"
  k get resourceslice kp-0-gpu.nvidia.com-0 >/dev/null || fail "the driver's slices are gone"
  ;;

*)
  fail "unknown case $CASE"
  ;;
esac
echo "PASS"
