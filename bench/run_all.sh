#!/usr/bin/env bash
# `make bench`: runs every benchmark binary of a release build (bench/micro/*: store_bench,
# cel_bench, allocator_bench, server_bench, ...), then every script of bench/scripts (the cel-js
# peer comparison, the allocator targets and cluster-dump load, scheduler_perf, ...).
# Usage: run_all.sh BUILD_DIR
# Exit status: 0 when everything ran, 1 when a benchmark or script failed (crashed, wrong result,
# exited non-zero), 2 when BUILD_DIR holds no benchmark. Missed performance targets (lines with
# MISSED or SHORT) are repeated at the end; they do not fail the run on their own, because the
# machine is shared and its load shows in the figures.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: run_all.sh BUILD_DIR}
if [ ! -d "$build/bench" ]; then
  echo "run_all: $build/bench does not exist (configure and build the release preset)" >&2
  exit 2
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
echo "load average before the run: $(cut -d' ' -f1-3 /proc/loadavg)"
benches=()
while IFS= read -r bench; do benches+=("$bench"); done \
  < <(find "$build/bench" -type f -name '*_bench' -perm -u+x | sort)
if [ ${#benches[@]} -eq 0 ]; then
  echo "run_all: no *_bench binary under $build/bench" >&2
  exit 2
fi
failed=()
for bench in "${benches[@]}"; do
  echo "== $bench"
  "$bench" --benchmark_min_time=0.2 2>&1 | tee -a "$log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || failed+=("$bench")
done
for script in bench/scripts/*.sh; do
  [ -e "$script" ] || continue
  echo "== $script"
  "$script" "$build" 2>&1 | tee -a "$log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || failed+=("$script")
done
echo "== summary (load average now: $(cut -d' ' -f1-3 /proc/loadavg))"
grep -E 'MISSED|SHORT' "$log" | sed 's/^/target missed: /'
if [ ${#failed[@]} -gt 0 ]; then
  printf 'failed: %s\n' "${failed[@]}"
  exit 1
fi
echo "all ${#benches[@]} benchmarks and every script ran"
