#!/usr/bin/env bash
# Regenerates the object model (src/api/gen/) from the schema (src/api/schema/*.yaml) with
# tools/gen_api.py. `--check` generates into a temporary directory instead and fails when the
# checked-in files differ (the ctest case `lint.generated`).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [ "${1:-}" = "--check" ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  /usr/bin/python3 "$root/tools/gen_api.py" --out "$tmp"
  if ! diff -r "$root/src/api/gen" "$tmp"; then
    echo "src/api/gen differs from what src/api/schema generates: run tools/generate_api.sh" >&2
    exit 1
  fi
else
  /usr/bin/python3 "$root/tools/gen_api.py"
fi
