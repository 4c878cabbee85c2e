#!/usr/bin/env bash
# `make run`: the demo a newcomer sees first.
#
#   1. `draplane serve` with an embedded SQLite store in a fresh data directory, its scheduler and
#      claim controllers, and one simulated node agent per node of examples/cluster-demo.yaml
#      (16 nodes: H100, A100 with MIG, L4, FPGA, NIC-rich and two device-plugin nodes);
#   2. the workloads of two tenants (examples/demo/, the DeviceClasses of examples/deviceclasses.yaml
#      and the h100-else-a100 template) applied with kubectl;
#   3. once every Pod runs or the scheduler has said why it cannot (tools/demo_table.py): where each
#      Pod landed, on which devices, through which subrequest, and why the Pending ones wait,
#      checked against `kubectl get resourceclaims -A -o wide`; then a DeviceTaintRule dry run
#      (effect None) of draining node a100-0 shows what it would evict without evicting;
#   4. the dashboard's URL with the admin's token in its fragment (#token=..., which the browser
#      never sends to the server) is printed; with --check-dashboard DIR headless Chromium checks
#      what the dashboard shows against kubectl (tests/dashboard/dashboard_test.py) and saves
#      screenshots in DIR;
#   5. the server keeps serving: the kubeconfig path and three kubectl commands to try are printed,
#      Ctrl-C stops it. With --once the demo exits after step 4 instead (CI runs it that way).
#
# Usage: run_demo.sh DRAPLANE_BINARY [--once] [--check-dashboard DIR]
# Needs kubectl and python3 on PATH. TMPDIR chooses where the data directory goes.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
usage() {
  echo "usage: $0 DRAPLANE_BINARY [--once] [--check-dashboard DIR]" >&2
  exit 2
}
[[ $# -ge 1 ]] || usage
draplane=$(realpath "$1")
shift
once=false
screenshots=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --once) once=true ;;
    --check-dashboard)
      [[ $# -ge 2 ]] || usage
      screenshots=$(realpath -m "$2")
      shift
      ;;
    *) usage ;;
  esac
  shift
done
for tool in kubectl python3; do
  command -v "$tool" >/dev/null || {
    echo "make run needs $tool on PATH" >&2
    exit 1
  }
done

section() { printf '\n== %s\n' "$*"; }

work=$(mktemp -d "${TMPDIR:-/tmp}/draplane-demo.XXXXXX")
data="$work/data"
server_pid=""
cleanup() {
  if [[ -n $server_pid ]]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  if $once; then rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() {
  echo "run_demo: $*" >&2
  echo "--- last lines of $work/server.log" >&2
  tail -n 30 "$work/server.log" >&2 || true
  exit 1
}

# wait_until SECONDS WHAT COMMAND...: re-runs COMMAND until it succeeds (a guard against hangs).
wait_until() {
  local seconds=$1 what=$2
  local deadline=$((SECONDS + seconds))
  shift 2
  until "$@" >/dev/null 2>&1; do
    [[ $SECONDS -lt $deadline ]] || fail "timed out after $seconds s waiting for $what"
    sleep 0.5
  done
}

section "draplane lint examples/*.yaml examples/demo/"
"$draplane" lint examples/*.yaml examples/demo/

profile="$repo/examples/cluster-demo.yaml"
section "draplane serve --simulate-nodes examples/cluster-demo.yaml"
mkfifo "$work/ready.fifo"
"$draplane" serve --listen 127.0.0.1:0 --data-dir "$data" --simulate-nodes "$profile" \
  >"$work/ready.fifo" 2>>"$work/server.log" &
server_pid=$!
exec {server_out}<"$work/ready.fifo"
line=""
read -r -t 120 -u "$server_out" line || fail "draplane serve did not print its ready line"
[[ $line == ready:* ]] || fail "unexpected first line from draplane serve: $line"
export KUBECONFIG=${line##*kubeconfig=}
url=${line#ready: }
url=${url%% kubeconfig=*}
echo "API server ${line#ready: }"
echo "(log: $work/server.log)"

# What the profile implies: its node count and the (node, DRA driver) pools the agents publish.
read -r nodes pools < <(python3 - "$profile" <<'EOF'
import sys, yaml
drivers = {"gpus": 1, "fpgas": 1, "nics": 1}
nodes = pools = 0
for pool in yaml.safe_load(open(sys.argv[1]))["nodePools"]:
    count = pool.get("count", 1)
    nodes += count
    pools += count * sum(1 for kind in drivers if pool.get("devices", {}).get(kind))
print(nodes, pools)
EOF
)
published_pools() {
  kubectl get resourceslices -o jsonpath='{range .items[*]}{.spec.nodeName}/{.spec.driver}{"\n"}{end}' |
    sort -u | grep -c .
}
nodes_registered() { [[ $(kubectl get nodes -o name | wc -l) -eq $nodes ]]; }
pools_published() { [[ $(published_pools) -eq $pools ]]; }
wait_until 180 "$nodes nodes" nodes_registered
kubectl wait --for=condition=Ready node --all --timeout=180s >/dev/null
wait_until 180 "the devices of $pools (node, driver) pools" pools_published
echo "$nodes nodes Ready; $(kubectl get resourceslices -o name | wc -l) ResourceSlices published" \
  "by their agents."

section "two tenants apply their workloads"
kubectl apply -f examples/demo/00-tenants.yaml -f examples/deviceclasses.yaml \
  -f examples/demo/10-deviceclasses.yaml >/dev/null
kubectl apply -f examples/claimtemplate-h100-else-a100.yaml >/dev/null
kubectl apply -f examples/demo/20-team-llm.yaml -f examples/demo/30-team-vision.yaml >/dev/null
echo "team-llm:    $(grep -c '^kind: Pod$' examples/demo/20-team-llm.yaml) pods (examples/demo/20-team-llm.yaml)"
echo "team-vision: $(grep -c '^kind: Pod$' examples/demo/30-team-vision.yaml) pods (examples/demo/30-team-vision.yaml)"

# Settled: every Pod runs, or is unbound and the scheduler has marked it Unschedulable.
settled() {
  kubectl get pods -A -o json | python3 -c '
import json, sys
for p in json.load(sys.stdin)["items"]:
    status = p.get("status", {})
    if status.get("phase") == "Running":
        continue
    if not p["spec"].get("nodeName") and any(
            c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable"
            for c in status.get("conditions", [])):
        continue
    sys.exit(1)'
}
start=$SECONDS
wait_until 240 "every pod to run or be marked unschedulable" settled
echo "settled in $((SECONDS - start)) s"

section "where every pod landed"
kubectl get pods,resourceclaims,resourceslices -A -o json >"$work/objects.json"
kubectl get resourceclaims -A -o wide --no-headers >"$work/claims-wide.txt"
python3 tools/demo_table.py "$work/objects.json" "$work/claims-wide.txt" ||
  fail "the table does not match kubectl get resourceclaims -A -o wide"
specs=$(find "$data/agents" -path '*/cdi/*.json' | wc -l)
echo "The node agents prepared the allocated claims: $specs CDI spec files under $data/agents/*/cdi."

section "kubectl get resourceclaims -A -o wide (what the table was checked against)"
kubectl get resourceclaims -A -o wide

section "a dry run: what would draining a100-0's GPUs evict? (examples/demo/drain-a100-0.yaml)"
kubectl apply -f examples/demo/drain-a100-0.yaml >/dev/null
reason() {
  kubectl get devicetaintrule drain-a100-0 -o jsonpath='{.status.conditions[0].reason}' | grep -qx NoEffect
}
wait_until 120 "the dry-run status of drain-a100-0" reason
kubectl get devicetaintrule drain-a100-0 -o jsonpath='{.status.conditions[0].message}'
echo
echo "(effect None: nothing was evicted; $(kubectl get pods -A --no-headers | grep -c Running) pods still run)"

section "how much is free? ResourcePoolStatusRequest (KEP-5677) and draplane pools"
# RBAC as upstream: nobody but cluster admins may ask until granted (no default role).
"$draplane" kubeconfig --data-dir "$data" --user pool-viewer >"$work/pool-viewer.kubeconfig"
pool_request() { # NAME DRIVER [POOL [ATTRIBUTE]]
  printf 'apiVersion: resource.k8s.io/v1alpha3\nkind: ResourcePoolStatusRequest\nmetadata: {name: %s}\nspec:\n  driver: %s\n' "$1" "$2"
  [[ -z ${3:-} ]] || printf '  poolName: %s\n' "$3"
  [[ -z ${4:-} ]] || printf '  defaultPartitionTypeAttribute: %s\n' "$4"
}
if pool_request denied gpu.nvidia.com | kubectl --kubeconfig "$work/pool-viewer.kubeconfig" create -f - \
  >/dev/null 2>"$work/denied.txt"; then
  fail "a user without a role created a ResourcePoolStatusRequest"
fi
grep -q Forbidden "$work/denied.txt" || fail "unexpected refusal: $(cat "$work/denied.txt")"
kubectl apply -f - >/dev/null <<'EOF_RBAC'
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: pool-status-reader}
rules:
- apiGroups: [resource.k8s.io]
  resources: [resourcepoolstatusrequests]
  verbs: [create, get, list, delete]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: pool-status-reader}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: pool-status-reader}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: pool-viewer}]
EOF_RBAC
n=0
for driver in $(kubectl get resourceslices -o jsonpath='{range .items[*]}{.spec.driver}{"\n"}{end}' | sort -u); do
  n=$((n + 1))
  pool_request "pools-$n" "$driver" | kubectl --kubeconfig "$work/pool-viewer.kubeconfig" create -f - >/dev/null
done
# One MIG GPU pool grouped by the partitions' profile attribute (the whole-GPU device has none:
# upstream reports PartitionTypeMissing and keeps the counts).
pool_request pools-mig gpu.nvidia.com a100-0 gpu.nvidia.com/profile | kubectl create -f - >/dev/null
kubectl wait --for=condition=Complete resourcepoolstatusrequests --all --timeout=60s >/dev/null
kubectl get resourcepoolstatusrequests
kubectl get resourcepoolstatusrequests -o json >"$work/pool-requests.json"
kubectl get resourceslices,resourceclaims,devicetaintrules -A -o json >"$work/pool-objects.json"
"$draplane" pools -o json >"$work/pools-live.json"
"$draplane" pools --driver gpu.nvidia.com --pool a100-0 \
  --default-partition-type-attribute gpu.nvidia.com/profile -o json >"$work/pools-mig.json"
python3 tools/pool_status_check.py "$work/pool-objects.json" "$work/pool-requests.json" \
  "$work/pools-live.json" "$work/pools-mig.json" >"$work/pool-check.txt" ||
  { cat "$work/pool-check.txt"; fail "pool status differs from a recomputation from slices and claims"; }
tail -n 1 "$work/pool-check.txt"
"$draplane" pools --driver gpu.nvidia.com | head -n 6
kubectl delete resourcepoolstatusrequests --all >/dev/null

section "the dashboard"
# A token for a cluster admin (the admin kubeconfig holds a client certificate).
token=$("$draplane" kubeconfig --data-dir "$data" --user dashboard-admin --groups system:masters |
  sed -n 's/^ *token: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' | head -n 1)
[[ -n $token ]] || fail "draplane kubeconfig printed no token"
echo "Open $url/dashboard/#token=$token"
echo "(a cluster admin's token; the browser keeps the #fragment to itself. The server's certificate"
echo " is signed by the demo's own CA, $data/pki/ca.crt: accept it once, or trust that CA.)"
if [[ -n $screenshots ]]; then
  python3 tests/dashboard/dashboard_test.py "$url" "$KUBECONFIG" "$data" "$draplane" "$screenshots" ||
    fail "the dashboard check failed"
fi

if $once; then
  section "done (--once): server stopped"
  exit 0
fi

section "the cluster keeps running; in another terminal try"
cat <<EOF
  export KUBECONFIG=$KUBECONFIG
  kubectl describe pod -n team-llm llm-train-8xh100       # why it stays Pending
  kubectl get resourceslices --field-selector spec.nodeName=a100-0 -o yaml   # MIG partitions, counters
  kubectl patch devicetaintrule drain-a100-0 --type=merge -p '{"spec":{"taint":{"effect":"NoExecute"}}}' &&
    kubectl wait --for=condition=EvictionInProgress=false devicetaintrule/drain-a100-0

Edit examples/cluster-demo.yaml (add a fault) and the agents pick it up.
Ctrl-C stops the server; its data and log stay in $work.
EOF
wait "$server_pid" || true
server_pid=""
