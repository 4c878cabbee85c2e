#!/usr/bin/env bash
# `make bench`: upstream's scheduler_perf DRA workloads (test/integration/scheduler_perf/dra,
# ../shared/docs/upstream-dra.md §7) against `draplane serve` on its defaults (embedded SQLite
# store, embedded scheduler and claim controllers), each workload on a fresh server.
# Prints Pods/s and per-Pod scheduling latency (p50/p99), and the command to rerun each one.
#
# Usage: scheduler_perf.sh BUILD_DIR [WORKLOAD_FILTER]
#   BUILD_DIR: a release build (make bench builds build/release)
#   WORKLOAD_FILTER: only run workloads whose name contains this text
# Environment: DRAPLANE_PERF_STORE (default: the server's default, sqlite in the data dir),
#              DRAPLANE_PERF_SEPARATE=1 to run `draplane scheduler` and
#              `draplane controller-manager` as separate processes instead.
#              DRAPLANE_PERF_EMBEDDED_TRANSPORT=loopback|in-process (serve --embedded-transport).
set -euo pipefail
build=$(cd "$1" && pwd)
filter=${2:-}
draplane=$build/src/bin/draplane
perf=$build/bench/draplane_scheduler_perf
if [ ! -x "$draplane" ] || [ ! -x "$perf" ]; then
  echo "scheduler_perf: $draplane or $perf missing; build the draplane and draplane_scheduler_perf targets" >&2
  exit 1
fi

# name | driver arguments (--target: issue 7's Pods/s targets for this 2-core machine)
workloads=(
  "SchedulingWithResourceClaimTemplate/5000pods_500nodes|--workload template --nodes 500 --devices-per-node 10 --init-pods 2500 --measure-pods 2500 --target 2500"
  "SchedulingWithResourceClaim/5000pods_500nodes|--workload claim --nodes 500 --devices-per-node 2 --init-pods 2500 --measure-pods 2500 --pods-per-claim 5"
  "SteadyStateClusterResourceClaimTemplate/empty_500nodes|--workload steady --nodes 500 --devices-per-node 10 --init-pods 0 --duration 10"
  "SteadyStateClusterResourceClaimTemplate/half_500nodes|--workload steady --nodes 500 --devices-per-node 10 --init-pods 2500 --duration 10"
  "SteadyStateClusterResourceClaimTemplate/full_500nodes|--workload steady --nodes 500 --devices-per-node 10 --init-pods 4990 --duration 10"
  "SteadyStateClusterResourceClaimTemplate/selector_empty_500nodes|--workload steady --variant selector --nodes 500 --devices-per-node 10 --init-pods 0 --duration 10"
  "SteadyStateClusterResourceClaimTemplate/match_empty_500nodes|--workload steady --variant match --nodes 500 --devices-per-node 10 --init-pods 0 --duration 10"
  "SchedulingWithResourceClaimTemplate/match_5000pods_500nodes|--workload template --variant match --nodes 500 --devices-per-node 20 --init-pods 2500 --measure-pods 2500 --target 1500"
)

pids=()
work=""
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  pids=()
  if [ -n "$work" ]; then rm -rf "$work"; fi
}
trap cleanup EXIT

status=0
for entry in "${workloads[@]}"; do
  name=${entry%%|*}
  args=${entry#*|}
  if [ -n "$filter" ] && [[ $name != *"$filter"* ]]; then continue; fi
  work=$(mktemp -d)
  serve_args=(serve --listen 127.0.0.1:0 --data-dir "$work/data")
  if [ -n "${DRAPLANE_PERF_STORE:-}" ]; then serve_args+=(--store "$DRAPLANE_PERF_STORE"); fi
  if [ -n "${DRAPLANE_PERF_EMBEDDED_TRANSPORT:-}" ]; then
    serve_args+=(--embedded-transport "$DRAPLANE_PERF_EMBEDDED_TRANSPORT")
  fi
  if [ -n "${DRAPLANE_PERF_SEPARATE:-}" ]; then
    serve_args+=(--no-scheduler --no-controller-manager)
  fi
  "$draplane" --log-level warning "${serve_args[@]}" >"$work/serve.out" 2>"$work/serve.err" &
  pids+=($!)
  for _ in $(seq 1 300); do
    grep -q '^ready:' "$work/serve.out" 2>/dev/null && break
    sleep 0.1
  done
  if ! grep -q '^ready:' "$work/serve.out"; then
    echo "scheduler_perf: server did not start:"; cat "$work/serve.err"; status=1; cleanup; continue
  fi
  kubeconfig="$work/data/admin.kubeconfig"
  if [ -n "${DRAPLANE_PERF_SEPARATE:-}" ]; then
    "$draplane" --log-level warning scheduler --kubeconfig "$kubeconfig" --leader-elect=false \
      >"$work/scheduler.out" 2>"$work/scheduler.err" &
    pids+=($!)
    "$draplane" --log-level warning controller-manager --kubeconfig "$kubeconfig" \
      --leader-elect=false >"$work/cm.out" 2>"$work/cm.err" &
    pids+=($!)
  fi
  # shellcheck disable=SC2086
  if ! "$perf" --kubeconfig "$kubeconfig" --name "$name" $args; then
    echo "scheduler_perf: $name failed"; tail -5 "$work"/*.err; status=1
  fi
  echo "   rerun: bench/scripts/scheduler_perf.sh $1 '$name'"
  cleanup
done
exit $status
