#!/usr/bin/env bash
# End to end: ResourceQuota and AllocationDecision on the real `draplane serve` (SQLite store,
# HTTPS on a free loopback port) with the real kubectl: `kubectl create quota` (a protobuf body),
# `kubectl get/describe quota` with upstream's usage numbers, admission refusing with upstream's
# "exceeded quota" wording, the quota controller giving units back on delete, Allocation mode
# leaving device keys to the scheduler, `count/<resource>` for every namespaced resource the
# server serves (recomputed from the store, admission at the limit, drift corrected by the
# resync), decision records with their table and field selectors, tenant RBAC on both,
# `draplane explain claim`, the retention cap, and records collected with their claims.
#
# Usage: quota_e2e.sh DRAPLANE_BINARY SOURCE_DIR
set -euo pipefail
DRAPLANE=$1
SRC=$2
source "$SRC/tests/e2e/lib.sh"

data="$e2e_work/data"
start_server "$data" --decision-max-per-namespace 3 --quota-resync-period 1s
k() { kubectl --kubeconfig "$admin_kubeconfig" "$@"; }

# poll_until WHAT COMMAND...: reruns COMMAND until it succeeds (a guard against hangs: 60 s).
poll_until() {
  local what=$1
  shift
  local deadline=$((SECONDS + 60))
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || fail "$what: still not true after 60 s"
    sleep 0.2
  done
}
used() {  # used NAMESPACE QUOTA KEY
  k get quota "$2" -n "$1" -o json |
    python3 -c 'import json,sys; print(json.load(sys.stdin).get("status",{}).get("used",{}).get(sys.argv[1],""))' "$3"
}
used_is() { [ "$(used "$1" "$2" "$3")" = "$4" ]; }
claim() {  # claim NAME CLASS COUNT
  cat <<YAML
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: $1
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: $2, count: $3}
YAML
}

step "namespaces and a tenant"
k create namespace team-a >/dev/null
k create namespace team-b >/dev/null
k create rolebinding alice --clusterrole=draplane:tenant --user=alice -n team-a >/dev/null
"$DRAPLANE" kubeconfig --data-dir "$data" --user alice --groups tenants >"$e2e_work/alice.kubeconfig"
alice() { kubectl --kubeconfig "$e2e_work/alice.kubeconfig" "$@"; }

step "kubectl create quota (protobuf) and kubectl get quota"
k create quota devices -n team-a \
  --hard=count/resourceclaims.resource.k8s.io=3,gpu.deviceclass.resource.k8s.io/devices=3 >/dev/null
poll_until "the controller syncs the new quota" used_is team-a devices gpu.deviceclass.resource.k8s.io/devices 0
table=$(k get quota -n team-a)
expect_contains "$table" "REQUEST"
expect_contains "$table" "count/resourceclaims.resource.k8s.io: 0/3, gpu.deviceclass.resource.k8s.io/devices: 0/3"
expect_contains "$(k api-resources)" "quota"

step "admission charges claims as upstream's evaluator does"
claim c1 gpu 1 | k apply -n team-a -f - >/dev/null
claim c2 gpu 2 | k apply -n team-a -f - >/dev/null
expect_contains "$(used team-a devices gpu.deviceclass.resource.k8s.io/devices)" "3"
if out=$(claim c3 gpu 1 | k apply -n team-a -f - 2>&1); then fail "c3 over quota was admitted: $out"; fi
expect_contains "$out" 'resourceclaims.resource.k8s.io "c3" is forbidden: exceeded quota: devices, requested: gpu.deviceclass.resource.k8s.io/devices=1, used: gpu.deviceclass.resource.k8s.io/devices=3, limited: gpu.deviceclass.resource.k8s.io/devices=3'

step "kubectl describe quota prints used/hard"
describe=$(k describe quota devices -n team-a)
expect_contains "$describe" "Name:"
expect_contains "$describe" "Resource"
grep -qE '^count/resourceclaims.resource.k8s.io +2 +3$' <<<"$describe" || fail "describe: $describe"
grep -qE '^gpu.deviceclass.resource.k8s.io/devices +3 +3$' <<<"$describe" || fail "describe: $describe"
expect_contains "$(alice describe quota devices -n team-a)" "gpu.deviceclass.resource.k8s.io/devices"

step "deleting a claim gives its units back"
k delete resourceclaim c2 -n team-a >/dev/null
poll_until "replenishment" used_is team-a devices gpu.deviceclass.resource.k8s.io/devices 1
claim c3 gpu 2 | k apply -n team-a -f - >/dev/null

step "Allocation mode: device keys are the scheduler's"
cat <<'YAML' | k apply -n team-b -f - >/dev/null
apiVersion: v1
kind: ResourceQuota
metadata:
  name: devices
  annotations: {draplane.dev/device-quota-mode: Allocation}
spec:
  hard:
    count/resourceclaims.resource.k8s.io: "10"
    h100.deviceclass.resource.k8s.io/devices: "1"
YAML
claim big h100 4 | k apply -n team-b -f - >/dev/null
poll_until "the claim count is charged" used_is team-b devices count/resourceclaims.resource.k8s.io 1
expect_contains "$(used team-b devices h100.deviceclass.resource.k8s.io/devices)" "0"

step "count/<resource> for every namespaced resource kubectl lists, recomputed from the store"
k create namespace team-c >/dev/null
# make_object RESOURCE NAME: one object of RESOURCE (as `kubectl api-resources -o name` prints it)
# in team-c. A resource without an entry fails the test: a new kind needs one here.
make_object() {
  case $1 in
    pods) k run "$2" -n team-c --image=registry.example.com/app:1 --restart=Never ;;
    resourcequotas) k create quota "$2" -n team-c --hard=count/leases.coordination.k8s.io=100 ;;
    leases.coordination.k8s.io)
      printf 'apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata: {name: %s}\nspec: {holderIdentity: x}\n' "$2" |
        k apply -n team-c -f - ;;
    allocationdecisions.draplane.dev)
      printf 'apiVersion: draplane.dev/v1alpha1\nkind: AllocationDecision\nmetadata: {name: %s}\nspec: {schemaVersion: 1, time: "2026-12-01T10:00:00.000000Z", pod: {name: p}, outcome: Unschedulable}\n' "$2" |
        k apply -n team-c -f - ;;
    rolebindings.rbac.authorization.k8s.io)
      k create rolebinding "$2" -n team-c --clusterrole=draplane:tenant --user=carol ;;
    roles.rbac.authorization.k8s.io) k create role "$2" -n team-c --verb=get --resource=pods ;;
    resourceclaims.resource.k8s.io) claim "$2" gpu 1 | k apply -n team-c -f - ;;
    resourceclaimtemplates.resource.k8s.io)
      printf 'apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {name: %s}\nspec: {spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu}}]}}}\n' "$2" |
        k apply -n team-c -f - ;;
    *) fail "no object for $1: add one to make_object" ;;
  esac
}
stored() { k get "$1" -n team-c -o name | wc -l; }
# Upstream's quota ignores events (install.DefaultIgnoredResources); everything else is counted.
resources=$(k api-resources --namespaced=true --verbs=create,list -o name | grep -vE '^events(\.events\.k8s\.io)?$')
expect_contains "$resources" "allocationdecisions.draplane.dev"
hard=""
for r in $resources; do
  make_object "$r" x-1 >/dev/null
  hard+="${hard:+,}count/$r=3"
done
# Objects made before the quota: its first usage comes from the store.
k create quota objects -n team-c --hard="$hard" >/dev/null
for r in $resources; do
  poll_until "count/$r recomputed" used_is team-c objects "count/$r" "$(stored "$r")"
done
expect_contains "$(used team-c objects count/resourcequotas)" "2"
for r in $resources; do
  for i in 2 3 4 5; do
    if out=$(make_object "$r" "x-$i" 2>&1); then continue; fi
    [ "$(stored "$r")" = 3 ] || fail "$r refused with $(stored "$r") stored: $out"
    expect_contains "$out" "is forbidden: exceeded quota: objects, requested: count/$r=1, used: count/$r=3, limited: count/$r=3"
    break
  done
  [ "$(stored "$r")" = 3 ] || fail "count/$r=3 let $(stored "$r") objects in"
done
describe=$(k describe quota objects -n team-c)
grep -qE '^count/roles\.rbac\.authorization\.k8s\.io +3 +3$' <<<"$describe" || fail "describe: $describe"
for r in $resources; do
  [ "$r" = resourcequotas ] || k delete "$r" x-1 -n team-c --wait=false >/dev/null
done
for r in $resources; do
  poll_until "count/$r given back" used_is team-c objects "count/$r" "$(stored "$r")"
done
expect_contains "$(used team-c objects count/pods)" "2"

step "the resync recomputes from the store and corrects drift with an Event"
k patch quota objects -n team-c --subresource=status --type=merge \
  -p '{"status":{"used":{"count/pods":"7"}}}' >/dev/null
poll_until "the drift is corrected" used_is team-c objects count/pods 2
events_are() { k get events -n team-c -o jsonpath='{.items[*].message}' | grep -qF -- "$1"; }
poll_until "a QuotaUsageCorrected Event" events_are "count/pods 7 -> 2"
expect_contains "$(k get events -n team-c)" "QuotaUsageCorrected"

step "decision records: create, table, field selector, immutability"
uid=$(k get resourceclaim c1 -n team-a -o jsonpath='{.metadata.uid}')
decision() {  # decision NAME POD TIME
  cat <<YAML
apiVersion: draplane.dev/v1alpha1
kind: AllocationDecision
metadata:
  name: $1
spec:
  schemaVersion: 1
  time: "$3"
  scheduler: {name: default-scheduler, instance: sched-0}
  pod: {name: $2, uid: $2-uid}
  outcome: Allocated
  nodeName: a100-04
  nodesEvaluated: 4
  nodesFeasible: 2
  claims:
  - name: c1
    uid: $uid
    requests:
    - name: gpu
      subrequest: a100-pair
      deviceClassName: a100
      devices:
      - {driver: gpu.nvidia.com, pool: a100-04, device: gpu-2}
      - {driver: gpu.nvidia.com, pool: a100-04, device: gpu-3}
      tiersNotTaken:
      - subrequest: h100
        reasons:
        - {reason: quota, message: "quota team-a/devices h100.deviceclass.resource.k8s.io/devices 1/1", nodes: [h100-01], nodeCount: 3}
    charges: {a100.deviceclass.resource.k8s.io/devices: "2"}
  policyVersion:
    inputs:
    - {apiVersion: v1, kind: ResourceQuota, namespace: team-a, name: devices, resourceVersion: "42", mode: Allocation}
YAML
}
decision llm-3-a llm-3 2026-12-01T10:00:00.000000Z | k apply -n team-a -f - >/dev/null
decision other-b other 2026-12-01T10:01:00.000000Z | k apply -n team-b -f - >/dev/null
table=$(k get allocationdecisions -n team-a)
expect_contains "$table" "POD"
expect_contains "$table" "CHOSEN"
expect_contains "$table" "gpu/a100-pair:2"
expect_contains "$(k get allocationdecisions -n team-a -o wide)" "gpu/h100(quota)"
expect_contains "$(k get allocationdecisions -n team-a --field-selector spec.pod.name=llm-3)" "llm-3-a"
expect_contains "$(k get draplane -n team-a)" "llm-3-a"
expect_contains "$(k explain allocationdecisions.spec.claims.requests)" "tiersNotTaken"
if out=$(k patch allocationdecision llm-3-a -n team-a --type=merge -p '{"spec":{"nodeName":"x"}}' 2>&1); then
  fail "a decision's spec changed: $out"
fi
expect_contains "$out" "field is immutable"

step "tenants read their own namespace's records and nothing else"
expect_contains "$(alice get allocationdecisions -n team-a)" "llm-3-a"
if out=$(alice get allocationdecisions -n team-b 2>&1); then fail "alice read team-b: $out"; fi
expect_contains "$out" 'cannot list resource "allocationdecisions" in API group "draplane.dev" in the namespace "team-b"'
expect_contains "$(alice auth can-i create allocationdecisions -n team-a || true)" "no"
expect_contains "$(alice auth can-i list allocationdecisions -n team-a)" "yes"

step "draplane explain claim prints the stored decision"
explained=$("$DRAPLANE" explain claim team-a/c1 --kubeconfig "$e2e_work/alice.kubeconfig")
expect_contains "$explained" "Decision team-a/llm-3-a"
expect_contains "$explained" "chosen:    subrequest a100-pair (class a100)"
expect_contains "$explained" "not taken: subrequest h100"
expect_contains "$explained" "quota: quota team-a/devices h100.deviceclass.resource.k8s.io/devices 1/1 (3 nodes: h100-01, ...)"
expect_contains "$explained" "Policy:    ResourceQuota team-a/devices at resourceVersion 42 (Allocation)"
expect_contains "$("$DRAPLANE" explain claim team-a/c1 --kubeconfig "$admin_kubeconfig" -o yaml)" "kind: AllocationDecision"
set +e
"$DRAPLANE" explain claim team-a/c3 --kubeconfig "$admin_kubeconfig" >"$e2e_work/none.out" 2>&1
code=$?
set -e
[ "$code" = 1 ] || fail "explain claim without a decision exited $code"
expect_contains "$(cat "$e2e_work/none.out")" "the claim is not allocated, and a decision is recorded only when"
set +e
"$DRAPLANE" explain claim team-b/big --kubeconfig "$e2e_work/alice.kubeconfig" >"$e2e_work/forbidden.out" 2>&1
code=$?
set -e
[ "$code" = 2 ] || fail "explain claim of another tenant exited $code"

step "a tenant's explain pod, which needs cluster-wide reads, points at the server's explanation"
alice run explain-me -n team-a --image=registry.example.com/app:1 --restart=Never >/dev/null
set +e
"$DRAPLANE" explain pod team-a/explain-me --kubeconfig "$e2e_work/alice.kubeconfig" \
  >"$e2e_work/tenant-explain.out" 2>&1
code=$?
set -e
[ "$code" = 2 ] || fail "a tenant's explain pod exited $code"
expect_contains "$(cat "$e2e_work/tenant-explain.out")" "kubectl get podexplanation explain-me -n team-a -o yaml"

step "retention: at most 3 records per namespace, the oldest go first"
for i in 1 2 3 4; do
  decision "more-$i" "pod-$i" "2026-12-01T10:0$i:30.000000Z" | k apply -n team-a -f - >/dev/null
done
count_is() { [ "$(k get allocationdecisions -n team-a -o name | wc -l)" = "$1" ]; }
poll_until "the cap of 3" count_is 3
names=$(k get allocationdecisions -n team-a -o name)
expect_contains "$names" "more-4"
expect_not_contains "$names" "llm-3-a"

step "records go with their claims (owner references, garbage collection)"
owners=$(k get allocationdecision more-4 -n team-a -o jsonpath='{.metadata.ownerReferences[*].kind}/{.metadata.ownerReferences[*].uid}')
[ "$owners" = "ResourceClaim/$uid" ] || fail "owners of more-4: $owners"
k delete resourceclaim c1 -n team-a >/dev/null
poll_until "the records of c1 are collected" count_is 0
set +e
"$DRAPLANE" explain claim team-a/c1 --kubeconfig "$admin_kubeconfig" >"$e2e_work/gone.out" 2>&1
code=$?
set -e
[ "$code" = 1 ] || fail "explain claim of a deleted claim exited $code"
expect_contains "$(cat "$e2e_work/gone.out")" "not found"

stop_server
echo "PASS"
