#!/usr/bin/env bash
# One case of the API round-trip suite over the upstream fixtures (docs/design/api.md).
# Usage: run_case.sh MODE DRAPLANE JSON_EQUAL FIXTURE_DIR NAME
#   yaml-to-json    draplane convert -o json NAME.yaml  equals NAME.json (as a JSON value)
#   json-yaml-json  NAME.json -> YAML -> JSON           equals NAME.json
#   json-to-yaml    draplane convert -o yaml NAME.json  equals NAME.yaml byte for byte
set -euo pipefail
mode=$1 draplane=$2 json_equal=$3 dir=$4 name=$5
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
case "$mode" in
  yaml-to-json)
    "$draplane" convert -o json "$dir/$name.yaml" > "$tmp/out.json"
    "$json_equal" "$tmp/out.json" "$dir/$name.json"
    ;;
  json-yaml-json)
    "$draplane" convert -o yaml "$dir/$name.json" > "$tmp/out.yaml"
    "$draplane" convert -o json "$tmp/out.yaml" > "$tmp/out.json"
    "$json_equal" "$tmp/out.json" "$dir/$name.json"
    ;;
  json-to-yaml)
    "$draplane" convert -o yaml "$dir/$name.json" > "$tmp/out.yaml"
    diff -u "$dir/$name.yaml" "$tmp/out.yaml"
    ;;
  *)
    echo "run_case.sh: unknown mode $mode" >&2
    exit 2
    ;;
esac
