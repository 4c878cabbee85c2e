#!/usr/bin/env bash
# End to end: node agents against the real `draplane serve` with the real scheduler and
# controller manager, driven by the real kubectl (tests/agent/e2e-cluster.yaml):
#   1. agents register their Nodes and publish slices that pass validation;
#   2. a Pod with a claim runs only once its CDI spec exists, and the spec lists exactly the
#      allocated devices; deleting the Pod removes the spec and frees the devices;
#   3. an agent killed in the middle of preparing (a `prepare: crash` fault) and restarted neither
#      leaks nor double-prepares (checkpoint, CDI dir and the driver's device state);
#   4. a NoExecute health fault evicts the Pod using the GPU after its toleration seconds, and the
#      replacement Pod gets a healthy device;
#   5. a DeviceTaintRule with effect None reports devices and Pods without evicting; switched to
#      NoExecute it evicts exactly those Pods, and `kubectl wait
#      --for=condition=EvictionInProgress=false` returns; a rule without a selector is refused
#      unless annotated draplane.dev/select-all; while the rule stands, the scheduler gives its
#      devices to no new Pod, and once it is deleted it does.
#
# Usage: agent_e2e.sh DRAPLANE_BINARY SOURCE_DIR
set -euo pipefail
DRAPLANE=$1
SRC=$2
source "$SRC/tests/e2e/agent_lib.sh"

profile="$e2e_work/cluster.yaml"
cp "$SRC/tests/agent/e2e-cluster.yaml" "$profile"
start_server
start_bg scheduler "$DRAPLANE" scheduler --kubeconfig "$admin_kubeconfig" --leader-elect=false \
  --metrics-bind-address 127.0.0.1:0
start_bg controller-manager "$DRAPLANE" controller-manager --kubeconfig "$admin_kubeconfig" \
  --leader-elect=false --metrics-bind-address 127.0.0.1:0
start_agent gpu-0 "$profile" --metrics-bind-address 127.0.0.1:0
start_agent gpu-1 "$profile"

step "nodes register and publish valid slices"
wait_ready gpu-0 gpu-1
wait_until 120 "4 slices" bash -c "[ \$(kubectl --kubeconfig $admin_kubeconfig get resourceslices -o name | wc -l) -eq 4 ]"
k get resourceslices -o yaml >"$e2e_work/slices.yaml"
"$DRAPLANE" lint "$e2e_work/slices.yaml" || fail "published slices do not validate"
lease=$(k get lease -n kube-node-lease gpu-0 -o jsonpath='{.spec.holderIdentity}')
expect_eq "$lease" "gpu-0" "heartbeat lease holder"

k apply -f "$SRC/examples/deviceclasses.yaml" >/dev/null
tenant_with_one_gpu_template team-a
tenant_with_one_gpu_template team-b
k apply -f - >/dev/null <<'EOF'
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: tolerant-gpu, namespace: team-a}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu.nvidia.com
          tolerations:
          - {key: gpu.nvidia.com/unhealthy, operator: Exists, effect: NoExecute,
             tolerationSeconds: 5}
EOF

step "the scheduler's allocator, on a dump of the cluster, finds the published devices"
k get deviceclasses,resourceslices,nodes -o yaml >"$e2e_work/dump.yaml"
cat >"$e2e_work/claim.yaml" <<'EOF'
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: two-h100, namespace: team-a}
spec:
  devices:
    requests:
    - name: gpus
      exactly:
        deviceClassName: gpu.nvidia.com
        count: 2
        selectors:
        - cel: {expression: 'device.attributes["gpu.nvidia.com"].productName == "NVIDIA H100 80GB HBM3"'}
EOF
allocation=$("$DRAPLANE" allocate --cluster "$e2e_work/dump.yaml" --claim "$e2e_work/claim.yaml" \
  --all-nodes) || fail "the allocator found no devices in the published slices:"$'\n'"$allocation"
expect_contains "$allocation" "gpu-1" "allocation on the published slices"

# pod NS NAME TEMPLATE [POOL]: a Pod with one claim from TEMPLATE (optionally pinned to a pool
# label of the profile).
pod() {
  pod_with_gpu "$1" "$2" "$3" ${4:+"nodeSelector: {platform.example.com/pool: $4}"}
}

step "a pod runs once its CDI spec exists; the spec lists exactly the allocated devices"
pod team-a train-0 one-gpu dra
k wait --for=condition=Ready pod/train-0 -n team-a --timeout=120s >/dev/null
claim=$(claim_of team-a train-0)
uid=$(k get resourceclaim -n team-a "$claim" -o jsonpath='{.metadata.uid}')
node=$(k get pod -n team-a train-0 -o jsonpath='{.spec.nodeName}')
allocated=$(k get resourceclaim -n team-a "$claim" -o jsonpath='{range .status.allocation.devices.results[*]}{.device}{"\n"}{end}' | sort)
spec="$e2e_work/agents/$node/cdi/gpu.nvidia.com_gpu_$uid.json"
[ -f "$spec" ] || fail "no CDI spec $spec for a Ready pod"
in_spec=$(py 'import json,sys; s=json.load(open(sys.argv[1])); print("\n".join(sorted(d["name"][len(sys.argv[2])+1:] for d in s["devices"])))' "$spec" "$uid")
expect_eq "$in_spec" "$allocated" "devices in the CDI spec"
kind=$(py 'import json,sys; s=json.load(open(sys.argv[1])); print(s["cdiVersion"], s["kind"])' "$spec")
expect_eq "$kind" "0.6.0 gpu.nvidia.com/gpu" "CDI version and kind"
expect_contains "$(cat "$spec")" "DRA_DEVICE_GPU=$allocated" "CDI spec env"
ready=$(k get resourceclaim -n team-a "$claim" -o jsonpath='{.status.devices[0].conditions[0].type}={.status.devices[0].conditions[0].status}')
expect_eq "$ready" "Ready=True" "claim device status"
# Ordering: the agent marks the Pod Running only after the spec is on disk.
spec_time=$(stat -c %Y "$spec")
running_time=$(k get pod -n team-a train-0 -o jsonpath='{.status.conditions[?(@.type=="DevicesPrepared")].lastTransitionTime}')
py 'import sys,datetime; t=datetime.datetime.strptime(sys.argv[1],"%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc).timestamp(); sys.exit(0 if t >= int(sys.argv[2]) else 1)' \
  "$running_time" "$spec_time" || fail "pod Running ($running_time) before its CDI spec ($spec_time)"

step "the standalone scheduler, controller manager and agent serve /metrics"
# metrics_of LOG: the /metrics text of the component whose log is LOG (its port from the log).
metrics_of() {
  local port
  port=$(sed -n 's|.*serving /metrics and /healthz on http://127.0.0.1:\([0-9]*\).*|\1|p' "$e2e_work/$1.log" | tail -1)
  [ -n "$port" ] || fail "$1: no metrics endpoint in its log"
  [ "$(curl -fsS "http://127.0.0.1:$port/healthz")" = ok ] || fail "$1: /healthz"
  curl -fsS "http://127.0.0.1:$port/metrics"
}
expect_contains "$(metrics_of scheduler)" "scheduler_schedule_attempts_total{" "scheduler /metrics"
expect_contains "$(metrics_of controller-manager)" "draplane_claim_stage_duration_seconds" \
  "controller-manager /metrics"
expect_contains "$(metrics_of agent-gpu-0)" "draplane_agent_last_heartbeat_timestamp_seconds{" \
  "agent /metrics"

step "deleting the pod removes the spec and frees the devices"
k delete pod -n team-a train-0 --timeout=120s >/dev/null
[ ! -f "$spec" ] || fail "CDI spec $spec still exists"
claims=$(py 'import json,sys; print(len(json.load(open(sys.argv[1]))["claims"]))' "$e2e_work/agents/$node/checkpoint.json")
expect_eq "$claims" "0" "prepared claims in the checkpoint of $node"
wait_until 120 "claim $claim deleted" bash -c "! kubectl --kubeconfig $admin_kubeconfig get resourceclaim -n team-a $claim"

step "an agent killed mid-prepare restarts without leaking or preparing twice"
start_agent crash-0 "$profile"
crash_pid=${bg_pids[agent-crash-0]}
wait_ready crash-0
pod team-a crashy one-gpu crash
code=0
wait "$crash_pid" || code=$?
unset 'bg_pids[agent-crash-0]'
expect_eq "$code" "137" "exit code of the crashed agent"
state=$(py 'import json,sys; c=json.load(open(sys.argv[1]))["claims"]; print(",".join(v["state"] for v in c.values()))' "$e2e_work/agents/crash-0/checkpoint.json")
expect_eq "$state" "PrepareStarted" "checkpoint after the crash"
start_agent crash-0 "$profile"
k wait --for=condition=Ready pod/crashy -n team-a --timeout=120s >/dev/null
uid=$(k get resourceclaim -n team-a "$(claim_of team-a crashy)" -o jsonpath='{.metadata.uid}')
state=$(py 'import json,sys; c=json.load(open(sys.argv[1]))["claims"]; print(",".join(k+"="+v["state"] for k,v in c.items()))' "$e2e_work/agents/crash-0/checkpoint.json")
expect_eq "$state" "$uid=PrepareCompleted" "checkpoint after the restart"
expect_eq "$(ls "$e2e_work/agents/crash-0/cdi")" "gpu.nvidia.com_gpu_$uid.json" "CDI specs after the restart"
held=$(py 'import json,sys; print(json.load(open(sys.argv[1]))["prepared"])' "$e2e_work/agents/crash-0/profile-devices.json")
expect_eq "$held" "{'gpu.nvidia.com/gpu-0': ['$uid']}" "devices the driver holds"
k delete pod -n team-a crashy --timeout=120s >/dev/null

step "a NoExecute health fault evicts after the toleration seconds; the replacement gets a healthy GPU"
pod team-a tolerant tolerant-gpu dra
k wait --for=condition=Ready pod/tolerant -n team-a --timeout=120s >/dev/null
bad=$(device_of team-a tolerant)
py 'import sys,yaml
p=yaml.safe_load(open(sys.argv[1]))
node,device=sys.argv[2].split("/")
p["nodePools"][0].setdefault("faults",[]).append({"node":node,"device":device,"effect":"NoExecute","message":"XID 79: GPU has fallen off the bus"})
open(sys.argv[1]+".new","w").write(yaml.safe_dump(p))' "$profile" "$bad"
mv "$profile.new" "$profile"
k wait --for=delete pod/tolerant -n team-a --timeout=120s >/dev/null
taint_time=$(k get resourceslice "${bad%/*}-gpu.nvidia.com-0" -o json | py 'import json,sys
s=json.load(sys.stdin); d=sys.argv[1]
print([t["timeAdded"] for x in s["spec"]["devices"] if x["name"]==d for t in x.get("taints",[])][0])' "${bad#*/}")
evicted_time=$(k get events -n team-a --field-selector reason=DeviceTaintManagerEviction,involvedObject.name=tolerant -o jsonpath='{.items[0].firstTimestamp}')
[ -n "$evicted_time" ] || fail "no DeviceTaintManagerEviction event for the tolerant pod"
py 'import sys,datetime
f=lambda s: datetime.datetime.strptime(s,"%Y-%m-%dT%H:%M:%SZ").timestamp()
sys.exit(0 if f(sys.argv[2]) - f(sys.argv[1]) >= 5 else 1)' "$taint_time" "$evicted_time" ||
  fail "evicted at $evicted_time, less than 5 s after the taint ($taint_time)"
pod team-a tolerant one-gpu dra  # recreated, as its controller would
k wait --for=condition=Ready pod/tolerant -n team-a --timeout=120s >/dev/null
[ "$(device_of team-a tolerant)" != "$bad" ] || fail "the replacement got the unhealthy GPU $bad"

step "DeviceTaintRule: effect None reports without evicting"
pod team-a r1 one-gpu dra
pod team-b r2 one-gpu dra
k wait --for=condition=Ready pod/r1 -n team-a --timeout=120s >/dev/null
k wait --for=condition=Ready pod/r2 -n team-b --timeout=120s >/dev/null
target=$(k get pod -n team-a r1 -o jsonpath='{.spec.nodeName}')
# The pods on that node's GPUs, as namespace/name.
on_target=$(k get pods -A -o json | py 'import json,sys
for p in json.load(sys.stdin)["items"]:
  if p["spec"].get("nodeName")==sys.argv[1] and not p["metadata"].get("deletionTimestamp"):
    print(p["metadata"]["namespace"]+"/"+p["metadata"]["name"])' "$target" | sort)
k apply -f - >/dev/null <<EOF
apiVersion: resource.k8s.io/v1
kind: DeviceTaintRule
metadata: {name: drain}
spec:
  deviceSelector: {driver: gpu.nvidia.com, pool: $target}
  taint: {key: platform.example.com/maintenance, value: firmware, effect: None}
EOF
wait_until 120 "dry-run status" bash -c "kubectl --kubeconfig $admin_kubeconfig get devicetaintrule drain -o jsonpath='{.status.conditions[0].reason}' | grep -qx NoEffect"
message=$(k get devicetaintrule drain -o jsonpath='{.status.conditions[0].message}')
expect_contains "$message" "2 published devices selected."
count=$(wc -l <<<"$on_target")
expect_contains "$message" "$count pod"
for p in $on_target; do expect_contains "$message" "$p (priority 0)" "dry-run message"; done
expect_contains "$message" "Tenants affected:"
for p in $on_target; do
  k get pod -n "${p%/*}" "${p#*/}" >/dev/null || fail "dry run evicted $p"
done

step "a rule without a selector is refused unless annotated draplane.dev/select-all"
refused=$(k apply -f - 2>&1 <<'EOF' || true
apiVersion: resource.k8s.io/v1
kind: DeviceTaintRule
metadata: {name: everything}
spec:
  taint: {key: platform.example.com/oops, effect: None}
EOF
)
expect_contains "$refused" "draplane.dev/select-all" "admission answer"
k get devicetaintrule everything >/dev/null 2>&1 && fail "the rule without a selector was stored"
k apply -f - >/dev/null <<'EOF'
apiVersion: resource.k8s.io/v1
kind: DeviceTaintRule
metadata:
  name: everything
  annotations: {draplane.dev/select-all: "true"}
spec:
  taint: {key: platform.example.com/oops, effect: None}
EOF
wait_until 120 "select-all dry run" bash -c "kubectl --kubeconfig $admin_kubeconfig get devicetaintrule everything -o jsonpath='{.status.conditions[0].message}' | grep -q '^7 published devices selected'"
k delete devicetaintrule everything >/dev/null

step "switched to NoExecute, the rule evicts exactly those pods"
k patch devicetaintrule drain --type=merge -p '{"spec":{"taint":{"effect":"NoExecute"}}}' >/dev/null
k wait --for=condition=EvictionInProgress=false devicetaintrule/drain --timeout=120s >/dev/null
wait_until 60 "completed status" bash -c "kubectl --kubeconfig $admin_kubeconfig get devicetaintrule drain -o jsonpath='{.status.conditions[0].reason}' | grep -qx Completed"
for p in $on_target; do
  k wait --for=delete pod -n "${p%/*}" "${p#*/}" --timeout=120s >/dev/null || fail "$p was not evicted"
done
remaining=$(k get pods -A -o json | py 'import json,sys
for p in json.load(sys.stdin)["items"]:
  if not p["metadata"].get("deletionTimestamp"): print(p["metadata"]["namespace"]+"/"+p["metadata"]["name"])' | sort)
for p in $remaining; do
  grep -qx -- "$p" <<<"$on_target" && fail "$p should have been evicted"
done
[ -n "$remaining" ] || fail "every pod was evicted, not only those on $target"

step "while the rule stands the scheduler gives its devices to no new Pod; without it, it does"
pod_with_gpu team-a pinned one-gpu "nodeSelector: {kubernetes.io/hostname: $target}"
scheduled_message() {
  k get pod -n team-a pinned -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].message}'
}
wait_until 60 "the pinned pod's refusal" bash -c "kubectl --kubeconfig $admin_kubeconfig get pod -n team-a pinned -o jsonpath='{.status.conditions[?(@.type==\"PodScheduled\")].message}' | grep -q 'untolerated taint'"
[ -z "$(k get pod -n team-a pinned -o jsonpath='{.spec.nodeName}')" ] ||
  fail "a pod was scheduled onto the devices of a NoExecute DeviceTaintRule: $(scheduled_message)"
k delete devicetaintrule drain >/dev/null
k wait --for=condition=Ready pod/pinned -n team-a --timeout=120s >/dev/null
expect_eq "$(k get pod -n team-a pinned -o jsonpath='{.spec.nodeName}')" "$target" "the pinned pod's node"
echo "PASS"
