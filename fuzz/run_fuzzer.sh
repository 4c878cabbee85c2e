#!/usr/bin/env bash
# Runs one libFuzzer target: first over every seed and past crash in its corpus (a regression
# run), then a bounded fuzzing session that writes new inputs to a scratch directory only.
# Usage: run_fuzzer.sh BINARY CORPUS_DIR WORK_DIR SECONDS
# Exit status: 0 clean, 1 a corpus input or a new input crashed (kept in WORK_DIR/artifacts).
set -uo pipefail
binary=$1 corpus=$2 work=$3 seconds=$4
rm -rf "$work"
mkdir -p "$work/new" "$work/artifacts"
corpus_args=()
if [ -d "$corpus" ] && [ -n "$(ls -A "$corpus")" ]; then
  corpus_args=("$corpus")
  if ! "$binary" -runs=0 -artifact_prefix="$work/artifacts/" "$corpus" > "$work/regression.log" 2>&1; then
    tail -n 40 "$work/regression.log"
    echo "fuzz: an input of $corpus fails (log: $work/regression.log)" >&2
    exit 1
  fi
fi
# Mutated inputs stay small (8 KiB) so a run explores many of them; seeds may be larger.
"$binary" -max_total_time="$seconds" -max_len=8192 -timeout=10 -rss_limit_mb=2048 \
  -artifact_prefix="$work/artifacts/" -print_final_stats=1 "$work/new" "${corpus_args[@]}" \
  > "$work/fuzz.log" 2>&1
status=$?
tail -n 30 "$work/fuzz.log"
if [ -n "$(ls -A "$work/artifacts")" ]; then
  echo "fuzz: crash inputs in $work/artifacts; add them to $corpus as regression inputs" >&2
  exit 1
fi
exit "$status"
