#!/usr/bin/env bash
# Two scheduler replicas without leader election never spend an Allocation-mode quota's last unit
# twice (issue 20, docs/design/holdings.md "Two replicas never overspend"): one server, one
# controller manager, a quota of QUOTA devices (default 50) in the namespace, PODS Pods (default
# 1000) asking for one device each, on NODES nodes x DEVICES devices (default 25 x 8 = 200, four
# times the quota). While the replicas race, no more than QUOTA Pods are ever bound (polled
# throughout); at the end exactly QUOTA claims are allocated, each serving a bound Pod, no device
# twice, the quota's status.used says QUOTA, and every other Pod is Pending with the quota named.
# Usage: scheduler_quota_replicas_e2e.sh DRAPLANE SOURCE_DIR
# Environment: DRAPLANE_E2E_QUOTA_PODS, DRAPLANE_E2E_QUOTA_LIMIT, DRAPLANE_E2E_QUOTA_NODES,
#              DRAPLANE_E2E_QUOTA_DEVICES
set -euo pipefail
DRAPLANE=$1
PODS=${DRAPLANE_E2E_QUOTA_PODS:-1000}
QUOTA=${DRAPLANE_E2E_QUOTA_LIMIT:-50}
NODES=${DRAPLANE_E2E_QUOTA_NODES:-25}
DEVICES=${DRAPLANE_E2E_QUOTA_DEVICES:-8}
# shellcheck source=tests/e2e/scheduler_lib.sh
source "$(dirname "$0")/scheduler_lib.sh"
key=dev.example.com.deviceclass.resource.k8s.io/devices

step "control plane with two scheduler replicas"
start_control_plane 2

step "$NODES nodes with $DEVICES devices each, an Allocation-mode quota of $QUOTA"
device_nodes "$NODES" "$DEVICES" "$sched_work/nodes.json"
k create --validate=false -f "$sched_work/nodes.json" >/dev/null || fail "nodes"
k apply -f - >/dev/null <<EOF || fail "class, template and quota"
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: dev.example.com}
spec:
  selectors:
  - cel: {expression: 'device.driver == "dev.example.com"'}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one-device, namespace: default}
spec:
  spec:
    devices:
      requests:
      - name: dev
        exactly: {deviceClassName: dev.example.com}
---
apiVersion: v1
kind: ResourceQuota
metadata:
  name: devices
  namespace: default
  annotations: {draplane.dev/device-quota-mode: Allocation}
spec:
  hard: {$key: "$QUOTA"}
EOF
used() {
  k get resourcequota devices -o json |
    python3 -c "import json,sys; print(json.load(sys.stdin).get('status',{}).get('used',{}).get(sys.argv[1],''))" "$key"
}
wait_until 60 "quota synced" bash -c "[ \"\$(kubectl --kubeconfig '$admin_kubeconfig' get resourcequota devices -o jsonpath='{.status.used}')\" != '' ]"

step "$PODS pods"
{
  echo '{"apiVersion":"v1","kind":"List","items":['
  for i in $(seq 1 "$PODS"); do
    [ "$i" = 1 ] || echo ','
    echo -n "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p-$i\"},\"spec\":{\"resourceClaims\":[{\"name\":\"dev\",\"resourceClaimTemplateName\":\"one-device\"}],\"containers\":[{\"name\":\"c\",\"image\":\"pause\",\"resources\":{\"claims\":[{\"name\":\"dev\"}]}}]}}"
  done
  echo ']}'
} >"$sched_work/pods.json"
k create --validate=false -f "$sched_work/pods.json" >/dev/null || fail "pods"

# Polled while the replicas race: bound Pods never exceed the quota. Settled: QUOTA bound and
# every other Pod told that the quota refused it.
state() {
  k get pods -o json >"$sched_work/pods-now.json" || return 2
  python3 - "$sched_work/pods-now.json" "$QUOTA" <<'PY'
import json, sys
pods = json.load(open(sys.argv[1]))["items"]
quota = int(sys.argv[2])
bound = sum(1 for p in pods if p["spec"].get("nodeName"))
refused = 0
for p in pods:
    for c in p.get("status", {}).get("conditions", []):
        if c["type"] == "PodScheduled" and c["status"] == "False" and "refused by quota" in c.get("message", ""):
            refused += 1
print(f"{bound} bound, {refused} pending on the quota")
if bound > quota:
    sys.exit(3)
sys.exit(0 if bound == quota and refused == len(pods) - quota else 1)
PY
}
step "racing: never more than $QUOTA pods bound"
# Guards against a hang, inside ctest's TIMEOUT (600 s) so that a stuck run ends with its own
# message (how many Pods were bound) rather than ctest's kill.
deadline=$((SECONDS + 420))
polls=0
while true; do
  rc=0
  out=$(state) || rc=$?
  polls=$((polls + 1))
  [ $rc -ne 3 ] || fail "over the quota: $out"
  [ $rc -ne 0 ] || break
  [ $SECONDS -lt $deadline ] || fail "not settled: $out"
  sleep 1
done
echo "settled after $polls polls: $out"

step "checking the final claim statuses and the quota"
check_claims() {
  k get resourceclaims -o json >"$sched_work/claims.json" || return 1
  k get pods -o json >"$sched_work/pods.json" || return 1
  python3 - "$sched_work/claims.json" "$sched_work/pods.json" "$QUOTA" >"$sched_work/check.txt" 2>&1 <<'PY'
import json, sys
claims = json.load(open(sys.argv[1]))["items"]
pods = {p["metadata"]["name"]: p for p in json.load(open(sys.argv[2]))["items"]}
quota = int(sys.argv[3])
held = {}
allocated = 0
for c in claims:
    alloc = (c.get("status") or {}).get("allocation")
    if not alloc:
        continue
    allocated += 1
    for r in alloc["devices"]["results"]:
        key = (r["driver"], r["pool"], r["device"])
        if key in held:
            sys.exit(f"device {key} allocated to {held[key]} and {c['metadata']['name']}")
        held[key] = c["metadata"]["name"]
    users = [ref["name"] for ref in c["status"].get("reservedFor", [])]
    if not any(pods.get(u, {}).get("spec", {}).get("nodeName") for u in users):
        sys.exit(f"claim {c['metadata']['name']} allocated but serves no bound pod")
if allocated != quota:
    sys.exit(f"{allocated} claims allocated, quota {quota}")
print(f"{allocated} claims allocated, each for a bound pod, no device twice")
PY
}
deadline=$((SECONDS + 120))
until check_claims; do
  [ $SECONDS -lt $deadline ] || fail "final claim statuses: $(cat "$sched_work/check.txt")"
  sleep 1
done
cat "$sched_work/check.txt"
wait_until 120 "quota used $QUOTA" bash -c "[ \"\$(kubectl --kubeconfig '$admin_kubeconfig' get resourcequota devices -o json | python3 -c \"import json,sys; print(json.load(sys.stdin)['status']['used']['$key'])\")\" = $QUOTA ]"
echo "quota used: $(used)"
refusals=$(cat "$sched_work"/scheduler-*.log | grep -c "quota" || true)
echo "scheduler log lines naming the quota: $refusals"
echo "PASS"
