#!/usr/bin/env bash
# Calibration of the simulator (issue 21): the same small trace
#   (a) through the real `draplane serve` (embedded scheduler and claim controllers, one simulated
#       node agent per profile node), played by `draplane sim replay` in accelerated real time, and
#   (b) through `draplane sim run` in virtual time
# must give the same placements (node, devices, firstAvailable tier per Pod), the same
# unscheduled Pods, and the same per-tenant counts. Then `draplane sim record` turns the live
# cluster's Pods back into a trace that `sim run` accepts.
#
# Usage: sim_calibration_e2e.sh DRAPLANE_BINARY SOURCE_DIR
set -euo pipefail
DRAPLANE=$1
SRC=$2
source "$SRC/tests/e2e/lib.sh"
data="$SRC/tests/sim/calibration"
speed=${DRAPLANE_SIM_SPEED:-120}

k() { kubectl --kubeconfig "$admin_kubeconfig" "$@"; }

step "draplane serve with simulated node agents"
fifo="$e2e_work/ready.fifo"
mkfifo "$fifo"
"$DRAPLANE" serve --listen 127.0.0.1:0 --data-dir "$e2e_work/data" \
  --simulate-nodes "$data/profile.yaml" >"$fifo" 2>>"$e2e_work/server.log" &
server_pid=$!
exec {server_out}<"$fifo"
read -r -t 120 -u "$server_out" line || fail "draplane serve did not print its ready line"
case "$line" in ready:*) ;; *) fail "unexpected first line: $line" ;; esac
admin_kubeconfig=${line##*kubeconfig=}
k apply -f "$data/classes.yaml" >/dev/null
deadline=$((SECONDS + 120))
until [ "$(k get resourceslices -o name 2>/dev/null | wc -l)" -eq 5 ]; do
  [ $SECONDS -lt $deadline ] || fail "the agents did not publish 5 slices"
  sleep 0.2
done

step "replay the trace live at ${speed}x"
"$DRAPLANE" sim replay --kubeconfig "$admin_kubeconfig" --workload "$data/trace.yaml" \
  --speed "$speed" --placements-file "$e2e_work/live.json" | tee "$e2e_work/replay.txt"

step "run the trace in the simulator"
"$DRAPLANE" sim run --cluster "$data/profile.yaml" --cluster "$data/classes.yaml" \
  --workload "$data/trace.yaml" --placements-file "$e2e_work/sim.json" >"$e2e_work/sim.txt" ||
  fail "sim run failed: $(cat "$e2e_work/sim.txt")"
cat "$e2e_work/sim.txt"

step "same placements, same unscheduled Pods, same per-tenant counts"
python3 - "$e2e_work/live.json" "$e2e_work/sim.json" <<'EOF' || fail "the simulator and the live cluster disagree"
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
if bound != 8 or len(sim) != 10:
    print("expected 8 of 10 Pods bound, got", bound, "of", len(sim))
    ok = False
sys.exit(0 if ok else 1)
EOF

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
echo "PASS"
