#!/usr/bin/env bash
# Fair sharing (issue 22): the DeviceSharingPolicy `default` as an admin applies it orders the
# scheduler's queue. Two tenants weighted 3:1 on a saturated node of four devices: team-a fills
# the node first, then the freed devices go by share, not by arrival (team-b's later Pods before
# team-a's earlier ones), `draplane queue` shows that order and the shares, the scheduler reports
# the shares in the policy's status and its metrics, and a PriorityClass-1000 Pod still goes
# before every lower band. The real `draplane serve` (its embedded scheduler) and kubectl.
# Usage: scheduler_fair_share_e2e.sh DRAPLANE SOURCE_DIR
set -euo pipefail
DRAPLANE=$1
# shellcheck source=tests/e2e/scheduler_lib.sh
source "$(dirname "$0")/scheduler_lib.sh"

queue() { "$DRAPLANE" queue --kubeconfig "$admin_kubeconfig" "$@"; }

step "control plane, one node of four devices, two tenants"
serve_extra=(--metrics-tenants team-a,team-b)
start_control_plane embedded
device_nodes 1 4 "$sched_work/nodes.json"
k create --validate=false -f "$sched_work/nodes.json" >/dev/null || fail "nodes"
for ns in team-a team-b; do
  k create namespace "$ns" >/dev/null
  k apply -f - >/dev/null <<EOF || fail "template of $ns"
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one-device, namespace: $ns}
spec:
  spec:
    devices:
      requests:
      - name: dev
        exactly: {deviceClassName: dev.example.com}
EOF
done
k apply -f - >/dev/null <<EOF || fail "class and policy"
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: dev.example.com}
spec:
  selectors:
  - cel: {expression: 'device.driver == "dev.example.com"'}
---
apiVersion: draplane.dev/v1alpha1
kind: DeviceSharingPolicy
metadata: {name: default}
spec:
  domains:
  - name: devices
    deviceClasses: [dev.example.com]
  tenants:
  - {namespaces: [team-a], weight: 3}
  - {namespaces: [team-b], weight: 1}
  usage: {historyFraction: 0}
EOF
policy_reason() {
  k get devicesharingpolicy default -o jsonpath='{.status.conditions[?(@.type=="Ready")].reason}'
}
in_force() { [ "$(policy_reason)" = InForce ]; }
wait_until 60 "the scheduler to report the policy in force" in_force

step "a DeviceClass the cluster does not have is named in the policy's Ready message"
k patch devicesharingpolicy default --type=json \
  -p '[{"op":"add","path":"/spec/domains/0/deviceClasses/-","value":"no-such.example.com"}]' >/dev/null
names_unknown() {
  k get devicesharingpolicy default -o jsonpath='{.status.conditions[?(@.type=="Ready")].message}' |
    grep -q "DeviceClasses not found, counting for nothing until they exist: no-such.example.com"
}
wait_until 60 "the unknown class in the Ready message" names_unknown
k patch devicesharingpolicy default --type=json \
  -p '[{"op":"remove","path":"/spec/domains/0/deviceClasses/1"}]' >/dev/null

# pod NS NAME [CLASS]: a Pod with one device from its namespace's template.
pod() { template_pod "$@" >/dev/null || fail "pod $1/$2"; }

step "team-a fills the node; then both tenants wait, team-a's Pods first"
for i in 0 1 2 3; do pod team-a "a-$i"; done
for i in 0 1 2 3; do wait_until 60 "a-$i bound" pod_bound -n team-a "a-$i"; done
pod team-a a-4
pod team-a a-5
wait_until 60 "a-4 attempted" has_pending_message -n team-a a-4
wait_until 60 "a-5 attempted" has_pending_message -n team-a a-5
pod team-b b-0
pod team-b b-1
wait_until 60 "b-0 attempted" has_pending_message -n team-b b-0
wait_until 60 "b-1 attempted" has_pending_message -n team-b b-1

step "the waiting Pods' messages say their share and position"
# a-5 failed before team-b had a Pod (team-a's fair share was all of it); b-1 after b-0 and
# team-a's two, of which only b-0 goes before it.
msg=$(pod_pending_message -n team-a a-5)
expect_contains "$msg" "; queued: tenant team-a share 1.00 of fair 1.00, position 2 of 2 in band 0" \
  "a-5's message"
msg=$(pod_pending_message -n team-b b-1)
expect_contains "$msg" "; queued: tenant team-b share 0.00 of fair 0.25, position 2 of 4 in band 0" \
  "b-1's message"

step "draplane queue: team-b (share 0 of fair 0.25) before team-a (1.00 of fair 0.75)"
out=$(queue) || fail "draplane queue: $out"
echo "$out"
order=$(awk '$1 ~ /^[0-9]+$/ && $4 ~ /^[ab]-/ {print $3 "/" $4}' <<<"$out" | tr '\n' ' ')
expect_eq "$order" "team-b/b-0 team-b/b-1 team-a/a-4 team-a/a-5 " "the queue's order"$'\n'"$out"
expect_contains "$out" "POSITION  PRIORITY  NAMESPACE  POD"
row=$(grep -E '^1 +0 +team-b +b-0 ' <<<"$out") || fail "b-0's row:"$'\n'"$out"
expect_eq "$(awk '{print $5, $6}' <<<"$row")" "0.00 0.25" "b-0's share and fair share"
row=$(grep -E '^3 +0 +team-a +a-4 ' <<<"$out") || fail "a-4's row:"$'\n'"$out"
expect_eq "$(awk '{print $5, $6}' <<<"$row")" "1.33 0.75" "a-4's share and fair share"
expect_contains "$out" "devices  4         team-a  3       0.75  1.00     0.00     1.33            2        0"
expect_contains "$out" "devices  4         team-b  1       0.25  0.00     0.00     0.00            2        0"
out=$(queue -n team-b -o wide) || fail "draplane queue -n team-b: $out"
expect_contains "$out" "WEIGHT  DOMAINS"
grep -q "team-a" <<<"$out" && fail "-n team-b shows team-a:"$'\n'"$out"
expect_contains "$out" "2         0         team-b     b-1"
if out=$(queue --domain gpus 2>&1); then fail "an unknown domain was accepted: $out"; fi
expect_contains "$out" 'DeviceSharingPolicy default has no domain "gpus"'

# A Pod moved by an event while its backoff runs (1 s after its attempt) waits in the backoff
# queue (scheduler_priority_e2e.sh says more): let the backoffs expire before freeing devices.
sleep 2
step "a freed device goes to team-b, though team-a's Pods came first"
k -n team-a delete pod a-0 --wait=false >/dev/null
wait_until 60 "b-0 bound" pod_bound -n team-b b-0
pod_bound -n team-a a-4 && fail "a-4 took the freed device from the lower share"
pod_bound -n team-a a-5 && fail "a-5 took the freed device from the lower share"
sleep 2
step "the next goes to team-a: 2 of 4 at weight 3 (0.67 of fair) below team-b's 1 of 4 at 1 (1.00)"
k -n team-a delete pod a-1 --wait=false >/dev/null
wait_until 60 "a-4 bound" pod_bound -n team-a a-4
pod_bound -n team-b b-1 && fail "b-1 took the freed device above its fair share"

step "the policy's status and the metrics report the shares"
tenant_current() {
  k get devicesharingpolicy default \
    -o jsonpath="{.status.domains[0].tenants[?(@.namespace==\"$1\")].current}"
}
b_quarter() { [ "$(tenant_current team-b)" = 250m ] && [ "$(tenant_current team-a)" = 750m ]; }
wait_until 60 "the status to show team-a 3/4 and team-b 1/4 of the devices" b_quarter
expect_eq "$(k get devicesharingpolicy default -o jsonpath='{.status.domains[0].capacityUnits}')" \
  "4" "capacity units"
metric_line() {
  k get --raw /metrics | grep -F "draplane_tenant_share{domain=\"devices\",kind=\"current\",tenant=\"team-b\"} 0.25"
}
wait_until 60 "draplane_tenant_share for team-b" metric_line

step "a PriorityClass-1000 Pod of the higher-share tenant goes before the lower band"
k create priorityclass urgent --value=1000 >/dev/null || fail "urgent"
pod team-a a-urgent urgent
wait_until 60 "a-urgent attempted" has_pending_message -n team-a a-urgent
sleep 2
k -n team-b delete pod b-0 --wait=false >/dev/null
wait_until 60 "a-urgent bound" pod_bound -n team-a a-urgent
pod_bound -n team-b b-1 && fail "b-1 took the device before the 1000 band"

step "other policies are reported as not in force"
k apply -f - >/dev/null <<EOF || fail "a second policy"
apiVersion: draplane.dev/v1alpha1
kind: DeviceSharingPolicy
metadata: {name: experiment}
spec:
  domains: [{name: devices, deviceClasses: [dev.example.com]}]
EOF
not_default() {
  [ "$(k get devicesharingpolicy experiment \
    -o jsonpath='{.status.conditions[?(@.type=="Ready")].reason}')" = NotDefault ]
}
wait_until 60 "experiment's status NotDefault" not_default
echo "PASS"
