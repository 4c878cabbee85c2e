#!/usr/bin/env bash
# `make bench`: upstream's scheduler_perf DRA workloads (test/integration/scheduler_perf/dra,
# ../shared/docs/upstream-dra.md §7) against `draplane serve` on its defaults (embedded SQLite
# store, embedded scheduler and claim controllers), each workload on a fresh server.
# Prints Pods/s and per-Pod scheduling latency (p50/p99), and the command to rerun each one.
# A workload with a Pods/s target runs DRAPLANE_PERF_REPEAT times (default 5), each on a fresh
# server, and is judged by the median: one run's figure on this shared VM drifts by +-25 %.
#
# Usage: scheduler_perf.sh BUILD_DIR [WORKLOAD_FILTER]
#   BUILD_DIR: a release build (make bench builds build/release)
#   WORKLOAD_FILTER: only run workloads whose name contains this text
# Environment: DRAPLANE_PERF_STORE (default: the server's default, sqlite in the data dir),
#              DRAPLANE_PERF_SEPARATE=1 to run `draplane scheduler` and
#              `draplane controller-manager` as separate processes instead.
#              DRAPLANE_PERF_EMBEDDED_TRANSPORT=loopback|in-process (serve --embedded-transport).
#              DRAPLANE_PERF_REPEAT: runs of each workload that has a target (default 5).
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

# Paired comparisons, measured interleaved in one run (DRAPLANE_PERF_REPEAT pairs, each pair's
# order alternating) and judged by the median of the pairs' own ratios:
# name | driver arguments | baseline serve arguments | variant serve arguments | variant driver
# arguments | the variant's slowest acceptable ratio to the baseline
comparisons=(
  "SchedulingWithResourceClaimTemplate/5000pods_500nodes quota+decisions|--workload template --nodes 500 --devices-per-node 10 --init-pods 2500 --measure-pods 2500|--no-decision-records||--allocation-quota|0.90"
  "SchedulingWithResourceClaimTemplate/5000pods_500nodes fair-share|--workload template --nodes 500 --devices-per-node 10 --init-pods 2500 --measure-pods 2500 --tenants 4|||--sharing-policy|0.90"
)

pids=()
work=""
serve_extra=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  pids=()
  if [ -n "$work" ]; then rm -rf "$work"; fi
}
run_log=$(mktemp)
trap 'cleanup; rm -f "$run_log"' EXIT

# One run of workload $1 with driver arguments $2 on a fresh server; prints the driver's output.
# Returns non-zero when the server or the driver failed.
run_once() {
  local name=$1 args=$2 failed=0
  work=$(mktemp -d)
  serve_args=(serve --listen 127.0.0.1:0 --data-dir "$work/data")
  if [ -n "${DRAPLANE_PERF_STORE:-}" ]; then serve_args+=(--store "$DRAPLANE_PERF_STORE"); fi
  if [ -n "${DRAPLANE_PERF_EMBEDDED_TRANSPORT:-}" ]; then
    serve_args+=(--embedded-transport "$DRAPLANE_PERF_EMBEDDED_TRANSPORT")
  fi
  if [ -n "${DRAPLANE_PERF_SEPARATE:-}" ]; then
    serve_args+=(--no-scheduler --no-controller-manager)
  fi
  serve_args+=("${serve_extra[@]}")
  "$draplane" --log-level warning "${serve_args[@]}" >"$work/serve.out" 2>"$work/serve.err" &
  pids+=($!)
  for _ in $(seq 1 300); do
    grep -q '^ready:' "$work/serve.out" 2>/dev/null && break
    sleep 0.1
  done
  if ! grep -q '^ready:' "$work/serve.out"; then
    echo "scheduler_perf: server did not start:"; cat "$work/serve.err"; cleanup; return 1
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
    echo "scheduler_perf: $name failed"; tail -5 "$work"/*.err; failed=1
  fi
  cleanup
  return $failed
}

repeat=${DRAPLANE_PERF_REPEAT:-5}
status=0
for entry in "${workloads[@]}"; do
  name=${entry%%|*}
  args=${entry#*|}
  if [ -n "$filter" ] && [[ $name != *"$filter"* ]]; then continue; fi
  if [[ $args != *--target* ]]; then
    run_once "$name" "$args" || status=1
  else
    # The runs without --target (no per-run verdict); the verdict is the median's.
    target=${args##*--target }
    target=${target%% *}
    rates=()
    for _ in $(seq 1 "$repeat"); do
      # Into a file, not $(...): a subshell would leave its server behind on an interrupt.
      run_once "$name" "${args/--target $target/}" > "$run_log" || status=1
      cat "$run_log"
      rate=$(sed -n 's/^{.*"pods_per_second":\([^,]*\),.*/\1/p' "$run_log")
      [ -n "$rate" ] && rates+=("$rate")
    done
    if [ ${#rates[@]} -gt 0 ]; then
      python3 - "$name" "$target" "${rates[@]}" <<'PY'
import statistics, sys
name, target, rates = sys.argv[1], float(sys.argv[2]), sorted(float(r) for r in sys.argv[3:])
median = statistics.median(rates)
reached = sum(r >= target for r in rates)
print(f"{name}: median {median:.0f} Pods/s of {len(rates)} runs "
      f"({' '.join(f'{r:.0f}' for r in rates)}; {reached} at or above the target), "
      f"target {target:.0f}: {'met' if median >= target else 'SHORT'}")
PY
    fi
  fi
  echo "   rerun: bench/scripts/scheduler_perf.sh $1 '$name'"
done

for entry in "${comparisons[@]}"; do
  IFS='|' read -r name args base_serve variant_serve variant_args floor <<<"$entry"
  if [ -n "$filter" ] && [[ $name != *"$filter"* ]]; then continue; fi
  # Pairs of runs, one of each side on fresh servers, the order alternating between pairs; the
  # verdict is the median of the pairs' own ratios: the VM drifts by +-25 % over minutes, and a
  # pair's two runs share its minute, where the medians of the two sides do not.
  pairs=()
  for i in $(seq 1 "$repeat"); do
    if [ $((i % 2)) = 1 ]; then order="base variant"; else order="variant base"; fi
    base_rate=""
    variant_rate=""
    for side in $order; do
      if [ $side = base ]; then
        # shellcheck disable=SC2206
        serve_extra=($base_serve)
        run_args=$args
      else
        # shellcheck disable=SC2206
        serve_extra=($variant_serve)
        run_args="$args $variant_args"
      fi
      run_once "$name ($side)" "$run_args" > "$run_log" || status=1
      cat "$run_log"
      rate=$(sed -n 's/^{.*"pods_per_second":\([^,]*\),.*/\1/p' "$run_log")
      if [ $side = base ]; then base_rate=$rate; else variant_rate=$rate; fi
    done
    if [ -n "$base_rate" ] && [ -n "$variant_rate" ]; then pairs+=("$base_rate:$variant_rate"); fi
  done
  serve_extra=()
  if [ ${#pairs[@]} -gt 0 ]; then
    python3 - "$name" "$floor" "${pairs[@]}" <<'PY'
import statistics, sys
name, floor = sys.argv[1], float(sys.argv[2])
pairs = [tuple(float(x) for x in p.split(":")) for p in sys.argv[3:]]
ratios = sorted(v / b for b, v in pairs)
ratio = statistics.median(ratios)
b = statistics.median(p[0] for p in pairs)
v = statistics.median(p[1] for p in pairs)
print(f"{name}: median pair ratio {ratio:.3f} over {len(pairs)} pairs "
      f"({' '.join(f'{r:.3f}' for r in ratios)}); medians {v:.0f} Pods/s against {b:.0f} "
      f"without ({v / b:.3f}), at least {floor:.2f}: {'met' if ratio >= floor else 'SHORT'}")
PY
  fi
  echo "   rerun: bench/scripts/scheduler_perf.sh $1 '$name'"
done
exit $status
