#!/usr/bin/env bash
# Tenant device quotas end to end (issue 20, docs/design/holdings.md), on the real server with its
# embedded scheduler and claim controllers, driven by kubectl. One node with two H100s and four
# A100s; every Pod asks for one H100, else an A100 pair.
#   Allocation mode (team-a, `h100...devices: 1`): the first Pod gets an H100, the next ones A100
#   pairs on the same node while an H100 is still free (QuotaFallback Event, decision record with
#   the quota as the reason); `kubectl describe quota` shows the real usage; a Pod that fits
#   nowhere names the quota; deleting the H100 Pod gives the H100 back and the waiting Pod gets it.
#   Default mode (team-b, the same quota without the annotation): upstream's admission-time
#   evaluator charges the claim's spec (one H100 and two A100s at once), so the second Pod's claim
#   is refused at creation and the Pod waits until the first one is deleted.
# Usage: scheduler_quota_e2e.sh DRAPLANE SOURCE_DIR
set -euo pipefail
DRAPLANE=$1
# shellcheck source=tests/e2e/scheduler_lib.sh
source "$(dirname "$0")/scheduler_lib.sh"

gpus() {  # NODE: two H100s and four A100s
  local devices="" i
  for i in 0 1; do
    devices+="
  - {name: h100-$i, attributes: {productName: {string: H100}}, capacity: {memory: {value: 80Gi}}}"
  done
  for i in 0 1 2 3; do
    devices+="
  - {name: a100-$i, attributes: {productName: {string: A100}}, capacity: {memory: {value: 40Gi}}}"
  done
  k apply -f - >/dev/null <<EOF || fail "slice for $1"
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: $1-gpus}
spec:
  driver: gpu.nvidia.com
  nodeName: $1
  pool: {name: $1, generation: 1, resourceSliceCount: 1}
  devices:$devices
EOF
}

tenant() {  # NAMESPACE MODE-ANNOTATION-YAML
  k create namespace "$1" >/dev/null
  k apply -f - >/dev/null <<EOF || fail "quota and template in $1"
apiVersion: v1
kind: ResourceQuota
metadata:
  name: devices
  namespace: $1
  $2
spec:
  hard:
    h100.deviceclass.resource.k8s.io/devices: "1"
    count/resourceclaims.resource.k8s.io: "10"
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: h100-else-a100-pair, namespace: $1}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        firstAvailable:
        - {name: h100, deviceClassName: h100, allocationMode: ExactCount, count: 1}
        - {name: a100-pair, deviceClassName: a100, allocationMode: ExactCount, count: 2}
EOF
}

gpu_pod() {  # NAMESPACE NAME
  k apply -f - >/dev/null <<EOF || fail "pod $1/$2"
apiVersion: v1
kind: Pod
metadata: {name: $2, namespace: $1}
spec:
  resourceClaims:
  - {name: gpu, resourceClaimTemplateName: h100-else-a100-pair}
  containers:
  - name: model
    image: registry.example.com/llm/server:1.4.2
    resources: {claims: [{name: gpu}]}
EOF
}

claim_of() { k -n "$1" get pod "$2" -o jsonpath='{.status.resourceClaimStatuses[0].resourceClaimName}'; }
chosen() {  # NAMESPACE POD: the requests of its claim's allocation
  k -n "$1" get resourceclaim "$(claim_of "$1" "$2")" \
    -o jsonpath='{.status.allocation.devices.results[*].request}'
}
used() {  # NAMESPACE KEY
  k -n "$1" get resourcequota devices -o json |
    python3 -c "import json,sys; print(json.load(sys.stdin).get('status',{}).get('used',{}).get(sys.argv[1],''))" "$2"
}
used_is() { [ "$(used "$1" "$2")" = "$3" ]; }
has_event() {  # NAMESPACE OBJECT REASON
  k -n "$1" get events -o jsonpath='{range .items[*]}{.involvedObject.name} {.reason}{"\n"}{end}' |
    grep -qx "$2 $3"
}
event_message() {  # NAMESPACE OBJECT REASON
  k -n "$1" get events -o jsonpath="{range .items[?(@.reason==\"$3\")]}{.involvedObject.name}|{.message}{\"\\n\"}{end}" |
    sed -n "s/^$2|//p" | head -1
}

step "control plane (draplane serve on its defaults), classes, one node with 2 H100s and 4 A100s"
start_control_plane embedded
node gpu-1
gpus gpu-1
k apply -f - >/dev/null <<'EOF' || fail "classes"
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: h100}
spec:
  selectors: [{cel: {expression: 'device.attributes["gpu.nvidia.com"].productName == "H100"'}}]
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: a100}
spec:
  selectors: [{cel: {expression: 'device.attributes["gpu.nvidia.com"].productName == "A100"'}}]
EOF
tenant team-a 'annotations: {draplane.dev/device-quota-mode: Allocation}'
wait_until 60 "team-a quota synced" used_is team-a h100.deviceclass.resource.k8s.io/devices 0

step "Allocation mode: the first Pod gets an H100"
gpu_pod team-a llm-1
wait_until 120 "llm-1 bound" pod_bound -n team-a llm-1
expect_eq "$(chosen team-a llm-1)" "gpu/h100" "llm-1's subrequest"
wait_until 60 "h100 used 1" used_is team-a h100.deviceclass.resource.k8s.io/devices 1

step "while an H100 is free, the next Pods get A100 pairs on the same node"
gpu_pod team-a llm-2
gpu_pod team-a llm-3
for p in llm-2 llm-3; do
  wait_until 120 "$p bound" pod_bound -n team-a $p
  expect_eq "$(chosen team-a $p)" "gpu/a100-pair gpu/a100-pair" "$p's subrequest"
  expect_eq "$(pod_node -n team-a $p)" gpu-1 "$p's node"
done
held=$(k get resourceclaims -A -o jsonpath='{range .items[*]}{range .status.allocation.devices.results[*]}{.device}{"\n"}{end}{end}')
[ "$(grep -c '^h100-' <<<"$held")" = 1 ] || fail "one H100 in use, the other free: $held"
expect_eq "$(used team-a h100.deviceclass.resource.k8s.io/devices)" 1 "h100 used"
wait_until 60 "QuotaFallback event" has_event team-a llm-2 QuotaFallback
expect_eq "$(event_message team-a llm-2 QuotaFallback)" \
  "request gpu: subrequest h100 refused by quota team-a/devices h100.deviceclass.resource.k8s.io/devices 1/1, allocated subrequest a100-pair" \
  "QuotaFallback message"

step "kubectl describe quota shows the real usage (upstream would charge 32 per claim here)"
describe=$(k -n team-a describe quota devices)
expect_contains "$describe" "h100.deviceclass.resource.k8s.io/devices"
grep -Eq 'h100\.deviceclass\.resource\.k8s\.io/devices +1 +1' <<<"$describe" ||
  fail "describe quota: $describe"
grep -Eq 'count/resourceclaims\.resource\.k8s\.io +3 +10' <<<"$describe" ||
  fail "describe quota (admission keys still upstream's): $describe"

step "a decision record per allocation, with the quota as the reason the H100 tier was not taken"
wait_until 60 "three decision records" bash -c "[ \"\$(kubectl --kubeconfig '$admin_kubeconfig' -n team-a get allocationdecisions -o name | wc -l)\" = 3 ]"
decisions=$(k -n team-a get allocationdecisions)
expect_contains "$decisions" "llm-2"
k -n team-a get allocationdecisions -o json >"$sched_work/decisions.json"
python3 - "$sched_work/decisions.json" <<'PY' || fail "decision record of llm-2"
import json, sys
items = {d["spec"]["pod"]["name"]: d["spec"] for d in json.load(open(sys.argv[1]))["items"]}
d = items["llm-2"]
assert d["outcome"] == "Allocated" and d["nodeName"] == "gpu-1", d
r = d["claims"][0]["requests"][0]
assert r["subrequest"] == "a100-pair" and len(r["devices"]) == 2, r
tier = r["tiersNotTaken"][0]
assert tier["subrequest"] == "h100", tier
assert any(x["reason"] == "quota" and "quota team-a/devices" in x["message"] for x in tier["reasons"]), tier
assert d["claims"][0]["charges"]["a100.deviceclass.resource.k8s.io/devices"] == "2", d
inputs = d["policyVersion"]["inputs"]
assert inputs[0]["name"] == "devices" and inputs[0]["mode"] == "Allocation" and inputs[0]["resourceVersion"], inputs
assert items["llm-1"]["claims"][0]["requests"][0]["subrequest"] == "h100"
PY

step "a Pod that fits nowhere names the quota"
gpu_pod team-a llm-4
wait_until 60 "llm-4 pending message" has_pending_message -n team-a llm-4
message=$(pod_pending_message -n team-a llm-4)
expect_contains "$message" "refused by quota team-a/devices h100.deviceclass.resource.k8s.io/devices 1/1"
expect_contains "$message" "subrequest a100-pair"
explain=$("$DRAPLANE" explain pod team-a/llm-4 --kubeconfig "$admin_kubeconfig")
expect_contains "$explain" "quota team-a/devices h100.deviceclass.resource.k8s.io/devices: used 1 of 1"
expect_contains "$explain" "policy quota (quota team-a/devices h100.deviceclass.resource.k8s.io/devices 1/1)"

step "deleting the H100 Pod gives the H100 back; the waiting Pod takes it"
k -n team-a delete pod llm-1 --wait=false >/dev/null
wait_until 120 "llm-4 bound" pod_bound -n team-a llm-4
expect_eq "$(chosen team-a llm-4)" "gpu/h100" "llm-4's subrequest"
wait_until 60 "h100 used 1 again" used_is team-a h100.deviceclass.resource.k8s.io/devices 1

step "default mode: upstream's admission-time evaluator, no fallback inside the scheduler"
tenant team-b ''
gpu_pod team-b base-1
wait_until 120 "base-1 bound" pod_bound -n team-b base-1
expect_eq "$(chosen team-b base-1)" "gpu/h100" "base-1's subrequest"
wait_until 60 "team-b h100 charged at admission" used_is team-b h100.deviceclass.resource.k8s.io/devices 1
gpu_pod team-b base-2
# A claim of that shape is refused at admission (its spec charges an H100 and two A100s), so the
# claim controller cannot create base-2's claim either and base-2 waits.
refused=$(k apply -f - 2>&1 <<'EOF' || true
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: by-hand, namespace: team-b}
spec:
  devices:
    requests:
    - name: gpu
      firstAvailable:
      - {name: h100, deviceClassName: h100, allocationMode: ExactCount, count: 1}
      - {name: a100-pair, deviceClassName: a100, allocationMode: ExactCount, count: 2}
EOF
)
expect_contains "$refused" "exceeded quota: devices"
expect_contains "$refused" "h100.deviceclass.resource.k8s.io/devices"
[ -z "$(claim_of team-b base-2)" ] || fail "base-2's claim was admitted over the quota"
pod_bound -n team-b base-2 && fail "base-2 bound over the quota"
# explain pod and the server's explanation (the pod explainer's identity reads the Events) say
# that the quota refused the claim, not only that the Pod waits for it.
explains_the_refusal() {
  "$DRAPLANE" explain pod team-b/base-2 --kubeconfig "$admin_kubeconfig" | grep -q \
    "could not be created: create ResourceClaim gpu: .* is forbidden: exceeded quota: devices"
}
wait_until 60 "explain pod names the quota refusing base-2's claim" explains_the_refusal
explain=$("$DRAPLANE" explain pod team-b/base-2 --kubeconfig "$admin_kubeconfig")
expect_contains "$explain" "gpu: not created yet"
expect_contains "$explain" "creation failed ("
served=$(k get podexplanation base-2 -n team-b -o jsonpath='{.status.claims[0].creationFailure.message}')
expect_contains "$served" "exceeded quota: devices, requested: "
k -n team-b delete pod base-1 --wait=false >/dev/null
wait_until 120 "base-2 bound" pod_bound -n team-b base-2
expect_eq "$(chosen team-b base-2)" "gpu/h100" "base-2's subrequest"

step "no device is allocated twice"
devices=$(k get resourceclaims -A -o jsonpath='{range .items[*]}{range .status.allocation.devices.results[*]}{.pool}/{.device}{"\n"}{end}{end}')
dups=$(sort <<<"$devices" | uniq -d)
[ -z "$dups" ] || fail "devices allocated twice: $dups"
echo "PASS"
