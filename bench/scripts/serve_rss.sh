#!/usr/bin/env bash
# Memory held per stored byte by `draplane serve` with its embedded components (issue 17): starts
# the server on a fresh SQLite store, creates N ResourceClaims with an annotation of B bytes each,
# and prints the growth of the server's RSS against the bytes stored.
#
#   bench/scripts/serve_rss.sh DRAPLANE [N [B]]      (defaults: 300 claims of 200,000 bytes)
#
# SERVE_FLAGS adds flags to `draplane serve` (e.g. "--no-scheduler --no-controller-manager" for
# the API server alone). RSS is reported in all and split into anonymous memory (the heap) and
# file pages (SQLite's mapped database).
#
# The same binary type (release or sanitizer) must be compared; sanitizer builds are run with a
# small quarantine so that the allocator's own retention stays out of the figure.
set -euo pipefail
draplane=$1
count=${2:-300}
bytes=${3:-200000}
work=$(mktemp -d "${TMPDIR:-/tmp}/draplane-rss.XXXXXX")
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=16:thread_local_quarantine_size_kb=256"
mkfifo "$work/ready"
# shellcheck disable=SC2086
"$draplane" serve --listen 127.0.0.1:0 --data-dir "$work/data" --plain-http ${SERVE_FLAGS:-} >"$work/ready" \
  2>"$work/serve.log" &
server_pid=$!
exec {ready}<"$work/ready"
read -r -t 120 -u "$ready" line
url=$(echo "$line" | sed -E 's/^ready: ([^ ]+) .*/\1/')
token=$(cat "$work/data/admin.token")
rss() { awk '/^VmRSS:/ {print $2}' "/proc/$server_pid/status"; }
anon() { awk '/^RssAnon:/ {print $2}' "/proc/$server_pid/status"; }
api() {
  curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $token" \
    -H 'Content-Type: application/json' "$@"
}
[ "$(api -X POST "$url/api/v1/namespaces" \
  -d '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"rss"}}')" = 201 ]
note=$(head -c "$bytes" /dev/zero | tr '\0' n)
body_prefix='{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"annotations":{"note":"'
sleep 3
before=$(rss)
anon_before=$(anon)
for i in $(seq 1 "$count"); do
  printf '%s%s"},"name":"c%d"},"spec":{"devices":{"requests":[{"name":"r","exactly":{"deviceClassName":"x"}}]}}}' \
    "$body_prefix" "$note" "$i" >"$work/body.json"
  code=$(api -X POST "$url/apis/resource.k8s.io/v1/namespaces/rss/resourceclaims" \
    --data-binary @"$work/body.json")
  [ "$code" = 201 ] || { echo "create $i: HTTP $code" >&2; exit 1; }
done
sleep 5
after=$(rss)
anon_after=$(anon)
stored=$((count * bytes / 1024))
echo "claims=$count annotation_bytes=$bytes stored_kib=$stored rss_before_kib=$before" \
  "rss_after_kib=$after growth_kib=$((after - before))" \
  "ratio=$(awk -v g=$((after - before)) -v s=$stored 'BEGIN {printf "%.2f", g / s}')" \
  "anon_growth_kib=$((anon_after - anon_before))" \
  "anon_ratio=$(awk -v g=$((anon_after - anon_before)) -v s=$stored 'BEGIN {printf "%.2f", g / s}')"
