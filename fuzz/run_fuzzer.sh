#!/usr/bin/env bash
# Runs one libFuzzer target: first over every seed and past crash in its corpus (a regression
# run), then a bounded fuzzing session that writes new inputs to a scratch directory only.
# Usage: run_fuzzer.sh BINARY CORPUS_DIR WORK_DIR SECONDS
set -euo pipefail
binary=$1 corpus=$2 work=$3 seconds=$4
rm -rf "$work"
mkdir -p "$work/new" "$work/artifacts"
if [ -d "$corpus" ] && [ -n "$(ls -A "$corpus")" ]; then
  "$binary" -runs=0 "$corpus"
fi
"$binary" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -artifact_prefix="$work/artifacts/" "$work/new" ${corpus:+"$corpus"} -print_final_stats=1 \
  2>&1 | tail -n 30
status=${PIPESTATUS[0]}
if [ -n "$(ls -A "$work/artifacts")" ]; then
  echo "fuzz: crash inputs in $work/artifacts; add them to $corpus as regression inputs" >&2
  exit 1
fi
exit "$status"
