#!/usr/bin/env bash
# Crash test: `kill -9` of `draplane serve` (SQLite store) in the middle of a write load, a
# restart on the same data directory, and every write a client saw acknowledged must be there:
# 201s seen by a fast curl writer and `kubectl create` calls that exited 0 (a second, slower
# writer). Writes in flight at the kill may or may not have landed; none may be half there.
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

# The kubectl writer: `kubectl create` one claim at a time, recording each name whose kubectl
# exited 0. It stops at the first failure (the server is gone).
kubectl_acked="$e2e_work/kubectl_acked"
: >"$kubectl_acked"
kubectl_writer() {
  local i=0
  while true; do
    i=$((i + 1))
    if ! kubectl --kubeconfig "$e2e_work/writer.kubeconfig" create -f - >/dev/null \
        2>>"$e2e_work/kubectl_writer.err" <<EOF; then
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: k-$i
  namespace: crash
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.example.com
EOF
      return 0
    fi
    echo "k-$i" >>"$kubectl_acked"
  done
}

step "write load, then kill -9 after 150 acknowledged curl writes and 5 kubectl writes"
writer &
writer_pid=$!
background_pids+=($writer_pid)
kubectl_writer &
kubectl_writer_pid=$!
background_pids+=($kubectl_writer_pid)
deadline=$((SECONDS + 180))
while [ "$(wc -l <"$acked")" -lt 150 ] || [ "$(wc -l <"$kubectl_acked")" -lt 5 ]; do
  [ $SECONDS -lt $deadline ] ||
    fail "the writers did not get their writes acknowledged in time (curl: $(wc -l <"$acked"), kubectl: $(wc -l <"$kubectl_acked"); $(tail -n 3 "$e2e_work/kubectl_writer.err" 2>/dev/null))"
  kill -0 "$kubectl_writer_pid" 2>/dev/null ||
    fail "kubectl create failed before the kill: $(cat "$e2e_work/kubectl_writer.err")"
  sleep 0.05
done
kill_server
wait "$writer_pid" || fail "the writer saw an unexpected status"
wait "$kubectl_writer_pid" || true
acked_count=$(wc -l <"$acked")
kubectl_acked_count=$(wc -l <"$kubectl_acked")
echo "acknowledged before the kill: $acked_count (curl), $kubectl_acked_count (kubectl)"

step "restart on the same data directory"
start_server "$data"
present=$(k get resourceclaims -n crash -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}')
missing=0
while read -r name; do
  if ! grep -qx -- "$name" <<<"$present"; then
    echo "lost acknowledged write: $name" >&2
    missing=$((missing + 1))
  fi
done < <(cat "$acked" "$kubectl_acked")
[ "$missing" -eq 0 ] || fail "$missing acknowledged writes are missing after the restart"
present_count=$(grep -c . <<<"$present")
echo "present after the restart: $present_count (at most one more per writer than acknowledged)"
[ "$present_count" -le $((acked_count + kubectl_acked_count + 2)) ] ||
  fail "more objects than writes issued"

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
