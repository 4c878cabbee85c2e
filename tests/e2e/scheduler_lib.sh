# Helpers of the scheduler and controllers end-to-end scripts (sourced): the real `draplane serve`
# on a free loopback port with an in-memory store, either with its embedded scheduler and claim
# controllers or with `draplane scheduler` and `draplane controller-manager --simulate-kubelet` as
# separate API clients (as in a real cluster), the real kubectl, and waiting on cluster state with
# a deadline (a guard against hangs, never a timing assertion). Only processes started here are
# stopped, by PID.
#
# Usage: DRAPLANE=path/to/draplane; source scheduler_lib.sh; start_control_plane; k get pods

sched_work=$(mktemp -d "${TMPDIR:-/tmp}/draplane-sched-e2e.XXXXXX")
export HOME="$sched_work/home"
export KUBECACHEDIR="$sched_work/kubecache"
mkdir -p "$HOME"
server_pid=""
admin_kubeconfig=""
component_pids=()
# Extra flags of `draplane serve` (set before start_server / start_control_plane).
serve_extra=()

sched_cleanup() {
  local pid
  for pid in "${component_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${component_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [ -n "$server_pid" ]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$sched_work"
}
trap sched_cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  local log
  for log in "$sched_work"/*.log; do
    [ -f "$log" ] || continue
    echo "--- $(basename "$log") (last 30 lines)" >&2
    tail -n 30 "$log" >&2
  done
  exit 1
}

step() { echo "== $*"; }

k() { kubectl --kubeconfig "$admin_kubeconfig" "$@"; }

# start_server [embedded]: `draplane serve`; with "embedded", on its defaults (the scheduler and
# the claim controllers run inside it, the controllers playing the kubelet), else with those
# turned off, so that the components started below are the only ones.
start_server() {
  local fifo="$sched_work/ready.fifo"
  local extra=(--no-scheduler --no-controller-manager)
  [ "${1:-}" != embedded ] || extra=(--simulate-kubelet)
  mkfifo "$fifo"
  "$DRAPLANE" serve --listen 127.0.0.1:0 --data-dir "$sched_work/data" --store memory:// \
    "${extra[@]}" "${serve_extra[@]}" >"$fifo" 2>>"$sched_work/server.log" &
  server_pid=$!
  exec {server_out}<"$fifo"
  local line=""
  read -r -t 120 -u "$server_out" line || fail "draplane serve did not print its ready line"
  case "$line" in
    ready:*) ;;
    *) fail "unexpected first line from draplane serve: $line" ;;
  esac
  admin_kubeconfig=${line##*kubeconfig=}
}

# start_component NAME ARGS...: a draplane subcommand in the background, logging to NAME.log.
start_component() {
  local name=$1
  shift
  "$DRAPLANE" "$@" --kubeconfig "$admin_kubeconfig" >>"$sched_work/$name.log" 2>&1 &
  component_pids+=($!)
}

# start_control_plane [SCHEDULER_REPLICAS | embedded]: the server, then scheduler replica(s) and
# the controller manager with the kubelet simulator as separate processes; or, with "embedded",
# the server alone running its own scheduler and controllers.
start_control_plane() {
  local replicas=${1:-1}
  if [ "$replicas" = embedded ]; then
    start_server embedded
    return
  fi
  start_server
  local i
  for i in $(seq 1 "$replicas"); do
    start_component "scheduler-$i" scheduler --leader-elect=false --identity "scheduler-$i"
  done
  start_component controller-manager controller-manager --leader-elect=false --simulate-kubelet
}

# wait_until SECONDS WHAT COMMAND...: retries COMMAND until it succeeds.
wait_until() {
  local deadline=$((SECONDS + $1))
  local what=$2
  shift 2
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || fail "timed out waiting for $what"
    sleep 0.2
  done
}

pod_node() { k get pod "$@" -o jsonpath='{.spec.nodeName}'; }
pod_bound() { [ -n "$(pod_node "$@")" ]; }
pod_pending_message() {
  k get pod "$@" -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].message}'
}
has_pending_message() { [ -n "$(pod_pending_message "$@")" ]; }

expect_eq() {
  [ "$1" = "$2" ] || fail "${3:-value}: expected \"$2\", got \"$1\""
}

expect_contains() {
  grep -qF -- "$2" <<<"$1" || fail "${3:-output} does not contain \"$2\":"$'\n'"$1"
}

# template_pod NS NAME [PRIORITY_CLASS]: applies a Pod of NS using one device of NS's
# ResourceClaimTemplate `one-device` (claim `dev`); prints kubectl's output.
template_pod() {
  local class=""
  [ -z "${3:-}" ] || class="priorityClassName: $3"
  k apply -f - <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $2, namespace: $1}
spec:
  $class
  resourceClaims: [{name: dev, resourceClaimTemplateName: one-device}]
  containers:
  - name: c
    image: registry.example.com/job:1
    resources: {claims: [{name: dev}]}
EOF
}

# node NAME [LABELS_JSON] [EXTRA_ALLOCATABLE]: creates a Node with room for 110 pods;
# EXTRA_ALLOCATABLE is a JSON fragment such as '"example.com/gpu":"2"'.
node() {
  local name=$1 labels=${2:-'{}'} extra=${3:-}
  local resources='"pods":"110","cpu":"16","memory":"64Gi"'
  [ -z "$extra" ] || resources="$resources,$extra"
  echo "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"$name\",\"labels\":$labels},\"status\":{\"allocatable\":{$resources},\"capacity\":{$resources}}}" |
    k apply -f - >/dev/null || fail "create node $name"
}

# device_nodes NODES DEVICES FILE: writes a List of NODES nodes (node-1 ...) with one ResourceSlice
# each of DEVICES devices (dev-0 ...) of the driver dev.example.com, for `k create -f FILE`.
device_nodes() {
  local nodes=$1 devices=$2 n d
  {
    echo '{"apiVersion":"v1","kind":"List","items":['
    for n in $(seq 1 "$nodes"); do
      [ "$n" = 1 ] || echo ','
      echo "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"node-$n\"},\"status\":{\"allocatable\":{\"pods\":\"110\"},\"capacity\":{\"pods\":\"110\"}}},"
      echo -n "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\",\"metadata\":{\"name\":\"node-$n-dev\"},\"spec\":{\"driver\":\"dev.example.com\",\"nodeName\":\"node-$n\",\"pool\":{\"name\":\"node-$n\",\"generation\":1,\"resourceSliceCount\":1},\"devices\":["
      for d in $(seq 0 $((devices - 1))); do
        [ "$d" = 0 ] || echo -n ','
        echo -n "{\"name\":\"dev-$d\"}"
      done
      echo ']}}'
    done
    echo ']}'
  } >"$3"
}
