#!/usr/bin/env bash
# End to end: draplane.dev/v1alpha1 DeviceSharingPolicy (issue 22; docs/design/fair-share.md §1)
# on the real `draplane serve` with the real kubectl: the issue's policy applied as written
# (examples/sharing-policy.yaml) and defaulted, `kubectl get devicesharingpolicies` / `dsp` with
# its columns, apply again unchanged and with a change (generation), an invalid policy refused
# with field paths (kubectl exits non-zero), `draplane lint` agreeing, tenants refused, the
# scheduler's identity reading policies and writing only their status.
#
# Usage: sharing_policy_e2e.sh DRAPLANE_BINARY SOURCE_DIR
set -euo pipefail
DRAPLANE=$1
SRC=$2
source "$SRC/tests/e2e/lib.sh"

data="$e2e_work/data"
start_server "$data"
k() { kubectl --kubeconfig "$admin_kubeconfig" "$@"; }
"$DRAPLANE" kubeconfig --data-dir "$data" --user alice --groups tenants >"$e2e_work/alice.kubeconfig"
alice() { kubectl --kubeconfig "$e2e_work/alice.kubeconfig" "$@"; }
"$DRAPLANE" kubeconfig --data-dir "$data" --user system:kube-scheduler >"$e2e_work/sched.kubeconfig"
sched() { kubectl --kubeconfig "$e2e_work/sched.kubeconfig" "$@"; }

# refused WHAT EXPECTED COMMAND...: COMMAND must fail and say EXPECTED.
refused() {
  local what=$1 expected=$2 out
  shift 2
  if out=$("$@" 2>&1); then fail "$what was accepted: $out"; fi
  expect_contains "$out" "$expected" "$what"
}

step "the issue's policy applies as written, with its defaults"
out=$(k apply -f "$SRC/examples/sharing-policy.yaml") || fail "apply: $out"
expect_contains "$out" "devicesharingpolicy.draplane.dev/default created"
yaml=$(k get devicesharingpolicy default -o yaml)
expect_contains "$yaml" "holds: true" "defaults"
expect_contains "$yaml" "priority: StrictBands" "defaults"
expect_contains "$yaml" "generation: 1" "generation"
expect_contains "$yaml" "matchLabels:" "the tenant selector"

step "kubectl get devicesharingpolicies / dsp"
out=$(k get devicesharingpolicies)
expect_contains "$out" "DOMAINS" "columns"
expect_contains "$out" "DEFAULT-WEIGHT" "columns"
read -r name domains tenants weight ready _ <<<"$(k get dsp --no-headers)"
[ "$name $domains $tenants $weight $ready" = "default accelerators 2 1 <unknown>" ] ||
  fail "the row: $name $domains $tenants $weight $ready"
wide=$(k get dsp -o wide)
expect_contains "$wide" "HALF-LIFE" "wide columns"
expect_contains "$wide" "24h" "wide row"
expect_contains "$(k get draplane)" "devicesharingpolicy.draplane.dev/default" "the draplane category"

step "apply again: unchanged; with a new weight: configured, generation 2"
out=$(k apply -f "$SRC/examples/sharing-policy.yaml")
expect_contains "$out" "devicesharingpolicy.draplane.dev/default unchanged"
sed 's/weight: 3}/weight: 5}/' "$SRC/examples/sharing-policy.yaml" >"$e2e_work/weight5.yaml"
out=$(k apply -f "$e2e_work/weight5.yaml")
expect_contains "$out" "devicesharingpolicy.draplane.dev/default configured"
[ "$(k get dsp default -o jsonpath='{.metadata.generation}/{.spec.tenants[0].weight}')" = "2/5" ] ||
  fail "the change did not bump the generation"

step "an invalid policy is refused with its field paths"
cat >"$e2e_work/bad.yaml" <<'YAML'
apiVersion: draplane.dev/v1alpha1
kind: DeviceSharingPolicy
metadata: {name: bad}
spec:
  domains:
  - {name: accelerators, deviceClasses: [h100, a100]}
  - {name: inference, deviceClasses: [h100]}
  tenants:
  - {namespaces: [team-a], weight: 0}
  aging: {maxHold: 15 minutes}
YAML
refused "a class in two domains" \
  'spec.domains[1].deviceClasses[0]: Duplicate value: "h100": already in domain "accelerators"' \
  k apply -f "$e2e_work/bad.yaml"
refused "weight 0" "spec.tenants[0].weight: Invalid value: 0: must be greater than 0" \
  k apply -f "$e2e_work/bad.yaml"
refused "a malformed duration" 'spec.aging.maxHold: Invalid value: "15 minutes"' \
  k apply -f "$e2e_work/bad.yaml"
k get dsp bad >/dev/null 2>&1 && fail "the invalid policy was stored"
refused "lint" 'spec.tenants[0].weight: Invalid value: 0: must be greater than 0' \
  "$DRAPLANE" lint "$e2e_work/bad.yaml"
"$DRAPLANE" lint "$SRC/examples/sharing-policy.yaml" || fail "lint refuses the example"

step "tenants cannot read or write policies"
refused "a tenant listing" "forbidden" alice get dsp
refused "a tenant creating" "forbidden" alice apply -f "$e2e_work/weight5.yaml"

step "the scheduler reads policies and writes only their status"
expect_contains "$(sched get dsp --no-headers)" "default" "the scheduler's list"
refused "the scheduler changing weights" "forbidden" \
  sched patch dsp default --type=merge -p '{"spec":{"defaultWeight":9}}'
status='{"status":{"observedGeneration":2,"conditions":[{"type":"Ready","status":"True","reason":"Computed","message":"shares computed","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}'
sched patch dsp default --subresource=status --type=merge -p "$status" >/dev/null ||
  fail "the scheduler could not write the status"
read -r _ _ _ _ ready _ <<<"$(k get dsp --no-headers)"
[ "$ready" = "True" ] || fail "the Ready column shows $ready"

step "delete"
k delete dsp default >/dev/null || fail "delete"
[ -z "$(k get dsp --no-headers 2>/dev/null)" ] || fail "the policy is still listed"
echo "PASS"
