#!/usr/bin/env bash
# End to end: graceful termination (`draplane serve --shutdown-delay-duration`, kube-apiserver's
# flag of that name) on the real server with the real kubectl and curl: after SIGTERM /readyz
# fails its `shutdown` check while /livez passes and requests are still served; a second signal
# ends the delay and the server exits 0; a negative delay is refused naming the flag.
#
# Usage: shutdown_e2e.sh DRAPLANE_BINARY SOURCE_DIR
set -euo pipefail
DRAPLANE=$1
SRC=$2
source "$SRC/tests/e2e/lib.sh"

step "a negative delay is refused"
if timeout 60 "$DRAPLANE" serve --listen 127.0.0.1:0 --data-dir "$e2e_work/refused" \
  --shutdown-delay-duration=-1s >/dev/null 2>"$e2e_work/refused.err"; then
  fail "serve accepted --shutdown-delay-duration=-1s"
fi
expect_contains "$(cat "$e2e_work/refused.err")" "--shutdown-delay-duration"

# Far longer than the checks below take, however loaded the machine; the second signal ends it.
start_server "$e2e_work/data" --shutdown-delay-duration 10m
k() { kubectl --kubeconfig "$admin_kubeconfig" "$@"; }
ca="$e2e_work/data/pki/ca.crt"
health() { curl -s --cacert "$ca" "$server_url/$1?verbose"; }
expect_contains "$(health readyz)" "[+]shutdown ok" "/readyz before SIGTERM"

step "SIGTERM: /readyz fails, /livez passes, requests are served"
kill -TERM "$server_pid"
deadline=$((SECONDS + 60))
until health readyz | grep -qF "[-]shutdown failed"; do
  [ $SECONDS -lt $deadline ] || fail "/readyz did not fail its shutdown check: $(health readyz)"
  sleep 0.2
done
expect_contains "$(health livez)" "livez check passed" "/livez during the delay"
k create namespace during-the-delay >/dev/null
expect_contains "$(k get namespace during-the-delay -o name)" "namespace/during-the-delay"

step "a second signal ends the delay: the server exits 0"
kill -TERM "$server_pid"
wait "$server_pid" || fail "draplane serve exited with an error"
server_pid=""
echo "PASS"
