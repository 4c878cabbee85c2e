#!/usr/bin/env bash
# `make bench`, issue 4 (e): load a 10,000-node x 10-device cluster dump (JSON and YAML) with
# `draplane allocate` and allocate one claim on the last node; reports wall time (dominated by
# loading) and peak resident memory from /usr/bin/time -v. Targets: <= 2 s from JSON,
# <= 300 MB peak RSS.
# Usage: allocator_dump.sh BUILD_DIR [NODES]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=$1
nodes=${2:-10000}
draplane="$build/src/bin/draplane"
if [ ! -x "$draplane" ]; then
  echo "allocator_dump: $draplane not built; skipping" >&2
  exit 0
fi
if [ ! -x /usr/bin/time ]; then
  echo "allocator_dump: /usr/bin/time missing; skipping" >&2
  exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 bench/scripts/allocator_gen_dump.py "$work" "$nodes" 10
last="node-$((nodes - 1))"
status=0
for format in json yaml; do
  dump="$work/cluster.$format"
  [ -e "$dump" ] || continue
  size=$(du -m "$dump" | cut -f1)
  /usr/bin/time -v "$draplane" allocate --cluster "$dump" --claim "$work/claim.yaml" \
    --node "$last" --seed 1 > "$work/out.txt" 2> "$work/time.txt" || true
  grep -q "allocated" "$work/out.txt" || { cat "$work/out.txt" "$work/time.txt"; status=1; }
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$work/time.txt")
  user=$(awk -F': ' '/User time/ {print $2}' "$work/time.txt")
  sys=$(awk -F': ' '/System time/ {print $2}' "$work/time.txt")
  rss_kb=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$work/time.txt")
  rss_mb=$((rss_kb / 1024))
  seconds=$(python3 -c "
import sys; p='$wall'.split(':'); print(sum(float(x)*60**i for i,x in enumerate(reversed(p))))")
  verdict="ok"
  if [ "$format" = json ]; then
    python3 -c "import sys; sys.exit(0 if $seconds <= 2.0 else 1)" || verdict="SHORT (wall > 2 s)"
  fi
  [ "$rss_mb" -le 300 ] || verdict="$verdict; SHORT (RSS > 300 MB)"
  printf 'allocate %s nodes from %s (%s MB): wall %s s (user %s s, sys %s s), peak RSS %s MB: %s\n' \
    "$nodes" "$format" "$size" "$seconds" "$user" "$sys" "$rss_mb" "$verdict"
done
exit $status
