#!/usr/bin/env bash
# A profile round trip: `draplane agent --profile examples/cluster-demo.yaml --node NODE --dry-run`
# prints exactly the slices in tests/agent/dryrun/NODE.yaml (taint times, which depend on when the
# profile was read, are compared as "<time>"), and they pass `draplane lint`.
#
# Usage: dryrun_case.sh DRAPLANE_BINARY SOURCE_DIR NODE
#        (DRAPLANE_UPDATE_GOLDEN=1 rewrites the golden file instead.)
set -euo pipefail
draplane=$1
src=$2
node=$3
golden="$src/tests/agent/dryrun/$node.yaml"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$draplane" agent --profile "$src/examples/cluster-demo.yaml" --node "$node" --dry-run |
  sed -E 's/timeAdded: "[^"]+"/timeAdded: "<time>"/' >"$out"
if [ "${DRAPLANE_UPDATE_GOLDEN:-}" = 1 ]; then
  cp "$out" "$golden"
  exit 0
fi
diff -u "$golden" "$out" || { echo "dry run of $node differs from $golden" >&2; exit 1; }
# The placeholder is not a timestamp; lint the real output.
"$draplane" agent --profile "$src/examples/cluster-demo.yaml" --node "$node" --dry-run >"$out"
"$draplane" lint "$out"
