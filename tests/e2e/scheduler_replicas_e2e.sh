#!/usr/bin/env bash
# Two scheduler replicas without leader election against one server, one controller manager,
# PODS Pods (default 5000) with template claims on NODES nodes x DEVICES devices (default
# 100 x 40 = 4000 devices): every Pod that fits is bound, the rest stay Pending, and no device is
# ever allocated twice (checked from the final claim statuses). The replicas race for the same
# Pods and devices; allocations are confirmed in the server's write order (scheduler.md,
# "Replicas").
# Usage: scheduler_replicas_e2e.sh DRAPLANE SOURCE_DIR
# Environment: DRAPLANE_E2E_REPLICA_PODS, DRAPLANE_E2E_REPLICA_NODES, DRAPLANE_E2E_REPLICA_DEVICES
set -euo pipefail
DRAPLANE=$1
PODS=${DRAPLANE_E2E_REPLICA_PODS:-5000}
NODES=${DRAPLANE_E2E_REPLICA_NODES:-100}
DEVICES=${DRAPLANE_E2E_REPLICA_DEVICES:-40}
# shellcheck source=tests/e2e/scheduler_lib.sh
source "$(dirname "$0")/scheduler_lib.sh"
fits=$((NODES * DEVICES < PODS ? NODES * DEVICES : PODS))

step "control plane with two scheduler replicas"
start_control_plane 2

step "$NODES nodes with $DEVICES devices each"
device_nodes "$NODES" "$DEVICES" "$sched_work/nodes.json"
k create --validate=false -f "$sched_work/nodes.json" >/dev/null || fail "nodes"
k apply -f - >/dev/null <<EOF || fail "class and template"
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
EOF

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

bound_count() {
  k get pods -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -c . || true
}
step "waiting for $fits pods to be bound"
# Guards against a hang, inside ctest's TIMEOUT (600 s) so that a stuck run ends with its own
# message (how many Pods were bound) rather than ctest's kill.
deadline=$((SECONDS + 420))
while [ "$(bound_count)" -lt "$fits" ]; do
  [ $SECONDS -lt $deadline ] || fail "only $(bound_count) of $fits pods bound"
  sleep 2
done

step "checking the final claim statuses"
# Claims whose writer lost a race are being given back; the final state is reached when every
# allocated claim serves a bound pod.
check_claims() {
  k get resourceclaims -o json >"$sched_work/claims.json" || return 1
  k get pods -o json >"$sched_work/pods.json" || return 1
  python3 - "$sched_work/claims.json" "$sched_work/pods.json" "$fits" >"$sched_work/check.txt" 2>&1 <<'PY'
import json, sys
claims = json.load(open(sys.argv[1]))["items"]
pods = {p["metadata"]["name"]: p for p in json.load(open(sys.argv[2]))["items"]}
fits = int(sys.argv[3])
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
    for ref in c["status"].get("reservedFor", []):
        node = pods.get(ref["name"], {}).get("spec", {}).get("nodeName", "")
        if node and node != alloc["devices"]["results"][0]["pool"]:
            sys.exit(f"claim {c['metadata']['name']} on {alloc['devices']['results'][0]['pool']} "
                     f"but pod {ref['name']} on {node}")
bound = sum(1 for p in pods.values() if p["spec"].get("nodeName"))
if bound != fits:
    sys.exit(f"{bound} pods bound, expected {fits}")
if allocated != bound:
    sys.exit(f"{allocated} claims allocated for {bound} bound pods")
print(f"{allocated} claims allocated, {bound} pods bound, {len(held)} devices, none twice")
PY
}
deadline=$((SECONDS + 120))
until check_claims; do
  [ $SECONDS -lt $deadline ] || fail "final claim statuses: $(cat "$sched_work/check.txt")"
  sleep 1
done
cat "$sched_work/check.txt"
races=$(cat "$sched_work"/scheduler-*.log | grep -c "allocated elsewhere in the meantime\|already assigned" || true)
echo "bindings a replica lost to the other: $races"
echo "PASS"
