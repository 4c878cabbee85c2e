#!/usr/bin/env bash
# End to end: the Event TTL (`draplane serve --event-ttl`, kube-apiserver's --event-ttl) on the
# real server (SQLite store) with the real kubectl: core/v1 and events.k8s.io/v1 Events (one
# storage, each listed by both APIs) go once nobody has written them for the TTL, other objects
# stay, the expiries are counted in /metrics, and a bad TTL is refused naming the flag.
#
# Usage: event_ttl_e2e.sh DRAPLANE_BINARY SOURCE_DIR
set -euo pipefail
DRAPLANE=$1
SRC=$2
source "$SRC/tests/e2e/lib.sh"

step "a TTL that does not parse is refused"
# (bounded: a serve that took the flag would run until stopped)
if timeout 60 "$DRAPLANE" serve --listen 127.0.0.1:0 --data-dir "$e2e_work/refused" --event-ttl soon \
  >/dev/null 2>"$e2e_work/refused.err"; then
  fail "serve accepted --event-ttl soon"
fi
expect_contains "$(cat "$e2e_work/refused.err")" "--event-ttl"

# Long enough that the Events are seen before they go on a loaded machine.
start_server "$e2e_work/data" --event-ttl 10s
k() { kubectl --kubeconfig "$admin_kubeconfig" "$@"; }

step "Events of both APIs and a namespace are created"
k create namespace team-a >/dev/null
k apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Event
metadata:
  name: trainer-0.core
  namespace: team-a
involvedObject: {apiVersion: v1, kind: Pod, name: trainer-0, namespace: team-a}
reason: FailedScheduling
message: written by event_ttl_e2e.sh
type: Warning
source: {component: event-ttl-e2e}
count: 1
---
apiVersion: events.k8s.io/v1
kind: Event
metadata:
  name: trainer-0.v1
  namespace: team-a
eventTime: "2026-01-01T00:00:00.000000Z"
reportingController: draplane.dev/event-ttl-e2e
reportingInstance: event-ttl-e2e-1
action: Scheduling
reason: FailedScheduling
note: written by event_ttl_e2e.sh
type: Warning
regarding: {apiVersion: v1, kind: Pod, name: trainer-0, namespace: team-a}
YAML
# One storage, two APIs (api/events.h): each API lists both Events.
core_names=$(k get events -n team-a -o name)
v1_names=$(k get events.v1.events.k8s.io -n team-a -o name)
for name in trainer-0.core trainer-0.v1; do
  expect_contains "$core_names" "$name"
  expect_contains "$v1_names" "$name"
done

step "both Events go after their TTL; the namespace stays"
deadline=$((SECONDS + 60))
until [ -z "$(k get events -n team-a -o name)" ] &&
  [ -z "$(k get events.v1.events.k8s.io -n team-a -o name)" ]; do
  [ $SECONDS -lt $deadline ] || fail "the Events are still there 60 s after a 10 s TTL"
  sleep 0.5
done
k get namespace team-a >/dev/null || fail "the namespace went with the Events"
metrics=$(k get --raw /metrics)
expect_contains "$metrics" 'draplane_events_expired_total{resource="core/events"} 2'

stop_server
echo "PASS"
