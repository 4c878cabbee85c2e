#!/usr/bin/env bash
# Calibration of the simulator (issue 21): the same small trace
#   (a) through the real `draplane serve` (embedded scheduler and claim controllers, one simulated
#       node agent per profile node), played by `draplane sim replay` in accelerated real time, and
#   (b) through `draplane sim run` in virtual time
# must give the same placements (node, devices, firstAvailable tier per Pod), the same
# unscheduled Pods, and the same per-tenant counts. Then `draplane sim record` turns the live
# cluster's Pods back into a trace that `sim run` accepts. Last, two Pods are started on the live
# cluster and the issue's kubectl dump (`kubectl get nodes,deviceclasses,resourceslices,
# resourceclaims,pods -A -o yaml`) is the cluster of a `sim run`: the dump's running Pods keep
# their devices (no new Pod gets them, so two of the four new Pods fall back to A100 pairs), its
# pending Pod is workload that ends unscheduled, saying why.
#
# Usage: sim_calibration_e2e.sh DRAPLANE_BINARY SOURCE_DIR
set -euo pipefail
DRAPLANE=$1
SRC=$2
source "$SRC/tests/e2e/lib.sh"
data="$SRC/tests/sim/calibration"
speed=${DRAPLANE_SIM_SPEED:-120}

k() { kubectl --kubeconfig "$admin_kubeconfig" "$@"; }

# live_run DATA_DIR SPEED: a fresh `draplane serve` with simulated node agents, the trace replayed
# on it at SPEED into $e2e_work/live.json. The server stays up for the steps after.
live_run() {
  local fifo="$e2e_work/ready.$RANDOM.fifo"
  mkfifo "$fifo"
  "$DRAPLANE" serve --listen 127.0.0.1:0 --data-dir "$1" \
    --simulate-nodes "$data/profile.yaml" >"$fifo" 2>>"$e2e_work/server.log" &
  server_pid=$!
  exec {server_out}<"$fifo"
  read -r -t 120 -u "$server_out" line || fail "draplane serve did not print its ready line"
  case "$line" in ready:*) ;; *) fail "unexpected first line: $line" ;; esac
  admin_kubeconfig=${line##*kubeconfig=}
  k apply -f "$data/classes.yaml" >/dev/null
  local deadline=$((SECONDS + 120))
  until [ "$(k get resourceslices -o name 2>/dev/null | wc -l)" -eq 5 ]; do
    [ $SECONDS -lt $deadline ] || fail "the agents did not publish 5 slices"
    sleep 0.2
  done
  step "replay the trace live at ${2}x"
  "$DRAPLANE" sim replay --kubeconfig "$admin_kubeconfig" --workload "$data/trace.yaml" \
    --speed "$2" --placements-file "$e2e_work/live.json" | tee "$e2e_work/replay.txt"
}

# compare: same placements, same unscheduled Pods, same per-tenant counts (live.json, sim.json).
compare() {
python3 - "$e2e_work/live.json" "$e2e_work/sim.json" <<'EOF'
import json, sys
live = {p["pod"]: p for p in json.load(open(sys.argv[1]))}
sim = {p["pod"]: p for p in json.load(open(sys.argv[2]))}
def outcome(p):
    if "node" in p:
        return ("bound", p["node"], tuple(sorted(p["devices"])), tuple(sorted(p["tiers"])))
    return ("unscheduled", p["reason"].split(":")[0])
ok = sorted(live) == sorted(sim)
if not ok:
    print("pods differ:", sorted(live), sorted(sim))
for name in sorted(set(live) & set(sim)):
    a, b = outcome(live[name]), outcome(sim[name])
    print(("same " if a == b else "DIFF ") + name + ": live " + str(a) + (" sim " + str(b) if a != b else ""))
    ok = ok and a == b
def tenants(pods):
    out = {}
    for p in pods.values():
        t = out.setdefault(p["pod"].split("/")[0], [0, 0])
        t[0] += 1
        t[1] += "node" in p
    return out
print("per tenant (submitted, scheduled): live", tenants(live), "sim", tenants(sim))
ok = ok and tenants(live) == tenants(sim)
bound = sum("node" in p for p in sim.values())
if bound != 9 or len(sim) != 10:
    print("expected 9 of 10 Pods bound, got", bound, "of", len(sim))
    ok = False
sys.exit(0 if ok else 1)
EOF
}

step "run the trace in the simulator"
"$DRAPLANE" sim run --cluster "$data/profile.yaml" --cluster "$data/classes.yaml" \
  --workload "$data/trace.yaml" --placements-file "$e2e_work/sim.json" >"$e2e_work/sim.txt" ||
  fail "sim run failed: $(cat "$e2e_work/sim.txt")"
cat "$e2e_work/sim.txt"

step "draplane serve with simulated node agents"
live_run "$e2e_work/data" "$speed"
step "same placements, same unscheduled Pods, same per-tenant counts"
if ! compare; then
  # Real time against virtual time: the trace keeps every completion a virtual minute from the
  # next arrival, half a second at 120x. A machine busy enough to delay a binding or a deletion
  # by that much changes what the live cluster sees, not what the code decides; a fresh cluster
  # at a quarter of the speed (two seconds of margin) must then agree.
  slower=$(python3 -c "print('%g' % max(1, $speed / 4))")
  echo "the live run at ${speed}x disagreed with the simulator; again on a fresh server at ${slower}x"
  stop_server
  live_run "$e2e_work/data-slower" "$slower"
  step "same placements, same unscheduled Pods, same per-tenant counts (at ${slower}x)"
  compare || fail "the simulator and the live cluster disagree"
fi

step "record the live cluster as a trace and run it"
"$DRAPLANE" sim record --kubeconfig "$admin_kubeconfig" --out "$e2e_work/recorded.yaml"
grep -q "kind: WorkloadTrace" "$e2e_work/recorded.yaml" || fail "no trace recorded"
grep -q "too-big" "$e2e_work/recorded.yaml" || fail "the pending Pod was not recorded"
"$DRAPLANE" sim run --cluster "$data/profile.yaml" --cluster "$data/classes.yaml" \
  --workload "$e2e_work/recorded.yaml" -o json >"$e2e_work/recorded-run.json" ||
  fail "sim run of the recorded trace failed"
python3 - "$e2e_work/recorded-run.json" <<'EOF' || fail "the recorded trace did not run as expected"
import json, sys
r = json.load(open(sys.argv[1]))
print("recorded trace:", r["pods"])
assert r["conservation"]["ok"], r["conservation"]
assert r["pods"]["submitted"] >= 1, r["pods"]
assert r["tenants"]["team-b"]["unscheduled"] == 1, r["tenants"]
EOF

step "a kubectl dump of the live cluster as the simulator's cluster"
for i in 0 1; do
  cat <<EOF
apiVersion: v1
kind: Pod
metadata: {name: held-$i, namespace: team-a}
spec:
  containers: [{name: main, image: server:1, resources: {claims: [{name: gpus}]}}]
  resourceClaims: [{name: gpus, resourceClaimTemplateName: h100-else-a100}]
---
EOF
done | k apply -f - >/dev/null
deadline=$((SECONDS + 120))
until [ "$(k get pods -n team-a held-0 held-1 -o jsonpath='{.items[*].spec.nodeName}' | wc -w)" -eq 2 ]; do
  [ $SECONDS -lt $deadline ] || fail "held-0 and held-1 were not bound"
  sleep 0.2
done
k get nodes,deviceclasses,resourceslices,resourceclaims,pods -A -o yaml >"$e2e_work/dump.yaml"
cat >"$e2e_work/dump-trace.yaml" <<'EOF'
apiVersion: draplane.dev/v1alpha1
kind: WorkloadTrace
metadata: {name: on-the-dump}
running:
- {namespace: team-a, name: held-0, remaining: 30m}
claimTemplates:
- apiVersion: resource.k8s.io/v1
  kind: ResourceClaimTemplate
  metadata: {name: h100-else-a100}
  spec:
    spec:
      devices:
        requests:
        - name: gpus
          firstAvailable:
          - name: h100
            deviceClassName: gpu.nvidia.com
            selectors:
            - cel: {expression: 'device.attributes["gpu.nvidia.com"].productName.startsWith("NVIDIA H100")'}
          - name: a100-pair
            deviceClassName: gpu.nvidia.com
            count: 2
            selectors:
            - cel: {expression: 'device.attributes["gpu.nvidia.com"].productName.startsWith("NVIDIA A100")'}
arrivals:
- at: 0s
  namespace: team-a
  count: 4
  duration: 10m
  pod:
    metadata: {name: new}
    spec:
      containers: [{name: main, image: server:1, resources: {claims: [{name: gpus}]}}]
      resourceClaims: [{name: gpus, resourceClaimTemplateName: h100-else-a100}]
EOF
"$DRAPLANE" sim run --cluster "$e2e_work/dump.yaml" --workload "$e2e_work/dump-trace.yaml" \
  -o json --placements-file "$e2e_work/dump-placements.json" >"$e2e_work/dump-run.json" \
  2>"$e2e_work/dump-run.err" || fail "sim run on the dump failed: $(cat "$e2e_work/dump-run.err")"
python3 - "$e2e_work/dump.yaml" "$e2e_work/dump-run.json" "$e2e_work/dump-placements.json" <<'EOF' || fail "the run on the dump is wrong"
import json, sys, yaml
dump = yaml.safe_load(open(sys.argv[1]))
r = json.load(open(sys.argv[2]))
placements = json.load(open(sys.argv[3]))
held = set()
for o in dump["items"]:
    if o["kind"] != "ResourceClaim" or o["metadata"]["namespace"] != "team-a":
        continue
    allocation = o.get("status", {}).get("allocation") or {}
    for res in allocation.get("devices", {}).get("results", []):
        held.add(res["driver"] + "/" + res["pool"] + "/" + res["device"])
print("held by the dump's running Pods:", sorted(held))
print("run on the dump:", r["pods"], "fallback", r["fallback"], r["unscheduledReasons"])
assert len(held) == 2, held
assert r["conservation"]["ok"], r["conservation"]
assert r["nodes"] == 5, r["nodes"]
# The four new Pods, and the dump's pending too-big (workload from time zero).
assert r["pods"]["submitted"] == 5 and r["pods"]["scheduled"] == 4, r["pods"]
assert r["tenants"]["team-b"]["unscheduled"] == 1, r["tenants"]
assert r["unscheduledReasons"][0]["reason"] == "Unschedulable", r["unscheduledReasons"]
new = [p for p in placements if p["pod"].startswith("team-a/new-")]
assert len(new) == 4 and all("node" in p for p in new), placements
taken = [d for p in new for d in p["devices"]]
assert not held & set(taken), (held, taken)
assert len(taken) == len(set(taken)), taken
# Two H100s were left: two Pods get one each, the other two fall back to A100 pairs.
assert sorted(len(p["devices"]) for p in new) == [1, 1, 2, 2], new
assert sorted(t for p in new for t in p["tiers"]) == ["gpus -> a100-pair"] * 2 + ["gpus -> h100"] * 2, new
# The fallback figures count every allocation the run saw, the dump's two H100s included.
assert r["fallback"]["byTier"] == {"0": 4, "1": 2}, r["fallback"]
EOF
echo "PASS"
