#!/usr/bin/env bash
# `make bench`: runs every benchmark binary of a release build, then every scenario script.
# Usage: run_all.sh BUILD_DIR
set -euo pipefail
cd "$(dirname "$0")/.."
build=$1
status=0
while IFS= read -r bench; do
  echo "== $bench"
  "$bench" --benchmark_min_time=0.2 || status=1
done < <(find "$build" -type f -name '*_bench' -perm -u+x | sort)
for script in bench/scripts/*.sh; do
  [ -e "$script" ] || continue
  echo "== $script"
  "$script" "$build" || status=1
done
exit $status
