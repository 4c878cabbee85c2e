# Helpers of the node agent's end-to-end scripts (sourced): a temporary work directory, the real
# `draplane serve` on a free loopback port, background components (scheduler, controller
# manager, agents) whose PIDs are remembered, and waiting on conditions with a deadline (a guard
# against hangs, never a timing assertion). Only processes started here are stopped, by PID.

e2e_work=$(mktemp -d "${TMPDIR:-/tmp}/draplane-agent-e2e.XXXXXX")
export HOME="$e2e_work/home"
export KUBECACHEDIR="$e2e_work/kubecache"
mkdir -p "$HOME"
server_pid=""
admin_kubeconfig=""
declare -A bg_pids=()

e2e_cleanup() {
  local name
  for name in "${!bg_pids[@]}"; do
    kill "${bg_pids[$name]}" 2>/dev/null || true
    wait "${bg_pids[$name]}" 2>/dev/null || true
  done
  if [ -n "$server_pid" ]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$e2e_work"
}
trap e2e_cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  local log
  for log in "$e2e_work"/*.log; do
    [ -f "$log" ] || continue
    echo "--- $(basename "$log") (last 25 lines)" >&2
    tail -n 25 "$log" >&2
  done
  exit 1
}

step() { echo "== $*"; }

k() { kubectl --kubeconfig "$admin_kubeconfig" "$@"; }

# start_server [--embedded] [serve flags...]: sets $server_pid and $admin_kubeconfig.
start_server() {
  local fifo="$e2e_work/ready.fifo"
  mkfifo "$fifo"
  # The scheduler and controller manager run as separate processes (agent_e2e.sh), so serve's
  # embedded ones stay off, unless --embedded asks for them (kubelet_plugin_e2e.sh).
  local components=(--no-scheduler --no-controller-manager)
  if [ "${1:-}" = --embedded ]; then
    components=()
    shift
  fi
  "$DRAPLANE" serve --listen 127.0.0.1:0 --data-dir "$e2e_work/data" "${components[@]}" \
    "$@" >"$fifo" 2>>"$e2e_work/server.log" &
  server_pid=$!
  exec {server_out}<"$fifo"
  local line=""
  read -r -t 180 -u "$server_out" line || fail "draplane serve did not print its ready line"
  case "$line" in
    ready:*) ;;
    *) fail "unexpected first line from draplane serve: $line" ;;
  esac
  admin_kubeconfig=${line##*kubeconfig=}
}

# start_bg NAME COMMAND...: runs COMMAND in the background, output in $e2e_work/NAME.log.
start_bg() {
  local name=$1
  shift
  "$@" >>"$e2e_work/$name.log" 2>&1 &
  bg_pids[$name]=$!
}

# start_agent NODE PROFILE [agent flags...]: a standalone agent with its own node identity.
start_agent() {
  local node=$1 profile=$2
  shift 2
  if [ ! -f "$e2e_work/$node.kubeconfig" ]; then
    "$DRAPLANE" kubeconfig --data-dir "$e2e_work/data" --user "system:node:$node" \
      --groups system:nodes --client-certificate >"$e2e_work/$node.kubeconfig"
  fi
  start_bg "agent-$node" "$DRAPLANE" agent --node "$node" --profile "$profile" \
    --kubeconfig "$e2e_work/$node.kubeconfig" --state-dir "$e2e_work/agents/$node" \
    --heartbeat-interval 2s --discovery-interval 500ms "$@"
}

# wait_until SECONDS WHAT COMMAND...: re-runs COMMAND until it succeeds.
wait_until() {
  local deadline=$((SECONDS + $1)) what=$2
  shift 2
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || fail "timed out waiting for: $what"
    sleep 0.2
  done
}

# python3 one-liners over kubectl JSON.
py() { python3 -c "$1" "${@:2}"; }

# wait_ready NODE...: until each node exists (kubectl wait fails at once on a missing object),
# then until it is Ready.
wait_ready() {
  local node
  for node in "$@"; do
    wait_until 120 "node $node registered" k get node "$node"
    k wait --for=condition=Ready "node/$node" --timeout=120s >/dev/null
  done
}

# tenant_with_one_gpu_template NS: the namespace and a ResourceClaimTemplate `one-gpu` in it (one
# device of the class gpu.nvidia.com).
tenant_with_one_gpu_template() {
  k apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Namespace
metadata: {name: $1}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one-gpu, namespace: $1}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: gpu.nvidia.com}
EOF
}

# pod_with_gpu NS NAME TEMPLATE [SPEC_LINE...]: a Pod with one claim from TEMPLATE, used by its
# one container; each SPEC_LINE is added to its spec ("nodeSelector: {pool: a}").
pod_with_gpu() {
  local ns=$1 name=$2 template=$3 line extra=""
  shift 3
  for line in "$@"; do extra+="  $line"$'\n'; done
  k apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $name, namespace: $ns}
spec:
$extra  resourceClaims:
  - {name: gpu, resourceClaimTemplateName: $template}
  containers:
  - name: main
    image: registry.example.com/train:1
    resources:
      claims: [{name: gpu}]
EOF
}
# claim_of NS POD: the claim generated for the Pod's one claim entry.
claim_of() { k get pod -n "$1" "$2" -o jsonpath='{.status.resourceClaimStatuses[0].resourceClaimName}'; }
# device_of NS POD: "pool/device" of the single device of the Pod's claim.
device_of() {
  k get resourceclaim -n "$1" "$(claim_of "$1" "$2")" \
    -o jsonpath='{.status.allocation.devices.results[0].pool}/{.status.allocation.devices.results[0].device}'
}

expect_contains() {
  grep -qF -- "$2" <<<"$1" || fail "${3:-output} does not contain \"$2\":"$'\n'"$1"
}

expect_eq() {
  [ "$1" = "$2" ] || fail "${3:-value}: expected \"$2\", got \"$1\""
}
