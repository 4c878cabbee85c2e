#!/usr/bin/env bash
# Pod priority (issue 22): scheduling.k8s.io/v1 PriorityClass served with upstream's rules (the
# system classes, the reserved prefix, the user range, one global default, an immutable value,
# undeletable system classes), the Priority admission (priorityClassName -> spec.priority and
# preemptionPolicy, the global default, an unknown class or a self-set priority refused), and the
# scheduler's queue serving the higher band first: on a saturated node the PriorityClass-1000 Pod
# that arrived last takes the first device that frees up. kubectl throughout; the scheduler and
# the controller manager run as separate processes (`draplane scheduler`).
# Usage: scheduler_priority_e2e.sh DRAPLANE SOURCE_DIR
set -euo pipefail
DRAPLANE=$1
# shellcheck source=tests/e2e/scheduler_lib.sh
source "$(dirname "$0")/scheduler_lib.sh"

# refused WHAT EXPECTED COMMAND...: COMMAND must fail and say EXPECTED.
refused() {
  local what=$1 expected=$2 out
  shift 2
  if out=$("$@" 2>&1); then fail "$what was accepted: $out"; fi
  expect_contains "$out" "$expected" "$what"
}

step "control plane"
start_control_plane
device_nodes 1 2 "$sched_work/nodes.json"
k create --validate=false -f "$sched_work/nodes.json" >/dev/null || fail "nodes"
k create namespace team-a >/dev/null
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
metadata: {name: one-device, namespace: team-a}
spec:
  spec:
    devices:
      requests:
      - name: dev
        exactly: {deviceClassName: dev.example.com}
EOF

step "the system classes exist and are protected"
out=$(k get priorityclasses --no-headers)
expect_contains "$out" "system-cluster-critical   2000000000   false"
expect_contains "$out" "system-node-critical      2000001000   false"
refused "deleting a system class" "this is a system priority class and cannot be deleted" \
  k delete priorityclass system-node-critical
refused "a system- name" "priority class names with 'system-' prefix are reserved for system use only" \
  k create priorityclass system-mine --value=5

step "user classes: range, one global default, immutable value"
k create priorityclass urgent --value=1000 --description="on call" >/dev/null || fail "urgent"
k create priorityclass batch --value=10 --global-default >/dev/null || fail "batch"
refused "a value over one billion" "maximum allowed value of a user defined priority is 1000000000" \
  k create priorityclass huge --value=1000000001
refused "a second global default" "PriorityClass batch is already marked as default. Only one default can exist" \
  k create priorityclass other-default --value=5 --global-default
refused "changing a value" "value: Forbidden: may not be changed in an update." \
  k patch priorityclass urgent --type=merge -p '{"value":2000}'
expect_eq "$(k get priorityclass urgent -o jsonpath='{.value} {.preemptionPolicy}')" \
  "1000 PreemptLowerPriority" "urgent"
k patch priorityclass urgent --type=merge -p '{"description":"paged"}' >/dev/null ||
  fail "the description may change"

# pod NAME [CLASS]: a Pod of team-a with one device from the template.
pod() { template_pod team-a "$@"; }

step "Priority admission"
refused "an unknown class" 'pods "gold-1" is forbidden: no PriorityClass with name gold was found' \
  pod gold-1 gold
refused "a self-set priority" "the integer value of priority (7) must not be provided in pod spec" \
  k -n team-a run self-set --image=x --overrides='{"spec":{"priority":7}}'
pod low-0 >/dev/null || fail "low-0"
expect_eq "$(k -n team-a get pod low-0 -o jsonpath='{.spec.priorityClassName} {.spec.priority} {.spec.preemptionPolicy}')" \
  "batch 10 PreemptLowerPriority" "the global default"

step "a saturated node: the 1000 band goes first"
pod low-1 >/dev/null || fail "low-1"
wait_until 60 "low-0 bound" pod_bound -n team-a low-0
wait_until 60 "low-1 bound" pod_bound -n team-a low-1
for i in 2 3 4; do pod "low-$i" >/dev/null || fail "low-$i"; done
for i in 2 3 4; do wait_until 60 "low-$i attempted" has_pending_message -n team-a "low-$i"; done
pod urgent-0 urgent >/dev/null || fail "urgent-0"
expect_eq "$(k -n team-a get pod urgent-0 -o jsonpath='{.spec.priority}')" 1000 "urgent-0's priority"
wait_until 60 "urgent-0 attempted" has_pending_message -n team-a urgent-0
# The bands are compared in the active queue only. A Pod moved out of the unschedulable pool by
# an event while its backoff runs (1 s after its first attempt) waits in the backoff queue, so
# freeing the device within that second would hand it to the low band, whose backoff expired
# (upstream's requeuePodWithQueueingStrategy does the same). Let urgent-0's backoff expire
# first, as on a saturated cluster where the band waits far longer than that.
sleep 2
k -n team-a delete pod low-0 --wait=false >/dev/null
wait_until 60 "urgent-0 bound" pod_bound -n team-a urgent-0
for i in 2 3 4; do
  pod_bound -n team-a "low-$i" && fail "low-$i took the freed device before the 1000 band"
done
k -n team-a delete pod low-1 --wait=false >/dev/null
one_low_bound() {
  local i n=0
  for i in 2 3 4; do ! pod_bound -n team-a "low-$i" || n=$((n + 1)); done
  [ "$n" = 1 ]
}
wait_until 60 "one of the lower band bound on the next freed device" one_low_bound
echo "PASS"
