#!/usr/bin/env bash
# Crash test: `kill -9` of `draplane serve` (SQLite store) in the middle of a write load, a
# restart on the same data directory, and every write the client saw acknowledged (201) must be
# there. Writes in flight at the kill may or may not have landed; none may be half there.
#
# Usage: crash_e2e.sh DRAPLANE_BINARY SOURCE_DIR
set -euo pipefail
DRAPLANE=$1
SRC=$2
source "$SRC/tests/e2e/lib.sh"

data="$e2e_work/data"
start_server "$data"
k() { kubectl --kubeconfig "$admin_kubeconfig" "$@"; }
k create namespace crash >/dev/null

"$DRAPLANE" kubeconfig --data-dir "$data" --user writer --groups system:masters \
  >"$e2e_work/writer.kubeconfig"
token=$(sed -nE 's/^ *token: "?([^"]*)"?$/\1/p' "$e2e_work/writer.kubeconfig")
[ -n "$token" ] || fail "no token in the writer's kubeconfig"
ca="$data/pki/ca.crt"
acked="$e2e_work/acked"
: >"$acked"

# The writer: create claims one after another, recording each acknowledged name. It stops at
# the first request that gets no answer (the server is gone).
writer() {
  local i=0 code
  while true; do
    i=$((i + 1))
    code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$ca" \
      -H "Authorization: Bearer $token" -H "Content-Type: application/json" \
      -X POST "$server_url/apis/resource.k8s.io/v1/namespaces/crash/resourceclaims" \
      -d '{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":"c-'$i'"},"spec":{"devices":{"requests":[{"name":"gpu","exactly":{"deviceClassName":"gpu.example.com"}}]}}}' \
      || true)
    case "$code" in
      201) echo "c-$i" >>"$acked" ;;
      000) return 0 ;;
      *) echo "unexpected status $code for c-$i" >&2; return 1 ;;
    esac
  done
}

step "write load, then kill -9 after 150 acknowledged writes"
writer &
writer_pid=$!
background_pids+=($writer_pid)
deadline=$((SECONDS + 120))
while [ "$(wc -l <"$acked")" -lt 150 ]; do
  [ $SECONDS -lt $deadline ] || fail "the writer did not get 150 writes acknowledged in time"
  sleep 0.05
done
kill_server
wait "$writer_pid" || fail "the writer saw an unexpected status"
acked_count=$(wc -l <"$acked")
echo "acknowledged before the kill: $acked_count"

step "restart on the same data directory"
start_server "$data"
present=$(k get resourceclaims -n crash -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}')
missing=0
while read -r name; do
  if ! grep -qx -- "$name" <<<"$present"; then
    echo "lost acknowledged write: $name" >&2
    missing=$((missing + 1))
  fi
done <"$acked"
[ "$missing" -eq 0 ] || fail "$missing acknowledged writes are missing after the restart"
present_count=$(grep -c . <<<"$present")
echo "present after the restart: $present_count (at most one more than acknowledged)"
[ "$present_count" -le $((acked_count + 1)) ] || fail "more objects than writes issued"

step "the restarted server serves writes"
k create -f - >/dev/null <<'EOF'
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: after-restart
  namespace: crash
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.example.com
EOF
stop_server
echo "PASS"
