#!/usr/bin/env bash
# End to end: the real `draplane serve` (SQLite store in a temporary data directory, HTTPS on a
# free loopback port) driven by the real kubectl (/usr/bin/kubectl, a dispatcher over kubectl
# 1.27-1.33 that picks its binary from the server's /version) through the generated
# kubeconfigs: the admin's client certificate, a tenant's token and a node's client
# certificate.
#
# Usage: kubectl_e2e.sh DRAPLANE_BINARY SOURCE_DIR
set -euo pipefail
DRAPLANE=$1
SRC=$2
source "$SRC/tests/e2e/lib.sh"

data="$e2e_work/data"
start_server "$data"
k() { kubectl --kubeconfig "$admin_kubeconfig" "$@"; }

step "kubectl version (which kubectl the dispatcher picked)"
version=$(k version -o json)
client=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["clientVersion"]["gitVersion"])' <<<"$version")
server=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["serverVersion"]["gitVersion"])' <<<"$version")
echo "kubectl picked by the dispatcher: $client; server reports $server"
expect_contains "$client" "v1.33"

step "api-resources"
resources=$(k api-resources)
for r in deviceclasses resourceclaims resourceclaimtemplates resourceslices devicetaintrules \
         pods nodes namespaces events leases roles clusterrolebindings; do
  expect_contains "$resources" "$r" "api-resources"
done
expect_contains "$(k api-resources --api-group=resource.k8s.io -o wide)" "create,delete,deletecollection,get,list,patch,update,watch"

step "namespaces (kubectl create sends protobuf)"
k create namespace team-llm >/dev/null
k create namespace team-vision >/dev/null
expect_contains "$(k get namespaces)" "team-vision"
# Go's protobuf writes every scalar; the empty ones of omitempty fields are absent, as upstream.
ns_yaml=$(k get namespace team-llm -o yaml --show-managed-fields)
expect_not_contains "$ns_yaml" "generateName"
expect_contains "$ns_yaml" "manager: kubectl-create"
expect_contains "$ns_yaml" "f:kubernetes.io/metadata.name: {}"

step "apply -f every example manifest"
for f in "$SRC"/examples/*.yaml; do
  grep -q '^kind: ClusterProfile' "$f" && continue  # a simulator profile, not an API object
  out=$(k apply -f "$f")
  expect_contains "$out" "created" "apply $f"
done
out=$(k apply -f "$SRC/examples/deviceclasses.yaml")
expect_contains "$out" "unchanged" "a second apply"

step "get: table, wide, yaml, json, jsonpath"
table=$(k get resourceclaims -A)
expect_contains "$table" "NAMESPACE"
expect_contains "$table" "STATE"
expect_contains "$table" "mig-pair"
expect_contains "$table" "pending"
wide=$(k get resourceclaims -A -o wide)
expect_contains "$wide" "DEVICES"
expect_contains "$(k get resourceslices)" "gpu-node-1"
expect_contains "$(k get resourceslices)" "DRIVER"
expect_contains "$(k get pods -n team-llm -o wide)" "llm-server-0"
expect_contains "$(k get resourceclaim mig-pair -n team-vision -o yaml)" "deviceClassName: mig.nvidia.com"
expect_contains "$(k get deviceclass gpu.nvidia.com -o json)" '"kind": "DeviceClass"'
names=$(k get deviceclasses -o jsonpath='{.items[*].metadata.name}')
expect_contains "$names" "gpu.nvidia.com legacy-gpu mig.nvidia.com nic.example.com" "jsonpath"
expect_contains "$(k get resourceclaims -n team-vision --show-labels)" "LABELS"
expect_contains "$(k get all -n team-llm)" "llm-server-0"

step "a Pod's explanation: draplane.dev PodExplanation, get only"
expect_contains "$(k api-resources --api-group=draplane.dev -o wide)" "podexplanations"
expect_contains "$(k get podexplanation llm-server-0 -n team-llm -o jsonpath='{.status.pod}')" \
  "team-llm/llm-server-0"
expect_contains "$(k get podexplanation llm-server-0 -n team-llm)" "llm-server-0"
expect_contains "$(k get podexplanations -n team-llm 2>&1 || true)" "list is not supported"
expect_contains "$(k get podexplanation nobody -n team-llm 2>&1 || true)" 'pods "nobody" not found'

step "status subresource: the claim's allocation shows in table and wide output"
uid=$(k get pod llm-server-0 -n team-llm -o jsonpath='{.metadata.uid}')
k patch resourceclaim training-net -n team-llm --subresource=status --type=merge -p '{
  "status":{"allocation":{"devices":{"results":[{"request":"nic","driver":"nic.example.com",
  "pool":"gpu-node-1","device":"eth1"}]}},
  "reservedFor":[{"resource":"pods","name":"llm-server-0","uid":"'"$uid"'"}]}}' >/dev/null
expect_contains "$(k get resourceclaim training-net -n team-llm)" "allocated,reserved"
expect_contains "$(k get resourceclaim training-net -n team-llm -o wide)" "nic=nic.example.com/gpu-node-1/eth1"

step "get -w sees later changes"
watch_out="$e2e_work/watch.out"
kubectl --kubeconfig "$admin_kubeconfig" get resourceclaims -n team-vision -w \
  --output-watch-events >"$watch_out" 2>&1 &
background_pids+=($!)
wait_for_file_line "$watch_out" "mig-pair" 60
k label resourceclaim mig-pair -n team-vision stage=watched >/dev/null
k create -f - >/dev/null <<'EOF'
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: late-claim
  namespace: team-vision
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.nvidia.com
EOF
wait_for_file_line "$watch_out" "MODIFIED +mig-pair" 60
wait_for_file_line "$watch_out" "ADDED +late-claim" 60

step "describe"
expect_contains "$(k describe resourceclaim mig-pair -n team-vision)" "Name:"
expect_contains "$(k describe pod llm-server-0 -n team-llm)" "llm-server-0"
expect_contains "$(k describe deviceclass gpu.nvidia.com)" "gpu.nvidia.com"

step "label and annotate"
k label deviceclass gpu.nvidia.com tier=premium >/dev/null
expect_contains "$(k get deviceclass gpu.nvidia.com --show-labels)" "tier=premium"
k annotate deviceclass gpu.nvidia.com owner=platform-team >/dev/null
expect_contains "$(k get deviceclass gpu.nvidia.com -o jsonpath='{.metadata.annotations.owner}')" "platform-team"
k label deviceclass gpu.nvidia.com tier- >/dev/null
expect_not_contains "$(k get deviceclass gpu.nvidia.com --show-labels)" "tier=premium"

step "patch: merge, json, strategic"
generation=$(k get deviceclass gpu.nvidia.com -o jsonpath='{.metadata.generation}')
k patch deviceclass gpu.nvidia.com --type=merge -p '{"metadata":{"labels":{"m":"1"}}}' >/dev/null
k patch deviceclass gpu.nvidia.com --type=json -p '[{"op":"add","path":"/metadata/labels/j","value":"2"}]' >/dev/null
k patch pod llm-server-0 -n team-llm -p '{"metadata":{"labels":{"s":"3"}}}' >/dev/null
labels=$(k get deviceclass gpu.nvidia.com -o jsonpath='{.metadata.labels}')
expect_contains "$labels" '"m":"1"'
expect_contains "$labels" '"j":"2"'
expect_contains "$(k get pod llm-server-0 -n team-llm -o jsonpath='{.metadata.labels.s}')" "3"
[ "$(k get deviceclass gpu.nvidia.com -o jsonpath='{.metadata.generation}')" = "$generation" ] ||
  fail "a metadata-only patch bumped the generation"
k patch deviceclass gpu.nvidia.com --type=merge -p '{"spec":{"config":[]}}' >/dev/null
k patch deviceclass legacy-gpu --type=json -p '[{"op":"add","path":"/spec/selectors/-","value":{"cel":{"expression":"true"}}}]' >/dev/null
[ "$(k get deviceclass legacy-gpu -o jsonpath='{.metadata.generation}')" = "2" ] ||
  fail "a spec change did not bump the generation"

step "apply an edited manifest (client-side apply: last-applied-configuration + patch)"
sed 's/^  name: gpu.nvidia.com$/  name: gpu.nvidia.com\n  labels: {tier: standard}/' \
  "$SRC/examples/deviceclasses.yaml" >"$e2e_work/classes.yaml"
grep -q "tier: standard" "$e2e_work/classes.yaml" || fail "the edit of the manifest changed nothing"
k apply -f "$e2e_work/classes.yaml" >/dev/null
[ "$(k get deviceclass gpu.nvidia.com -o jsonpath='{.metadata.labels.tier}')" = "standard" ] ||
  fail "client-side apply did not apply the edited label"
expect_contains "$(k get deviceclass gpu.nvidia.com -o jsonpath='{.metadata.annotations}')" "kubectl.kubernetes.io/last-applied-configuration"

step "edit with EDITOR=true (no change)"
out=$(EDITOR=true k edit deviceclass gpu.nvidia.com 2>&1)
expect_contains "$out" "Edit cancelled, no changes made."

step "server-side apply: from client-side apply, conflicts, --force-conflicts, managed fields"
ssa_class() {
  cat <<EOF
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: ssa.example.com
  labels:
    tier: $1
spec:
  selectors:
  - cel:
      expression: device.driver == "ssa.example.com"
EOF
}
ssa_class standard >"$e2e_work/ssa-standard.yaml"
ssa_class gold >"$e2e_work/ssa-gold.yaml"
k apply -f "$e2e_work/ssa-standard.yaml" >/dev/null
# kubectl's first server-side apply takes over the fields its client-side last-applied
# configuration holds, even where the value changes.
out=$(k apply --server-side -f "$e2e_work/ssa-gold.yaml")
expect_contains "$out" "deviceclass.resource.k8s.io/ssa.example.com serverside-applied"
[ "$(k get deviceclass ssa.example.com -o jsonpath='{.metadata.labels.tier}')" = "gold" ] ||
  fail "server-side apply did not change the label"
# Another manager changing a field kubectl owns is a conflict, with upstream's message...
if out=$(k apply --server-side --field-manager=platform-ci -f "$e2e_work/ssa-standard.yaml" 2>&1); then
  fail "a conflicting server-side apply succeeded: $out"
fi
expect_contains "$out" 'Apply failed with 1 conflict: conflict with "kubectl": .metadata.labels.tier'
# ... unless forced, which moves the field.
out=$(k apply --server-side --field-manager=platform-ci --force-conflicts -f "$e2e_work/ssa-standard.yaml")
expect_contains "$out" "serverside-applied"
[ "$(k get deviceclass ssa.example.com -o jsonpath='{.metadata.labels.tier}')" = "standard" ] ||
  fail "a forced apply did not change the label"
managers=$(k get deviceclass ssa.example.com --show-managed-fields \
  -o jsonpath='{range .metadata.managedFields[*]}{.manager}/{.operation} {end}')
expect_contains "$managers" "platform-ci/Apply"
expect_contains "$managers" "kubectl/Apply"
# kubectl get hides managed fields unless asked.
expect_not_contains "$(k get deviceclass ssa.example.com -o yaml)" "managedFields"
# Apply creates, dry-runs and diffs.
cat >"$e2e_work/ssa-claim.yaml" <<'EOF'
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: ssa-claim
  namespace: default
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.nvidia.com
EOF
out=$(k apply --server-side --dry-run=server -f "$e2e_work/ssa-claim.yaml")
expect_contains "$out" "serverside-applied (server dry run)"
if k get resourceclaim ssa-claim -n default >/dev/null 2>&1; then
  fail "a dry-run apply created the claim"
fi
out=$(k apply --server-side -f "$e2e_work/ssa-claim.yaml")
expect_contains "$out" "resourceclaim.resource.k8s.io/ssa-claim serverside-applied"
k diff --server-side -f "$e2e_work/ssa-claim.yaml" >/dev/null ||
  fail "kubectl diff --server-side found a difference right after the apply"
k delete resourceclaim ssa-claim -n default >/dev/null
k delete deviceclass ssa.example.com >/dev/null

step "CEL selectors are compiled at create time"
if out=$(k apply -f - 2>&1 <<'EOF'
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: broken-cel
spec:
  selectors:
  - cel:
      expression: 'device.attributes["gpu.nvidia.com"].memory >'
EOF
); then
  fail "a DeviceClass with a broken CEL expression was accepted"
fi
expect_contains "$out" "compilation failed"

step "a kind the server does not serve: kubectl's mapping error, not an OpenAPI download failure"
# kubectl looks a kind up in /openapi/v3, then /openapi/v2; without a v2 document its
# validation failed with "the server could not find the requested resource".
if out=$(k apply -f - 2>&1 <<'EOF'
apiVersion: apps/v1
kind: Deployment
metadata:
  name: not-served
  namespace: team-vision
spec:
  selector: {matchLabels: {app: x}}
  template:
    metadata: {labels: {app: x}}
    spec: {containers: [{name: c, image: x}]}
EOF
); then
  fail "a Deployment was accepted by a server that does not serve apps/v1"
fi
expect_contains "$out" 'no matches for kind "Deployment" in version "apps/v1"'

step "a Pod applied twice (its default not-ready tolerations restored on update) reads back quantities as upstream stores them"
cat >"$e2e_work/tolerating-pod.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata:
  name: tolerating
  namespace: team-vision
spec:
  schedulerName: nobody
  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
  containers:
  - name: c
    image: x
    resources: {requests: {cpu: 0.5, memory: 1024Mi}, limits: {nvidia.com/gpu: 1}}
EOF
k apply -f "$e2e_work/tolerating-pod.yaml" >/dev/null
# kubectl sends the manifest's tolerations (an atomic list that differs from the live one with
# the defaults) and prints "configured", as against kube-apiserver; the defaults come back and
# the spec stays as it was (its generation too).
expect_contains "$(k apply -f "$e2e_work/tolerating-pod.yaml")" "pod/tolerating"
[ "$(k get pod tolerating -n team-vision -o jsonpath='{.metadata.generation}')" = "1" ] ||
  fail "applying the same Pod manifest again changed the Pod's spec"
expect_contains "$(k get pod tolerating -n team-vision -o jsonpath='{.spec.tolerations[*].key}')" "node.kubernetes.io/not-ready"
expect_contains "$(k get pod tolerating -n team-vision -o jsonpath='{.spec.containers[0].resources.requests.cpu} {.spec.containers[0].resources.requests.memory}')" "500m 1Gi"
expect_contains "$(k get pod tolerating -n team-vision -o yaml)" 'nvidia.com/gpu: "1"'
k delete pod tolerating -n team-vision --grace-period=0 --force >/dev/null 2>&1

step "--dry-run=server"
k create namespace dry-run-ns --dry-run=server >/dev/null
if k get namespace dry-run-ns >/dev/null 2>&1; then fail "a server dry run created the namespace"; fi
out=$(k apply --dry-run=server -f "$SRC/examples/claim-mig-pair.yaml")
expect_contains "$out" "(server dry run)"
# kubectl sends a delete's dryRun in the DeleteOptions body: nothing may be deleted.
expect_contains "$(k delete resourceclaim mig-pair -n team-vision --dry-run=server)" "(server dry run)"
expect_contains "$(k get resourceclaim mig-pair -n team-vision -o name)" "mig-pair"
# A dry run of a create answers what the create would.
if out=$(k create namespace team-vision --dry-run=server 2>&1); then
  fail "a dry-run create of an existing namespace succeeded"
fi
expect_contains "$out" "AlreadyExists"

step "delete with a finalizer"
k apply -f - >/dev/null <<'EOF'
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: held
  namespace: team-vision
  finalizers: [example.com/hold]
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.nvidia.com
EOF
k delete resourceclaim held -n team-vision --wait=false >/dev/null
[ -n "$(k get resourceclaim held -n team-vision -o jsonpath='{.metadata.deletionTimestamp}')" ] ||
  fail "a claim with a finalizer lost it or has no deletionTimestamp"
expect_contains "$(k get resourceclaim held -n team-vision)" "deleted"
k patch resourceclaim held -n team-vision --type=json -p '[{"op":"remove","path":"/metadata/finalizers"}]' >/dev/null
k wait --for=delete resourceclaim/held -n team-vision --timeout=60s >/dev/null

step "delete with ownerReference cascade (background, foreground, orphan)"
owned() {  # owned OWNER_POD CLAIM
  local owner_uid
  owner_uid=$(k get pod "$1" -n team-vision -o jsonpath='{.metadata.uid}')
  k apply -f - >/dev/null <<EOF
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: $2
  namespace: team-vision
  ownerReferences:
  - apiVersion: v1
    kind: Pod
    name: $1
    uid: $owner_uid
    blockOwnerDeletion: true
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.nvidia.com
EOF
}
for p in owner-bg owner-fg owner-orphan; do
  k apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $p
  namespace: team-vision
spec:
  containers:
  - name: pause
    image: registry.example.com/pause:3
EOF
done
owned owner-bg dep-bg
owned owner-fg dep-fg
owned owner-orphan dep-orphan
k delete pod owner-bg -n team-vision >/dev/null
k wait --for=delete resourceclaim/dep-bg -n team-vision --timeout=60s >/dev/null
k delete pod owner-fg -n team-vision --cascade=foreground --wait=false >/dev/null
k wait --for=delete resourceclaim/dep-fg -n team-vision --timeout=60s >/dev/null
k wait --for=delete pod/owner-fg -n team-vision --timeout=60s >/dev/null
k delete pod owner-orphan -n team-vision --cascade=orphan >/dev/null
k wait --for=delete pod/owner-orphan -n team-vision --timeout=60s >/dev/null
[ -z "$(k get resourceclaim dep-orphan -n team-vision -o jsonpath='{.metadata.ownerReferences}')" ] ||
  fail "an orphaned dependent kept its owner reference"

step "wait --for=condition"
k apply -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Node
metadata:
  name: gpu-node-1
  labels:
    node-role.kubernetes.io/gpu: ""
EOF
kubectl --kubeconfig "$admin_kubeconfig" wait --for=condition=Ready node/gpu-node-1 --timeout=60s \
  >"$e2e_work/wait.out" 2>&1 &
wait_pid=$!
background_pids+=($wait_pid)
k patch node gpu-node-1 --subresource=status --type=merge -p '{"status":{"conditions":[
  {"type":"Ready","status":"True","reason":"KubeletReady","message":"ok",
   "lastHeartbeatTime":"2025-01-01T00:00:00Z","lastTransitionTime":"2025-01-01T00:00:00Z"}]}}' >/dev/null
wait "$wait_pid" || fail "kubectl wait --for=condition=Ready failed: $(cat "$e2e_work/wait.out")"
expect_contains "$(cat "$e2e_work/wait.out")" "condition met"
expect_contains "$(k get nodes)" "Ready"

step "the fixture kinds examples/ does not have: Lease, Events (core and events.k8s.io), Binding"
# The shared fixtures (k8s-api/) hold one object per kind with placeholder values that no
# validation accepts, so each kind gets a valid manifest here; the loop below checks that every
# fixture kind was written through kubectl.
pod_uid=$(k get pod llm-server-0 -n team-llm -o jsonpath='{.metadata.uid}')
k apply -f - >/dev/null <<EOF
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata:
  name: gpu-node-1
  namespace: kube-node-lease
spec:
  holderIdentity: gpu-node-1
  leaseDurationSeconds: 40
  renewTime: "2025-01-01T00:00:00.000000Z"
---
apiVersion: v1
kind: Event
metadata:
  name: llm-server-0.e2e
  namespace: team-llm
involvedObject:
  apiVersion: v1
  kind: Pod
  name: llm-server-0
  namespace: team-llm
  uid: $pod_uid
reason: E2eReason
message: written by kubectl_e2e.sh
type: Normal
source:
  component: kubectl-e2e
firstTimestamp: "2025-01-01T00:00:00Z"
lastTimestamp: "2025-01-01T00:00:00Z"
count: 1
---
apiVersion: events.k8s.io/v1
kind: Event
metadata:
  name: llm-server-0.e2e-v1
  namespace: team-llm
eventTime: "2025-01-01T00:00:00.000000Z"
reportingController: draplane.dev/kubectl-e2e
reportingInstance: kubectl-e2e-1
action: Testing
reason: E2eReason
note: written by kubectl_e2e.sh
type: Normal
regarding:
  apiVersion: v1
  kind: Pod
  name: llm-server-0
  namespace: team-llm
  uid: $pod_uid
EOF
expect_contains "$(k get leases -n kube-node-lease)" "gpu-node-1"
expect_contains "$(k get events -n team-llm)" "E2eReason"
expect_contains "$(k get events.v1.events.k8s.io -n team-llm -o name)" "llm-server-0.e2e-v1"
expect_contains "$(k describe pod llm-server-0 -n team-llm)" "written by kubectl_e2e.sh"
k apply -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Pod
metadata:
  name: bind-me
  namespace: team-llm
spec:
  containers:
  - name: pause
    image: registry.example.com/pause:3
EOF
binding="$e2e_work/binding.json"
cat >"$binding" <<'EOF'
{"apiVersion":"v1","kind":"Binding","metadata":{"name":"bind-me","namespace":"team-llm"},
 "target":{"apiVersion":"v1","kind":"Node","name":"gpu-node-1"}}
EOF
k create --raw /api/v1/namespaces/team-llm/pods/bind-me/binding -f "$binding" >/dev/null
[ "$(k get pod bind-me -n team-llm -o jsonpath='{.spec.nodeName}')" = "gpu-node-1" ] ||
  fail "the Binding did not set spec.nodeName"
if out=$(k create --raw /api/v1/namespaces/team-llm/pods/bind-me/binding -f "$binding" 2>&1); then
  fail "a second Binding of a bound pod succeeded"
fi
expect_contains "$out" "Conflict"
fixtures="$SRC/../shared/fixtures/k8s-api"
if [ -d "$fixtures" ]; then
  for f in "$fixtures"/*.yaml; do
    kind=$(basename "$f" .yaml)
    case "$kind" in
      core.v1.Status) continue ;;   # not a stored kind: every error answer is one
      core.v1.Binding) continue ;;  # a create-only subresource, written just above
      core.v1.Namespace) what=(namespaces team-llm) ;;
      core.v1.Node) what=(nodes gpu-node-1) ;;
      core.v1.Pod) what=(pods llm-server-0 -n team-llm) ;;
      core.v1.Event) what=(events llm-server-0.e2e -n team-llm) ;;
      events.k8s.io.v1.Event) what=(events.v1.events.k8s.io llm-server-0.e2e-v1 -n team-llm) ;;
      coordination.k8s.io.v1.Lease) what=(leases gpu-node-1 -n kube-node-lease) ;;
      resource.k8s.io.v1.DeviceClass) what=(deviceclasses gpu.nvidia.com) ;;
      resource.k8s.io.v1.DeviceTaintRule) what=(devicetaintrules -o name) ;;
      resource.k8s.io.v1.ResourceClaim) what=(resourceclaims training-net -n team-llm) ;;
      resource.k8s.io.v1.ResourceClaimTemplate) what=(resourceclaimtemplates -A -o name) ;;
      resource.k8s.io.v1.ResourceSlice) what=(resourceslices -o name) ;;
      *) fail "fixture kind $kind is not covered by this suite" ;;
    esac
    [ -n "$(k get "${what[@]}")" ] || fail "no $kind was written through kubectl"
  done
else
  echo "(no $fixtures: the per-fixture-kind check is skipped)"
fi

step "auth can-i / whoami as the admin"
expect_contains "$(k auth can-i create resourceclaims -n team-llm)" "yes"
expect_contains "$(k auth whoami)" "admin"

step "a tenant identity (token from draplane kubeconfig)"
"$DRAPLANE" kubeconfig --data-dir "$data" --user alice --groups tenants >"$e2e_work/alice.kubeconfig"
k create rolebinding alice-tenant --clusterrole=draplane:tenant --user=alice -n team-llm >/dev/null
# roleRef.apiGroup and a subject's kind and name have no omitempty: they stay even when empty.
binding_json=$(k get rolebinding alice-tenant -n team-llm -o json)
expect_contains "$binding_json" '"apiGroup": "rbac.authorization.k8s.io"'
expect_not_contains "$binding_json" '"namespace": ""'
alice() { kubectl --kubeconfig "$e2e_work/alice.kubeconfig" "$@"; }
expect_contains "$(alice get resourceclaims -n team-llm)" "training-net"
expect_contains "$(alice auth can-i create resourceclaims -n team-llm)" "yes"
expect_contains "$(alice auth can-i get resourceclaims -n team-vision 2>&1 || true)" "no"
if out=$(alice get resourceclaims -n team-vision 2>&1); then fail "alice read team-vision"; fi
expect_contains "$out" "Forbidden"
expect_contains "$out" 'User "alice" cannot list resource "resourceclaims"'
alice apply -f - >/dev/null <<'EOF'
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: alice-claim
  namespace: team-llm
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.nvidia.com
EOF
expect_contains "$(alice get resourceclaims -n team-llm)" "alice-claim"
alice label resourceclaim alice-claim -n team-llm stage=dev >/dev/null
alice annotate resourceclaim alice-claim -n team-llm owner=alice >/dev/null
alice patch resourceclaim alice-claim -n team-llm --type=json \
  -p '[{"op":"add","path":"/metadata/labels/p","value":"1"}]' >/dev/null
expect_contains "$(alice get resourceclaim alice-claim -n team-llm -o json)" '"stage": "dev"'
expect_contains "$(alice get resourceclaim alice-claim -n team-llm -o jsonpath='{.metadata.labels.p}')" "1"
expect_contains "$(alice describe resourceclaim alice-claim -n team-llm)" "owner: alice"
expect_contains "$(alice get deviceclasses -o name)" "deviceclass.resource.k8s.io/gpu.nvidia.com"
alice delete resourceclaim alice-claim -n team-llm >/dev/null
expect_not_contains "$(alice get resourceclaims -n team-llm -o name)" "alice-claim"
if out=$(alice delete resourceclaim mig-pair -n team-vision 2>&1); then fail "alice deleted team-vision's claim"; fi
expect_contains "$out" "Forbidden"
expect_contains "$(k get resourceclaim mig-pair -n team-vision)" "mig-pair"

step "impersonation: kubectl --as answers for the impersonated user"
expect_contains "$(k auth whoami --as alice --as-group tenants)" "alice"
expect_contains "$(k auth can-i list resourceclaims -n team-llm --as alice)" "yes"
expect_contains "$(k auth can-i delete nodes --as alice 2>&1 || true)" "no"
if out=$(alice get nodes --as admin 2>&1); then fail "alice impersonated the admin"; fi
expect_contains "$out" 'cannot impersonate resource "users"'

step "upstream's user-facing roles: view, edit and admin bound in one namespace"
k create rolebinding carol-edit -n team-vision --clusterrole=edit --user=carol >/dev/null
k create rolebinding dave-view -n team-vision --clusterrole=view --user=dave >/dev/null
k create rolebinding erin-admin -n team-vision --clusterrole=admin --user=erin >/dev/null
expect_contains "$(k auth can-i create resourceclaims -n team-vision --as carol)" "yes"
expect_contains "$(k auth can-i create pods -n team-vision --as carol)" "yes"
expect_contains "$(k auth can-i create rolebindings -n team-vision --as carol 2>&1 || true)" "no"
expect_contains "$(k auth can-i create resourceclaims -n team-llm --as carol 2>&1 || true)" "no"
expect_contains "$(k auth can-i list resourceclaims -n team-vision --as dave)" "yes"
expect_contains "$(k auth can-i delete pods -n team-vision --as dave 2>&1 || true)" "no"
expect_contains "$(k auth can-i create rolebindings -n team-vision --as erin)" "yes"
expect_contains "$(k auth can-i create resourceslices --as erin 2>&1 || true)" "no"

step "a node identity (client certificate from draplane kubeconfig)"
"$DRAPLANE" kubeconfig --data-dir "$data" --user system:node:gpu-node-3 --groups system:nodes \
  --client-certificate >"$e2e_work/node.kubeconfig"
node() { kubectl --kubeconfig "$e2e_work/node.kubeconfig" "$@"; }
expect_contains "$(node auth whoami)" "system:node:gpu-node-3"
node apply -f - >/dev/null <<'EOF'
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  name: gpu-node-3-gpu
spec:
  driver: gpu.nvidia.com
  nodeName: gpu-node-3
  pool: {name: gpu-node-3, generation: 1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
EOF
expect_contains "$(k get resourceslices)" "gpu-node-3-gpu"
if out=$(node apply -f - 2>&1 <<'EOF'
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  name: forged-for-node-1
spec:
  driver: gpu.nvidia.com
  nodeName: gpu-node-1
  pool: {name: gpu-node-1, generation: 9, resourceSliceCount: 1}
  devices:
  - name: gpu-7
EOF
); then fail "node 3 wrote a slice of node 1"; fi
expect_contains "$out" "Forbidden"
if out=$(node delete deviceclass gpu.nvidia.com 2>&1); then fail "a node deleted a DeviceClass"; fi
expect_contains "$out" "Forbidden"
if node get resourceslices >/dev/null 2>&1; then fail "a node listed every slice"; fi
expect_contains "$(node get resourceslices --field-selector spec.nodeName=gpu-node-3)" "gpu-node-3-gpu"
node label resourceslice gpu-node-3-gpu stage=published >/dev/null
expect_contains "$(node get resourceslice gpu-node-3-gpu -o yaml)" "stage: published"
if out=$(node label resourceslice gpu-node-1-nic.example.com stage=forged 2>&1); then
  fail "node 3 labelled node 1's slice"
fi
expect_contains "$out" "Forbidden"
node delete resourceslice gpu-node-3-gpu >/dev/null
expect_not_contains "$(k get resourceslices -o name)" "gpu-node-3-gpu"

step "drain: cordon, then evict the node's Pods (pods/eviction, sent in protobuf)"
k apply -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Node
metadata:
  name: drain-node
---
apiVersion: v1
kind: Pod
metadata:
  name: on-drain-node
  namespace: team-llm
spec:
  nodeName: drain-node
  containers:
  - name: c
    image: registry.example.com/x:1
EOF
k drain drain-node --force --grace-period=0 --timeout=60s >"$e2e_work/drain.txt" 2>&1 ||
  fail "kubectl drain failed: $(cat "$e2e_work/drain.txt")"
expect_contains "$(cat "$e2e_work/drain.txt")" "evicting pod team-llm/on-drain-node"
expect_contains "$(k get node drain-node -o jsonpath='{.spec.unschedulable}')" "true"
if k get pod on-drain-node -n team-llm >/dev/null 2>&1; then fail "the drained Pod is still there"; fi
k delete node drain-node >/dev/null

step "events, explain and metrics"
expect_contains "$(k explain resourceclaims.spec.devices 2>&1)" "requests"
expect_contains "$(k get --raw /metrics)" "apiserver_request_total"
expect_contains "$(k get --raw /readyz)" "ok"

step "namespace deletion empties the namespace, then removes it"
k delete namespace team-vision --timeout=120s >/dev/null
if k get namespace team-vision >/dev/null 2>&1; then fail "team-vision still exists"; fi
[ -z "$(k get resourceclaims -n team-vision -o name)" ] || fail "claims outlived their namespace"
if out=$(k delete namespace default 2>&1); then fail "the default namespace was deleted"; fi
expect_contains "$out" "Forbidden"

step "graceful shutdown"
stop_server
echo "PASS"
